"""A self-contained HTML report over results folders: one file, no server.

Plots are matplotlib figures inlined as SVG (text kept as text, so the page
stays searchable) and the styles are inline, so index.html can be attached to
a CI run or mailed as is. The frames behind it are written beside it as CSV
and Parquet, for whoever wants to dig further.

Element ids and classes are stable for tests and scrapers: section#summary,
section#properties, section#timelines with one div.timeline per scenario,
section#recovery, section#advice, section#data.
"""

from __future__ import annotations

import io
import math
import os
import re
import time
from html import escape
from typing import Any, Dict, Iterable, List, Optional, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.transforms import blended_transform_factory

from harness.history.model import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, PARTS
from reports import advice
from reports.frames import Frames, PathLike, missing, results_folders
from reports.junit import labels, outcome_verdicts, property_verdicts

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:24px;color:#111;max-width:1500px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ccc}
h3{font-size:15px;margin:16px 0 4px}.meta,.note{color:#555;font-size:13px}
table{border-collapse:collapse;font-size:13px;margin:6px 0}
th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.pass td:first-child,tr.ok td:first-child{border-left:5px solid #2a7}
tr.fail td:first-child,tr.failure td:first-child{border-left:5px solid #d33}
tr.skipped td:first-child,tr.unknown td:first-child{border-left:5px solid #bbb}
.banner{padding:.6em 1em;margin:1em 0;border-left:8px solid #bbb;background:#f6f6f6}
.banner.pass{border-color:#2a7}.banner.fail{border-color:#d33}.banner.unknown{border-color:#e9a100}
.timeline svg,.plot svg{max-width:100%;height:auto}
.extrapolated{background:#fff6d6;border:1px solid #e0c060;padding:8px;font-size:13px}
"""
#: matplotlib settings for every figure: text stays text in the SVG
RC = {"svg.fonttype": "none", "font.size": 9}
ATTEMPT_COLORS = ["#4c78a8", "#72b7b2", "#54a24b", "#b279a2", "#9d755d", "#bab0ac"]


# ------------------------------------------------------------------ formatting
def _text(v: Any, digits: int = 2) -> str:
    if missing(v):
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits if abs(v) >= 1 else digits + 1}f}"
    return str(v)


def _cell(v: Any) -> str:
    num = isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
    return f'<td class="num">{escape(_text(v))}</td>' if num else f"<td>{escape(_text(v))}</td>"


def table(df: pd.DataFrame, cls: str = "", row_classes: Optional[Sequence[str]] = None) -> str:
    """A plain HTML table; `row_classes` mark rows (pass/fail) for the CSS."""
    head = "".join(f"<th>{escape(str(c))}</th>" for c in df.columns)
    rows = []
    for i, row in enumerate(df.itertuples(index=False)):
        klass = f' class="{escape(row_classes[i])}"' if row_classes is not None else ""
        rows.append(f"<tr{klass}>{''.join(_cell(v) for v in row)}</tr>")
    return f'<table class="{escape(cls)}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def svg(fig: Figure) -> str:
    """The figure as inline <svg> markup (no XML prologue)."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>'
            f"<style>{CSS}</style></head><body>{body}</body></html>")


def section(sid: str, title: str, content: str) -> str:
    return f'<section id="{sid}"><h2>{escape(title)}</h2>{content}</section>'


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-") or "x"


# --------------------------------------------------------------------- summary
def _recorded(scenario: Dict[str, Any], key: str, count) -> int:
    """A count from summary.json, else `count()` over the history's frames
    (a run killed before its summary, or a summary without its history)."""
    value = scenario.get(key)
    return int(count()) if missing(value) else int(value)


def _budgets(scenario: Dict[str, Any], decisions: pd.DataFrame) -> str:
    """'worker_group 1/2 · preemption 0/0 ...': failures charged / limit
    (∞ unlimited, ? unknown); the non-retryable class only when charged."""
    parts = []
    for budget in (*BUDGETS, NOT_RETRYABLE):
        key = LIMIT_FIELD.get(budget)
        used = _recorded(scenario, f"budgets.{budget}", lambda: (decisions["budget"] == budget).sum())
        limit = scenario.get(f"failure_config.{key}") if key else None
        if key is None and not used:
            continue
        shown = "" if key is None else "/" + ("?" if missing(limit) else "∞" if limit < 0 else str(int(limit)))
        parts.append(f"{budget} {used}{shown}")
    return " · ".join(parts)


def _property_counts(verdicts: pd.DataFrame) -> str:
    """'4 ok, 1 failure (recovers)': property verdicts against expect."""
    counts = verdicts["status"].value_counts()
    failed = verdicts.loc[verdicts["status"] == "failure", "property"].tolist()
    text = ", ".join(f"{n} {status}" for status, n in counts.items())
    return text + (f" ({', '.join(failed)})" if failed else "")


def summary_frame(frames: Frames) -> pd.DataFrame:
    """One row per scenario: outcome against expectation, property verdicts,
    attempts, budgets, recovery, lost work and ETTR."""
    outcomes = outcome_verdicts(frames).set_index("results")
    props = property_verdicts(frames)
    rows = []
    for s in frames.scenarios.to_dict("records"):
        r, o = s["results"], outcomes.loc[s["results"]]
        matches = s.get("matches_expectation")
        rows.append({
            "scenario": o["label"],
            "verdict": o["verdict"],
            "outcome": o["outcome"],
            "expected": o["expected"],
            "matches expectation": None if missing(matches) else bool(matches),
            "properties": _property_counts(props[props["results"] == r]),
            "attempts": _recorded(s, "attempts", lambda: (frames.attempts["results"] == r).sum()),
            "budgets used/limit": _budgets(s, frames.decisions[frames.decisions["results"] == r]),
            "mean recovery s": s.get("metrics.mean_recovery_s"),
            "max recovery s": s.get("metrics.max_recovery_s"),
            "lost steps": s.get("metrics.lost_steps"),
            "ETTR": s.get("metrics.ettr"),
        })
    return pd.DataFrame(rows)


def banner(frames: Frames) -> str:
    """The headline: the worst verdict of the folders, with the reasons behind it."""
    o = outcome_verdicts(frames)
    verdicts = list(o["verdict"]) if len(o) else []
    worst = next((v for v in ("ERROR", "FAIL", "INCONCLUSIVE") if v in verdicts), "PASS" if verdicts else "INCONCLUSIVE")
    cls = {"PASS": "pass", "FAIL": "fail", "ERROR": "fail"}.get(worst, "unknown")
    items = "".join(f"<li>{escape(str(r['label']))}: {escape(r['verdict'])}"
                    f"{' — ' + escape(r['message']) if r['message'] else ''}</li>"
                    for r in o.to_dict("records") if r["verdict"] != "PASS")
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR") if v in verdicts)
    return (f'<div class="banner {cls}"><strong>{worst}</strong> ({escape(counts or "no runs")})'
            f'{"<ul>" + items + "</ul>" if items else ""}</div>')


def summary_section(frames: Frames) -> str:
    df = summary_frame(frames)
    classes = [{"PASS": "pass", "FAIL": "fail", "ERROR": "fail"}.get(v, "unknown") for v in df["verdict"]]
    note = ('<p class="note">ETTR: productive step time over wall time (Meta\'s effective training '
            "time ratio). Budgets: failures charged to each Ray Train budget / its limit.</p>")
    return section("summary", "Summary", table(df, "summary", classes) + note)


def properties_section(frames: Frames) -> str:
    v = property_verdicts(frames)
    df = pd.DataFrame({"scenario": v["label"], "property": v["property"],
                       "verdict": v["passed"].map(lambda p: "NOT JUDGED" if p is None else "PASS" if p else "FAIL"),
                       "expected": v["expected"].fillna("(not asked)"),
                       "status": v["status"], "explanation": v["explanation"]})
    return section("properties", "Properties", table(df, "properties", list(v["status"])))


# -------------------------------------------------------------------- timeline
def _rows(df: pd.DataFrame, results: str) -> pd.DataFrame:
    return df[df["results"] == results]


def _extent(*times: Iterable[float]):
    """(first, last) time any of the frames recorded: the timeline's range."""
    found = [float(t) for ts in times for t in ts if not missing(t)]
    return min(found, default=0.0), max(found, default=1.0)


def _attempt_span(a: Dict[str, Any]):
    begin = next((a[k] for k in ("t_start", "t_group_started", "t_worker_start", "t_first_step")
                  if not missing(a.get(k))), a["t_end"])
    return begin, a["t_end"]


def _attempt_ranks(a: Dict[str, Any], steps: pd.DataFrame) -> List[int]:
    mine = steps[(steps["fit_index"] == a["fit_index"]) & (steps["attempt"] == a["attempt"])]
    ranks = sorted({int(r) for r in mine["rank"].dropna()})
    return ranks or list(range(int(a["world_size"]) if not missing(a.get("world_size")) else 1))


def _sublane(i: int) -> float:
    """Offset of the i-th attempt within a rank's lane: consecutive attempts
    alternate halves, so a zombie that outlives its successor stays visible."""
    return -0.17 if i % 2 == 0 else 0.17


def _spaced(xs: Iterable[float], gap: float) -> List[int]:
    """For labels at `xs` (sorted): a row per label, so labels closer than
    `gap` stack instead of overlapping."""
    rows, last = [], {}
    for x in xs:
        row = next(r for r in range(len(last) + 1) if x - last.get(r, -math.inf) >= gap)
        last[row] = x
        rows.append(row)
    return rows


def _draw_attempts(ax, attempts: pd.DataFrame, steps: pd.DataFrame, t0: float) -> None:
    for i, a in enumerate(attempts.to_dict("records")):
        begin, end = _attempt_span(a)
        color = ATTEMPT_COLORS[i % len(ATTEMPT_COLORS)]
        ranks = _attempt_ranks(a, steps)
        for rank in ranks:
            ax.broken_barh([(begin - t0, max(end - begin, 1e-3))], (rank + _sublane(i) - 0.16, 0.32),
                           facecolors=color, alpha=0.45, edgecolor=color)
        ax.text(begin - t0, ranks[0] + _sublane(i) - 0.18, f" fit {a['fit_index']} · attempt {a['attempt']} "
                f"({a['ended']})", fontsize=7, va="bottom", color="#333", clip_on=True)


def _draw_steps(ax, steps: pd.DataFrame, attempts: pd.DataFrame, t0: float) -> None:
    order = {(a["fit_index"], a["attempt"]): i for i, a in enumerate(attempts.to_dict("records"))}
    y = steps["rank"] + [_sublane(order.get(k, 0)) for k in zip(steps["fit_index"], steps["attempt"])]
    lost = steps["lost"].fillna(False).astype(bool)
    for mask, color in ((~lost, "#222"), (lost, "#d62728")):
        ax.scatter(steps.loc[mask, "t"] - t0, y[mask], marker="|", s=40, color=color, linewidths=1, zorder=3)


def _draw_recoveries(ax, recovery: pd.DataFrame, t0: float) -> None:
    for r in recovery.dropna(subset=["t_first_step"]).to_dict("records"):
        ax.axvspan(r["t0"] - t0, r["t_first_step"] - t0, color="#ff7f0e", alpha=0.15, zorder=0)


def _draw_faults(ax, faults: pd.DataFrame, t0: float, gap: float) -> None:
    styles = {"injected": ("#d62728", "-"), "healed": ("#2ca02c", "--"), "skipped": ("#888", ":")}
    top = blended_transform_factory(ax.transData, ax.transAxes)
    marks = sorted((((f["t_done"] if not missing(f.get("t_done")) else f["t"]) - t0, f)
                    for f in faults.to_dict("records")), key=lambda m: m[0])
    for (x, f), row in zip(marks, _spaced([x for x, _ in marks], gap)):
        color, ls = styles.get(f["event"], ("#888", ":"))
        ax.axvline(x, color=color, ls=ls, lw=1.3, zorder=4)
        label = f["fault_kind"] if f["event"] == "injected" else f"{f['event']} {f['fault_kind']}"
        ax.text(x, 1.01 + 0.1 * row, label, transform=top, fontsize=7, color=color, va="bottom")


def _draw_controller(ax, checkpoints: pd.DataFrame, decisions: pd.DataFrame, t0: float, lane: int,
                     gap: float) -> None:
    """The controller's lane: registered checkpoints (their step) and failure decisions."""
    reg = checkpoints[checkpoints["event"] == "registered"].sort_values("t")
    ax.scatter(reg["t"] - t0, [lane] * len(reg), marker="v", s=30, color="#9467bd", zorder=3)
    xs = (reg["t"] - t0).tolist()
    for x, step, row in zip(xs, reg["step"], _spaced(xs, gap)):
        if row == 0:
            ax.text(x, lane + 0.25, _text(step, 0), fontsize=6, ha="center", va="top", color="#9467bd")
    for d in decisions.to_dict("records"):
        color = "#d62728" if d["decision"] == "RAISE" else "#ff7f0e"
        ax.scatter([d["t"] - t0], [lane], marker="X", s=50, color=color, zorder=4)
        ax.text(d["t"] - t0, lane - 0.22, f"{d['decision']} {d['budget']}", fontsize=6, color=color)


LEGEND = [Patch(color=ATTEMPT_COLORS[0], alpha=0.45, label="attempt (per rank)"),
          Line2D([], [], marker="|", ls="", color="#222", label="step"),
          Line2D([], [], marker="|", ls="", color="#d62728", label="lost step (redone later)"),
          Line2D([], [], color="#d62728", label="fault injected"),
          Line2D([], [], color="#2ca02c", ls="--", label="fault healed"),
          Patch(color="#ff7f0e", alpha=0.15, label="recovery (fault to first step)"),
          Line2D([], [], marker="v", ls="", color="#9467bd", label="checkpoint registered (step)"),
          Line2D([], [], marker="X", ls="", color="#ff7f0e", label="failure decision (budget)")]


def timeline_figure(frames: Frames, results: str) -> Figure:
    """Jepsen-style timeline of one run: a lane per rank with attempts as bars
    and steps as ticks, faults as vertical lines, recoveries shaded, and the
    controller's lane with registered checkpoints and failure decisions."""
    att, steps, faults, ckpt, rec, dec = (_rows(getattr(frames, n), results) for n in
                                          ("attempts", "steps", "faults", "checkpoints", "recovery", "decisions"))
    t0, t1 = _extent(att["t_start"], att["t_end"], steps["t"], faults["t"], ckpt["t"])
    span = max(t1 - t0, 1e-3)  # labels closer than a share of it stack (fault labels are long)
    lanes = max([r + 1 for a in att.to_dict("records") for r in _attempt_ranks(a, steps)], default=1)
    fig = Figure(figsize=(12, 1.6 + 0.5 * (lanes + 1)))
    ax = fig.add_subplot()
    _draw_recoveries(ax, rec, t0)
    _draw_attempts(ax, att, steps, t0)
    _draw_steps(ax, steps, att, t0)
    _draw_faults(ax, faults, t0, 0.15 * span)
    _draw_controller(ax, ckpt, dec, t0, lanes, 0.03 * span)
    ax.set_yticks(range(lanes + 1), [f"rank {r}" for r in range(lanes)] + ["controller"])
    ax.set_ylim(lanes + 0.6, -0.6)
    ax.set_xlabel("seconds since the run's first event")
    ax.grid(axis="x", alpha=0.3)
    ax.legend(handles=LEGEND, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False)
    return fig


def timelines_section(frames: Frames) -> str:
    names = labels(frames.scenarios)
    divs = [f'<div class="timeline" id="timeline-{slug(names[r])}" data-results="{escape(r)}">'
            f"<h3>{escape(names[r])}</h3>{svg(timeline_figure(frames, r))}</div>"
            for r in frames.scenarios["results"]]
    return section("timelines", "Timelines", "".join(divs))


# -------------------------------------------------------------------- recovery
def recovery_figure(samples: Dict[str, Sequence[float]]) -> Figure:
    """Box per configuration with every recovery as a jittered point (few
    samples per configuration, so the points matter more than the box)."""
    data = {k: np.asarray(v, dtype=float) for k, v in samples.items() if len(v)}
    fig = Figure(figsize=(max(4.0, 1.4 * len(data) + 2), 3.6))
    ax = fig.add_subplot()
    if data:
        ax.boxplot(list(data.values()), showfliers=False, widths=0.5)
        jitter = np.random.default_rng(0)
        for i, values in enumerate(data.values(), start=1):
            ax.scatter(i + jitter.uniform(-0.12, 0.12, len(values)), values, s=14, alpha=0.7,
                       color="#4c78a8", zorder=3)
        ax.set_xticks(range(1, len(data) + 1), list(data), rotation=20, ha="right")
    ax.set_ylabel("recovery time (s)")
    ax.set_ylim(bottom=0)
    ax.grid(axis="y", alpha=0.3)
    return fig


def configurations(results_paths: Iterable[PathLike]) -> Dict[str, str]:
    """results folder -> configuration: the name of the argument it came from
    (a suite folder, or the results folder itself)."""
    out = {}
    for p in results_paths:
        name = os.path.basename(os.path.normpath(os.fspath(p))) or os.fspath(p)
        out.update({folder: name for folder in results_folders(p)})
    return out


def recovery_section(frames: Frames, config: Dict[str, str]) -> str:
    rec = frames.recovery.assign(configuration=frames.recovery["results"].map(config))
    samples = {c: rec.loc[rec["configuration"] == c, "recovery_s"].dropna().tolist()
               for c in dict.fromkeys(config.values())}
    plot = f'<div class="plot">{svg(recovery_figure(samples))}</div>' if any(samples.values()) \
        else '<p class="note">No recovery was recorded.</p>'
    names = labels(frames.scenarios)
    parts = rec.assign(scenario=rec["results"].map(names))[
        ["scenario", "configuration", "source", "fault_kind", "budget", *PARTS, "recovery_s"]]
    note = ('<p class="note">Recovery: from the fault (or the first error) to the first step of the '
            "attempt that took over; its parts telescope: detection + teardown + scheduling + restore "
            "+ first step.</p>")
    return section("recovery", "Recovery time", plot + note + table(parts, "recovery"))


def advice_section(folders: List[str]) -> str:
    a = advice.advise(folders)
    rows = pd.DataFrame({"quantity": list(advice.LABELS.values()),
                         "value": [_text(a.get(k), 3) for k in advice.LABELS]})
    return section("advice", "Checkpoint interval (extrapolated)",
                   f'<div class="extrapolated"><p><b>Extrapolated, not measured.</b> {escape(a["basis"])}</p>'
                   f"{table(rows, 'advice')}</div>")


def data_section(files: List[str], out_dir: str) -> str:
    links = " ".join(f'<a href="{escape(os.path.relpath(f, out_dir))}">{escape(os.path.basename(f))}</a>'
                     for f in files)
    return section("data", "Data", f'<p class="note">The frames behind this report: {links}</p>')


# ------------------------------------------------------------------------ page
def _meta(frames: Frames) -> str:
    """How many runs, when, and the versions the first run recorded."""
    versions = frames.scenarios.filter(like="versions.").head(1).dropna(axis=1)
    parts = [f"{len(frames.scenarios)} results folder(s)", f"generated {time.strftime('%Y-%m-%d %H:%M:%S')}"]
    parts += [f"{c.split('.', 1)[1]} {v}" for c, v in versions.iloc[0].items()] if len(versions) else []
    return f'<p class="meta">{escape("; ".join(parts))}</p>'


def write_report(results_paths: Iterable[PathLike], out_dir: PathLike, page_name: str = "index.html",
                 data_dir: str = "") -> str:
    """Write out_dir/page_name and the frames as CSV and Parquet in
    out_dir/data_dir (beside it by default; a subfolder keeps a results folder
    tidy); returns the path of the page."""
    paths = [results_paths] if isinstance(results_paths, (str, os.PathLike)) else list(results_paths)
    out_dir = os.fspath(out_dir)
    frames = Frames.load(paths)
    data = os.path.join(out_dir, data_dir)
    files = frames.to_csv(data) + frames.to_parquet(data)
    config = configurations(paths)
    body = ("<h1>ftharness report</h1>" + _meta(frames) + banner(frames) + summary_section(frames) + timelines_section(frames)
            + recovery_section(frames, config) + advice_section(list(config))
            + properties_section(frames) + data_section(files, out_dir))
    path = os.path.join(out_dir, page_name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page("ftharness report", body))
    return path
