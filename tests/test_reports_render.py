"""The HTML report: its structure (stdlib html.parser) and, where Chromium is
installed (scripts/setup-system.sh), what a browser actually draws and what
its script does. Synthetic results folders and tests/data; no Ray cluster."""

import json
import os
import re
import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest
import yaml
from PIL import Image

from ftharness.reports import advice
from ftharness.reports.frames import Frames
from ftharness.reports.judgement import folder_statuses
from ftharness.reports.html import page, section, table, write_report
from ftharness.reports.trace import write_trace
from ftharness.scenarios.properties import OPT_IN, PROPERTIES
from test_reports_cli import kill, make_results

CHROMIUM = "/usr/bin/chromium"
SCENARIOS = ("kill", "twice", "out-of-budget")
DATA = os.path.join(os.path.dirname(__file__), "data")
needs_chromium = pytest.mark.skipif(not os.path.exists(CHROMIUM),
                                    reason="no Chromium; scripts/setup-system.sh installs it")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """index.html over a suite of three runs: one kill, two kills, and a run
    that exhausts its budget (expected to fail)."""
    root = tmp_path_factory.mktemp("report")
    make_results(root / "suite" / "kill", "kill", [kill(2.0)])
    make_results(root / "suite" / "twice", "twice", [kill(1.0), kill(3.0)])
    make_results(root / "suite" / "out-of-budget", "out-of-budget", [kill(), kill()], {"max_failures": 1},
                 {"outcome": "failed", "properties": ["budget_accounting"]})
    return write_report([root / "suite"], root / "out")


class Outline(HTMLParser):
    """What the tests look for: elements by id and class, rows per table
    class, svg elements per timeline, and the text of every cell."""

    def __init__(self):
        super().__init__()
        self.ids, self.classes, self.rows, self.svgs, self.cells = set(), [], {}, {}, []
        self.hrefs, self.titles = [], 0
        self.table = self.timeline = None
        self.in_cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids.add(a.get("id"))
        self.classes += (a.get("class") or "").split()
        if tag == "table":
            self.table = a.get("class")
        elif tag == "tr" and self.table:
            self.rows[self.table] = self.rows.get(self.table, 0) + 1
        elif tag == "div" and "timeline" in (a.get("class") or ""):
            self.timeline = a["id"]
        elif tag == "svg" and self.timeline and "tl-svg" in (a.get("class") or ""):
            self.svgs[self.timeline] = self.svgs.get(self.timeline, 0) + 1
        elif tag == "a":
            self.hrefs.append(a.get("href"))
        elif tag == "title" and self.timeline:
            self.titles += 1
        self.in_cell = self.in_cell or tag == "td"

    def handle_endtag(self, tag):
        if tag == "td":
            self.in_cell = False
        elif tag == "table":
            self.table = None
        elif tag == "svg" and self.timeline and self.svgs.get(self.timeline) and self._outer_closed():
            self.timeline = None

    def _outer_closed(self):
        """The timeline's outer svg closes after its nested svg.tl-plot."""
        self._closed = getattr(self, "_closed", 0) + 1
        return self._closed % 2 == 0

    def handle_data(self, data):
        if self.in_cell:
            self.cells.append(data)


def outline(path):
    parser = Outline()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def test_report_has_summary_properties_timelines_and_recovery(report):
    o = outline(report)
    assert {"verdict", "toc", "summary", "properties", "timelines", "recovery", "advice", "data"} <= o.ids
    assert o.rows["summary"] == 1 + len(SCENARIOS)                     # header + one per scenario
    shown = [len(folder_statuses(os.path.join(os.path.dirname(os.path.dirname(report)), "suite", n))["properties"])
             for n in SCENARIOS]
    default = len(PROPERTIES) - len(OPT_IN)   # an opt-in property is shown only where asked
    assert shown[:2] == [default] * 2 and shown[2] < default   # asked only budget_accounting
    assert o.rows["properties"] == 1 + sum(shown)
    assert o.svgs == {f"timeline-{name}": 1 for name in SCENARIOS}
    assert o.classes.count("timeline") == len(SCENARIOS)
    assert {"kill", "twice", "out-of-budget", "failed", "PASS"} <= set(o.cells)
    # the rows of the recovery table: one per fault that was retried or raised
    assert o.rows["recovery"] == 1 + 5
    text = open(report, encoding="utf-8").read()
    assert "Extrapolated, not measured" in text
    assert not re.search(r'(src|href)="(https?:)?//|<script[^>]*src|<link|@import', text), \
        "the report must be self-contained"
    assert o.titles > 20                                               # tooltips on bars and marks


def test_contents_link_every_section_and_scenario_and_every_link_resolves(report):
    o = outline(report)
    anchors = [h[1:] for h in o.hrefs if h.startswith("#")]
    assert {"summary", "timelines", "recovery", "advice", "properties", "data"} <= set(anchors)
    assert {f"scenario-{name}" for name in SCENARIOS} <= set(anchors)
    assert set(anchors) <= o.ids, "a link points at no element"
    out = os.path.dirname(report)
    files = [h for h in o.hrefs if not h.startswith("#")]
    for name in ("history.jsonl", "summary.json", "scenario.yaml"):   # each run's own files
        assert sum(h.endswith("/" + name) for h in files) == len(SCENARIOS)
    for h in files:
        assert not os.path.isabs(h) and os.path.exists(os.path.join(out, h)), h


def test_each_scenario_lists_its_reasons(report):
    text = open(report, encoding="utf-8").read()
    # out-of-budget: expected to fail and did; the others pass: no mismatch
    assert text.count("No mismatch, nothing inconclusive.") == len(SCENARIOS)
    assert 'class="banner pass"' in text


def test_timeline_has_a_lane_per_rank_bars_per_process_and_marks(report):
    text = open(report, encoding="utf-8").read()
    start = text.index('id="timeline-twice"')
    block = text[start:text.index("</svg>\n</svg>", start)]
    assert ">rank 0<" in block and ">rank 1<" in block and ">controller<" in block
    assert block.count('class="process') == 2 * 3                       # 2 ranks x 3 attempts
    assert block.count('class="attempt"') == 3
    assert block.count('class="fault injected"') == 2
    assert block.count('class="recovery"') == 2
    assert 'class="checkpoint registered"' in block and 'class="decision"' in block
    assert re.search(r"rank 1 · pid \d+ · node node-\d", block)         # what the hover shows
    assert 'preserveAspectRatio="none"' in block and 'class="tl-reset"' in block


def test_advice_says_what_it_could_not_compute_and_how_to_get_it(tmp_path):
    """A run without checkpoints: no cost C, so no interval; the page says why."""
    folder = tmp_path / "no-checkpoints"
    shutil.copytree(os.path.join(DATA, "kill-worker"), folder)
    with open(os.path.join(DATA, "kill-worker", "history.jsonl")) as f:
        kept = [line for line in f if json.loads(line)["kind"] not in ("checkpoint_written", "checkpoint_registered")
                and not json.loads(line).get("checkpoint")]
    (folder / "history.jsonl").write_text("".join(kept))
    text = open(write_report([folder], tmp_path / "out"), encoding="utf-8").read()
    advice_html = text[text.index('id="advice"'):text.index('id="properties"')]
    assert "checkpoint cost not measured: no checkpoint_written/report pair in these runs; " \
           "run a scenario with checkpoint_every &gt; 0" in advice_html
    assert "Daly interval (s): needs the checkpoint cost C" in advice_html
    table_html = advice_html.split("<table", 1)[1].split("</table>", 1)[0]
    # seen: seven "not computed" rows; now only computed values are rows, each gap said once below
    assert "not computed" not in advice_html and "–" not in advice_html and "Daly interval" not in table_html
    assert advice_html.count("Daly interval (s)") == 1


def test_advice_is_sized_from_the_scenarios_own_cluster():
    """Seen: checkpoint advice sized for 16,384 accelerators on a two-worker scenario."""
    folder = os.path.join(DATA, "kill-worker")
    assert advice.cluster_accelerators([folder]) == 2            # workload.num_workers of its scenario.yaml
    from ftharness.reports.html import advice_data

    found = advice_data([folder])
    assert "scaled to 2 accelerators" in found["basis"]
    cells = {r["cells"][0]["text"]: r["cells"][1]["text"] for r in found["table"]["rows"]}
    assert cells["accelerators N"] == "2"


def test_no_box_plot_for_one_sample_only_the_point():
    """Seen: a box plot drawn for one sample."""
    from ftharness.reports.html import MIN_BOX_SAMPLES, recovery_figure

    one = recovery_figure({"kill": [2.0]})
    ax = one.axes[0]
    assert not ax.lines and len(ax.collections) == 1              # the point, no box, no whiskers
    many = recovery_figure({"kill": [2.0, 2.5, 3.0, 3.5, 4.0][:MIN_BOX_SAMPLES]})
    assert many.axes[0].lines                                     # enough samples: the box is drawn


def test_advice_gaps_name_each_missing_measurement():
    full = {"checkpoint_cost_s": 0.5, "plain_step_s": 0.1, "recovery_s": 3.0, "current_interval_s": 2.0,
            "samples": {"timed_steps": 10, "checkpointed_steps": 4, "recoveries": 1, "checkpoint_intervals": 3}}
    assert advice.gaps({**full, **advice.extrapolate(0.5, 3.0, 8, current_interval_s=2.0)}) == {}
    all_ckpt = advice.gaps({**full, "checkpoint_cost_s": None, "plain_step_s": None,
                            "samples": {**full["samples"], "checkpointed_steps": 10}})
    assert "no plain step" in all_ckpt["checkpoint_cost_s"] and "checkpoint_every > 1" in all_ckpt["plain_step_s"]
    noise = advice.gaps({**full, "checkpoint_cost_s": -0.01, **advice.extrapolate(-0.01, 3.0, 8)})
    assert "not above a plain step" in noise["checkpoint_cost_s"] and "young_interval_s" in noise
    no_rec = advice.gaps({**full, "recovery_s": None, **advice.extrapolate(0.5, None, 8, current_interval_s=2.0)})
    assert set(no_rec) == {"recovery_s", "goodput_at_daly", "goodput_at_current"}
    assert "kill_worker" in no_rec["recovery_s"]


def test_compare_helpers_still_build_pages():
    import pandas as pd
    html = page("t <x>", section("s", "S & T", table(pd.DataFrame({"a": [1.5], "b": ["<b>"]}), "c", ["ok"])))
    assert "<title>t &lt;x&gt;</title>" in html and '<section id="s"><h2>S &amp; T</h2>' in html
    assert '<tr class="ok"><td class="num">1.50</td><td>&lt;b&gt;</td></tr>' in html
    assert "<script" not in html


def test_frames_are_written_beside_the_report(report):
    out = os.path.dirname(report)
    for name in Frames.names():
        assert os.path.getsize(os.path.join(out, f"{name}.csv")) > 0
        assert os.path.getsize(os.path.join(out, f"{name}.parquet")) > 0


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium; scripts/setup-system.sh installs it")
def test_chromium_renders_the_report(report, tmp_path):
    png = tmp_path / "report.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", "--window-size=1400,2000",
                    f"file://{report}"], capture_output=True, timeout=60, check=True)
    assert png.stat().st_size > 20_000
    image = Image.open(png).convert("L")
    assert image.size == (1400, 2000)
    assert image.getextrema()[1] - image.getextrema()[0] > 200     # not one colour
    # the summary table sits under the title, left of the middle: text is dark pixels there
    region = image.crop((20, 90, 700, 300))
    dark = sum(region.histogram()[:80])
    assert dark > 500, f"only {dark} dark pixels where the summary table should be"


# ------------------------------------------------ a PASS, a FAIL and an INCONCLUSIVE run, in a browser
@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """report.html over recorded runs (tests/data), one PASS (with its trace.json), one FAIL
    (a recovery bound the run exceeds, in its scenario.yaml's expect) and one INCONCLUSIVE
    (an event lost from its history): the report judges each history, so the verdicts are
    made where they come from, never by editing summary.json."""
    root = tmp_path_factory.mktemp("mixed")

    def copy(src, name):
        dst = root / "suite" / name
        shutil.copytree(os.path.join(DATA, src), dst)
        return dst

    write_trace(str(copy("kill-worker", "kill-worker")))
    slow = copy("preempt-node", "preempt-node")
    scenario = yaml.safe_load((slow / "scenario.yaml").read_text())
    scenario["expect"]["recovery_bound_s"] = 10
    (slow / "scenario.yaml").write_text(yaml.safe_dump(scenario))
    gap = copy("kill-worker", "kill-gap")
    lines = (gap / "history.jsonl").read_text().splitlines(keepends=True)
    (gap / "history.jsonl").write_text("".join(l for l in lines if '"seq": 26}' not in l))
    return write_report([root / "suite"], root / "suite", page_name="report.html", data_dir="report-data")


def test_mixed_report_lists_reasons_per_scenario_and_links_the_trace(mixed):
    text = open(mixed, encoding="utf-8").read()
    assert 'class="banner fail"' in text and "<strong>FAIL</strong> (1 PASS, 1 FAIL, 1 INCONCLUSIVE)" in text
    assert re.search(r'<li class="mismatch">− property recovers failed: recovery from fault 0 \(preempt_node\)'
                     r'[^<]* took 22.58 s [^<]*over the 10 s bound</li>', text)
    assert '<li class="inconclusive">? history: events seq 26 missing</li>' in text
    assert '<a href="kill-worker/trace.json">trace.json</a>' in text
    assert text.count("trace.json</a>") == 1
    assert re.search(r"rank 1 · pid 25606 · node 504c50ab", text)      # hover: pid and node of the killed rank
    assert "error RuntimeError: [/__w/pytorch" in text


def chromium(*args, profile):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                           "--no-first-run", "--disable-background-networking", "--disable-component-update",
                           "--disable-sync", f"--user-data-dir={profile}", *args],
                          capture_output=True, timeout=60, check=True, text=True)


@needs_chromium
def test_chromium_draws_the_fail_banner_and_the_timelines(mixed, tmp_path):
    png = tmp_path / "mixed.png"
    chromium(f"--screenshot={png}", "--window-size=1400,1600", f"file://{mixed}", profile=tmp_path / "profile")
    image = Image.open(png).convert("RGB")
    assert image.size == (1400, 1600)
    grey = image.convert("L")
    assert grey.getextrema()[1] - grey.getextrema()[0] > 200           # not blank, not one colour
    # the banner sits under the title: its left border is the FAIL red (#d33), its background light red
    r, g, b = np.asarray(image.crop((0, 40, 1400, 220)), dtype=int).transpose(2, 0, 1)
    red = int(((r > 190) & (g < 90) & (b < 90)).sum())
    pink = int(((r > 240) & (g > 215) & (g < 240) & (b > 215) & (b < 240)).sum())
    green = int(((g > 140) & (r < 80) & (b < 150)).sum())
    assert red > 300, f"only {red} FAIL-red pixels in the banner"
    assert pink > 20_000 and green < 50, (pink, green)
    # the timelines draw bars: many pixels of the attempt colours below the summary
    r, g, b = np.asarray(image.crop((0, 700, 1400, 1600)), dtype=int).transpose(2, 0, 1)
    bars = int(((abs(r - 166) < 30) & (abs(g - 188) < 30) & (b > 190)).sum())   # #4c78a8 at half opacity
    assert bars > 2000, f"only {bars} pixels of attempt bars"


@needs_chromium
def test_chromium_runs_the_timeline_script_zoom_pan_and_reset(mixed, tmp_path):
    """The DOM after the page's script ran: every timeline is set up, tooltips
    moved to data-tip; Ctrl + wheel narrows the viewBox, a drag moves it, reset restores it."""
    probe = """<script>
    (function () {
      var div = document.querySelector("div.timeline"), svg = div.querySelector("svg.tl-svg");
      var plot = svg.querySelector("svg.tl-plot"), r = plot.getBoundingClientRect(), out = [];
      out.push(plot.getAttribute("viewBox"));
      svg.dispatchEvent(new WheelEvent("wheel", {deltaY: -120, clientX: r.left + r.width / 2, ctrlKey: true,
                                                 clientY: r.top + 5, bubbles: true, cancelable: true}));
      out.push(plot.getAttribute("viewBox"));
      var at = {clientX: r.left + r.width / 2, clientY: r.top + 5, pointerId: 1, bubbles: true};
      svg.dispatchEvent(new PointerEvent("pointerdown", at));
      svg.dispatchEvent(new PointerEvent("pointermove", Object.assign({}, at, {clientX: at.clientX - 100})));
      svg.dispatchEvent(new PointerEvent("pointerup", at));
      out.push(plot.getAttribute("viewBox"));
      div.querySelector("button.tl-reset").click();
      out.push(plot.getAttribute("viewBox"));
      document.body.setAttribute("data-probe", out.join("|"));
    })();
    </script></body>"""
    page_path = tmp_path / "probe.html"
    page_path.write_text(open(mixed, encoding="utf-8").read().replace("</body>", probe))
    dom = chromium("--dump-dom", f"file://{page_path}", profile=tmp_path / "profile").stdout
    assert dom.count('class="tl-svg"') == 3 and dom.count('class="tl-plot"') == 3
    assert dom.count('data-interactive="1"') == 3                      # the script set every timeline up
    assert "data-tip=" in dom and "<title>" not in dom.split("</head>", 1)[1]
    probe_value = re.search(r'data-probe="([^"]*)"', dom).group(1).split("|")
    full, zoomed, panned, reset = ([float(v) for v in box.split()] for box in probe_value)
    assert zoomed[2] == pytest.approx(full[2] * 0.8)                     # narrower: zoomed in
    assert zoomed[0] > full[0]                                           # around the pointer
    assert panned[2] == pytest.approx(zoomed[2]) and panned[0] > zoomed[0]   # dragged left: later times
    assert reset == full


@needs_chromium
def test_chromium_a_plain_wheel_scrolls_past_a_timeline_and_zoom_needs_the_modifier(mixed, tmp_path):
    """Seen: the report captured the mouse wheel over every timeline, so a long
    page could not be scrolled past one. A plain wheel over a timeline is left
    to the page (not cancelled, the view unchanged) and the page scrolls past
    it; Ctrl, Cmd or Alt + wheel zooms (cancelled, the view narrower)."""
    probe = """<script>
    window.addEventListener("load", function () {
      var div = document.querySelector("div.timeline"), svg = div.querySelector("svg.tl-svg");
      var plot = svg.querySelector("svg.tl-plot"), out = [];
      div.scrollIntoView();
      var r = plot.getBoundingClientRect(), full = plot.getAttribute("viewBox");
      function wheel(mods) {
        var e = new WheelEvent("wheel", Object.assign({deltaY: -120, clientX: r.left + r.width / 2,
                                clientY: r.top + 5, bubbles: true, cancelable: true}, mods));
        svg.dispatchEvent(e);
        return (e.defaultPrevented ? "cancelled" : "free") + " " + (plot.getAttribute("viewBox") === full ? "same" : "zoomed");
      }
      out.push(wheel({}));
      out.push(wheel({shiftKey: true}));
      var y0 = window.scrollY;
      window.scrollBy(0, div.getBoundingClientRect().bottom + 10);
      out.push(div.getBoundingClientRect().bottom < 0 && window.scrollY > y0 ? "scrolled past" : "stuck");
      div.querySelector("button.tl-reset").click();
      out.push(wheel({ctrlKey: true}));
      div.querySelector("button.tl-reset").click();
      out.push(wheel({metaKey: true}));
      div.querySelector("button.tl-reset").click();
      out.push(wheel({altKey: true}));
      var faults = document.querySelector("section#faults table.faults");
      out.push(faults && faults.getBoundingClientRect().height > 0 ? "faults shown " + faults.rows.length : "no faults");
      document.body.setAttribute("data-probe", out.join("|"));
    });
    </script></body>"""
    page_path = tmp_path / "probe.html"
    page_path.write_text(open(mixed, encoding="utf-8").read().replace("</body>", probe))
    dom = chromium("--dump-dom", "--window-size=1400,900", f"file://{page_path}", profile=tmp_path / "profile").stdout
    got = re.search(r'data-probe="([^"]*)"', dom).group(1).split("|")
    assert got == ["free same", "free same", "scrolled past", "cancelled zoomed", "cancelled zoomed",
                   "cancelled zoomed", "faults shown 4"], got


@needs_chromium
def test_chromium_shows_the_faults_table_with_landing_evidence(mixed, tmp_path):
    """Seen: no table of faults with their landing evidence, only hover tooltips."""
    png = tmp_path / "faults.png"
    dom = chromium("--dump-dom", f"file://{mixed}", profile=tmp_path / "profile").stdout
    section = dom.split('id="faults"', 1)[1].split("</section>", 1)[0]
    assert section.count("<tr") == 1 + 3                               # header + one fault per run
    for text in ("kill_worker", "preempt_node", "rank 1", "SIGKILL at seq 25", "UTC", "expected worker_group",
                 "worker_group (RETRY)", "expected preemption"):
        assert text in section, text
    chromium(f"--screenshot={png}", "--window-size=1400,1600", f"file://{mixed}#faults", profile=tmp_path / "p2")
    assert png.stat().st_size > 10_000


def test_a_preemption_notice_is_drawn_from_the_drain_to_its_deadline(tmp_path):
    """The recorded spot reclaim (tests/data/preempt-node): its drain's notice is a band on the
    timeline, as long as the notice the drain gave (notice_s 3)."""
    shutil.copytree(os.path.join(DATA, "preempt-node"), tmp_path / "runs" / "preempt-node")
    text = open(write_report([tmp_path / "runs"], tmp_path / "out"), encoding="utf-8").read()
    notices = re.findall(r'<rect class="notice" x="[^"]+" y="0" width="([^"]+)"[^>]*><title>([^<]+)</title>', text)
    assert len(notices) == 1, notices
    width, title = notices[0]
    assert 2.5 < float(width) < 3.5 and "preemption notice of fault #0" in title and "s of notice" in title
