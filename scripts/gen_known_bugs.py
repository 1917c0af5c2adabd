"""Write docs/known-bugs.md from the corpus (scenarios/known_bugs.yaml), its last measured results
(scenarios/known/measured.json) and the standalone scripts' exit codes (scenarios/known/repro.json),
and fill the draft reports (docs/known-bugs/reports/*.md) with their script and its output.

    python scripts/gen_known_bugs.py                       # write the page and the reports
    python scripts/gen_known_bugs.py --check               # exit 1 when the page or a report is stale
    python scripts/gen_known_bugs.py --record FOLDER --command "ftharness bisect ..."
        # add the runs of a matrix or bisect folder (its cells.jsonl), or of a suite folder (its
        # runs' summary.json), to measured.json, then write
    python scripts/gen_known_bugs.py --record-repro RUNS.jsonl
        # add standalone runs ({"id", "ray", "rc", "seconds", "line", "python"} per line, what
        # tests/test_known_repros.py and scenarios/known/repro/run.sh write) to repro.json, then write

A run is recorded under the corpus entry whose scenario has the run's scenario name.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from ftharness.scenarios import known_bugs  # noqa: E402
from ftharness.scenarios.schema import load_scenario  # noqa: E402

PAGE = os.path.join(ROOT, "docs", "known-bugs.md")
REPORTS = os.path.join(ROOT, "docs", "known-bugs", "reports")


def _rows(folder: str):
    """A matrix or bisect folder's cells.jsonl; or a suite folder's runs (one summary.json per
    scenario), each on the Ray its summary names."""
    cells = os.path.join(folder, "cells.jsonl")
    if os.path.isfile(cells):
        with open(cells) as f:
            return [json.loads(line) for line in f if line.strip()]
    rows = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "summary.json")
        if os.path.isfile(path):
            with open(path) as f:
                s = json.load(f)
            rows.append({"scenario": s.get("scenario"), "ray": (s.get("versions") or {}).get("ray"),
                         "verdict": s.get("verdict"), "summary": s, "seconds": s.get("wall_time_s")})
    return rows


def record(folder: str, command: str) -> None:
    by_name = {load_scenario(b.scenario_path).name: b.id for b in known_bugs.load()}
    data = known_bugs.measured()
    rows = _rows(folder)
    for r in rows:
        bug = by_name.get(r.get("scenario"))
        if bug is None:
            continue
        s = r.get("summary") or {}
        runs = data.setdefault(bug, {}).setdefault(r["ray"], {"runs": [], "command": command})
        if runs.get("command") != command:
            runs.update(runs=[], command=command)
        runs["runs"].append({"verdict": r.get("verdict"), "outcome": s.get("outcome"),
                             "error_type": s.get("error_type"),
                             **({"error_cause": s["error_cause"]} if s.get("error_cause") else {}),
                             "charged": {k: v for k, v in (s.get("budgets") or {}).items() if v},
                             "seconds": r.get("seconds")})
    os.makedirs(os.path.dirname(known_bugs.MEASURED), exist_ok=True)
    with open(known_bugs.MEASURED, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


def record_repro(path: str) -> None:
    """Add standalone runs (one JSON object a line) to repro.json: the last run per entry and release."""
    ids = {b.id: b for b in known_bugs.load()}
    data = known_bugs.repro_results()
    with open(path) as f:
        for line in f:
            if not line.strip():
                continue
            r = json.loads(line)
            bug = ids.get(r["id"])
            if bug is None:
                continue
            data.setdefault(r["id"], {})[r["ray"]] = {
                "rc": r["rc"], "expect": bug.expectation(r["ray"]) or "n/a", "seconds": round(float(r["seconds"]), 1),
                "line": r.get("line", ""), "python": r.get("python", "")}
    with open(known_bugs.REPRO_RESULTS, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
        f.write("\n")


def _vkey(v: str):
    return tuple(map(int, v.split(".")))


def _repro_cell(b, got) -> str:
    runs = got.get(b.id, {})
    if not runs:
        return "not yet run"
    return "; ".join(f"{v} ({runs[v]['expect']}): exit {runs[v]['rc']}, {runs[v]['seconds']:.0f} s"
                     for v in sorted(runs, key=_vkey))


def _quote(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _run_text(run) -> str:
    charged = ", ".join(f"{k} {v}" for k, v in sorted(run["charged"].items())) or "nothing"
    cause = f": its constructor raised {run['error_cause']}" if run.get("error_cause") else ""
    error = f" ({run['error_type']}{cause})" if run.get("error_type") else ""
    return f"{run['verdict']}, {run['outcome'] or 'no outcome'}{error}, charged {charged}"


KIND_TEXT = {
    "fixed upstream": "a bug Ray fixed (the fixing PR is named)",
    "open upstream bug": "a bug reported upstream and not fixed",
    "unreported": "no upstream report found: a draft report is in docs/known-bugs/reports/",
    "documented behaviour": "upstream does it on purpose (the doc or the PR that says so is quoted)",
    "missing feature": "upstream tracks it as a request (the request is quoted)",
}


def render() -> str:
    bugs, results, repro = known_bugs.load(), known_bugs.measured(), known_bugs.repro_results()
    out = ["# Known fault-tolerance behaviours of Ray Train V2, by release", "",
           "<!-- generated by scripts/gen_known_bugs.py from scenarios/known_bugs.yaml, "
           "scenarios/known/measured.json and scenarios/known/repro.json; do not edit -->", "",
           "Each entry is reproduced twice: by a scenario that ftharness judges, and by a standalone script "
           "(`scenarios/known/repro/<id>.py`) that imports only Ray, torch and the standard library, starts its own "
           "local cluster, injects the fault through Ray's own APIs and OS signals, and exits 0 when the installed "
           "release behaves as the entry says for it (`--expect affected|fixed` overrides). The affected and fixed "
           "releases were read from the releases' own code (the evidence, `VERSION:PATH:LINE` under "
           "`ray/train/v2/`). An entry still present in the newest release is pinned: its scenario's verdict "
           "changes the day Ray changes.", "",
           "Each entry's kind is upstream's own word for it, with upstream's sentence quoted:", ""]
    out += [f"- **{k}**: {v}" for k, v in KIND_TEXT.items()]
    out += ["", "Which of them affect your release: `ftharness list known --ray VERSION`.", "",
            "| entry | kind | upstream | affected (code) | fixed (code) | standalone script: exit per release | "
            "ftharness measured |",
            "|---|---|---|---|---|---|---|"]
    for b in bugs:
        got = results.get(b.id, {})
        measured = "; ".join(f"{v}: {got[v]['runs'][0]['verdict']} ({got[v]['runs'][0]['outcome'] or 'no outcome'})"
                             for v in sorted(got, key=_vkey) if got[v]["runs"]) or "not yet"
        fixed = f"{b.fixed} ({b.fixed_by})" if b.fixed_by else (b.fixed or "not fixed")
        ref = (f"none found; the code: \"{_quote(b.upstream_quote)}\"" if b.upstream_ref == "none found"
               else f"{b.upstream_ref}: \"{_quote(b.upstream_quote)}\"")
        out.append(f"| {b.id} | {b.kind} | {ref} | {b.affected_text} | "
                   f"{fixed} | {_repro_cell(b, repro)} | {measured} |")
    for b in bugs:
        out += ["", f"## {b.id}", "", b.summary, "",
                f"- Kind: **{b.kind}** ({KIND_TEXT[b.kind]})",
                f"- Upstream: {b.upstream_ref}: {b.upstream_title}",
                f"  > {b.upstream_quote}"]
        if b.fixed_by:
            out.append(f"- Fixed by: {b.fixed_by}: {b.fixed_by_title}")
        if b.upstream_note:
            out.append(f"- Note: {b.upstream_note}")
        for r in b.related:
            out += [f"- Related: {r['ref']}: {r['title']}", f"  > {r['quote']}"]
        if b.report:
            out.append(f"- Draft upstream report: [{os.path.basename(b.report)}]"
                       f"(known-bugs/reports/{os.path.basename(b.report)})")
        out += [f"- Affected: {b.affected_text}; fixed: {b.fixed or 'not fixed (pinned)'}; status: {b.status}",
                f"- Scenario: `{b.scenario}`",
                f"- Standalone: `python {b.repro}` ({_repro_cell(b, repro)})",
                f"- On an affected release ftharness must show: {b.on_affected}",
                f"- On a fixed release: {b.on_fixed}", "- Evidence:"]
        out += [f"  - `{e}`" for e in b.evidence]
        got = results.get(b.id, {})
        if got:
            out.append("- Measured:")
            for v in sorted(got, key=lambda x: tuple(map(int, x.split(".")))):
                runs = got[v]["runs"]
                out.append(f"  - Ray {v}: " + "; ".join(_run_text(r) for r in runs)
                           + f" (`{got[v]['command']}`)")
        runs = repro.get(b.id, {})
        if runs:
            out.append("- Standalone script's output:")
            for v in sorted(runs, key=_vkey):
                out.append(f"  - Ray {v} ({runs[v]['python']}): exit {runs[v]['rc']}: `{runs[v]['line']}`")
    out += ["", "## Candidates rejected", ""]
    out += [f"- {r['ref']}: {r['why']}" for r in known_bugs.rejected()]
    return "\n".join(out) + "\n"


SCRIPT_BLOCK = re.compile(r"(<!-- script: (?P<path>\S+) -->\n).*?(<!-- end -->)", re.S)
OUTPUT_BLOCK = re.compile(r"(<!-- repro-output: (?P<id>\S+) -->\n).*?(<!-- end -->)", re.S)


def fill_report(text: str) -> str:
    """A draft report with its script (the file, whole) and the script's recorded output filled in."""
    repro = known_bugs.repro_results()

    def script(m):
        body = open(os.path.join(ROOT, m.group("path"))).read()
        return f"{m.group(1)}```python\n# {m.group('path')}\n{body}```\n{m.group(3)}"

    def output(m):
        runs = repro.get(m.group("id"), {})
        lines = [f"$ python {m.group('id')}.py   # Ray {v} ({runs[v]['python']}): exit {runs[v]['rc']}, "
                 f"{runs[v]['seconds']:.0f} s\n{runs[v]['line']}" for v in sorted(runs, key=_vkey)]
        body = "\n".join(lines) if lines else "(not run yet)"
        return f"{m.group(1)}```text\n{body}\n```\n{m.group(3)}"

    return OUTPUT_BLOCK.sub(output, SCRIPT_BLOCK.sub(script, text))


def reports() -> dict:
    """{path: filled text} of every draft report."""
    out = {}
    if os.path.isdir(REPORTS):
        for name in sorted(os.listdir(REPORTS)):
            if name.endswith(".md"):
                path = os.path.join(REPORTS, name)
                out[path] = fill_report(open(path).read())
    return out


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--record", metavar="FOLDER")
    ap.add_argument("--command", default="")
    ap.add_argument("--record-repro", metavar="RUNS_JSONL")
    args = ap.parse_args()
    if args.record:
        record(args.record, args.command)
    if args.record_repro:
        record_repro(args.record_repro)
    wanted = {PAGE: render(), **reports()}
    if args.check:
        stale = [p for p, text in wanted.items() if (open(p).read() if os.path.isfile(p) else "") != text]
        if stale:
            print(f"{', '.join(os.path.relpath(p, ROOT) for p in stale)} stale: run python scripts/gen_known_bugs.py",
                  file=sys.stderr)
            return 1
        return 0
    for path, text in wanted.items():
        with open(path, "w") as f:
            f.write(text)
        print(f"wrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
