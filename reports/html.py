"""A self-contained HTML report over results folders: one file, no server.

The page is rendered from jinja2 templates in reports/templates/ (autoescape
on): report.html.j2 lays out the page, timeline.svg.j2 draws each run's
timeline as inline SVG, and report.css and report.js are inlined into it, so
the page opens offline and can be attached to a CI run or mailed as is. This
module only prepares the data each template needs. The recovery-time
distribution stays a matplotlib figure inlined as SVG (text kept as text); the
timelines are drawn by the template, with native <title> tooltips and a small
inline script for a hover box, wheel zoom, drag to pan and a reset button.
The frames behind the page are written beside it as CSV and Parquet.

Element ids and classes are stable for tests and scrapers: div.banner#verdict,
nav#toc, section#summary, section#timelines with one div.scenario per run
(holding div.timeline#timeline-<slug> and its svg.tl-svg), section#recovery,
section#advice, section#properties, section#data.
"""

from __future__ import annotations

import datetime
import io
import math
import os
import re
import time
from typing import Any, Dict, Iterable, List, Optional, Sequence

import jinja2
import matplotlib
import numpy as np
import pandas as pd
from markupsafe import Markup
from matplotlib.figure import Figure

from ftharness.history.model import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, PARTS
from ftharness.reports.gpu import gpu_section
from ftharness.reports import advice, metrics
from ftharness.scenarios.job_error import evidence_text, is_job_reason, trigger_text
from ftharness.reports.frames import Frames, PathLike, missing, read_results, results_folders
from ftharness.reports.judgement import folder_statuses
from ftharness.reports.junit import SCENARIO_FILE, _as_list, labels, outcome_verdicts, property_verdicts

#: matplotlib settings for every figure: text stays text in the SVG
RC = {"svg.fonttype": "none", "font.size": 9}
ATTEMPT_COLORS = ["#4c78a8", "#72b7b2", "#54a24b", "#b279a2", "#9d755d", "#bab0ac"]
VERDICT_CLASS = {"PASS": "pass", "FAIL": "fail", "ERROR": "fail"}
#: a run's own files the page links to, when they are there
RUN_FILES = ("history.jsonl", "summary.json", SCENARIO_FILE, "trace.json", "error.txt")


# -------------------------------------------------------------------- templates
def _seconds(v: float) -> str:
    return f"{v:.4f}".rstrip("0").rstrip(".") or "0"


def _units(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") or "0"


def environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("ftharness.reports", "templates"), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(s=_seconds, y=_units)
    return env


ENV = environment()


def _macro(name: str):
    return getattr(ENV.get_template("macros.html.j2").module, name)


# ------------------------------------------------------------------ formatting
def _text(v: Any, digits: int = 2) -> str:
    if missing(v):
        return "–"
    if isinstance(v, (bool, np.bool_)):
        return "yes" if v else "no"
    if isinstance(v, (float, np.floating)):
        return f"{v:.{digits if abs(v) >= 1 else digits + 1}f}"
    return str(v)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def table_data(df: pd.DataFrame, cls: str = "", row_classes: Optional[Sequence[str]] = None,
               links: Optional[Dict[str, Sequence[Optional[str]]]] = None) -> Dict[str, Any]:
    """What macros.html.j2's table() draws: cells as text (numbers right
    aligned), `row_classes` mark rows (pass/fail), `links` column -> hrefs."""
    links = links or {}
    rows = []
    for i, row in enumerate(df.itertuples(index=False)):
        cells = [{"text": _text(v), "cls": "num" if _is_num(v) else "",
                  "href": (links.get(col) or [None] * len(df))[i]} for col, v in zip(df.columns, row)]
        rows.append({"cls": row_classes[i] if row_classes is not None else "", "cells": cells})
    return {"cls": cls, "columns": [str(c) for c in df.columns], "rows": rows}


def table(df: pd.DataFrame, cls: str = "", row_classes: Optional[Sequence[str]] = None) -> str:
    """A plain HTML table; `row_classes` mark rows (pass/fail) for the CSS."""
    return str(_macro("table")(table_data(df, cls, row_classes)))


def svg(fig: Figure) -> str:
    """The figure as inline <svg> markup (no XML prologue)."""
    buf = io.StringIO()
    with matplotlib.rc_context(RC):
        fig.savefig(buf, format="svg", bbox_inches="tight")
    text = buf.getvalue()
    return text[text.index("<svg"):]


def page(title: str, body: str, script: bool = False) -> str:
    """A whole page around `body` (trusted markup), with the report's styles
    (and its script, for timelines) inline."""
    return ENV.get_template("page.html.j2").render(title=title, body=Markup(body), script=script)


def section(sid: str, title: str, content: str) -> str:
    return str(_macro("section")(sid, title, Markup(content)))


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
    counts = verdicts["verdict"].value_counts()
    failed = verdicts.loc[verdicts["verdict"] == "FAIL", "property"].tolist()
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
            "outcome": shown_outcome(o["outcome"]),
            "expected": o["expected"],
            "matches expectation": matches_shown(o["verdict"], matches),
            "properties": _property_counts(props[props["results"] == r]),
            "attempts": _recorded(s, "attempts", lambda: (frames.attempts["results"] == r).sum()),
            "budgets used/limit": _budgets(s, frames.decisions[frames.decisions["results"] == r]),
            "mean recovery s": s.get("metrics.mean_recovery_s"),
            "max recovery s": s.get("metrics.max_recovery_s"),
            "lost steps": s.get("metrics.lost_steps"),
            "ETTR": s.get("metrics.ettr"),
        })
    return pd.DataFrame(rows)


def shown_outcome(outcome: Any) -> str:
    """fit()'s outcome as a person reads it: 'not recorded' where the history holds none."""
    return "not recorded" if missing(outcome) or outcome in ("", "None") else str(outcome)


def matches_shown(verdict: str, matches: Any) -> Any:
    """'inconclusive' for a run whose evidence is incomplete (its outcome is not known to
    match or not), else yes/no as recorded."""
    if verdict == "INCONCLUSIVE":
        return "inconclusive"
    return None if missing(matches) else bool(matches)


def anchor(label: str) -> str:
    return f"scenario-{slug(label)}"


def banner_data(frames: Frames) -> Dict[str, Any]:
    """The headline: the worst verdict of the folders, with the reasons behind it."""
    o = outcome_verdicts(frames)
    verdicts = list(o["verdict"]) if len(o) else []
    worst = next((v for v in ("ERROR", "FAIL", "INCONCLUSIVE") if v in verdicts), "PASS" if verdicts else "INCONCLUSIVE")
    items = [{"label": str(r["label"]), "anchor": anchor(str(r["label"])), "verdict": r["verdict"],
              **_job_first(r["message"])} for r in o.to_dict("records") if r["verdict"] != "PASS"]
    counts = ", ".join(f"{verdicts.count(v)} {v}" for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR") if v in verdicts)
    return {"worst": worst, "cls": VERDICT_CLASS.get(worst, "unknown"), "counts": counts, "reasons": items}


def _job_first(message: Any) -> Dict[str, str]:
    """{job, message}: the job's own error (ftharness.scenarios.job_error), which the banner shows
    first and in bold, and the other reasons after it."""
    reasons = str(message or "").split("; ")
    if reasons and is_job_reason(reasons[0]):
        return {"job": reasons[0], "message": "; ".join(reasons[1:])}
    return {"job": "", "message": str(message or "")}


def banner(frames: Frames) -> str:
    """The banner alone, as markup."""
    b = banner_data(frames)
    text = ENV.from_string(
        '<div class="banner {{ b.cls }}"><strong>{{ b.worst }}</strong> ({{ b.counts or "no runs" }})'
        '{% if b.reasons %}<ul>{% for i in b.reasons %}<li>{{ i.label }}: {{ i.verdict }}'
        '{% if i.job %} — <strong class="job-error">{{ i.job }}</strong>{% endif %}'
        '{% if i.message %} — {{ i.message }}{% endif %}</li>{% endfor %}</ul>{% endif %}</div>')
    return text.render(b=b)


def summary_table(frames: Frames) -> Dict[str, Any]:
    df = summary_frame(frames)
    classes = [VERDICT_CLASS.get(v, "unknown") for v in df["verdict"]]
    return table_data(df, "summary", classes, {"scenario": ["#" + anchor(str(n)) for n in df["scenario"]]})


def properties_table(frames: Frames) -> Dict[str, Any]:
    v = property_verdicts(frames)
    df = pd.DataFrame({"scenario": v["label"], "property": v["property"], "verdict": v["verdict"],
                       "expected": v["expected"].fillna("(not asked)"), "explanation": v["message"]})
    return table_data(df, "properties", [VERDICT_CLASS.get(x, "unknown") for x in v["verdict"]],
                      {"scenario": ["#" + anchor(str(n)) for n in df["scenario"]]})


def utc(t: Any) -> str:
    """An epoch time as UTC, to the millisecond, labelled so."""
    if missing(t):
        return ""
    return datetime.datetime.fromtimestamp(float(t), datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + " UTC"


def _scenario_faults(results: str) -> List[Dict[str, Any]]:
    """The `faults` of the folder's scenario.yaml (plain YAML; [] without one)."""
    from ftharness.reports.judgement import scenario_data

    faults = scenario_data(results).get("faults")
    return list(faults) if isinstance(faults, list) else []


def _spec_text(spec: Any) -> str:
    """{'rank': 1} -> 'rank 1'; nested dicts flattened."""
    if not isinstance(spec, dict):
        return "" if missing(spec) else str(spec)
    return ", ".join(f"{k} {_spec_text(v) if isinstance(v, dict) else v}" for k, v in spec.items()
                     if v is not None and v != {})


#: what a fault hit, as the faults table shows it (ids shortened)
HIT_KEYS = ("rank", "ranks", "pid", "node_id", "how")


def _short(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    text = str(v)
    return text[:8] if len(text) > 24 and " " not in text else text


def faults_frame(frames: Frames) -> pd.DataFrame:
    """One row per fault of each run: kind, target (asked, and what it hit),
    when (its trigger, and the UTC time it was injected), whether it landed with
    the evidence, the budget it charged (expected, and what the controller
    charged), and the recovery that followed it."""
    names = labels(frames.scenarios)
    rows = []
    for s in frames.scenarios.to_dict("records"):
        r = s["results"]
        specs = _scenario_faults(r)
        landed = _as_list(s.get("faults"))
        if not landed and not specs:
            continue
        injected = _rows(frames.faults, r)
        decisions = _rows(frames.decisions, r)
        recovery = _rows(frames.recovery, r)
        for i in range(max(len(landed), len(specs))):
            f = landed[i] if i < len(landed) and isinstance(landed[i], dict) else {}
            spec = specs[i] if i < len(specs) and isinstance(specs[i], dict) else {}
            hit = injected[(injected["fault"] == i) & (injected["event"] == "injected")] if len(injected) else injected
            first = hit.iloc[0].to_dict() if len(hit) else {}
            hit_target = ", ".join(f"{k} {_short(first.get('hit.' + k))}" for k in HIT_KEYS
                                   if not missing(first.get("hit." + k)))
            charged = ""
            if not missing(f.get("failure_seq")) and len(decisions):
                d = decisions[decisions["seq"] == f["failure_seq"]]
                charged = "" if d.empty else f"{_text(d.iloc[0].get('budget'))} ({_text(d.iloc[0].get('decision'))})"
            rec = recovery[recovery["fault"] == i] if len(recovery) else recovery
            rec_s = pd.to_numeric(rec["recovery_s"], errors="coerce").dropna() if len(rec) else []
            rows.append({
                "scenario": names[r], "#": i, "kind": f.get("kind") or spec.get("kind"),
                "target": (_spec_text(spec.get("target")) or "(default)") + (f" → hit {hit_target}" if hit_target else ""),
                "when": (trigger_text(spec.get("at")) or "") + (f" · {utc(first.get('t'))}" if first.get("t") else ""),
                "landed": {True: "yes", False: "no"}.get(f.get("landed"), "not recorded")
                + (f" ({f['status']})" if f.get("status") not in (None, "landed") else ""),
                "evidence": _text(evidence_text(f.get("evidence"))) if f.get("evidence") else "",
                "budget charged": " / ".join(x for x in (
                    f"expected {f['expected_budget']}" if f.get("expected_budget") else "expected none", charged) if x),
                "recovery s": _text(round(float(rec_s.iloc[0]), 3)) if len(rec_s) else "",
            })
    return pd.DataFrame(rows, columns=["scenario", "#", "kind", "target", "when", "landed", "evidence",
                                       "budget charged", "recovery s"])


def faults_table(frames: Frames) -> Dict[str, Any]:
    df = faults_frame(frames)
    classes = ["pass" if str(x).startswith("yes") else "fail" if str(x).startswith("no") else "unknown"
               for x in df["landed"]]
    return table_data(df, "faults", classes, {"scenario": ["#" + anchor(str(n)) for n in df["scenario"]]})


# -------------------------------------------------------------------- timeline
WIDTH, LEFT, PLOT_W, TOP, LANE, AXIS = 1100, 120, 960, 6, 30, 32
LABEL_H = 14   # the row above the plot that names each fault mark
BAR_H = 11
#: worker events that belong to one process of an attempt
PROCESS_KINDS = ("worker_start", "step", "checkpoint_written", "report", "worker_error", "worker_end")
FAULT_STYLE = {"injected": ("#d62728", ""), "healed": ("#2ca02c", "4 3"), "skipped": ("#888", "2 3")}


def _rows(df: pd.DataFrame, results: str) -> pd.DataFrame:
    return df[df["results"] == results]


def _attempt_span(a: Dict[str, Any]):
    begin = next((a[k] for k in ("t_start", "t_group_started", "t_worker_start", "t_first_step")
                  if not missing(a.get(k))), a["t_end"])
    return begin, a["t_end"]


def _attempt_ranks(a: Dict[str, Any], steps: pd.DataFrame) -> List[int]:
    mine = steps[(steps["fit_index"] == a["fit_index"]) & (steps["attempt"] == a["attempt"])]
    ranks = sorted({int(r) for r in mine["rank"].dropna()})
    return ranks or list(range(int(a["world_size"]) if not missing(a.get("world_size")) else 1))


def _clip(text: Any, n: int = 300) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def processes(events: List[Dict[str, Any]]) -> Dict[tuple, Dict[str, Any]]:
    """(fit, attempt, rank) -> the worker process that ran it: pid, node, its
    first and last event, the steps it recorded, what it restored, its error."""
    out: Dict[tuple, Dict[str, Any]] = {}
    for e in events:
        if e.get("kind") not in PROCESS_KINDS or e.get("rank") is None or e.get("attempt") is None:
            continue
        key = (e.get("fit_index"), e["attempt"], int(e["rank"]))
        p = out.setdefault(key, {"t_begin": e["t"], "t_end": e["t"], "pid": None, "node_id": None, "steps": [],
                                 "restored_step": None, "error": None, "ended": None})
        p["t_begin"], p["t_end"] = min(p["t_begin"], e["t"]), max(p["t_end"], e["t"])
        p["pid"] = p["pid"] or e.get("pid")
        p["node_id"] = p["node_id"] or e.get("node_id")
        if e["kind"] == "step" and e.get("step") is not None:
            p["steps"].append(int(e["step"]))
        elif e["kind"] == "worker_start":
            p["restored_step"] = e.get("restored_step")
        elif e["kind"] == "worker_error":
            p["error"] = f"{e.get('error_type') or 'error'}: {_clip(e.get('error') or '')}"
            p["t_error"] = e["t"]
        elif e["kind"] == "worker_end":
            p["ended"] = "ended"
    return out


def _ticks(x0: float, w: float) -> List[Dict[str, Any]]:
    raw = w / 8
    p = 10 ** math.floor(math.log10(raw))
    m = raw / p
    step = p * (1 if m < 1.5 else 2 if m < 3 else 5 if m < 7 else 10)
    digits = min(max(0, -math.floor(math.log10(step))), 6)
    t, out = math.ceil(x0 / step) * step, []
    while t <= x0 + w + 1e-9:
        out.append({"x": LEFT + (t - x0) / w * PLOT_W, "label": f"{t:.{digits}f}"})
        t += step
    return out


def _attempt_title(a: Dict[str, Any]) -> str:
    ended = a.get("ended")
    why = " ".join(_text(a.get(k)) for k in ("error_type", "decision", "budget") if not missing(a.get(k)))
    lines = [f"fit {a['fit_index']} · attempt {a['attempt']}" + (f" ({a['attempt_id']})" if not missing(
        a.get("attempt_id")) else ""),
             f"ended: {ended}" + (f" — {why}" if why else ""),
             f"workers: {_text(a.get('world_size'))} on {_text(a.get('n_nodes'))} node(s)",
             f"steps {_text(a.get('first_step'))}–{_text(a.get('last_step'))}"]
    if not missing(a.get("restored_step")):
        lines.append(f"restored from step {_text(a.get('restored_step'), 0)}")
    return "\n".join(lines)


def timeline_data(frames: Frames, results: str, events: List[Dict[str, Any]], label: str,
                  recovery_known: bool = True) -> Dict[str, Any]:
    """What timeline.svg.j2 draws for one run: a lane per rank with a bar per
    worker process (attempts alternate halves of the lane), steps as ticks,
    checkpoints and worker errors as marks; the controller's lane with the
    attempts, registered checkpoints and failure decisions; faults across all
    lanes, each labelled above the plot; recoveries shaded, unless `recovery_known` is False (the
    run's recovery was not judged: no band then, where none was measured). x is in seconds
    since the run's first event."""
    att, steps, faults, ckpt, rec, dec = (_rows(getattr(frames, n), results) for n in
                                          ("attempts", "steps", "faults", "checkpoints", "recovery", "decisions"))
    procs = processes(events)
    times = [float(t) for col in (att["t_start"], att["t_end"], steps["t"], faults["t"], ckpt["t"], dec["t"])
             for t in col if not missing(t)] + [v for p in procs.values() for v in (p["t_begin"], p["t_end"])]
    start = _rows(frames.scenarios, results)["t_run_start"].dropna()
    times += [float(t) for t in start]
    t0, t1 = min(times, default=0.0), max(times, default=1.0)
    span = max(t1 - t0, 1e-3)
    pad = 0.01 * span
    x0, w = -pad, span + 2 * pad
    min_w = span / 1500

    attempts = att.to_dict("records")
    order = {(a["fit_index"], a["attempt"]): i for i, a in enumerate(attempts)}
    ranks = sorted({k[2] for k in procs} | {r for a in attempts for r in _attempt_ranks(a, steps)}) or [0]
    lane_of = {r: i for i, r in enumerate(ranks)}
    ctrl = len(ranks)
    plot_h = LANE * (ctrl + 1)

    def bar_y(rank: int, i: int) -> float:
        return lane_of[rank] * LANE + (3 if i % 2 == 0 else 3 + BAR_H + 2)

    def x(t: float) -> float:
        return float(t) - t0

    nodes = {p["node_id"] for p in procs.values() if p["node_id"]}
    lanes = [{"label": f"rank {r}", "y": lane_of[r] * LANE, "h": LANE,
              "title": f"rank {r}: {sum(1 for k in procs if k[2] == r)} worker process(es)"} for r in ranks]
    lanes.append({"label": "controller", "y": ctrl * LANE, "h": LANE,
                  "title": f"controller: {len(attempts)} attempt(s), {len(nodes)} node(s) used by workers"})

    bars, marks = [], []
    for i, a in enumerate(attempts):
        color = ATTEMPT_COLORS[i % len(ATTEMPT_COLORS)]
        begin, end = _attempt_span(a)
        bars.append({"cls": "attempt", "x": x(begin), "y": ctrl * LANE + (3 if i % 2 == 0 else 5 + BAR_H),
                     "w": max(end - begin, min_w), "h": BAR_H, "color": color, "title": _attempt_title(a)})
        for rank in _attempt_ranks(a, steps):
            if (a["fit_index"], a["attempt"], rank) not in procs:   # no worker event: the attempt's span
                bars.append({"cls": "process", "x": x(begin), "y": bar_y(rank, i), "w": max(end - begin, min_w),
                             "h": BAR_H, "color": color,
                             "title": f"rank {rank} · no worker event recorded\n{_attempt_title(a)}"})
    for (fit, attempt, rank), p in sorted(procs.items(), key=lambda kv: kv[1]["t_begin"]):
        i = order.get((fit, attempt), 0)
        a = attempts[i] if i < len(attempts) else {}
        lines = [f"rank {rank} · pid {_text(p['pid'])} · node {_text(p['node_id'])}",
                 f"fit {fit} · attempt {attempt}" + (f" (ended {a['ended']})" if a.get("ended") else ""),
                 f"{_seconds(x(p['t_begin']))}–{_seconds(x(p['t_end']))} s"]
        if p["steps"]:
            lines.append(f"steps {min(p['steps'])}–{max(p['steps'])} ({len(set(p['steps']))})")
        if not missing(p["restored_step"]):
            lines.append(f"restored from step {p['restored_step']}")
        lines.append(f"error {p['error']}" if p["error"] else "no error recorded")
        bars.append({"cls": "process" + (" error" if p["error"] else ""), "x": x(p["t_begin"]),
                     "y": bar_y(rank, i), "w": max(p["t_end"] - p["t_begin"], min_w), "h": BAR_H,
                     "color": ATTEMPT_COLORS[i % len(ATTEMPT_COLORS)], "title": "\n".join(lines)})
        if p["error"]:
            y = bar_y(rank, i)
            marks.append({"cls": "worker-error", "x": x(p["t_error"]), "y1": y - 2, "y2": y + BAR_H + 2,
                          "color": "#b00020", "width": 4, "dash": "",
                          "title": f"worker error · rank {rank} · pid {_text(p['pid'])} · node "
                                   f"{_text(p['node_id'])}\nfit {fit} · attempt {attempt}\n{p['error']}"})

    paths: Dict[bool, List[str]] = {False: [], True: []}
    for s in steps.to_dict("records"):
        if missing(s.get("rank")) or int(s["rank"]) not in lane_of:
            continue
        y = bar_y(int(s["rank"]), order.get((s["fit_index"], s["attempt"]), 0))
        paths[bool(s.get("lost")) if not missing(s.get("lost")) else False].append(
            f"M{_seconds(x(s['t']))} {_units(y)}V{_units(y + BAR_H)}")
    step_paths = [{"cls": "steps lost" if lost else "steps", "color": "#d62728" if lost else "#222",
                   "d": "".join(d)} for lost, d in paths.items() if d]

    for c in ckpt.to_dict("records"):
        where = f"step {_text(c.get('step'), 0)} · {c['event']}"
        detail = "" if missing(c.get("path")) else f"\n{_clip(c['path'], 200)}"
        if c["event"] == "registered":
            marks.append({"cls": "checkpoint registered", "x": x(c["t"]), "y1": ctrl * LANE + 2,
                          "y2": ctrl * LANE + LANE - 2, "color": "#9467bd", "width": 3, "dash": "",
                          "title": f"checkpoint registered by the controller · {where}{detail}"})
        elif c["event"] == "written" and not missing(c.get("rank")) and int(c["rank"]) in lane_of:
            y = bar_y(int(c["rank"]), order.get((c["fit_index"], c["attempt"]), 0))
            marks.append({"cls": "checkpoint written", "x": x(c["t"]), "y1": y - 2, "y2": y + BAR_H + 2,
                          "color": "#9467bd", "width": 3, "dash": "",
                          "title": f"checkpoint written · rank {int(c['rank'])} · {where}{detail}"})
    for d in dec.to_dict("records"):
        marks.append({"cls": "decision", "x": x(d["t"]), "y1": ctrl * LANE, "y2": ctrl * LANE + LANE,
                      "color": "#d62728" if d.get("decision") == "RAISE" else "#ff7f0e", "width": 4, "dash": "",
                      "title": f"failure decision: {_text(d.get('decision'))} · budget {_text(d.get('budget'))}"
                               f"\nerror {_text(d.get('error_type'))} · count {_text(d.get('count'), 0)}"
                               f"\nstate {_text(d.get('prev'))} → {_text(d.get('state'))}"})
    labels: List[Dict[str, Any]] = []   # a fault's kind (or healed/skipped) above its mark
    notices: List[Dict[str, Any]] = []  # a preemption's notice: the drain to its deadline
    for f in faults.to_dict("records"):
        color, dash = FAULT_STYLE.get(f["event"], ("#888", "2 3"))
        at = f["t_done"] if not missing(f.get("t_done")) else f["t"]
        hit = {k.split(".", 1)[1]: v for k, v in f.items() if k.startswith("hit.") and not missing(v)}
        asked = {k.split(".", 1)[1]: v for k, v in f.items() if k.startswith("asked.") and not missing(v)}
        lines = [f"fault {f['event']}: {f['fault_kind']} (#{_text(f.get('fault'), 0)})",
                 f"at {_seconds(x(at))} s" + (f", {f['delay_s'] * 1000:.0f} ms after it was requested"
                                              if not missing(f.get("delay_s")) else "")]
        if asked:
            lines.append("asked: " + ", ".join(f"{k} {v}" for k, v in asked.items()))
        if hit:
            lines.append("hit: " + ", ".join(f"{k} {_clip(v, 60)}" for k, v in hit.items()))
        if not missing(f.get("detail")):
            lines.append(_clip(f["detail"]))
        marks.append({"cls": f"fault {f['event']}", "x": x(at), "y1": 0, "y2": plot_h, "color": color,
                      "width": 2.5, "dash": dash, "title": "\n".join(lines)})
        if f["event"] == "injected" and _is_num(hit.get("deadline_ms")):
            deadline = float(hit["deadline_ms"]) / 1000.0   # a drain's notice: from the drain to the deadline
            notices.append({"x": x(at), "w": max(deadline - float(at), min_w),
                            "title": f"preemption notice of fault #{_text(f.get('fault'), 0)}: the node was drained "
                                     f"at {_seconds(x(at))} s and due at {_seconds(x(deadline))} s "
                                     f"({deadline - float(at):.1f} s of notice)"})
        name = f["fault_kind"] if f["event"] == "injected" else f["event"]
        labels.append({"t": x(at), "px": LEFT + (x(at) - x0) / w * PLOT_W, "color": color,
                       "text": f"#{_text(f.get('fault'), 0)} {name}", "title": "\n".join(lines)})

    shades = []
    for r in (rec.dropna(subset=["t_first_step"]) if recovery_known else rec.iloc[0:0]).to_dict("records"):
        parts = ", ".join(f"{p} {_text(r.get(p))} s" for p in PARTS if not missing(r.get(p)))
        shades.append({"x": x(r["t0"]), "w": max(r["t_first_step"] - r["t0"], min_w),
                       "title": f"recovery {_text(r.get('recovery_s'))} s ({_text(r.get('source'))} "
                                f"{_text(r.get('fault_kind'))}, budget {_text(r.get('budget'))})\n{parts}"})
    top = TOP + (LABEL_H if labels else 0)
    return {"label": label, "width": WIDTH, "height": top + plot_h + AXIS, "left": LEFT, "plot_w": PLOT_W,
            "top": top, "plot_h": plot_h, "x0": x0, "w": w, "lanes": [{**ln, "y": ln["y"] + top - TOP} for ln in lanes],
            "ticks": _ticks(x0, w), "bars": bars, "marks": marks, "step_paths": step_paths, "shades": shades,
            "notices": notices,
            "labels": labels, "recovery_note": "" if recovery_known or not len(rec) else
            "no recovery band: the run's recovery was not judged (its evidence is incomplete)"}


# -------------------------------------------------------------------- scenarios
#: log folders a run keeps: Ray's (RESULTS/logs, kept at teardown) and TorchElastic's agents'
LOG_DIRS = ("logs", "torchrun")


def _files(results: str, out_dir: str) -> List[Dict[str, str]]:
    """The run's own files, linked relative to the page; its log folders with
    their driver and agent logs (Ray's, TorchElastic's)."""
    def href(*parts: str) -> str:
        return os.path.relpath(os.path.join(results, *parts), out_dir).replace(os.sep, "/")

    out = [{"name": name, "href": href(name)} for name in RUN_FILES if os.path.isfile(os.path.join(results, name))]
    for d in LOG_DIRS:
        folder = os.path.join(results, d)
        if not os.path.isdir(folder):
            continue
        out.append({"name": f"{d}/", "href": href(d) + "/"})
        out += [{"name": f"{d}/{f}", "href": href(d, f)} for f in sorted(os.listdir(folder))
                if f.endswith(".log") and os.path.isfile(os.path.join(folder, f))][:8]
    suite_logs = os.path.join(os.path.dirname(os.path.abspath(results)), "logs")
    if os.path.isfile(os.path.join(suite_logs, "ftharness-driver.log")):   # a suite keeps its cluster's logs once
        out.append({"name": "suite logs/", "href": href("..", "logs") + "/"})
    return out


def scenario_data(frames: Frames, out_dir: str) -> List[Dict[str, Any]]:
    """One entry per run: verdict, files, reasons, timeline."""
    outcomes = outcome_verdicts(frames).set_index("results")
    out = []
    for s in frames.scenarios.to_dict("records"):
        r = s["results"]
        o = outcomes.loc[r]
        label = str(o["label"])
        mismatches = [str(m) for m in _as_list(s.get("mismatches"))]
        inconclusive = [str(m) for m in _as_list(s.get("inconclusive"))]
        # no reasons recorded (an old or hand-made summary): what outcome_verdicts found
        problems = [] if mismatches or inconclusive or o["verdict"] == "PASS" or not o["message"] \
            else [str(o["message"])]
        events = metrics.annotate(read_results(r)[1])
        judged = {p["property"]: p["status"] for p in folder_statuses(r)["properties"]}
        out.append({"results": r, "label": label, "anchor": anchor(label), "slug": slug(label),
                    "started": utc(s.get("t_run_start")),
                    "verdict": o["verdict"], "cls": VERDICT_CLASS.get(o["verdict"], "unknown"),
                    "outcome": shown_outcome(o["outcome"]), "expected": o["expected"],
                    "internal_error": "" if missing(s.get("internal_error")) else _clip(s["internal_error"]),
                    "files": _files(r, out_dir), "mismatches": mismatches, "inconclusive": inconclusive,
                    "problems": problems,
                    "timeline": timeline_data(frames, r, events, label,
                                              recovery_known=judged.get("recovers") != "INCONCLUSIVE"),
                    "warnings": [f"property {u.get('property')} failed, but the scenario did not ask for it: "
                                 f"{u.get('explanation') or ''}" for u in o["unasked"] or []]})
    return out


# -------------------------------------------------------------------- recovery
#: fewer recoveries than this in a configuration: its points are drawn, no box
#: (quartiles of one to four values are not a distribution)
MIN_BOX_SAMPLES = 5
#: fewer recoveries than this over all runs: no chart (one or two dots say nothing a table row does not)
MIN_CHART_POINTS = 3


def recovery_figure(samples: Dict[str, Sequence[float]]) -> Figure:
    """Every recovery as a jittered point per configuration, with a box only
    where there are MIN_BOX_SAMPLES or more of them."""
    data = {k: np.asarray(v, dtype=float) for k, v in samples.items() if len(v)}
    fig = Figure(figsize=(max(4.0, 1.4 * len(data) + 2), 3.6))
    ax = fig.add_subplot()
    if data:
        boxed = [i for i, v in enumerate(data.values(), start=1) if len(v) >= MIN_BOX_SAMPLES]
        if boxed:
            ax.boxplot([list(data.values())[i - 1] for i in boxed], positions=boxed, showfliers=False, widths=0.5)
        jitter = np.random.default_rng(0)
        for i, values in enumerate(data.values(), start=1):
            ax.scatter(i + jitter.uniform(-0.12, 0.12, len(values)), values, s=14, alpha=0.7,
                       color="#4c78a8", zorder=3)
        ax.set_xticks(range(1, len(data) + 1), list(data), rotation=20, ha="right")
        ax.set_xlim(0.4, len(data) + 0.6)
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


def recovery_data(frames: Frames, config: Dict[str, str]) -> Dict[str, Any]:
    rec = frames.recovery.assign(configuration=frames.recovery["results"].map(config))
    samples = {c: rec.loc[rec["configuration"] == c, "recovery_s"].dropna().tolist()
               for c in dict.fromkeys(config.values())}
    points = sum(len(v) for v in samples.values())
    plot = Markup(svg(recovery_figure(samples))) if points >= MIN_CHART_POINTS else ""
    names = labels(frames.scenarios)
    parts = rec.assign(scenario=rec["results"].map(names))[
        ["scenario", "configuration", "source", "fault_kind", "budget", *PARTS, "recovery_s"]]
    return {"plot": plot, "min_box": MIN_BOX_SAMPLES, "points": points, "min_points": MIN_CHART_POINTS, "table": table_data(parts, "recovery", links={
        "scenario": ["#" + anchor(str(n)) for n in parts["scenario"]]}),
        "by_kind": table_data(by_fault_kind(frames, names), "by-kind")}


def by_fault_kind(frames: Frames, names: Dict[str, str]) -> pd.DataFrame:
    """Recovery time and lost work per scenario and fault kind (a soak's many
    faults at a glance); lost steps are those of the attempt each recovery ended."""
    rec = frames.recovery
    if rec.empty:
        return pd.DataFrame(columns=["scenario", "fault kind", "recoveries", "median s", "p95 s", "max s",
                                     "lost steps"])
    steps = frames.steps
    lost = (steps[steps["lost"].fillna(False).astype(bool)]
            .drop_duplicates(["results", "fit_index", "attempt", "step"])
            .groupby(["results", "fit_index", "attempt"]).size() if not steps.empty else pd.Series(dtype=int))
    rows = []
    kinds = rec["fault_kind"].fillna(rec["source"]).map(lambda k: k if isinstance(k, str) else "(no fault kind)")
    for (results, kind), g in rec.assign(fault_kind=kinds).groupby(["results", "fault_kind"], sort=False):
        r = pd.to_numeric(g["recovery_s"], errors="coerce").dropna()
        n_lost = sum(int(lost.get((results, f, a), 0)) for f, a in zip(g["fit_index"], g["attempt"]))
        rows.append({"scenario": names.get(results, results), "fault kind": kind, "recoveries": len(g),
                     "median s": r.median() if r.size else None, "p95 s": r.quantile(0.95) if r.size else None,
                     "max s": r.max() if r.size else None, "lost steps": n_lost})
    return pd.DataFrame(rows)


def advice_data(folders: List[str]) -> Dict[str, Any]:
    """The advice, sized from the runs' own cluster (their accelerators: one
    per worker); only the values that could be computed are rows, and `gaps`
    says once why each other one could not and which run would measure it."""
    a = advice.advise(folders, accelerators=advice.cluster_accelerators(folders))
    gaps = advice.gaps(a)
    cost, recovery = a.get("checkpoint_cost_s"), a.get("recovery_s")
    ready = cost is not None and cost > 0 and recovery is not None   # the run has what an extrapolation needs
    keys = [k for k in advice.LABELS if (k not in gaps or k == "checkpoint_cost_s" and cost is not None)
            and (ready or k in advice.MEASURED)]
    rows = pd.DataFrame({"quantity": [advice.LABELS[k] for k in keys], "value": [_text(a.get(k), 3) for k in keys]})
    data = table_data(rows, "advice")
    if ready:
        headline = (f"Extrapolated from C = {cost:.3g} s and R = {recovery:.3g} s measured here, with Llama 3's "
                    f"failure rate scaled to {a['accelerators']} accelerator(s) (a job MTBF of "
                    f"{a['cluster_mtbf_s'] / 3600:,.0f} h): Daly interval {a['daly_interval_s']:,.0f} s. "
                    f"Open for the assumptions and every figure.")
    else:
        headline = ("Not extrapolated: these runs did not measure what it needs (a checkpoint cost above a plain "
                    "step, and a recovery). Open for what was measured and which run would measure the rest.")
    return {"basis": a["basis"], "table": data, "ready": ready, "headline": headline,
            "gaps": [{"label": advice.LABELS[k], "reason": gaps[k]} for k in advice.LABELS if k in gaps]}


# ------------------------------------------------------------------------ page
def _meta(frames: Frames) -> str:
    """How many runs, when, and the versions the first run recorded."""
    versions = frames.scenarios.filter(like="versions.").head(1).dropna(axis=1)
    parts = [f"{len(frames.scenarios)} results folder(s)", f"generated {utc(time.time())[:-8]} UTC"]
    parts += [f"{c.split('.', 1)[1]} {v}" for c, v in versions.iloc[0].items()] if len(versions) else []
    return "; ".join(parts)


def render_report(frames: Frames, config: Dict[str, str], files: List[str], out_dir: str,
                  skipped: Sequence[Dict[str, str]] = ()) -> str:
    """The page's HTML, from report.html.j2; `skipped`: the scenarios this host could not run."""
    from ftharness.reports.skipped import html as skipped_html

    return ENV.get_template("report.html.j2").render(
        title="ftharness report", script=True, meta=_meta(frames), banner=banner_data(frames),
        skipped=list(skipped), skipped_html=Markup(skipped_html(list(skipped))),
        scenarios=scenario_data(frames, out_dir), summary=summary_table(frames),
        recovery=recovery_data(frames, config), advice=advice_data(list(config)), faults=faults_table(frames),
        properties=properties_table(frames), gpu=Markup(gpu_section(list(config))),
        data=[{"name": os.path.basename(f), "href": os.path.relpath(f, out_dir).replace(os.sep, "/")}
              for f in files])


def write_report(results_paths: Iterable[PathLike], out_dir: PathLike, page_name: str = "index.html",
                 data_dir: str = "") -> str:
    """Write out_dir/page_name and the frames as CSV and Parquet in
    out_dir/data_dir (beside it by default; a subfolder keeps a results folder
    tidy); returns the path of the page."""
    from ftharness.reports import skipped as skips

    paths = [results_paths] if isinstance(results_paths, (str, os.PathLike)) else list(results_paths)
    out_dir = os.fspath(out_dir)
    skipped = skips.read(paths)
    try:
        frames = Frames.load(paths)
    except FileNotFoundError:
        if not skipped:
            raise
        return _write_skipped_only(skipped, out_dir, page_name)   # every scenario skipped: nothing ran
    data = os.path.join(out_dir, data_dir)
    files = frames.to_csv(data) + frames.to_parquet(data)
    html = render_report(frames, configurations(paths), files, out_dir, skipped)
    path = os.path.join(out_dir, page_name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    return path


def _write_skipped_only(skipped: List[Dict[str, str]], out_dir: str, page_name: str) -> str:
    """The page of a suite whose every scenario this host skipped."""
    from ftharness.reports.skipped import html as skipped_html

    body = (f'<h1>ftharness report</h1><div class="banner unknown" id="verdict"><strong>SKIPPED</strong> '
            f"({len(skipped)} SKIPPED, no run)</div>" + section("skipped", "Skipped", skipped_html(skipped)))
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, page_name)
    with open(path, "w", encoding="utf-8") as f:
        f.write(page("ftharness report", body))
    return path
