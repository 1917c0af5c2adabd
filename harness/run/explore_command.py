"""`ftharness explore [SCENARIO] --budget 30m --seed S`: the command line of
ftharness.harness.run.explore.

Everything is checked before a cluster starts (the scenario, the release, the guard's
route, --budget, --max-faults, --out); then one cluster is opened for every example,
as `suite` does. Output: OUT/explore.json, OUT/explore.html, OUT/examples/ (a results
folder per example), OUT/findings/ (one replayable scenario per finding), OUT/.hypothesis
(the example database a second explore into OUT continues from).
Exit: 1 a failure was found, 3 only inconclusive examples (or none run), 0 all passed,
2 bad input, 4 an internal error.
"""

from __future__ import annotations

import os
import sys

from ftharness.errors import ScenarioError

DEFAULT_BUDGET = "30m"
MAX_FAULTS_LIMIT = 5


def parse_budget(text: str) -> float:
    """'30m', '90s', '1h' -> seconds (one line naming --budget otherwise)."""
    from ftharness.scenarios.soak import parse_duration

    return parse_duration(text, "--budget")


def add_parser(sub) -> None:
    e = sub.add_parser("explore", help="search fault schedules with Hypothesis (real runs), shrink what fails "
                                       "to the smallest replayable scenario")
    e.add_argument("scenario", nargs="?", help="base scenario: its cluster, workload and budgets "
                   "(default: the built-in reference job; its own faults and expect.properties are not used)")
    e.add_argument("--budget", default=DEFAULT_BUDGET, help="wall-clock time for search and shrinking: 90s, 30m, 1h "
                   f"(default {DEFAULT_BUDGET})")
    e.add_argument("--seed", type=int, default=0, help="Hypothesis's seed (default 0): with --budget, what is run")
    e.add_argument("--max-faults", type=int, default=2, help=f"most faults in one schedule (1-{MAX_FAULTS_LIMIT}, default 2)")
    e.add_argument("--out", help="exploration folder (default: results/<scenario>-explore-<time>); an existing one "
                   "is continued")
    e.add_argument("--search-only", action="store_true", help="skip the coverage pass (every fault kind once in "
                   "its simplest schedule, before Hypothesis's search)")
    e.add_argument("--address", help="explore on an existing cluster instead")
    e.add_argument("--allow-destructive", action="store_true", help="allow faults on a cluster ftharness did not start")
    e.add_argument("--verbose", action="store_true", help="show Ray's and the workers' log lines live")
    e.set_defaults(func=cmd_explore)


def check_args(args):
    """(base scenario, budget seconds, out folder, route): refused in one line before anything starts."""
    from ftharness.harness.run.arguments import check_count, check_new_out, check_seed, default_out
    from ftharness.harness.run.guard import check_route
    from ftharness.harness.run.preflight import preflight
    from ftharness.scenarios.schema import default_scenario_path, load_scenario, require_release

    budget = parse_budget(args.budget)
    check_count("--max-faults", args.max_faults, MAX_FAULTS_LIMIT)
    check_seed("--seed", args.seed)
    base = load_scenario(args.scenario or default_scenario_path())
    if base.workload.runtime != "ray_train":
        raise ScenarioError(f"workload.runtime: explore runs on Ray Train (ray_train); {base.workload.runtime} "
                            f"is not explored yet")
    require_release(base)
    target = check_route(base, args.allow_destructive, address=args.address, has_faults=True)
    preflight(base)
    out = check_new_out(args.out or default_out(f"{base.name}-explore"), "summary.json",
                        "holds a run, not an exploration")
    return base, budget, out, target


def cmd_explore(args) -> int:
    """Explore (its errors: cli.main's one handling)."""
    import importlib

    try:   # Hypothesis drives the search: the `explore` extra (not every install has it)
        importlib.import_module("hypothesis")
    except ImportError:
        print("ftharness: error: explore needs Hypothesis, which the core install leaves out: "
              "pip install 'ftharness[explore]'", file=sys.stderr)
        return 2
    from ftharness.scenarios import explore_strategies as es

    base, budget, out, target = check_args(args)
    args.out = out   # an internal error's traceback goes into it (cli.main, the CLI's one error handling)
    support = es.supported(base)
    es.schedules(base, support, args.max_faults)   # no kind at all: one line, before a cluster starts
    # an existing OUT is continued: what it holds is read and checked now, before a cluster starts
    from ftharness.harness.run.explore_state import load_state

    check_outputs(os.path.abspath(out))
    earlier = load_state(os.path.abspath(out), base, support)
    print(f"explore {base.name}: {len(support.kinds)} fault kinds ({', '.join(support.kinds)}); "
          f"left out: {', '.join(support.left_out) or 'none'}; budget {budget:g}s, seed {args.seed}",
          file=sys.stderr, flush=True)
    if args.verbose:
        os.environ["FTHARNESS_VERBOSE"] = "1"
    # Ray Train and the cluster code: once the input is good
    from ftharness.harness.cluster.handles import keep_logs, open_cluster
    from ftharness.harness.run.explore import ClusterExecutor, Explorer
    from ftharness.reports.explore import terminal_text

    keep_logs(os.path.abspath(out))
    with open_cluster(base.cluster, target.address) as cluster:
        executor = ClusterExecutor(cluster, target.address, target.source, target.allow_destructive)
        result = Explorer(base, executor, out, budget, seed=args.seed, max_faults=args.max_faults,
                          cover_first=not args.search_only, earlier=earlier).explore()
    print(terminal_text(result.to_dict()))
    print(f"report: {os.path.join(os.path.abspath(out), 'explore.html')}")
    return result.exit_code()


def check_outputs(out: str) -> None:
    """What explore writes into OUT (ftharness.outputs, the one writer) is no symlink: one planted
    there (explore.json, the page, findings/, examples/, the example database) is refused before
    a cluster starts, as the writer would refuse it after the search."""
    from ftharness.harness.run.explore import DB_DIR, EXPLORE_FILE, PAGE_FILE
    from ftharness.outputs import OutputRefused, inside_problem

    for name in (EXPLORE_FILE, PAGE_FILE, "findings", "examples", DB_DIR):
        path = os.path.join(out, name)
        why = inside_problem(out, path) if os.path.lexists(path) else None
        if why:
            raise OutputRefused(f"--out: {why}; choose a new --out")
    for sub in ("findings", "examples"):
        folder = os.path.join(out, sub)
        if os.path.isdir(folder) and not os.path.islink(folder):
            with os.scandir(folder) as it:
                for i, entry in enumerate(it):
                    if entry.is_symlink():
                        raise OutputRefused(f"--out: {entry.path}: a symlink; ftharness never writes through one; "
                                            f"choose a new --out")
                    if i > 100_000:
                        break
