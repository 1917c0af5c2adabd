"""The `ftharness` commands that read results folders and need no cluster: `check` (judge a
folder again from its history), `verdict` (a Chaos Toolkit journal and the run behind it),
`trace` (a history as a Chrome trace) and `plan` (a job's failures simulated, calibrated from
folders). `report` and `compare` are reports/cli.py's.

Split out of cli.py, which holds the parser and dispatches here.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional

from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli_shared import EXIT_PASS, _fail, _safe, exit_code
from ftharness.safety import output_dir_problem, output_file_problem


def judge_folder(results: str):
    """(scenario, summary) of a results folder judged again from its history alone: the public
    `ftharness.check_results` (ftharness/api.py), what report, JUnit and the page show too.
    Raises ScenarioError for a folder that is no results folder."""
    from ftharness.api import check_results

    return check_results(results)


def cmd_check(args) -> int:
    """Re-judge an existing results folder from its history alone (no cluster, summary.json
    never read: `judge_folder`); the statuses are those report, JUnit and the page show
    (ftharness.reports.judgement)."""
    from ftharness.reports.judgement import expectations, pinned, statuses
    from ftharness.scenarios.job_error import evidence_text, other_reasons, verdict_line

    try:
        _, summary = judge_folder(args.results)
    except ScenarioError as e:
        return _fail(str(e))
    expect = expectations(args.results)
    judged = statuses(summary, pinned(expect), expect)
    if getattr(args, "json", False):
        print(json.dumps({"results": os.path.abspath(args.results), "scenario": summary["scenario"], **judged,
                          "faults": summary["faults"]}, indent=2, default=str))
        return exit_code(judged["verdict"])
    for p in judged["properties"]:
        print(f"{p['status']} {p['property']}: {_safe(p['message'])}")
    for u in judged["unasked_failures"]:
        print(f"WARNING {u['property']}: failed, but the scenario did not ask for it: {_safe(u['explanation'])}")
    for f in summary["faults"]:
        print(f"{'LANDED' if f['landed'] else 'MISSED'} fault {f['index']} ({_safe(f['kind'], 40)}): "
              f"{_safe(evidence_text(f['evidence']))}")
    print(_safe(verdict_line(judged["verdict"], summary["scenario"], summary), 600))
    mismatches, inconclusive = other_reasons(summary)
    for m in mismatches:
        print(f"  - {_safe(m)}")
    for m in inconclusive:
        print(f"  ? {_safe(m)}")
    return exit_code(judged["verdict"])


def cmd_verdict(args) -> int:
    """PASS, FAIL or INCONCLUSIVE of a Chaos Toolkit journal and the run behind it."""
    from ftharness.harness.frontends.ctk.journal import journal_verdict

    from ftharness.inputs import InputRefused, read_input

    try:   # the one reader, kind journal: a regular JSON file, bounded, an object; else one line
        journal = read_input(args.journal, "journal")
    except InputRefused as e:
        return _fail(str(e))
    for key, kind in (("experiment", dict), ("ftharness", dict), ("steady_states", dict)):
        if journal.get(key) is not None and not isinstance(journal[key], kind):
            return _fail(f"{args.journal}: {key}: must be a JSON object (got {type(journal[key]).__name__})")
    fth = journal.get("ftharness") or {}
    for key in ("mismatches", "inconclusive"):
        if fth.get(key) is not None and not isinstance(fth[key], list):
            return _fail(f"{args.journal}: ftharness.{key}: must be a list")
    if (journal.get("steady_states") or {}).get("after") not in (None, {}) and \
            not isinstance(journal["steady_states"]["after"], dict):
        return _fail(f"{args.journal}: steady_states.after: must be a JSON object")
    verdict = journal_verdict(rejudged(journal))
    title = (journal.get("experiment") or {}).get("title", args.journal)
    print(f"{verdict['verdict']} {_safe(title, 200)}")
    for reason in verdict["reasons"]:
        print(f"  - {_safe(reason)}")
    results = (journal.get("ftharness") or {}).get("results_dir")
    if results:
        print(f"results: {_safe(results)}")
    return exit_code(verdict["verdict"])


def rejudged(journal: Dict[str, Any]) -> Dict[str, Any]:
    """The journal with the verdict of the run behind it taken from that run's history (as
    `check` judges it), never from the journal's own copy; a run whose history is not there
    (a results_dir that was moved, or is not a path) is unknown: INCONCLUSIVE, not a pass."""
    fth = journal.get("ftharness")
    if not fth or fth.get("not_started"):   # no run: nothing to judge again (journal_verdict says it never started)
        return journal
    results = fth.get("results_dir")
    if not isinstance(results, str) or not os.path.isfile(os.path.join(results, "history.jsonl")):
        shown = _safe(results, 120) if isinstance(results, str) else type(results).__name__
        return {**journal, "ftharness": {**fth, "inconclusive": [
            *(fth.get("inconclusive") or []),
            f"the run behind the journal cannot be judged: ftharness.results_dir {shown} holds no history.jsonl"]}}
    try:
        _, summary = judge_folder(results)
    except ScenarioError as e:
        return {**journal, "ftharness": {**fth, "inconclusive": [
            *(fth.get("inconclusive") or []), f"the run behind the journal cannot be judged: {e}"]}}
    return {**journal, "ftharness": {**fth, "run_verdict": summary["verdict"], "verdict": summary["verdict"],
                                     "mismatches": summary["mismatches"], "inconclusive": summary["inconclusive"]}}


def cmd_trace(args) -> int:
    """Write the history of a results folder as a Chrome trace (Perfetto, chrome://tracing)."""
    from ftharness.reports.trace import write_trace

    if not os.path.isfile(os.path.join(args.results, "history.jsonl")):
        return _fail(f"{args.results}: not a results folder (no history.jsonl)")
    if args.trace_out is not None and not args.trace_out.strip():
        return _fail("--out: empty; give a file path (default: RESULTS/trace.json)")
    target = args.trace_out or os.path.join(args.results, "trace.json")
    inside = os.path.realpath(target).startswith(os.path.realpath(args.results) + os.sep)
    if inside and os.path.exists(target) and os.path.basename(target) != "trace.json":
        return _fail(f"--out {target[:120]}: would overwrite a file of the results folder it reads")
    if os.path.islink(target):
        return _fail(f"{'--out ' if args.trace_out else ''}{target}: is a symlink; ftharness writes only files "
                     f"it creates (remove it, or give --out)")
    why = output_file_problem(target)
    if why:
        return _fail(f"--out {target[:120]}: {why}")
    try:
        path = write_trace(args.results, args.trace_out)
    except (OSError, ValueError) as e:
        return _fail(f"{target}: cannot be written ({getattr(e, 'strerror', None) or e})")
    print(f"trace: {os.path.abspath(path)} (open it in https://ui.perfetto.dev or chrome://tracing)")
    return EXIT_PASS


#: (option, lowest, highest) of `plan`'s numbers; None: no bound that side
PLAN_RANGES = (("accelerators", 1, 10_000_000), ("accelerators_per_node", 1, 1024), ("days", 1e-6, 3650),
               ("spot_fraction", 0, 1), ("runs", 1, 100_000), ("target", 1e-9, 1 - 1e-9), ("mtbf", 1e-6, 1e9),
               ("interval_s", 1e-6, 1e9), ("checkpoint_every", 1, 10**9), ("step_s", 1e-9, 1e6),
               ("checkpoint_s", 0, 1e6), ("recovery_s", 0, 1e7), ("lag_s", 0, 1e6), ("notice_s", 0, 1e6),
               ("replacement_s", 0, 1e7), ("max_failures", -1, 10**6), ("max_preemption_failures", -1, 10**6),
               ("controller_failure_limit", -1, 10**6), ("seed", 0, 2**64 - 1))


def plan_argument_problem(args) -> Optional[str]:
    """The first `plan` option out of its range, as one line; None when all fit."""
    import math

    for name, lo, hi in PLAN_RANGES:
        value = getattr(args, name, None)
        if value is None:
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(value, float) and not math.isfinite(value):
            return f"{flag}: {value} is not a finite number"
        if not lo <= value <= hi:
            return f"{flag}: {value} is out of range (allowed: {lo:g} to {hi:g})" if isinstance(hi, float) or \
                hi < 10**15 else f"{flag}: {value} is out of range (allowed: {lo} to {hi})"
    return None


def cmd_plan(args) -> int:
    """Budgets, checkpoint cadence and failure limits of a job, simulated (reports/plan.py)."""
    from ftharness.reports.calibrate import from_results
    from ftharness.reports.plan import parse_rates, plan, text, write
    from ftharness.scenarios.simulator.calibration import DEFAULTS
    from ftharness.scenarios.simulator.engine import Job
    from ftharness.scenarios.simulator.rates import make_rates, rates_source

    why = plan_argument_problem(args) or (args.plan_out and output_dir_problem(args.plan_out) and
                                           f"--out {args.plan_out[:120]}: {output_dir_problem(args.plan_out)}")
    if why:
        return _fail(why)
    try:
        for path in args.results:
            if not os.path.exists(path):
                return _fail(f"{path}: no such results folder")
        cal = from_results(args.results) if args.results else DEFAULTS
        cal = cal.with_figures(step_s=args.step_s, checkpoint_s=args.checkpoint_s, recovery_s=args.recovery_s,
                               registration_lag_s=args.lag_s, drain_notice_s=args.notice_s,
                               replacement_s=args.replacement_s)
        overrides = parse_rates(args.rate)
        rates = make_rates(overrides, args.mtbf, args.accelerators_per_node)
        config = {"max_failures": args.max_failures, "max_preemption_failures": args.max_preemption_failures,
                  "controller_failure_limit": args.controller_failure_limit}
        for name, value in config.items():
            if value is not None and value < -1:
                return _fail(f"--{name.replace('_', '-')}: {value} is not -1 (unlimited) or a count >= 0")
        if args.interval_s is not None and args.checkpoint_every is not None:
            return _fail("--interval-s and --checkpoint-every: give one of them")
        interval = args.interval_s if args.interval_s is not None else (args.checkpoint_every or 0) * cal.step_s
        if not interval:
            from ftharness.reports.advice import young_interval
            from ftharness.reports.plan import job_mtbf_s

            probe = Job(args.accelerators, args.days, 1.0, spot_fraction=args.spot_fraction,
                        accelerators_per_node=args.accelerators_per_node)
            mtbf = job_mtbf_s(probe, rates)
            interval = young_interval(max(cal.checkpoint_s, 1e-9), mtbf) if mtbf != float("inf") else 3600.0
        job = Job(args.accelerators, args.days, float(interval), config, args.spot_fraction,
                  args.accelerators_per_node, args.elastic, not args.no_notice_checkpoint)
        result = plan(job, cal, rates, runs=args.runs, seed=args.seed, target=args.target)
    except (ValueError, OSError) as e:
        return _fail(str(e))
    except RecursionError:
        return _fail(f"{', '.join(args.results)[:120]}: a results file nested too deep to read")
    source = rates_source(overrides, args.mtbf)
    print(text(result, source))
    if args.plan_out:
        try:
            paths = write(result, source, args.plan_out)
        except OSError as e:
            return _fail(f"--out {args.plan_out}: cannot be written ({e.strerror})")
        print(f"plan: {os.path.abspath(args.plan_out)} ({', '.join(os.path.basename(p) for p in paths)})")
    return EXIT_PASS
