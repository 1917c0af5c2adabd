"""The report of `ftharness explore`: what was explored, for the terminal and as one HTML page.

Both read explore.json's content (ftharness.harness.run.explore.Exploration.to_dict): the
examples run and their verdicts, the coverage table (fault kind x phase: faults run /
landed), the findings with their shrunk scenarios and confirming repeats, and the time
spent per example. INCONCLUSIVE examples are counted and shown, never as passes.
"""

from __future__ import annotations

import html
import os
from typing import Any, Dict, List, Tuple

from ftharness.scenarios.explore_strategies import PHASES


def _search(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    session = data.get("session", 1)
    return [e for e in data.get("examples") or [] if e.get("purpose") == "search" and e.get("session", 1) == session]


def _session(data: Dict[str, Any]) -> List[Dict[str, Any]]:
    session = data.get("session", 1)
    return sorted((e for e in data.get("examples") or [] if e.get("session", 1) == session), key=lambda e: e["index"])


def _coverage_indices(data: Dict[str, Any]) -> List[int]:
    """The indices of the examples the coverage pass ran: this session's first `first_pass` search examples."""
    return [e["index"] for e in _session(data) if e.get("purpose") == "search"][:data.get("first_pass") or 0]


def coverage_pass(data: Dict[str, Any]) -> str:
    """Which of this session's examples the coverage pass ran, "examples 1-9 (4 a confirming
    repeat)": its `first_pass` examples are the session's first search examples; a repeat that
    confirmed a gap at once falls inside the range and is named. "" when there was none."""
    searched = _coverage_indices(data)
    mine = _session(data)
    if not searched:
        return ""
    first, last = searched[0], searched[-1]
    repeats = [str(e["index"]) for e in mine if e.get("purpose") == "confirm" and first < e["index"] < last]
    return (f"example {first}" if first == last else f"examples {first}-{last}") + (
        f" ({', '.join(repeats)} {'a confirming repeat' if len(repeats) == 1 else 'confirming repeats'})"
        if repeats else "")


def _fault_text(faults: List[Dict[str, Any]], phases: List[str]) -> str:
    parts = []
    for f, p in zip(faults, phases):
        at = f.get("at") or {}
        when = (f"step {at['step']}" if at.get("step") is not None else f"{at['time_s']:g}s" if at.get("time_s")
                is not None else f"{at.get('event')}#{at.get('nth', 1)}")
        extra = {k: v for k, v in f.items() if k not in ("kind", "at")}
        parts.append(f"{f['kind']} @ {when} [{p}]" + (f" {extra}" if extra else ""))
    return "; ".join(parts)


#: the statuses an example can end with, and the word each count takes
_COUNTED = (("PASS", "passed"), ("FAIL", "failed"), ("INCONCLUSIVE", "inconclusive"), ("ERROR", "errors"))


def _counts(data: Dict[str, Any]) -> List[Tuple[str, str]]:
    """(status, "N passed") for each status, in _COUNTED's order: both reports' tallies."""
    c = data.get("counts") or {}
    return [(status, f"{c.get(status, 0)} {word}") for status, word in _COUNTED]


def _found(g: Dict[str, Any]) -> str:
    """How a finding was found and what it shrank to (both reports say it so)."""
    ex = g["example"]
    return (f"found after {g['first_found_s']:.0f}s ({g['examples_before']} examples); shrunk to "
            f"{len(ex['faults'])} fault(s): {_fault_text(ex['faults'], ex['phases'])}")


def spending_lines(data: Dict[str, Any]) -> List[str]:
    """Where the budget went (explore.json's `spending`): per gap the examples that showed it,
    those after it was confirmed, its repeats and the candidates skipped for it; the time to each
    distinct finding and distinct findings per hour; how many candidates were skipped, and by what."""
    sp = data.get("spending") or {}
    if not sp:
        return []
    lines = []
    for g in sp.get("gaps") or []:
        conf = g.get("confirmed_at_s")
        lines.append(f"gap {g['gap']}: {g['examples']} example(s)"
                     + (f", {g['after_confirmed']} after it was confirmed at {conf:.0f}s"
                        + (f" ({g['after_confirmed_known']} under a failure it had shown already)"
                           if "after_confirmed_known" in g else "") if conf is not None
                        else " (not confirmed)")
                     + f", {g['repeats']} repeat(s), {g['skipped']} candidate(s) skipped")
    per_hour = sp.get("findings_per_hour")
    firsts = ", ".join(f"{t['s']:.0f}s {t['signature']}" for t in sp.get("time_to_findings_s") or [])
    lines.append(f"distinct findings: {sp.get('distinct_findings', 0)}"
                 + (f" ({per_hour:g} distinct findings per hour)" if per_hour is not None else "")
                 + (f"; first found at {firsts}" if firsts else ""))
    if sp.get("skipped_total"):
        by = sp.get("skipped_by") or {}
        lines.append(f"skipped {sp['skipped_total']} candidate(s) that could only show a confirmed gap again "
                     f"({by.get('simulator', 0)} with the simulator's course, {by.get('declared', 0)} from the "
                     f"declared classes alone), never run:")
        for x in (sp.get("skipped") or [])[:5]:
            lines.append(f"  - {x['name']} ({x['stage']}): {_fault_text(x['faults'], [''] * len(x['faults'])).replace(' []', '')}: "
                         f"{x['why'][:200]}")
        if sp["skipped_total"] > 5:
            lines.append(f"  - ... {sp['skipped_total'] - 5} more (explore.json: spending.skipped)")
    return lines


def terminal_text(data: Dict[str, Any]) -> str:
    """The explore summary for the terminal."""
    runs = _search(data)
    walls = [e.get("wall_s") or 0 for e in runs]
    lines = [f"explore {data['base']}: {len(runs)} examples in {data.get('wall_s', 0):.0f}s "
             f"(budget {data.get('budget_s', 0):g}s, seed {data.get('seed')}, session {data.get('session', 1)}): "
             + ", ".join(text for _, text in _counts(data))
             + (f"; per example {min(walls):.0f}-{max(walls):.0f}s, mean {sum(walls) / len(walls):.0f}s" if walls else "")]
    if data.get("stopped"):
        lines.append(f"stopped before the budget was spent: {data['stopped']}")
    if coverage_pass(data):
        lines.append(f"{coverage_pass(data)}: the coverage pass (every kind once in its simplest schedule); "
                     f"then Hypothesis's search")
    lines.append(f"kinds: {', '.join(data.get('kinds') or [])}")
    for kind, why in (data.get("left_out") or {}).items():
        lines.append(f"  left out {kind}: {why}")
    lines.append("coverage (faults run/landed by phase):")
    cov = data.get("coverage") or {}
    phases = [p for p in PHASES if any(p in row for row in cov.values())]
    lines.append("  " + f"{'kind':<20}" + "".join(f"{p[:14]:>15}" for p in phases))
    for kind, row in cov.items():
        lines.append("  " + f"{kind:<20}" + "".join(f"{'%d/%d' % tuple(row[p]) if p in row else '-':>15}" for p in phases))
    findings = data.get("findings") or []
    if not findings:
        lines.append("no finding")
    for g in findings:
        ex = g["example"]
        lines.append(f"FINDING ({g['status']}) {g['signature']}: first {_found(g)}")
        for r in ex.get("reasons", [])[:3]:
            lines.append(f"    - {r[:200]}")
        lines.append(f"    replay: ftharness run {g['scenario_file']}")
    lines.extend(spending_lines(data))
    incon = [e for e in runs if e.get("status") == "INCONCLUSIVE"]
    for e in incon[:5]:
        lines.append(f"  ? {e['name']}: {(e.get('reasons') or ['no reason'])[0][:160]}")
    if len(incon) > 5:
        lines.append(f"  ? ... {len(incon) - 5} more inconclusive (explore.json)")
    lines.append(f"results: {data['out']}")
    return "\n".join(lines)


_CSS = """body{font-family:system-ui,sans-serif;margin:2em;max-width:80em}table{border-collapse:collapse;margin:1em 0}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.9em}th{background:#f4f4f4}
.PASS{color:#186a3b}.FAIL{color:#b03a2e;font-weight:bold}.INCONCLUSIVE{color:#9a7d0a}.ERROR{color:#6c3483}
.zero{color:#bbb}pre{background:#f8f8f8;padding:.6em;overflow:auto}"""


def page_html(data: Dict[str, Any]) -> str:
    """The whole page, self-contained (no scripts, no files beside it)."""
    e = html.escape
    runs = _search(data)
    out = [f"<!doctype html><html><head><meta charset='utf-8'><title>explore {e(data['base'])}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>ftharness explore: {e(data['base'])}</h1>",
           f"<p>{len(runs)} examples in {data.get('wall_s', 0):.0f}s (budget {data.get('budget_s', 0):g}s, "
           f"seed {data.get('seed')}, at most {data.get('max_faults')} faults, session {data.get('session', 1)}): "
           + ", ".join(f"<span class={status}>{text}</span>" for status, text in _counts(data))
           + f". Exit code {data.get('exit_code')}.</p>",
           *([f"<p class=INCONCLUSIVE>Stopped before the budget was spent: {e(data['stopped'])}</p>"]
             if data.get("stopped") else []),
           *([f"<p>{e(coverage_pass(data).capitalize())}: the coverage pass, every kind once in its simplest schedule; "
              f"then Hypothesis's search.</p>"] if coverage_pass(data) else []),
           "<h2>Findings</h2>"]
    findings = data.get("findings") or []
    if not findings:
        out.append("<p>No finding.</p>")
    for g in findings:
        ex = g["example"]
        out.append(f"<h3 class=FAIL>{e(g['signature'])} ({e(g['status'])})</h3>"
                   f"<p>First {e(_found(g))}</p><ul>"
                   + "".join(f"<li>{e(r)}</li>" for r in ex.get("reasons", [])[:6]) + "</ul>"
                   f"<p>Replay: <code>ftharness run {e(g['scenario_file'])}</code>; results of the smallest example: "
                   f"<code>{e(ex['folder'])}</code>; repeat: <code>{e((g.get('repeat') or {}).get('folder', ''))}</code></p>")
        try:   # through the one reader: a regular file, bounded (a FIFO planted there never hangs the page)
            from ftharness.inputs import MAX_SCENARIO_BYTES, InputRefused, read_bounded

            out.append(f"<pre>{e(read_bounded(str(g['scenario_file']), MAX_SCENARIO_BYTES).decode('utf-8', 'replace'))}</pre>")
        except (InputRefused, OSError, ValueError):
            pass
    sp = data.get("spending") or {}
    if sp:
        out.append("<h2>Where the budget went</h2><table><tr><th>gap</th><th>examples</th><th>after confirmed</th>"
                   "<th>confirmed at</th><th>repeats</th><th>skipped</th><th>first found</th></tr>")
        for g in sp.get("gaps") or []:
            conf, first = g.get("confirmed_at_s"), g.get("first_found_s")
            out.append(f"<tr><td>{e(g['gap'])}</td><td>{g['examples']}</td><td>{g['after_confirmed']}</td>"
                       f"<td>{g.get('after_confirmed_known', '-')}</td>"
                       f"<td>{'-' if conf is None else f'{conf:.0f}s'}</td><td>{g['repeats']}</td><td>{g['skipped']}</td>"
                       f"<td>{'-' if first is None else f'{first:.0f}s'}</td></tr>")
        out.append("</table>")
        per_hour = sp.get("findings_per_hour")
        out.append(f"<p>{sp.get('distinct_findings', 0)} distinct finding(s)"
                   + (f", {per_hour:g} per hour" if per_hour is not None else "") + ". "
                   + f"{sp.get('skipped_total', 0)} candidate(s) skipped before they ran: each could only show a "
                   "confirmed gap again.</p>")
        if sp.get("skipped"):
            out.append("<table><tr><th>candidate</th><th>stage</th><th>by</th><th>schedule</th><th>why</th></tr>")
            for x in sp["skipped"]:
                out.append(f"<tr><td>{e(x['name'])}</td><td>{e(x['stage'])}</td><td>{e(x['by'])}</td>"
                           f"<td>{e(_fault_text(x['faults'], [''] * len(x['faults'])))}</td><td>{e(x['why'])}</td></tr>")
            out.append("</table>")
    out.append("<h2>Coverage: faults run / landed, by kind and phase</h2><table><tr><th>kind</th>"
               + "".join(f"<th>{e(p)}</th>" for p in PHASES) + "</tr>")
    for kind, row in (data.get("coverage") or {}).items():
        out.append(f"<tr><td>{e(kind)}</td>" + "".join(
            f"<td>{row[p][0]}/{row[p][1]}</td>" if p in row else "<td class=zero>0</td>" for p in PHASES) + "</tr>")
    out.append("</table>")
    left = data.get("left_out") or {}
    if left:
        out.append("<p>Kinds this base cannot have: " + "; ".join(f"{e(k)} ({e(v)})" for k, v in left.items()) + "</p>")
    out.append("<h2>Examples</h2><table><tr><th>#</th><th>at</th><th>purpose</th><th>status</th><th>schedule</th>"
               "<th>outcome</th><th>model allows</th><th>wall</th><th>why</th></tr>")
    session, covered = data.get("session", 1), set(_coverage_indices(data))
    for x in [x for x in data.get("examples") or [] if x.get("session", 1) == session]:
        purpose = "coverage" if x["index"] in covered else x.get("purpose", "")
        out.append(f"<tr><td>{x['index']}</td><td>{x.get('at_s', 0):.0f}s</td><td>{e(purpose)}</td>"
                   f"<td class={e(x['status'])}>{e(x['status'])}</td><td>{e(_fault_text(x['faults'], x['phases']))}</td>"
                   f"<td>{e(str(x.get('outcome')))} {e(x.get('error_type') or '')}</td>"
                   f"<td>{e(', '.join(x.get('expected_outcomes') or []))}</td><td>{x.get('wall_s', 0):.0f}s</td>"
                   f"<td>{e('; '.join(x.get('reasons') or [])[:300])}</td></tr>")
    out.append("</table></body></html>")
    return "\n".join(out)


def write_explore_page(data: Dict[str, Any], path: str) -> str:
    """The page, through the one writer (ftharness.outputs: no symlink followed, secrets redacted);
    it replaces the page an earlier explore into the same folder wrote."""
    from ftharness.outputs import write_file

    path = os.path.abspath(path)
    write_file(os.path.dirname(path), os.path.basename(path), page_html(data), overwrite=True, secrets=True)
    return path
