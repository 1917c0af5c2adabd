"""`ftharness bisect SCENARIO [--ray A..B] [--repeat N]`: the first release where the
scenario's verdict, outcome or charged budgets change.

    ftharness bisect scenarios/known/spot-reclaim-defaults.yaml --ray 2.51.0..2.60.0 --repeat 2

A release whose Ray Train code is identical to the previous one's (bisect.SAME_TRAIN: every patch
release, and 2.59.0 after 2.58.1; Ray Data's code too for a Ray Data workload) is not probed: the
output names each release skipped and why. Each probe runs the scenario on one release as a matrix cell does (its cached
environment, harness/matrix/envs.py; judged by its release's policy), `--repeat`
times; the search (bisect.py) prints each probe and the boundary. The folder
holds the same report as `matrix` for the probes it ran, and bisect.json.
Exit: 0 when the search finished (a change found or none), 3 when it stopped
(a flaky probe, a release that could not run), 2 for bad input, 130 on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import sys
import time

from ftharness import releases
from ftharness.errors import ScenarioError


def add_parser(sub) -> None:
    b = sub.add_parser("bisect", help="find the first Ray release where a scenario's verdict, outcome or "
                       "charged budgets change (binary search, patch releases included)")
    b.add_argument("scenario", help="one scenario file")
    b.add_argument("--ray", metavar="A..B", help=f"the range ({releases.ALL_RELEASES[0]}..{releases.ALL_RELEASES[-1]}"
                   " by default; a minor such as 2.56 starts at its first patch and ends at its last)")
    b.add_argument("--repeat", type=int, default=1, help="runs per probe (default 1); a probe whose runs "
                   "disagree is flaky and stops the search")
    b.add_argument("--out", help="folder (default: results/bisect-<time>)")
    b.add_argument("--cell-timeout", type=float, default=1800.0, help="seconds per run (default 1800)")
    b.add_argument("--allow-destructive", action="store_true", help="passed to every run")
    b.add_argument("--host-lock", metavar="FILE", help="hold FILE's lock while each run runs")
    b.set_defaults(func=cmd_bisect)


def plan(args):
    """(scenario entry, releases, out folder, uses Ray Data): everything checked, nothing started."""
    from ftharness.harness.matrix.axes import MAX_REPEAT
    from ftharness.harness.matrix.bisect import parse_range
    from ftharness.harness.matrix.command import MAX_CELL_TIMEOUT_S
    from ftharness.harness.run.arguments import (check_count, check_file_option, check_new_out, check_number,
                                                 default_out)

    # the numeric and file options first, in the argument layer, as `matrix` checks them (before the
    # scenario modules, which load the plugins, are imported)
    check_number("--cell-timeout", args.cell_timeout, 1.0, MAX_CELL_TIMEOUT_S)
    if args.host_lock is not None:
        check_file_option("--host-lock", args.host_lock)
    versions = parse_range(args.ray)
    check_count("--repeat", args.repeat, MAX_REPEAT)
    from ftharness.harness.run.guard import check_route
    from ftharness.scenarios.schema import read_scenario_file

    data, sc = read_scenario_file(args.scenario)
    # the guard every route calls: a cluster.address is refused without --allow-destructive, as
    # `matrix` and `validate` refuse it (the probes' cells do not inherit RAY_ADDRESS: no source)
    check_route(sc, args.allow_destructive, environment=False)
    from ftharness.harness.run.preflight import preflight

    preflight(sc, static=True)   # what `validate` proves, as `matrix` proves it for every cell
    out = check_new_out(args.out or default_out("bisect"), "cells.jsonl", "already holds a matrix or a bisect")
    return (sc.name, args.scenario, data), versions, out, sc.workload.data == "ray_data"


def probe_function(entry, repeat: int, opts):
    """A probe: `repeat` runs of the scenario on one release, as matrix cells."""
    from ftharness.harness.matrix.axes import expand
    from ftharness.harness.matrix.bisect import judge
    from ftharness.harness.matrix.cells import for_release
    from ftharness.harness.matrix.runner import run_matrix
    from ftharness.scenarios.schema import parse_scenario, release_problem

    def probe(ray: str):
        cells = expand([entry], [ray], [], repeat)
        for c in cells:
            data, _ = for_release(c.data, ray)
            sc = parse_scenario(data, source=os.path.basename(c.source),
                                base_dir=os.path.dirname(os.path.abspath(c.source)))
            c.na = release_problem(sc, ray)
        t0 = time.monotonic()
        rows = run_matrix(cells, opts)
        return judge(ray, rows, time.monotonic() - t0)

    return probe


def cmd_bisect(args) -> int:
    from ftharness.harness.run.arguments import refuse

    try:
        entry, versions, out, uses_data = plan(args)
    except ScenarioError as e:
        return refuse(e)
    from ftharness.harness.matrix.bisect import collapse, search, skipped_lines   # once the input is good
    from ftharness.harness.matrix.command import _report
    from ftharness.harness.matrix.runner import MatrixOptions
    print(f"bisect: {entry[0]} over Ray {versions[0]}..{versions[-1]} ({len(versions)} releases), "
          f"{args.repeat} run(s) per probe; results in {out}", flush=True)
    # a release whose Ray Train code is identical to the previous one's is not probed (bisect.SAME_TRAIN)
    probed, skipped = collapse(versions, uses_data)
    for line in skipped_lines(skipped):
        print(line, flush=True)
    quiet = lambda m: None   # noqa: E731 - the cells' own lines; bisect prints one line per probe
    opts = MatrixOptions(out_dir=out, allow_destructive=args.allow_destructive, cell_timeout_s=args.cell_timeout,
                         say=quiet, host_lock=args.host_lock)
    t0 = time.monotonic()
    try:
        result = search(probed, probe_function(entry, args.repeat, opts), say=lambda m: print(m, flush=True))
    except KeyboardInterrupt:
        print("ftharness: bisect interrupted; the runs that finished are in cells.jsonl", file=sys.stderr)
        _report(out)
        return 130
    wall = time.monotonic() - t0
    _report(out)
    print(result.sentence())
    print(f"bisect: {sum(len(p.rows) for p in result.probes)} run(s) in {wall:.0f} s; report {out}/matrix.html")
    with open(os.path.join(out, "bisect.json"), "w") as f:
        json.dump({"scenario": entry[0], "range": [versions[0], versions[-1]], "repeat": args.repeat,
                   "boundary": result.boundary, "last_same": result.last_same, "flaky": result.flaky,
                   "interval": result.interval, "seconds": round(wall, 1), "sentence": result.sentence(),
                   "skipped": skipped,
                   "probes": [{"ray": p.ray, "signature": p.signature, "flaky": p.flaky,
                               "verdicts": [r.get("verdict") for r in p.rows], "seconds": round(p.seconds, 1)}
                              for p in result.probes]}, f, indent=2)
    return 3 if result.flaky else 0   # stopped: a flaky probe, or one whose runs could not judge
