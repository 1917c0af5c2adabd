"""`ftharness matrix`: the same scenarios across Ray releases and configurations.

    ftharness matrix scenarios/catalog/kill-worker.yaml --ray 2.51.2,2.58.1,2.60.0
    ftharness matrix --ray all --set workload.checkpoint_every=1,5 --repeat 3 --out results/m

Everything is validated before the first cell starts (releases, axis paths,
every cell's scenario against the schema and its release); then each cell runs
as one `ftharness run` in its release's environment, and the report
(matrix.html, matrix.csv, junit.xml, changes.json) is written into --out.
Exit: 0 when every cell passed (changes are not failures), 1 when a cell
FAILed, 3 when none failed but one was INCONCLUSIVE or could not run, 2 for
bad input.
"""

from __future__ import annotations

import os
import sys

from ftharness import releases
from ftharness.errors import ScenarioError


#: the longest a cell may run (--cell-timeout): a week
MAX_CELL_TIMEOUT_S = 7 * 86400.0


def add_parser(sub) -> None:
    m = sub.add_parser("matrix", help="run scenarios on several Ray releases and configurations; report what changed")
    m.add_argument("paths", nargs="*", help="scenario files or folders (default: the built-in catalog)")
    m.add_argument("--ray", metavar="VERSIONS", help=f"comma list of releases ({releases.RANGE_TEXT}; a minor such as "
                   "2.57 means its latest patch) or 'all' (default: the installed release)")
    m.add_argument("--set", dest="sets", action="append", default=[], metavar="PATH=V1,V2",
                   help="an axis: a scenario field and its values, e.g. workload.checkpoint_every=1,5,10 (repeatable)")
    m.add_argument("--runtime", metavar="ray,torchrun", help="an axis of runtimes (workload.runtime)")
    m.add_argument("--repeat", type=int, default=1, help="runs per cell (default 1); recovery times get a "
                   "bootstrap interval from 2 on")
    m.add_argument("--out", help="matrix folder (default: results/matrix-<time>)")
    m.add_argument("--cell-timeout", type=float, default=1800.0, help="seconds per cell (default 1800)")
    m.add_argument("--allow-destructive", action="store_true",
                   help="passed to every cell's run (a scenario with cluster.address needs it)")
    m.add_argument("--host-lock", metavar="FILE", help="hold FILE's lock while each cell runs, so chaos runs "
                   "sharing this host take turns (one embedded cluster at a time)")
    m.add_argument("--dry-run", action="store_true", help="validate and list the cells; run nothing")
    m.set_defaults(func=cmd_matrix)


def plan(args):
    """(cells, out folder): everything checked, nothing started, built or written: the
    releases, the axes (every --set value through the scenario loader), the scenario files
    (through the bounded reader), --out, the number of cells (before they are built), every
    cell's scenario against the schema and its release, and the cluster guard for every cell
    (a cluster.address from a scenario or --set is refused without --allow-destructive; the
    cells do not inherit RAY_ADDRESS, so it is no source)."""
    from ftharness.harness.matrix.axes import expand, parse_releases, parse_sets
    from ftharness.harness.matrix.cells import for_release
    from ftharness.harness.run.arguments import check_file_option, check_new_out, check_number, default_out
    from ftharness.harness.run.guard import check_route
    from ftharness.harness.run.collect import collect_files
    from ftharness.scenarios.schema import Scenario, parse_scenario, read_scenario_file, release_problem

    check_number("--cell-timeout", args.cell_timeout, 1.0, MAX_CELL_TIMEOUT_S)
    if args.host_lock is not None:
        check_file_option("--host-lock", args.host_lock)
    out = check_new_out(args.out or default_out("matrix"), "cells.jsonl", "already holds a matrix")
    rays = parse_releases(args.ray)
    # the fields' paths are all an axis needs: the model's schema (not the documented one, which reads the
    # models' sources: seconds)
    axes = parse_sets(args.sets, args.runtime, Scenario.model_json_schema() if args.sets else {})
    loaded = []
    for path in collect_files(args.paths):
        data, sc = read_scenario_file(path)
        check_route(sc, args.allow_destructive, environment=False)
        loaded.append((sc.name, path, data))
    names = [n for n, _, _ in loaded]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ScenarioError(f"name: {', '.join(dup)} used by more than one scenario")
    cells = expand(loaded, rays, axes, args.repeat)
    from ftharness.harness.run.preflight import preflight

    proved = set()
    for c in cells:   # each cell's scenario as it will run, on its release, and where it runs
        where = f"{os.path.basename(c.source)} [{c.config}]"
        # the cell as written first (its --set values through the schema): the release's policy
        # model below reads failure_config's numbers, so `max_failures=x` is one line, never exit 4
        parse_scenario(c.data, source=where, base_dir=os.path.dirname(os.path.abspath(c.source)))
        data, _ = for_release(c.data, c.ray)
        sc = parse_scenario(data, source=where, base_dir=os.path.dirname(os.path.abspath(c.source)))
        check_route(sc, args.allow_destructive, environment=False)
        key = (c.source, sc.workload.model_dump_json())
        if key not in proved:   # what `validate` proves (issue 49: a dry run took 57 files it refuses)
            preflight(sc, static=True)
            proved.add(key)
        c.na = release_problem(sc, c.ray)   # a feature the release lacks: the cell is N/A, not an error
    return cells, out


def cmd_matrix(args) -> int:
    from ftharness.harness.matrix.runner import MatrixOptions, run_matrix
    from ftharness.harness.run.arguments import refuse

    try:
        cells, out = plan(args)
    except ScenarioError as e:
        return refuse(e)
    rays = sorted({c.ray for c in cells}, key=releases.parse)
    print(f"matrix: {len(cells)} cell(s): {len({c.scenario for c in cells})} scenario(s) on Ray {', '.join(rays)}"
          f"{f', {args.repeat} repeat(s)' if args.repeat > 1 else ''}; results in {out}")
    if args.dry_run:
        for c in cells:
            print(f"  {c.cell_id}" + (f"  (N/A: {c.na})" if c.na else ""))
        return 0
    opts = MatrixOptions(out_dir=out, allow_destructive=args.allow_destructive, cell_timeout_s=args.cell_timeout,
                         say=lambda m: print(m, flush=True), host_lock=args.host_lock)
    try:
        rows = run_matrix(cells, opts)
    except KeyboardInterrupt:
        print("ftharness: matrix interrupted; the cells that finished are in cells.jsonl", file=sys.stderr)
        _report(out)
        return 130
    report = _report(out)
    for ch in (report or {}).get("changes", []):
        print(f"change: {ch['sentence']}")
    verdicts = {r["verdict"] for r in rows}
    print(f"matrix: {len(rows)} run(s): " + ", ".join(f"{v} {sum(r['verdict'] == v for r in rows)}"
                                                  for v in sorted(verdicts)) + f"; report {out}/matrix.html")
    if "FAIL" in verdicts:
        return 1
    return 0 if verdicts <= {"PASS", "N/A"} else 3


def _report(out: str):
    from ftharness.reports.matrix import write_report

    try:
        return write_report(out)
    except Exception as e:  # noqa: BLE001 - the cells are kept; the report is one warning line
        print(f"ftharness: warning: matrix report not written ({type(e).__name__}: {e})", file=sys.stderr)
        return None
