"""`ftharness report` and `ftharness compare`: the reports from the command line.

`add_subcommands(subparsers)` registers both on the main parser. Bad input
(a path that holds no results folder, a malformed LABEL=...) is one line on
stderr and exit code 2, like the rest of the CLI.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Optional, Sequence

import yaml

from ftharness.errors import FtharnessError

#: scenarios/verdict.py's exit codes; not imported from there at start: it loads the plugins
#: (ftharness.faults), which `--version` and `doctor` must not (tests/test_fuzz_plugin_loading.py)
EXIT_OK, EXIT_FAIL, EXIT_CANNOT_RUN = 0, 1, 2


#: what a damaged (hand-edited, truncated, hostile) results folder makes the report code raise
DAMAGED = (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError, RecursionError,
           yaml.YAMLError)


def damaged(paths: Sequence[str], done: str, e: BaseException) -> str:
    """The one line for results folders whose files cannot be `done` (reported, compared)."""
    return f"{', '.join(map(str, paths))[:120]}: cannot be {done}, its files are damaged ({type(e).__name__}: {e})"


def _fail(msg: str) -> int:
    """One line of at most 300 characters (prefix included), credentials redacted, exit 2."""
    from ftharness.safety import printable, redact
    from ftharness.scenarios.language.messages import one_line

    print(one_line(f"ftharness: error: {printable(redact(str(msg)))}"), file=sys.stderr)
    return EXIT_CANNOT_RUN


def output_problem(out: Optional[str], flag: str, folder: bool = True) -> Optional[str]:
    """The error line for an output path that cannot be written (checked before any work)."""
    from ftharness.safety import output_dir_problem, output_file_problem

    if out is None:
        return None
    why = (output_dir_problem if folder else output_file_problem)(out)
    if not why and folder:   # issue 49: an existing folder (--force) with a link out of it is not written through
        from ftharness.outputs import planted_link_problem

        why = planted_link_problem(out)
    return f"{flag} {out[:120]}: {why}" if why else None


def check_paths(paths: Sequence[str]) -> Optional[str]:
    """The error line for the first path that is not a readable results
    folder (or a folder of them); None when all are."""
    from ftharness.reports.frames import read_results, results_folders

    for p in paths:
        try:
            folders = results_folders(p)
        except OSError as e:
            return str(e)
        for folder in folders:
            try:
                read_results(folder)
            except (OSError,) + DAMAGED as e:
                return f"{folder}: not a readable results folder ({type(e).__name__}: {e})"
    return None


def parse_group(spec: str) -> tuple:
    """'LABEL=RESULTS[,RESULTS...]' -> (label, paths); ValueError otherwise."""
    label, sep, paths = spec.partition("=")
    found = [p for p in paths.split(",") if p]
    if not sep or not label or not found:
        raise ValueError(f"compare: {spec!r} is not LABEL=RESULTS[,RESULTS...]")
    return label, found


def refuse_existing(out: str, force: bool) -> Optional[str]:
    """The error line when `out` is a file, or a non-empty folder and not
    --force: a report never silently replaces an earlier one."""
    if os.path.isfile(out):
        return f"--out {out}: is a file; choose a folder"
    if not force and os.path.isdir(out) and os.listdir(out):
        return f"--out {out}: already exists and is not empty; choose another folder or pass --force"
    return None


def same_path(junit: Optional[str], out: str) -> Optional[str]:
    """The error line when --junit names the --out folder the report is written to."""
    if junit and os.path.abspath(junit) == os.path.abspath(out):
        return f"--junit {junit[:120]}: is the --out folder; give a file (e.g. {os.path.join(out, 'junit.xml')[:120]})"
    return None


def overwrites_input(path: Optional[str], inputs: Sequence[str], flag: str) -> Optional[str]:
    """The error line when an output file would replace a file of a results folder it reads."""
    if not path:
        return None
    target = os.path.realpath(path)
    for folder in inputs:
        base = os.path.realpath(folder) if isinstance(folder, str) else None
        if base and (target == base or target.startswith(base + os.sep)) and os.path.exists(target):
            return f"{flag} {path[:120]}: would overwrite a file of the results folder {folder[:120]} it reads"
    return None


def resolve_journals(paths: Sequence[str]) -> List[str]:
    """A Chaos Toolkit journal stands for the results folder of its ftharness run."""
    from ftharness.history.records import read_json_file

    out = []
    for p in paths:
        if os.path.isfile(p) and p.endswith(".json"):
            journal = read_json_file(p)   # bounded: a regular file, at most 64 MiB; None otherwise
            fth = journal.get("ftharness") if isinstance(journal, dict) else None
            folder = fth.get("results_dir") if isinstance(fth, dict) else None
            out.append(folder if isinstance(folder, str) and folder else p)
        else:
            out.append(p)
    return out


def cmd_report(args) -> int:
    from ftharness.reports.html import write_report
    from ftharness.reports.junit import write_junit

    args.results = resolve_journals(args.results)
    error = (output_problem(args.out, "--out") or output_problem(args.junit, "--junit", folder=False)
             or refuse_existing(args.out, args.force) or check_paths(args.results)
             or overwrites_input(args.junit, args.results, "--junit") or same_path(args.junit, args.out))
    if error:
        return _fail(error)
    try:
        page = write_report(args.results, args.out)
        junit = write_junit(args.results, args.junit) if args.junit else None
    except DAMAGED as e:   # a results folder whose files parse but do not hold what a run writes
        return _fail(damaged(args.results, "reported", e))
    print(f"report: {page}")
    if junit:
        print(f"junit: {junit}")
    return EXIT_OK




def cmd_compare(args) -> int:
    """The table on the terminal, compare.csv and compare.html; exit 1 when a
    --fail-if gate trips, so a CI job can hold a configuration to a baseline.
    Distinct, judged runs only (ftharness.reports.compare.select_runs)."""
    from ftharness.reports.compare import check_gates, few_samples, metric_rows, parse_gate, samples, select_runs, \
        terminal_table, write_compare

    groups: Dict[str, List[str]] = {}
    try:
        gates = [parse_gate(text) for text in args.fail_if]
        for spec in args.groups:
            label, paths = parse_group(spec)
            if label in groups:
                raise ValueError(f"compare: the label {label!r} is given twice; give each configuration once "
                                 f"(LABEL=RESULTS,RESULTS...) or another label")
            groups[label] = paths
    except ValueError as e:
        return _fail(str(e))
    folders = [p for paths in groups.values() for p in paths]
    error = output_problem(args.out, "--out") or refuse_existing(args.out, args.force) or check_paths(folders)
    if error:
        return _fail(error)
    try:   # all of it read before anything is printed or written: a damaged folder is one line
        runs, excluded = select_runs(groups, pool=args.pool)
        found = samples(runs)
        rows = metric_rows(found)
        judged = check_gates(gates, rows)
    except FtharnessError as e:   # a selection the user can change, or a file the one reader refused
        return _fail(str(e))
    except (OSError,) + DAMAGED as e:   # a results folder whose files do not hold what a run writes
        return _fail(damaged(folders, "compared", e))
    try:
        written = write_compare(runs, args.out, found=found, gates=judged, excluded=excluded)
    except OSError as e:
        return _fail(f"--out {args.out[:120]}: cannot be written ({e.strerror or type(e).__name__})")
    except DAMAGED as e:
        return _fail(damaged(folders, "compared", e))
    for e in excluded:
        print(f"ftharness: left out {e['results']} ({e['configuration']}): {e['reason']}", file=sys.stderr)
    for warning in few_samples(found):
        print(f"ftharness: warning: {warning}", file=sys.stderr)
    print(terminal_table(rows))
    for _, line in judged:
        print(line)
    print(f"compare: {written}")
    return EXIT_FAIL if any(hit for hit, _ in judged) else EXIT_OK


def add_subcommands(subparsers: "argparse._SubParsersAction") -> None:
    r = subparsers.add_parser("report", help="write an HTML report (and JUnit XML) over results folders")
    r.add_argument("results", nargs="+", help="results folders, or folders of them (a suite)")
    r.add_argument("--out", default="report", help="report folder (default: ./report)")
    r.add_argument("--junit", metavar="FILE", help="also write JUnit XML to FILE")
    r.add_argument("--force", action="store_true", help="write into --out even if it is not empty")
    r.set_defaults(func=cmd_report)

    c = subparsers.add_parser("compare", help="compare recovery, lost work and ETTR across configurations")
    c.add_argument("groups", nargs="+", metavar="LABEL=RESULTS[,RESULTS...]",
                   help="a configuration and its results folders; the first is the baseline")
    c.add_argument("--out", default="compare", help="output folder (default: ./compare)")
    c.add_argument("--fail-if", action="append", default=[], metavar='"METRIC.STAT > THRESHOLD"',
                   help='exit 1 when it holds for a configuration, e.g. "recovery_s.median > +10%%" '
                        "(STAT: median or p95; > or <; N%% relative to the first configuration, +N/-N "
                        "its difference, N the value itself); repeatable")
    c.add_argument("--force", action="store_true", help="write into --out even if it is not empty")
    c.add_argument("--pool", action="store_true", help="pool runs of different scenarios in one configuration "
                   "(by default a configuration holds one scenario)")
    c.set_defaults(func=cmd_compare)
