"""`ftharness`: run chaos scenarios on Ray Train and judge them.

Exit codes (docs/verdicts.md): 0 PASS; 1 FAIL (the outcome or an expected property
does not match `expect`); 2 the scenario could not run (bad input, no cluster,
refused by a guard); 3 INCONCLUSIVE (a fault did not land, the history has a
gap, an expected property judged nothing); 4 an internal error of ftharness
(one line here, the traceback in the results folder). `doctor` exits 1 when a
finding is an error, 2 for a path that does not exist.

The parser and the dispatch; each command family is its own module: cli_run.py (run, soak,
suite), cli_results.py (check, verdict, trace, plan), cli_scenarios.py (validate, init,
schema, list), cli_doctor.py (doctor), what they share cli_shared.py; report, compare,
matrix, bisect and explore add their own subcommands. Every name those modules define is
importable from here too.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List, Optional

from ftharness.errors import ClusterError, ScenarioError
from ftharness.harness.frontends.cli_doctor import cmd_doctor
from ftharness.harness.frontends.cli_results import cmd_check, cmd_plan, cmd_trace, cmd_verdict
from ftharness.harness.frontends.cli_run import cmd_run, cmd_soak, cmd_suite
from ftharness.harness.frontends.cli_scenarios import cmd_init, cmd_list, cmd_schema, cmd_validate
from ftharness.harness.frontends.cli_shared import (EXIT_BROKEN_PIPE, EXIT_CANNOT_RUN, EXIT_INTERRUPTED, _fail,
                                                    internal_error)
from ftharness.safety import printable, redact
from ftharness.scenarios.language.messages import one_line


def handed_input_problem(args) -> Optional[str]:
    """The one line refusing a results folder (or journal) a command is handed that holds a file
    ftharness does not read (a FIFO, a device, a file under /proc, /sys or /dev, one over its
    size cap: ftharness.inputs.results_folder_problem), before the command reads anything."""
    from ftharness.inputs import results_folder_problem

    command = getattr(args, "command", None)
    paths = {"check": lambda: [args.results], "trace": lambda: [args.results],
             "report": lambda: list(args.results), "plan": lambda: list(args.results),
             "compare": lambda: [p for g in args.groups for p in g.partition("=")[2].split(",") if p],
             "run": lambda: [args.resume] if args.resume else []}.get(command, list)()
    for path in paths:
        why = results_folder_problem(path)
        if why and command == "run":
            why = f"--resume {why}"
        if why is None and command == "report" and os.path.isfile(path) and path.endswith(".json"):
            from ftharness.history.records import read_json_file   # a journal: the folder it names too

            journal = read_json_file(path)
            fth = journal.get("ftharness") if isinstance(journal, dict) else None
            folder = fth.get("results_dir") if isinstance(fth, dict) else None
            why = results_folder_problem(folder) if isinstance(folder, str) else None
        if why:
            return why
    return None


def version_text() -> str:
    from importlib.metadata import PackageNotFoundError, version

    def v(name: str) -> str:
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

    import ftharness

    return f"ftharness {ftharness.__version__} (ray {v('ray')}, torch {v('torch')}, python {sys.version.split()[0]})"


class _Parser(argparse.ArgumentParser):
    """Bad arguments: one line naming what is wrong, exit 2."""

    def error(self, message):
        print(one_line(f"{self.prog}: error: {printable(redact(message))}"), file=sys.stderr)
        sys.exit(EXIT_CANNOT_RUN)


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(prog="ftharness", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=version_text())
    sub = p.add_subparsers(dest="command", required=True)

    ini = sub.add_parser("init", help="write a starter scenario (your train function, a killed worker) and "
                         "a CI file that runs it, as docs/ci.md lays them out")
    from ftharness.harness.frontends.starter import DEFAULT_DIR

    ini.add_argument("dir", nargs="?", default=DEFAULT_DIR, metavar="DIR",
                     help="the scenarios' folder, inside the repository (default: chaos)")
    ini.add_argument("--train", metavar="MODULE:FUNCTION", help="your train function, in DIR or an installed "
                     "module; it must exist (default: ftharness's reference workload)")
    ini.add_argument("--ci", default="github", choices=("github", "gitlab", "none"), help="the CI file written "
                     "into the current folder (the repository root): github (.github/workflows/chaos.yml), "
                     "gitlab (.gitlab-ci.yml) or none (default: github)")
    ini.add_argument("--force", action="store_true", help="overwrite files of the same name")
    ini.set_defaults(func=cmd_init)

    r = sub.add_parser("run", help="run one scenario (default: the built-in one) and write a results folder")
    r.add_argument("scenario", nargs="?", help="scenario YAML file (default: scenarios/catalog/default.yaml)")
    r.add_argument("--out", help="results folder (default: results/<scenario>-<time>)")
    r.add_argument("--address", help="run on an existing cluster: 'auto' or the GCS 'HOST:PORT' (not ray://: "
                   "ftharness needs its driver on the cluster)")
    r.add_argument("--submit", metavar="ADDRESS", help="run the harness as a Ray Job on the cluster whose "
                   "dashboard is at ADDRESS (http://HOST:8265) and bring the results back here")
    r.add_argument("--resume", metavar="RESULTS", help="resume the run of a previous results folder (same run name and storage)")
    r.add_argument("--steps", type=int, help="override workload.steps")
    r.add_argument("--allow-destructive", action="store_true", help="allow faults on a cluster ftharness did not start")
    r.add_argument("--verbose", action="store_true", help="show Ray's and the workers' log lines live "
                    "(they are kept in RESULTS/logs either way)")
    r.add_argument("--quiet", action="store_true", help="no live progress")
    r.add_argument("--scenario-dir", help=argparse.SUPPRESS)   # a matrix cell: the folder of the scenario it copies
    r.set_defaults(func=cmd_run)

    sk = sub.add_parser("soak", help="train for a duration while seeded random faults arrive; judge the whole run")
    sk.add_argument("scenario", nargs="?", help="the cluster, workload and budgets to soak (default: the built-in "
                    "scenario; its own faults are not used)")
    sk.add_argument("--duration", default="10m", help="how long to train: 600, 90s, 10m, 1h (default 10m)")
    sk.add_argument("--seed", type=int, default=0, help="draws the fault plan (default 0)")
    sk.add_argument("--mtbf", default="60s", help="mean training time between faults (default 60s)")
    sk.add_argument("--mix", default="kill_worker:3,preempt_node:2,kill_node:1",
                    help="kinds and weights (default kill_worker:3,preempt_node:2,kill_node:1)")
    sk.add_argument("--out", help="results folder (default: results/<scenario>-soak-<time>)")
    sk.add_argument("--address", help="soak an existing cluster instead")
    sk.add_argument("--allow-destructive", action="store_true", help="allow faults on a cluster ftharness did not start")
    sk.add_argument("--verbose", action="store_true", help="show Ray's and the workers' log lines live "
                    "(they are kept in RESULTS/logs either way)")
    sk.add_argument("--quiet", action="store_true", help="no live progress")
    sk.set_defaults(func=cmd_soak)

    st = sub.add_parser("suite", help="run a catalog of scenarios on one embedded cluster")
    st.add_argument("paths", nargs="*", help="scenario files or folders (default: the built-in catalog)")
    st.add_argument("--out", help="results folder (default: results/suite-<time>)")
    st.add_argument("--address", help="run on an existing cluster instead")
    st.add_argument("--repeat", type=int, default=1, metavar="N", help="run the suite N times, into OUT/repeat-1 "
                    "... OUT/repeat-N (then `compare LABEL=OUT/repeat-1/NAME,OUT/repeat-2/NAME,...`)")
    st.add_argument("--allow-destructive", action="store_true")
    st.add_argument("--verbose", action="store_true", help="show Ray's and the workers' log lines live "
                    "(they are kept in RESULTS/logs either way)")
    st.add_argument("--quiet", action="store_true")
    st.set_defaults(func=cmd_suite)

    from ftharness.reports.cli import add_subcommands

    add_subcommands(sub)

    from ftharness.harness.matrix.command import add_parser as add_matrix
    from ftharness.harness.matrix.bisect_command import add_parser as add_bisect

    add_matrix(sub)
    add_bisect(sub)

    from ftharness.harness.run.explore_command import add_parser as add_explore

    add_explore(sub)

    c = sub.add_parser("check", help="re-judge a results folder from its history")
    c.add_argument("results")
    c.add_argument("--json", action="store_true", help="print the judgement as JSON (verdict, reasons, "
                   "properties, unasked_failures, faults)")
    c.set_defaults(func=cmd_check)

    vd = sub.add_parser("verdict", help="PASS, FAIL or INCONCLUSIVE of a Chaos Toolkit journal and the run behind it")
    vd.add_argument("journal")
    vd.set_defaults(func=cmd_verdict)

    v = sub.add_parser("validate", help="check scenario files as `run` would before starting, without running them")
    v.add_argument("scenarios", nargs="+", help="scenario files, or folders of them (*.yaml): a folder's scenario this host "
                   "cannot run (network namespaces without root) is SKIPPED with the reason")
    v.add_argument("--ray", metavar="VERSION", help="validate for this Ray release (default: the installed one)")
    v.add_argument("--address", help="check them for this existing cluster, as `run --address` would")
    v.add_argument("--allow-destructive", action="store_true", help="as `run --allow-destructive`")
    v.add_argument("--out", help="also check that this results folder could be written")
    v.set_defaults(func=cmd_validate)

    sc = sub.add_parser("schema", help="print the JSON Schema of scenario files (published as scenarios/scenario.schema.json)")
    sc.add_argument("--out", dest="schema_out", metavar="FILE", help="write it to FILE instead (a file, not a results folder)")
    sc.set_defaults(func=cmd_schema)

    ls = sub.add_parser("list", help="list fault kinds, properties and the built-in catalog")
    ls.add_argument("what", nargs="?", choices=("all", "faults", "properties", "catalog", "known"), default="all")
    ls.add_argument("--ray", metavar="VERSION", help="with `known`: the known bugs of this release (default: "
                    "the installed one)")
    ls.set_defaults(func=cmd_list)

    dr = sub.add_parser("doctor", help="find Ray Train V2 pitfalls in driver scripts and train modules "
                                       "(static: nothing is imported or run)")
    dr.add_argument("paths", nargs="*", metavar="PATH", help="Python files, or folders to search for *.py")
    dr.add_argument("--json", action="store_true", help="print the findings as a JSON list")
    dr.add_argument("--list-rules", action="store_true", help="list the rules with their severity and why")
    dr.add_argument("--run", metavar="MODULE:FUNCTION", help="also probe the train function on the embedded "
                    "cluster: rank 1 killed after report 3, one retry; prints lost work and the verdict")
    dr.add_argument("--trainer", choices=("torch", "xgboost", "lightgbm"), default="torch",
                    help="the trainer of --run (default torch)")
    dr.add_argument("--datasets", metavar="MODULE:FUNCTION", help="builds the datasets= of --run")
    dr.add_argument("--config", help="train_loop_config of --run, as a JSON object")
    dr.add_argument("--out", help="results folder of --run (default: results/doctor-probe-<time>)")
    dr.add_argument("--ray", metavar="VERSION", help="judge for this Ray release (default: the installed one): "
                    "settings, APIs and variables that release lacks or reads differently")
    dr.add_argument("--quiet", action="store_true", help="no live progress for --run")
    dr.set_defaults(func=cmd_doctor)

    tr = sub.add_parser("trace", help="write a results folder's history as a Chrome trace (Perfetto)")
    tr.add_argument("results")
    tr.add_argument("--out", dest="trace_out", metavar="FILE", help="default: RESULTS/trace.json")
    tr.set_defaults(func=cmd_trace)

    pl = sub.add_parser("plan", help="simulate a job's failures: budget exhaustion, checkpoint cadence, failure limits")
    pl.add_argument("results", nargs="*", help="results folders to calibrate from (default: built-in calibration)")
    pl.add_argument("--accelerators", type=int, required=True, help="accelerators in the job")
    pl.add_argument("--days", type=float, required=True, help="wall-clock days the job holds the cluster")
    pl.add_argument("--spot-fraction", type=float, default=0.0, help="share of accelerators on spot capacity")
    pl.add_argument("--accelerators-per-node", type=int, default=8)
    pl.add_argument("--rate", action="append", default=[], metavar="CAUSE=PER_ACC_HOUR",
                    help="failure rate of a cause per accelerator-hour (gpu, host, network, maintenance, "
                         "software, unknown, spot, controller, fatal); repeatable")
    pl.add_argument("--mtbf", type=float, help="per-accelerator MTBF in hours of the Llama 3 causes together")
    pl.add_argument("--max-failures", type=int, help="FailureConfig.max_failures (default: Ray's, 0)")
    pl.add_argument("--max-preemption-failures", type=int, help="default: Ray's, -1")
    pl.add_argument("--controller-failure-limit", type=int, help="default: Ray's, -1")
    pl.add_argument("--interval-s", type=float, help="step work between checkpoints (default: Young's optimum)")
    pl.add_argument("--checkpoint-every", type=int, help="steps between checkpoints, instead of --interval-s")
    pl.add_argument("--step-s", type=float, help="given step time (s), instead of the measured one")
    pl.add_argument("--checkpoint-s", type=float, help="given checkpoint cost (s)")
    pl.add_argument("--recovery-s", type=float, help="given recovery time (s), for every fault kind")
    pl.add_argument("--lag-s", type=float, help="given checkpoint registration lag (s)")
    pl.add_argument("--notice-s", type=float, help="spot drain notice (s, default 120)")
    pl.add_argument("--replacement-s", type=float, help="time to replace a lost node (s, default 0: spares)")
    pl.add_argument("--elastic", action="store_true", help="the job runs on fewer workers until a node is replaced")
    pl.add_argument("--no-notice-checkpoint", action="store_true", help="the job does not checkpoint on a drain notice")
    pl.add_argument("--target", type=float, default=0.99, help="success probability for the recommended limits")
    pl.add_argument("--runs", type=int, default=2000)
    pl.add_argument("--seed", type=int, default=0)
    pl.add_argument("--out", dest="plan_out", metavar="DIR", help="also write plan.txt, CSVs and plan.png here")
    pl.set_defaults(func=cmd_plan)
    return p


def main(argv: Optional[List[str]] = None) -> int:
    for stream in (sys.stdout, sys.stderr):   # text from a results folder may hold lone surrogates
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):   # a stream already written to in another mode
                pass
    args = build_parser().parse_args(argv)
    try:   # the CLI's one error handling: every command raises, none catches for itself
        why = handed_input_problem(args)
        if why:
            return _fail(why)
        return args.func(args)
    except (ScenarioError, ClusterError) as e:   # bad input, no cluster: one line, nothing started
        return _fail(str(e))
    except KeyboardInterrupt:   # Ctrl-C: the command's `with` blocks tore the cluster down on the way out
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ftharness list | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as e:  # noqa: BLE001 - any command: one line, traceback kept, exit 4
        return internal_error(e, getattr(args, "out", None) if isinstance(getattr(args, "out", None), str) else None)


if __name__ == "__main__":
    sys.exit(main())
