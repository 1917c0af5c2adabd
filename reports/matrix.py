"""The matrix's report: a cell per scenario and configuration, the changes between
neighbours, plots (pure over the rows of cells.jsonl; pandas and matplotlib).

- `cells_frame`: one row per run (cell and repeat).
- `configs_frame`: one row per scenario and configuration, its repeats pooled:
  verdicts, outcome, budgets charged, recovery time as a median with a 95 %
  bootstrap interval, lost steps, goodput.
- `changes`: every difference in behaviour between adjacent releases (and
  between neighbouring values of every other axis), one sentence each.

Only distinct, judged runs pool: a run that did not produce a summary is
listed, never averaged.
"""

from __future__ import annotations

import html
import json
import os
import random
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple

from ftharness import releases

BUDGET_FIELDS = {"worker_group": "max_failures", "preemption": "max_preemption_failures",
                 "controller": "controller_failure_limit"}
PARTS = ("detection_s", "teardown_s", "scheduling_s", "restore_s", "first_step_s")


def read_rows(folder: str) -> List[Dict[str, Any]]:
    """The rows of `folder`/cells.jsonl; the last line of a cell wins (a rerun replaces it).
    Read through the one reader (ftharness.inputs.read_input, kind cells: bounded, one object
    with a `cell` a line): InputRefused (one line) for a file it does not read."""
    from ftharness.inputs import InputRefused, read_input, shown

    rows: Dict[str, Dict[str, Any]] = {}
    path = os.path.join(folder, "cells.jsonl")
    for row in read_input(path, "cells"):
        if not isinstance(row["cell"], str):
            raise InputRefused(f"{shown(path)}: a cell named by a {type(row['cell']).__name__}, not a string")
        rows[row["cell"]] = row
    return list(rows.values())


def _num(x) -> Optional[float]:
    return float(x) if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def cell_facts(row: Dict[str, Any]) -> Dict[str, Any]:
    """The figures of one run that the report and the changes compare."""
    s = row.get("summary") or {}
    rm = s.get("run_metrics") or {}
    charged = {b: n for b, n in (s.get("budgets") or {}).items() if n}
    rec = [r for r in (s.get("recovery_times_s") or []) if _num(r) is not None]
    return {
        "cell": row["cell"], "scenario": row["scenario"], "ray": row["ray"], "config": row["config"],
        "settings": row.get("settings") or {}, "repeat": row.get("repeat", 1),
        "verdict": row.get("verdict"), "outcome": s.get("outcome"), "error_type": s.get("error_type"),
        "error_cause": s.get("error_cause"), "attempts": s.get("attempts"), "charged": charged,
        "recovery_s": max(rec) if rec else None,
        "parts": {p: _num((rm.get("recovery_parts_mean_s") or {}).get(p)) for p in PARTS},
        "lost_steps": _num(rm.get("lost_steps")), "goodput": _num(rm.get("ettr")),
        "properties": {k: v.get("status") for k, v in (s.get("properties") or {}).items()},
        "notes": list(row.get("notes") or []), "results": row.get("results"),
        "judged": bool(s) and row.get("verdict") in ("PASS", "FAIL", "INCONCLUSIVE"),
        "error": row.get("error"),
    }


def bootstrap(values: Sequence[float], n: int = 2000, seed: int = 0) -> Tuple[Optional[float], Optional[float],
                                                                            Optional[float]]:
    """(median, low, high): the median and its 95 % percentile-bootstrap interval; no
    interval from fewer than 2 samples."""
    vals = sorted(v for v in values if v is not None)
    if not vals:
        return None, None, None
    med = _median(vals)
    if len(vals) < 2:
        return med, None, None
    rng = random.Random(seed)
    meds = sorted(_median(sorted(rng.choice(vals) for _ in vals)) for _ in range(n))
    return med, meds[int(0.025 * n)], meds[min(n - 1, int(0.975 * n))]


def _median(vals: Sequence[float]) -> float:
    k = len(vals)
    return vals[k // 2] if k % 2 else (vals[k // 2 - 1] + vals[k // 2]) / 2


def _mode(values: Iterable[Any]) -> Any:
    c = Counter(json.dumps(v, sort_keys=True, default=str) for v in values)
    return json.loads(c.most_common(1)[0][0]) if c else None


def configs(facts: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """One entry per (scenario, config): repeats pooled (judged runs only)."""
    groups: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
    for f in facts:
        groups.setdefault((f["scenario"], f["config"]), []).append(f)
    out = []
    for (scenario, config), runs in groups.items():
        judged = [r for r in runs if r["judged"]]
        med, lo, hi = bootstrap([r["recovery_s"] for r in judged])
        out.append({
            "scenario": scenario, "config": config, "ray": runs[0]["ray"], "settings": runs[0]["settings"],
            "runs": len(runs), "judged": len(judged),
            "verdicts": dict(Counter(r["verdict"] for r in runs)),
            "verdict": _cell_verdict(runs),
            "outcome": _mode(r["outcome"] for r in judged),
            "error_type": _mode(r["error_type"] for r in judged),
            "error_cause": _mode(r.get("error_cause") for r in judged),
            "charged": _mode(r["charged"] for r in judged) or {},
            "attempts": _mode(r["attempts"] for r in judged),
            "recovery_median_s": med, "recovery_low_s": lo, "recovery_high_s": hi,
            "parts": {p: _mean([r["parts"][p] for r in judged]) for p in PARTS},
            "lost_steps": _mean([r["lost_steps"] for r in judged]),
            "goodput": _mean([r["goodput"] for r in judged]),
            "properties": _mode(r["properties"] for r in judged) or {},
            "notes": sorted({n for r in runs for n in r["notes"]}),
            "results": [r["results"] for r in runs if r["results"]],
            "errors": sorted({r["error"] for r in runs if r.get("error")}),
        })
    return sorted(out, key=_order)


def _order(c: Dict[str, Any]):
    return (c["scenario"], releases.parse(c["ray"]), json.dumps(c["settings"], sort_keys=True, default=str))


def _mean(vals: List[Optional[float]]) -> Optional[float]:
    v = [x for x in vals if x is not None]
    return sum(v) / len(v) if v else None


def _cell_verdict(runs: List[Dict[str, Any]]) -> str:
    """FAIL if any repeat failed, else INCONCLUSIVE if any was, else PASS; a cell with no
    judged run takes the first run's own status (REFUSED, ERROR, NO ENV, TIMEOUT)."""
    verdicts = [r["verdict"] for r in runs]
    for v in ("FAIL", "ERROR", "TIMEOUT", "INCONCLUSIVE", "REFUSED", "NO ENV", "N/A"):
        if v in verdicts:
            return v
    return "PASS" if verdicts and all(v == "PASS" for v in verdicts) else (verdicts[0] if verdicts else "NONE")


# ------------------------------------------------------------------------------------ changes
def _charged_text(charged: Dict[str, int]) -> str:
    if not charged:
        return "no budget was charged"
    return "charged to " + " and ".join(f"{BUDGET_FIELDS.get(b, b)} ({n})" for b, n in sorted(charged.items()))


def _behaviour(c: Dict[str, Any]) -> str:
    if not c["judged"]:
        return f"it did not run ({c['verdict']}{': ' + c['errors'][0][:160] if c['errors'] else ''})"
    out = c["outcome"] or "no outcome"
    verb = {"succeeded": "the run recovered" if c["charged"] else "the run succeeded",
            "failed": f"the run failed ({_error_text(c)})" if c["error_type"] else "the run failed"}.get(out, out)
    charged = f"the failure was {_charged_text(c['charged'])}" if c["charged"] else "no budget was charged"
    return f"{charged} and {verb}, {c['verdict']}"


def _error_text(c: Dict[str, Any]) -> str:
    """'ControllerError', or 'ActorDiedError: its constructor raised TypeError'."""
    cause = c.get("error_cause")
    return f"{c['error_type']}: its constructor raised {cause}" if cause else str(c["error_type"])


def _differs(a: Dict[str, Any], b: Dict[str, Any]) -> List[str]:
    keys = []
    for k in ("outcome", "error_type", "error_cause", "charged", "verdict"):
        if a.get(k) != b.get(k):
            keys.append(k)
    if bool(a["judged"]) != bool(b["judged"]):
        keys.append("judged")
    for name in sorted(set(a["properties"]) | set(b["properties"])):
        if a["properties"].get(name) != b["properties"].get(name) and "verdict" not in keys:
            keys.append(f"property {name}")
    return keys


def _neighbours(cs: List[Dict[str, Any]]) -> List[Tuple[str, Dict[str, Any], Dict[str, Any]]]:
    """(axis, a, b): pairs of configurations of one scenario that differ in exactly one axis,
    adjacent in that axis's order (releases by version, other values as given)."""
    pairs = []
    axes = sorted({k for c in cs for k in c["settings"]} | {"ray"})
    for axis in axes:
        def rest(c):
            d = dict(c["settings"], ray=c["ray"])
            d.pop(axis, None)
            return json.dumps(d, sort_keys=True, default=str)

        lines: Dict[Tuple[str, str], List[Dict[str, Any]]] = {}
        for c in cs:
            lines.setdefault((c["scenario"], rest(c)), []).append(c)
        for group in lines.values():
            if axis == "ray":
                group.sort(key=lambda c: releases.parse(c["ray"]))
            for a, b in zip(group, group[1:]):
                pairs.append((axis, a, b))
    return pairs


def changes(cs: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Every difference in behaviour between neighbouring configurations, one sentence each."""
    out = []
    for axis, a, b in _neighbours(cs):
        what = _differs(a, b)
        if not what:
            continue
        va = a["ray"] if axis == "ray" else a["settings"].get(axis)
        vb = b["ray"] if axis == "ray" else b["settings"].get(axis)
        where = (lambda v: f"on {v}") if axis == "ray" else (lambda v: f"with {axis}={v}")
        sentence = f"{a['scenario']}: {where(va)} {_behaviour(a)}; {where(vb)} {_behaviour(b)}."
        policy = [n for n in a["notes"] + b["notes"] if n.startswith("expect.outcome")]
        out.append({"scenario": a["scenario"], "axis": axis, "from": va, "to": vb, "differs": what,
                    "sentence": sentence, "from_results": a["results"], "to_results": b["results"],
                    "as_policy_says": bool(policy) and "verdict" not in what,
                    "policy_notes": policy})
    return out


# ------------------------------------------------------------------------------------ outputs
def write_csv(cs: List[Dict[str, Any]], path: str) -> None:
    import pandas as pd

    rows = []
    for c in cs:
        rows.append({"scenario": c["scenario"], "ray": c["ray"],
                     **{k: json.dumps(v) if isinstance(v, (list, dict)) else v for k, v in c["settings"].items()},
                     "verdict": c["verdict"], "runs": c["runs"], "judged": c["judged"], "outcome": c["outcome"],
                     "error_type": c["error_type"], "charged": _charged_text(c["charged"]),
                     "attempts": c["attempts"], "recovery_median_s": c["recovery_median_s"],
                     "recovery_low_s": c["recovery_low_s"], "recovery_high_s": c["recovery_high_s"],
                     **{f"part_{p}": c["parts"][p] for p in PARTS},
                     "lost_steps": c["lost_steps"], "goodput": c["goodput"], "notes": " | ".join(c["notes"])})
    pd.DataFrame(rows).to_csv(path, index=False)


def write_junit(cs: List[Dict[str, Any]], chg: List[Dict[str, Any]], path: str) -> None:
    """One testcase per scenario and configuration in one <testsuite>, valid
    against junit-10.xsd as ftharness.reports.junit is: FAIL a failure,
    INCONCLUSIVE and runs that did not happen an error; each cell's figures
    (recovery, lost steps, goodput) are suite <property> values named after
    the cell, which CI can trend (the schema allows no properties in a case)."""
    import datetime
    import xml.etree.ElementTree as ET

    from ftharness.reports.junit import TIMESTAMP, xml_text

    written = datetime.datetime.now(datetime.timezone.utc).strftime(TIMESTAMP)   # cells keep no start time
    root = ET.Element("testsuites", name="ftharness matrix")
    suite = ET.SubElement(root, "testsuite", name="ftharness matrix")
    props = ET.SubElement(suite, "properties")
    failures = errors = 0
    for c in cs:
        name = f"{c['scenario']} [{c['config']}]"
        for k, v in (("recovery_median_s", c["recovery_median_s"]), ("lost_steps", c["lost_steps"]),
                     ("goodput", c["goodput"])):
            if v is not None:
                ET.SubElement(props, "property", name=xml_text(f"{name}.{k}"), value=str(round(v, 3)))
        case = ET.SubElement(suite, "testcase", classname=xml_text(f"ftharness.matrix.{c['scenario']}"),
                             name=xml_text(name), time="0.000")
        message = xml_text(_behaviour(c))
        if c["verdict"] == "FAIL":
            failures += 1
            ET.SubElement(case, "failure", type="fail", message=message).text = message
        elif c["verdict"] != "PASS":
            errors += 1
            ET.SubElement(case, "error", type=c["verdict"].lower(), message=message).text = message
        notes = [n for n in c["notes"]] + [x["sentence"] for x in chg
                                           if x["scenario"] == c["scenario"] and (x["to"] == c["ray"])]
        if notes:
            ET.SubElement(case, "system-out").text = xml_text("\n".join(notes))
    counts = {"tests": str(len(cs)), "failures": str(failures), "errors": str(errors)}
    suite.attrib = {"name": "ftharness matrix", **counts, "skipped": "0", "time": "0.000", "timestamp": written}
    root.attrib = {"name": "ftharness matrix", **counts, "time": "0.000"}
    tree = ET.ElementTree(root)
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)


def _plots(cs: List[Dict[str, Any]], folder: str) -> List[str]:
    """recovery.png (median and interval per configuration), parts.png (its parts stacked),
    lost.png (lost steps); only plots that have data."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    made = []
    data = [c for c in cs if c["recovery_median_s"] is not None]
    if data:
        labels = [f"{c['scenario']}\n{c['config']}" for c in data]
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(data) + 2), 4.5))
        med = [c["recovery_median_s"] for c in data]
        err = [[m - (c["recovery_low_s"] if c["recovery_low_s"] is not None else m) for m, c in zip(med, data)],
               [(c["recovery_high_s"] if c["recovery_high_s"] is not None else m) - m for m, c in zip(med, data)]]
        ax.bar(range(len(data)), med, yerr=err, capsize=4, color="#4c78a8")
        ax.set_xticks(range(len(data)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("recovery time (s), median and 95% interval")
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "recovery.png"), dpi=110)
        plt.close(fig)
        made.append("recovery.png")
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(data) + 2), 4.5))
        bottom = [0.0] * len(data)
        for p in PARTS:
            vals = [c["parts"][p] or 0.0 for c in data]
            ax.bar(range(len(data)), vals, bottom=bottom, label=p.removesuffix("_s").replace("_", " "))
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(range(len(data)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel("recovery parts (s, mean)")
        ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "parts.png"), dpi=110)
        plt.close(fig)
        made.append("parts.png")
    lost = [c for c in cs if c["lost_steps"] is not None]
    if lost:
        fig, ax = plt.subplots(figsize=(max(6, 0.6 * len(lost) + 2), 4))
        ax.bar(range(len(lost)), [c["lost_steps"] for c in lost], color="#e45756")
        ax.set_xticks(range(len(lost)), [f"{c['scenario']}\n{c['config']}" for c in lost], rotation=60,
                      ha="right", fontsize=7)
        ax.set_ylabel("lost steps (mean)")
        fig.tight_layout()
        fig.savefig(os.path.join(folder, "lost.png"), dpi=110)
        plt.close(fig)
        made.append("lost.png")
    return made


def _fmt(v, digits=1) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def write_html(cs: List[Dict[str, Any]], chg: List[Dict[str, Any]], folder: str, title: str) -> str:
    e = html.escape
    plots = _plots(cs, folder)
    rows = []
    for c in cs:
        links = " ".join(f'<a href="{e(r)}/report.html">run {i}</a>' for i, r in enumerate(c["results"], 1))
        interval = (f" [{_fmt(c['recovery_low_s'])}, {_fmt(c['recovery_high_s'])}]"
                    if c["recovery_low_s"] is not None else "")
        rows.append(
            f"<tr class='{e(c['verdict'].lower().replace(' ', '-'))}'><td>{e(c['scenario'])}</td><td>{e(c['config'])}</td>"
            f"<td>{e(c['verdict'])}</td><td>{e(str(c['outcome']))}</td><td>{e(_charged_text(c['charged']))}</td>"
            f"<td>{_fmt(c['recovery_median_s'])}{interval}</td><td>{_fmt(c['lost_steps'])}</td>"
            f"<td>{_fmt(c['goodput'], 3)}</td><td>{c['judged']}/{c['runs']}</td>"
            f"<td>{'<br>'.join(e(n) for n in c['notes'] + c['errors'])}</td><td>{links}</td></tr>")
    items = []
    for x in chg:
        links = " ".join(f'<a href="{e(r)}/report.html">{e(str(x["from"]))}</a>' for r in x["from_results"][:1])
        links += " " + " ".join(f'<a href="{e(r)}/report.html">{e(str(x["to"]))}</a>' for r in x["to_results"][:1])
        tag = " <em>(as the release's policy says)</em>" if x["as_policy_says"] else ""
        items.append(f"<li>{e(x['sentence'])}{tag} {links}</li>")
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>{e(title)}</title>
<style>body{{font-family:sans-serif;margin:1.5em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;
padding:3px 6px;font-size:13px;vertical-align:top}}tr.pass td:nth-child(3){{color:#1a7f37}}
tr.fail td:nth-child(3){{color:#cf222e;font-weight:bold}}tr.inconclusive td:nth-child(3){{color:#9a6700}}</style>
</head><body><h1>{e(title)}</h1>
<p>{len(cs)} configuration(s), {sum(c['runs'] for c in cs)} run(s). Each cell is judged by its release's own policy
(ftharness.releases): a difference a release's documented policy predicts is a change, a violated property a FAIL.
Files: <a href="matrix.csv">matrix.csv</a>, <a href="junit.xml">junit.xml</a>, <a href="cells.jsonl">cells.jsonl</a>.</p>
<h2>Changes ({len(chg)})</h2><ul>{''.join(items) or '<li>no difference in behaviour between neighbouring configurations</li>'}</ul>
<h2>Cells</h2><table><tr><th>scenario</th><th>configuration</th><th>verdict</th><th>outcome</th><th>budget charged</th>
<th>recovery s (median [95%])</th><th>lost steps</th><th>goodput</th><th>judged/runs</th><th>notes</th><th>runs</th></tr>
{''.join(rows)}</table>
{''.join(f'<h2>{e(p.removesuffix(".png"))}</h2><img src="{p}" alt="{e(p)}">' for p in plots)}
</body></html>"""
    path = os.path.join(folder, "matrix.html")
    with open(path, "w") as f:
        f.write(page)
    return path


def write_report(folder: str, title: str = "ftharness matrix") -> Dict[str, Any]:
    """matrix.html, matrix.csv, junit.xml and changes.json in `folder` from its cells.jsonl."""
    facts = [cell_facts(r) for r in read_rows(folder)]
    cs = configs(facts)
    chg = changes(cs)
    write_csv(cs, os.path.join(folder, "matrix.csv"))
    write_junit(cs, chg, os.path.join(folder, "junit.xml"))
    with open(os.path.join(folder, "changes.json"), "w") as f:
        json.dump(chg, f, indent=1, default=str)
    write_html(cs, chg, folder, title)
    return {"configs": cs, "changes": chg}
