// Timelines: Ctrl/Cmd/Alt + wheel zooms the time axis around the pointer (the
// wheel alone scrolls the page past the timeline), drag pans, the
// button resets; the hover box shows an element's title child (pid, node,
// attempt, error). Only the nested svg.tl-plot's viewBox changes.
(function () {
  "use strict";
  var NS = "http://www.w3.org/2000/svg";
  var tip = document.createElement("div");
  tip.className = "tl-tip";
  document.body.appendChild(tip);

  function nice(w) {
    var raw = w / 8, p = Math.pow(10, Math.floor(Math.log10(raw))), m = raw / p;
    return p * (m < 1.5 ? 1 : m < 3 ? 2 : m < 7 ? 5 : 10);
  }
  function label(t, step) {
    var digits = Math.max(0, -Math.floor(Math.log10(step)));
    return t.toFixed(Math.min(digits, 6));
  }

  function setup(div) {
    var svg = div.querySelector("svg.tl-svg"), plot = svg && svg.querySelector("svg.tl-plot");
    if (!plot) return;
    var x0 = parseFloat(svg.dataset.x0), w0 = parseFloat(svg.dataset.w);
    var left = parseFloat(svg.dataset.left), pw = parseFloat(svg.dataset.plotW);
    var h = plot.viewBox.baseVal.height, axis = svg.querySelector("g.tl-axis");
    var top = parseFloat(plot.getAttribute("y")), ph = parseFloat(plot.getAttribute("height"));
    var cur = {x: x0, w: w0}, readout = div.querySelector(".tl-range");

    function drawAxis() {
      while (axis.firstChild) axis.removeChild(axis.firstChild);
      var step = nice(cur.w);
      for (var t = Math.ceil(cur.x / step) * step; t <= cur.x + cur.w + 1e-9; t += step) {
        var x = left + (t - cur.x) / cur.w * pw;
        var line = document.createElementNS(NS, "line");
        line.setAttribute("x1", x); line.setAttribute("x2", x);
        line.setAttribute("y1", top); line.setAttribute("y2", top + ph + 4);
        line.setAttribute("stroke", "#ddd");
        var text = document.createElementNS(NS, "text");
        text.setAttribute("x", x); text.setAttribute("y", top + ph + 15);
        text.setAttribute("text-anchor", "middle");
        text.textContent = label(t, step);
        axis.appendChild(line); axis.appendChild(text);
      }
      // fault labels sit above the plot (outside its viewBox): placed by time, hidden off range
      svg.querySelectorAll("text.fault-label").forEach(function (l) {
        var t = parseFloat(l.getAttribute("data-t")), x = left + (t - cur.x) / cur.w * pw;
        l.setAttribute("x", x);
        l.style.display = (t < cur.x || t > cur.x + cur.w) ? "none" : "";
      });
      if (readout) readout.textContent = cur.w < w0 * 0.999 ?
        "showing " + cur.x.toFixed(3) + "–" + (cur.x + cur.w).toFixed(3) + " s" : "";
    }
    function set(x, w) {
      w = Math.min(w0, Math.max(w0 / 2000, w));
      x = Math.max(x0, Math.min(x0 + w0 - w, x));
      cur = {x: x, w: w};
      plot.setAttribute("viewBox", x + " 0 " + w + " " + h);
      drawAxis();
    }
    function fraction(evt) {
      var r = plot.getBoundingClientRect();
      return Math.max(0, Math.min(1, (evt.clientX - r.left) / r.width));
    }
    svg.addEventListener("wheel", function (evt) {
      if (!(evt.ctrlKey || evt.metaKey || evt.altKey)) return;   // a plain wheel scrolls the page
      evt.preventDefault();
      var f = fraction(evt), w = cur.w * (evt.deltaY < 0 ? 0.8 : 1.25);
      set(cur.x + f * (cur.w - w), w);
    }, {passive: false});
    var drag = null;
    svg.addEventListener("pointerdown", function (evt) {
      drag = {x: evt.clientX, start: cur.x, width: plot.getBoundingClientRect().width};
      svg.classList.add("dragging");
      svg.setPointerCapture(evt.pointerId);
    });
    svg.addEventListener("pointermove", function (evt) {
      if (!drag) return;
      set(drag.start - (evt.clientX - drag.x) / drag.width * cur.w, cur.w);
    });
    function stop() { drag = null; svg.classList.remove("dragging"); }
    svg.addEventListener("pointerup", stop);
    svg.addEventListener("pointercancel", stop);
    var reset = div.querySelector("button.tl-reset");
    if (reset) reset.addEventListener("click", function () { set(x0, w0); });

    // the hover box replaces the native tooltip (kept in data-tip)
    svg.querySelectorAll("title").forEach(function (t) {
      t.parentNode.setAttribute("data-tip", t.textContent);
      t.parentNode.removeChild(t);
    });
    svg.addEventListener("pointerover", function (evt) {
      var el = evt.target.closest("[data-tip]");
      if (!el || drag) { tip.style.display = "none"; return; }
      tip.textContent = el.getAttribute("data-tip");
      tip.style.display = "block";
    });
    svg.addEventListener("pointermove", function (evt) {
      tip.style.left = Math.min(evt.clientX + 14, window.innerWidth - 540) + "px";
      tip.style.top = (evt.clientY + 14) + "px";
    });
    svg.addEventListener("pointerleave", function () { tip.style.display = "none"; });
    div.setAttribute("data-interactive", "1");
    drawAxis();
  }
  document.querySelectorAll("div.timeline").forEach(setup);
})();
