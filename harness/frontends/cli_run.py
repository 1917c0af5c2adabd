"""The `ftharness` commands that run scenarios on a cluster: `run` (and `run --submit`, a Ray Job),
`soak` (seeded random faults over a long run) and `suite` (a catalog on one cluster). Each
checks its input first, then imports the runner (Ray Train) and runs, printing the summary and
writing the report.

Split out of cli.py, which holds the parser and dispatches here.
"""

from __future__ import annotations

import os
import sys
from typing import Dict, List

from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli_shared import (EXIT_PASS, _fail, _logs, _safe, check_out, check_route, exit_code,
                                                    overall, print_summary, write_reports)
from ftharness.harness.run.arguments import default_out


def cmd_run(args) -> int:
    from ftharness.scenarios.schema import default_scenario_path, load_scenario, parse_scenario, require_release, scenario_data

    out = args.out
    scenario = load_scenario(args.scenario or default_scenario_path())
    if args.scenario_dir and not os.path.isdir(args.scenario_dir):
        return _fail(f"--scenario-dir {args.scenario_dir[:120]}: no such folder")
    if args.scenario_dir:   # the folder the scenario's relative paths are read from: never a system one
        from ftharness.inputs import shown, system_path_problem

        why = system_path_problem(args.scenario_dir)
        if why:
            return _fail(f"--scenario-dir {shown(args.scenario_dir)}: {why}")
    if args.steps is not None or args.scenario_dir:  # re-validated: faults may aim past the new end
        data = scenario_data(scenario)
        if args.steps is not None:
            data.setdefault("workload", {})["steps"] = args.steps
        scenario = parse_scenario(data, source="--steps" if args.steps is not None else "--scenario-dir",
                                  base_dir=os.path.abspath(args.scenario_dir or scenario.base_dir))
    if args.submit is not None:
        return _submit(args, scenario)
    require_release(scenario)
    target = check_route(scenario, args.allow_destructive, address=args.address)
    out = args.out = out or default_out(scenario.name)   # (an internal error's traceback goes into it: cli.main)
    check_out(out)
    if args.resume and not os.path.isdir(args.resume):
        return _fail(f"--resume {args.resume}: not a results folder (no such directory)")
    if args.resume:   # summary.json and its storage, now (a runtime that resumes nothing refuses it later)
        from ftharness.harness.run.runner import runtime_of

        runtime_of(scenario).check_resume(args.resume, scenario)
    from ftharness.harness.run.runner import RunOptions, exit_code as summary_exit, run_scenario   # Ray Train: once the input is good

    options = RunOptions(out_dir=out, address=target.address, resume=args.resume, address_source=target.source,
                         progress=not args.quiet, allow_destructive=target.allow_destructive)
    _logs(args, out)
    summary = run_scenario(scenario, options)
    print_summary(summary, out)
    write_reports(out)
    return summary_exit(summary)


def _submit(args, scenario) -> int:
    """`run --submit`: the run as a Ray Job on the cluster, its results brought back here."""
    for flag, given in (("--address", args.address), ("--resume", args.resume)):
        if given:
            return _fail(f"{flag}: not with --submit (the job runs on the cluster it is sent to)")
    from ftharness.harness.run.runtime import declared_of

    no_cluster = declared_of(scenario).cluster_refusal("--submit")
    if no_cluster:
        return _fail(no_cluster)
    if scenario.cluster.network != "shared":
        return _fail("--submit: cluster.network: namespaces builds an embedded cluster; a submitted run "
                     "uses the cluster's own hosts (allowed: shared)")
    check_route(scenario, args.allow_destructive, address=args.submit, source="--submit")
    out = args.out or default_out(scenario.name)
    check_out(out)
    from ftharness.harness.run.runner import exit_code as summary_exit   # Ray Train: once the input is good
    from ftharness.harness.run.submit import submit_run

    submit_run(scenario, args.submit, out, args.allow_destructive, quiet=args.quiet)
    from ftharness.history.records import read_json_file

    summary = read_json_file(os.path.join(out, "summary.json"))   # brought back from the cluster: bounded
    if not isinstance(summary, dict) or not {"verdict", "scenario", "outcome", "attempts", "steps", "wall_time_s"} <= set(summary):
        return _fail(f"--submit: the job brought back no readable summary.json (results in {out})")
    print_summary(summary, out)
    return summary_exit(summary)


def cmd_soak(args) -> int:
    from ftharness.harness.run.runner import RunOptions, exit_code as summary_exit
    from ftharness.harness.run.soak import run_soak
    from ftharness.scenarios.schema import default_scenario_path, load_scenario
    from ftharness.scenarios.soak import draw_plan, parse_duration, parse_mix, soak_scenario

    out = args.out
    from ftharness.harness.run.arguments import check_seed

    check_seed("--seed", args.seed)   # the argument layer: before the scenario is read
    base = load_scenario(args.scenario or default_scenario_path())
    if base.workload.runtime != "ray_train":
        return _fail(f"workload.runtime: a soak runs on Ray Train (ray_train); {base.workload.runtime} "
                     f"soaks are not built")
    plan = draw_plan(args.seed, parse_duration(args.duration, "--duration"),
                     parse_duration(args.mtbf, "--mtbf"), parse_mix(args.mix))
    scenario = soak_scenario(base, plan)
    # a soak is a fault process whatever it drew (the runner's check_handle sees it the same way)
    target = check_route(scenario, args.allow_destructive, address=args.address, has_faults=True)
    address, source = target.address, target.source
    if address and any(d.spec.get("replace") for d in plan.draws):
        return _fail(f"{source}: a soak replaces the nodes it kills; ftharness cannot add nodes to {address} "
                     f"(use --mix without kill_node and preempt_node there)")
    out = out or default_out(scenario.name)
    args.out = out   # an internal error's traceback goes into it (cli.main)
    check_out(out)
    if base.faults:
        print(f"ftharness: the {len(base.faults)} fault(s) of {base.name} are not used; "
              f"the soak draws its own", file=sys.stderr)
    print(f"soak: {len(plan.draws)} fault(s) drawn (seed {plan.seed}); budgets sized to "
          f"{scenario.failure_config.model_dump()}", file=sys.stderr)
    options = RunOptions(out_dir=out, address=address, progress=not args.quiet, address_source=source,
                         allow_destructive=target.allow_destructive)
    _logs(args, out)
    summary = run_soak(scenario, plan, options)
    print_summary(summary, out)
    print_soak(summary.get("soak") or {})
    write_reports(out)
    return summary_exit(summary)


def print_soak(soak) -> None:
    injected = soak.get("injected") or []
    print(f"soak: {len(injected)} of {soak.get('planned', 0)} planned fault(s) injected, "
          f"{len(soak.get('not_reached') or [])} not reached before the end")
    for row in soak.get("by_fault_kind") or []:
        print(f"  {row['fault_kind']:<16} recoveries {row['recoveries']:>3}  recovery median "
              f"{row['recovery_s_median']} s  p95 {row['recovery_s_p95']} s  lost steps {row['lost_steps']}")


def _record_skipped(skipped: List[Dict[str, str]], out: str) -> None:
    """One line each on the terminal, and OUT/skipped.json for the report and JUnit."""
    from ftharness.reports import skipped as skips

    for entry in skipped:
        print(_safe(skips.line(entry)), flush=True)
    skips.write(out, skipped)


def cmd_suite(args) -> int:
    from ftharness.harness.run.preflight import preflight
    from ftharness.harness.run.collect import collect, targets

    out = args.out = args.out or default_out("suite")   # (an internal error's traceback goes into it: cli.main)
    check_out(out)   # before the scenarios are read: a bad --out is the one line, nothing else printed
    left_out: List[str] = []
    skipped: List[Dict[str, str]] = []   # what this host cannot run (ftharness.reports.skipped)
    scenarios = collect(args.paths, notes=left_out, skipped=skipped)
    targets(scenarios, args.address, args.allow_destructive)   # every scenario's cluster, before any runs
    for s in scenarios:   # what `run` would refuse at its start, for every scenario before the first runs
        try:
            preflight(s, static=True)   # nothing of the scenario's modules runs yet
        except ScenarioError as e:
            raise ScenarioError(f"{s.name}: {e} (nothing ran; leave this scenario out to run the others)") from None
    repeat = getattr(args, "repeat", 1)
    if repeat < 1:
        return _fail(f"--repeat: {repeat} is not a count >= 1")
    if repeat > 1 and os.path.exists(out) and os.listdir(out):
        return _fail(f"--out {out}: already exists and is not empty; choose another folder")
    for line in left_out:   # what was left out, said once everything else is known to be fine
        print(line, file=sys.stderr)
    _record_skipped(skipped, out)
    rounds = [out] if repeat == 1 else [os.path.join(out, f"repeat-{i}") for i in range(1, repeat + 1)]
    summaries = []
    _logs(args, out)
    from ftharness.harness.run.suite import run_suite   # Ray Train: once the input is good

    for i, folder in enumerate(rounds, 1):   # each round a suite folder: `compare X=OUT/repeat-*` reads them
        if repeat > 1:
            print(f"suite: repeat {i}/{repeat} -> {folder}", file=sys.stderr, flush=True)
        summaries += run_suite(scenarios, folder, address=args.address, progress=not args.quiet,
                               allow_destructive=args.allow_destructive)
    verdicts = [s["verdict"] for s in summaries]
    counts = {v: verdicts.count(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['INCONCLUSIVE']} inconclusive, "
          f"{counts['ERROR']} errors" + (f", {len(skipped)} skipped" if skipped else ""))
    print(f"results: {os.path.abspath(out)}")
    write_reports(out, rounds)
    return exit_code(overall(verdicts)) if verdicts else EXIT_PASS   # every scenario skipped: nothing failed
