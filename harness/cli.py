"""`ftharness`: run chaos scenarios on Ray Train and judge them.

Exit codes (design.md): 0 the outcome and every expected property match
`expect`; 1 they do not; 2 the scenario could not run (bad input, no cluster).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import List, Optional

EXIT_OK, EXIT_MISMATCH, EXIT_CANNOT_RUN = 0, 1, 2


def _fail(msg: str) -> int:
    print(f"ftharness: error: {msg}", file=sys.stderr)
    return EXIT_CANNOT_RUN


def cmd_run(args) -> int:
    from harness.cluster import ClusterError
    from harness.runner import RunOptions, exit_code, run_scenario
    from scenarios.schema import ScenarioError, default_scenario_path, load_scenario, parse_scenario

    try:
        scenario = load_scenario(args.scenario or default_scenario_path())
        if args.steps is not None:  # re-validated: faults may aim past the new end
            data = scenario.model_dump(mode="json", exclude_none=True, exclude={"base_dir"})
            data["workload"]["steps"] = args.steps
            scenario = parse_scenario(data, source="--steps", base_dir=scenario.base_dir)
        if args.address and scenario.faults and not args.allow_destructive:
            return _fail("--address: faults on a cluster ftharness did not start need --allow-destructive")
        out = args.out or os.path.join("results", f"{scenario.name}-{time.strftime('%Y%m%d-%H%M%S')}")
        if os.path.exists(os.path.join(out, "summary.json")):
            return _fail(f"--out {out}: already holds a run; choose another folder")
        options = RunOptions(out_dir=out, address=args.address, resume=args.resume,
                             progress=not args.quiet, allow_destructive=args.allow_destructive)
        summary = run_scenario(scenario, options)
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return 130
    verdict = "PASS" if summary["matches_expectation"] else "FAIL"
    print(f"{verdict} {summary['scenario']}: {summary['outcome']} after {summary['attempts']} attempt(s), "
          f"{summary['steps']} steps, {summary['wall_time_s']:.1f}s")
    for m in summary.get("mismatches", []):
        print(f"  - {m}")
    print(f"results: {os.path.abspath(out)}")
    return exit_code(summary)


def cmd_suite(args) -> int:
    from harness.cluster import ClusterError
    from harness.suite import collect, run_suite
    from scenarios.schema import ScenarioError

    try:
        scenarios = collect(args.paths)
        if args.address and scenarios and any(s.faults for s in scenarios) and not args.allow_destructive:
            return _fail("--address: faults on a cluster ftharness did not start need --allow-destructive")
        out = args.out or os.path.join("results", f"suite-{time.strftime('%Y%m%d-%H%M%S')}")
        summaries = run_suite(scenarios, out, address=args.address, progress=not args.quiet)
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return 130
    failed = [s["scenario"] for s in summaries if not s["matches_expectation"]]
    print(f"{len(summaries) - len(failed)} passed, {len(failed)} failed")
    print(f"results: {os.path.abspath(out)}")
    return EXIT_MISMATCH if failed else EXIT_OK


def cmd_check(args) -> int:
    """Re-judge an existing results folder from its history (no cluster)."""
    from harness.history import read_events
    from scenarios.evaluate import evaluate
    from scenarios.schema import ScenarioError, load_scenario

    try:
        scenario = load_scenario(os.path.join(args.results, "scenario.yaml"))
        with open(os.path.join(args.results, "summary.json")) as f:
            old = json.load(f)
    except (ScenarioError, OSError, json.JSONDecodeError) as e:
        return _fail(f"{args.results}: not a results folder ({e})")
    events = read_events(args.results)
    outcome = {k: old.get(k) for k in ("outcome", "error", "error_type")}
    outcome["return_value"] = {"acc": (old.get("final_state") or {}).get("accumulators")}
    summary = evaluate(scenario, events, outcome)
    for name, v in summary["properties"].items():
        print(f"{'PASS' if v['passed'] else 'FAIL'} {name}: {v['explanation']}")
    return EXIT_OK if summary["matches_expectation"] else EXIT_MISMATCH


def cmd_verdict(args) -> int:
    """Pass or fail of a Chaos Toolkit journal, plainly (chaos exits 0 either way)."""
    from harness.ctk.control import journal_verdict

    try:
        with open(args.journal) as f:
            journal = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        return _fail(f"{args.journal}: not a readable Chaos Toolkit journal ({e})")
    verdict = journal_verdict(journal)
    title = journal.get("experiment", {}).get("title", args.journal)
    print(f"{'PASS' if verdict['passed'] else 'FAIL'} {title}")
    for reason in verdict["reasons"]:
        print(f"  - {reason}")
    results = (journal.get("ftharness") or {}).get("results_dir")
    if results:
        print(f"results: {results}")
    return EXIT_OK if verdict["passed"] else EXIT_MISMATCH


def cmd_validate(args) -> int:
    from scenarios.schema import ScenarioError, load_scenario

    status = EXIT_OK
    for path in args.scenarios:
        try:
            load_scenario(path)
            print(f"ok {path}")
        except ScenarioError as e:
            print(f"ftharness: error: {e}", file=sys.stderr)
            status = EXIT_CANNOT_RUN
    return status


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="ftharness", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run one scenario (default: the built-in one) and write a results folder")
    r.add_argument("scenario", nargs="?", help="scenario YAML file (default: scenarios/catalog/default.yaml)")
    r.add_argument("--out", help="results folder (default: results/<scenario>-<time>)")
    r.add_argument("--address", help="run on an existing cluster: 'auto', 'HOST:PORT' or 'ray://HOST:10001'")
    r.add_argument("--resume", metavar="RESULTS", help="resume the run of a previous results folder (same run name and storage)")
    r.add_argument("--steps", type=int, help="override workload.steps")
    r.add_argument("--allow-destructive", action="store_true", help="allow faults on a cluster ftharness did not start")
    r.add_argument("--quiet", action="store_true", help="no live progress")
    r.set_defaults(func=cmd_run)

    st = sub.add_parser("suite", help="run a catalog of scenarios on one embedded cluster")
    st.add_argument("paths", nargs="*", help="scenario files or folders (default: the built-in catalog)")
    st.add_argument("--out", help="results folder (default: results/suite-<time>)")
    st.add_argument("--address", help="run on an existing cluster instead")
    st.add_argument("--allow-destructive", action="store_true")
    st.add_argument("--quiet", action="store_true")
    st.set_defaults(func=cmd_suite)

    from reports.cli import add_subcommands

    add_subcommands(sub)

    c = sub.add_parser("check", help="re-judge a results folder from its history")
    c.add_argument("results")
    c.set_defaults(func=cmd_check)

    vd = sub.add_parser("verdict", help="pass or fail of a Chaos Toolkit journal (chaos run exits 0 either way)")
    vd.add_argument("journal")
    vd.set_defaults(func=cmd_verdict)

    v = sub.add_parser("validate", help="validate scenario files without running them")
    v.add_argument("scenarios", nargs="+")
    v.set_defaults(func=cmd_validate)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
