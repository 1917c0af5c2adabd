"""`ftharness`: run chaos scenarios on Ray Train and judge them.

Exit codes (design.md): 0 PASS; 1 FAIL (the outcome or an expected property
does not match `expect`); 2 the scenario could not run (bad input, no cluster,
refused by a guard); 3 INCONCLUSIVE (a fault did not land, the history has a
gap, an expected property judged nothing); 4 an internal error of ftharness
(one line here, the traceback in the results folder). `doctor` exits 1 when a
finding is an error, 2 for a path that does not exist.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import traceback
from typing import Any, Dict, List, Optional

from ftharness.scenarios.verdict import (EXIT_CANNOT_RUN, EXIT_FAIL, EXIT_INTERNAL, EXIT_PASS, exit_code, overall)
from ftharness.errors import ClusterError, InputError, ScenarioError
from ftharness.harness.run.arguments import check_new_out, default_out, refuse
from ftharness.harness.run.guard import check_route
from ftharness.safety import output_dir_problem, output_file_problem, printable, redact
from ftharness.scenarios.schema import one_line

EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE, as a shell reports it


#: one line (at most 300 characters, prefix included), credentials redacted, exit 2
_fail = refuse


def check_out(out: str, flag: str = "--out") -> None:
    """A results folder this run creates, refused before anything starts (ScenarioError)."""
    check_new_out(out, "summary.json", "already holds a run", flag)


def internal_error(exc: BaseException, folder: Optional[str] = None) -> int:
    """One line on the terminal; the traceback in `folder`/error.txt (or a temp file)."""
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    try:
        if folder:
            os.makedirs(folder, exist_ok=True)
            path = os.path.join(folder, "error.txt")
        else:
            fd, path = tempfile.mkstemp(prefix="ftharness-error-", suffix=".txt")
            os.close(fd)
        with open(path, "w") as f:
            f.write(text)
    except OSError:
        path = "(could not be written)"
    print(one_line(f"ftharness: internal error: {one_line(printable(redact(f'{type(exc).__name__}: {exc}')), 200)}; "
                   f"traceback in {path}"), file=sys.stderr)
    return EXIT_INTERNAL


def print_summary(summary, out: str) -> None:
    from ftharness.scenarios.job_error import job_reason, verdict_line

    figures = (f"{summary['outcome']} after {summary['attempts']} attempt(s), "
               f"{summary['steps']} steps, {summary['wall_time_s']:.1f}s")
    print(one_line(verdict_line(summary["verdict"], summary["scenario"], summary, figures), 600))
    if job_reason(summary):   # the verdict line named the job's own error: the figures follow it
        print(f"  {figures}")
    print_reasons(summary)
    print(f"results: {os.path.abspath(out)}")


def print_reasons(summary) -> None:
    """The verdict's reasons (less the job's own error, which the verdict line says), and the
    failures of properties the scenario did not ask for (a warning: they never change the exit
    code, and are never hidden)."""
    from ftharness.scenarios.job_error import other_reasons

    mismatches, inconclusive = other_reasons(summary)
    for m in mismatches:
        print(f"  - {one_line(m)}")
    for m in inconclusive:
        print(f"  ? {one_line(m)}")
    for u in summary.get("unasked_failures") or []:
        print(f"  WARNING {u['property']}: failed, but the scenario did not ask for it: {one_line(u['explanation'])}")


REPORT_PAGE, REPORT_DATA, JUNIT_FILE = "report.html", "report-data", "junit.xml"


def write_reports(out: str, folders: Optional[List[str]] = None) -> None:
    """report.html (frames in report-data/) and junit.xml in the results folder
    (over `folders`, its suite rounds, when given), so every run leaves a page
    for a person and a file for CI. The verdict is already decided: a report
    that cannot be written is one warning line."""
    try:
        from ftharness.reports.html import write_report
        from ftharness.reports.junit import write_junit

        page = write_report(folders or [out], out, page_name=REPORT_PAGE, data_dir=REPORT_DATA)
        write_junit(folders or [out], os.path.join(out, JUNIT_FILE))
    except Exception as e:  # noqa: BLE001 - never changes the verdict or the exit code
        print(f"ftharness: warning: report not written ({one_line(f'{type(e).__name__}: {e}', 200)})",
              file=sys.stderr)
        return
    print(f"report: {os.path.abspath(page)}")


def _logs(args, out: str) -> None:
    """Ray's logs kept in OUT/logs at teardown; --verbose shows them live too."""
    from ftharness.harness.cluster.handles import keep_logs

    if getattr(args, "verbose", False):
        os.environ["FTHARNESS_VERBOSE"] = "1"
    keep_logs(os.path.abspath(out))


def cmd_run(args) -> int:
    from ftharness.scenarios.schema import default_scenario_path, load_scenario, parse_scenario, require_release, scenario_data

    out = args.out
    try:
        scenario = load_scenario(args.scenario or default_scenario_path())
        if args.scenario_dir and not os.path.isdir(args.scenario_dir):
            return _fail(f"--scenario-dir {args.scenario_dir[:120]}: no such folder")
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
        out = out or default_out(scenario.name)
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
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - ftharness's own bug: one line, traceback kept
        return internal_error(e, out)
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
    try:
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
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001 - ftharness's own bug: one line, traceback kept
        return internal_error(e, out)
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

    out = args.out
    try:
        out = out or default_out("suite")
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
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # noqa: BLE001
        return internal_error(e, out)
    verdicts = [s["verdict"] for s in summaries]
    counts = {v: verdicts.count(v) for v in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}
    print(f"{counts['PASS']} passed, {counts['FAIL']} failed, {counts['INCONCLUSIVE']} inconclusive, "
          f"{counts['ERROR']} errors" + (f", {len(skipped)} skipped" if skipped else ""))
    print(f"results: {os.path.abspath(out)}")
    write_reports(out, rounds)
    return exit_code(overall(verdicts)) if verdicts else EXIT_PASS   # every scenario skipped: nothing failed


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


def _safe(text, limit: int = 300) -> str:
    """Text from a results folder, for the terminal: one line, control characters escaped."""
    return one_line(printable(redact(str(text))), limit)


def cmd_verdict(args) -> int:
    """PASS, FAIL or INCONCLUSIVE of a Chaos Toolkit journal and the run behind it."""
    from ftharness.harness.frontends.ctk.journal import journal_verdict

    from ftharness.history.records import read_json_file

    journal = read_json_file(args.journal, missing=KeyError)
    if journal is KeyError or journal is None:
        return _fail(f"{args.journal}: not a readable Chaos Toolkit journal (a JSON file of at most 64 MiB)")
    if not isinstance(journal, dict):
        return _fail(f"{args.journal}: not a Chaos Toolkit journal (not a JSON object)")
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


def cmd_validate(args) -> int:
    """Everything `run` checks before it starts, for every file: the file itself (every error,
    up to MAX_ERRORS, one line each), the Ray release it needs, the modules it names, the host it
    needs, the cluster guard (with --address / --allow-destructive as `run` takes them), and --out."""
    from ftharness.harness.run.preflight import preflight
    from ftharness.scenarios.schema import MAX_ERRORS, load_scenario, require_release

    status = EXIT_PASS
    from ftharness.scenarios.schema import address_form_problem, ray_client_refusal

    from ftharness.inputs import release_text_problem

    if args.ray is not None and release_text_problem(args.ray):
        return _fail(f"--ray {args.ray[:40]!r}: {release_text_problem(args.ray)}")
    if args.address is not None:
        why = ray_client_refusal(args.address) or address_form_problem(args.address)
        if why:
            return _fail(f"--address {args.address[:120]!r}: {why}")
    if args.out is not None:
        try:
            check_out(args.out)   # as `run` refuses it
        except ScenarioError as e:
            return _fail(str(e))
    from ftharness.harness.frontends import experiments

    for path, in_folder in _validate_files(args.scenarios):
        if experiments.is_experiment_file(path):   # a Chaos Toolkit experiment: checked as one
            found = experiments.problems(path)
            for line in found[:MAX_ERRORS]:
                _fail(f"{printable(path, False)[:200]}: {line}")
            if found:
                status = EXIT_CANNOT_RUN
            else:
                print(f"ok {printable(path, keep_newlines=False)} (Chaos Toolkit experiment)")
            continue
        try:
            scenario = load_scenario(path)
            require_release(scenario, args.ray)
            check_route(scenario, args.allow_destructive, address=args.address)
            if in_folder and _skipped_here(scenario, path):
                continue
            preflight(scenario, static=True)   # static: no module of the scenario's runs
            print(f"ok {printable(path, keep_newlines=False)}")
        except ScenarioError as e:
            problems = getattr(e, "problems", None) or [str(e)]
            name = printable(os.path.basename(path), False)[:100]
            for line in problems[:MAX_ERRORS]:   # with several files, each line says whose it is
                _fail(line if len(args.scenarios) == 1 or line.startswith(f"{name}:")
                      else f"{printable(path, False)[:200]}: {line}")
            more = getattr(e, "total", len(problems)) - len(problems[:MAX_ERRORS])
            if more > 0:
                _fail(f"{printable(os.path.basename(path), False)[:100]}: and {more} more error(s)")
            status = EXIT_CANNOT_RUN
    return status


def _validate_files(paths: List[str]) -> List[tuple]:
    """(file, from a folder) for each argument: a folder stands for its *.yaml files, and its
    *.json files that are Chaos Toolkit experiments."""
    import glob

    from ftharness.harness.frontends.experiments import is_experiment_file

    out = []
    for p in paths:
        if os.path.isdir(p):
            out += [(f, True) for f in sorted(glob.glob(os.path.join(p, "*.yaml")) + [
                j for j in glob.glob(os.path.join(p, "*.json")) if is_experiment_file(j)])]
        else:
            out.append((p, False))
    return out


def _skipped_here(scenario, path: str) -> bool:
    """A folder's scenario this host cannot run (ftharness.harness.run.suite.host_skip): one
    SKIPPED line, not an error; a file named alone is still refused, as `run` refuses it."""
    from ftharness.harness.run.collect import host_skip
    from ftharness.reports.skipped import line

    skip = host_skip(scenario, path)
    if skip is not None:
        print(_safe(line({**skip, "scenario": path})))
    return skip is not None


def scenario_schema_text() -> str:
    """The JSON Schema of a scenario file, as `ftharness schema` prints it."""
    from ftharness.scenarios.schema import scenario_json_schema

    return json.dumps(scenario_json_schema(), indent=2) + "\n"


def cmd_init(args) -> int:
    """The starter scenario and CI file of a user's chaos folder (harness/frontends/starter.py):
    all checked first, then written together, or one line and exit 2 with nothing written."""
    from ftharness.harness.frontends.starter import CI_FILES, SCENARIO_FILE, plan, write

    try:
        files = plan(args.dir, args.train, args.ci, args.force)
    except ScenarioError as e:
        return _fail(str(e))
    try:
        write(files)
    except OSError as e:
        return _fail(f"{e.filename or args.dir}: cannot be written ({e.strerror}); "
                     f"the files init wrote were removed")
    for path in files:
        print(f"wrote {printable(os.path.normpath(path), False)}")
    folder = printable(args.dir, False)
    print(f"next: ftharness validate {folder}; ftharness run {os.path.join(folder, SCENARIO_FILE)} (a minute or two)")
    if args.ci != "none":
        print(f"      in {CI_FILES[args.ci]}, replace HOST/OWNER in the install line with where ftharness "
              f"comes from (docs/ci.md)")
    return EXIT_PASS


def cmd_schema(args) -> int:
    """Print the JSON Schema of scenario files (for editors), or write it to --out."""
    text = scenario_schema_text()
    if not args.schema_out:
        sys.stdout.write(text)
        return EXIT_PASS
    why = output_file_problem(args.schema_out)
    if why:
        return _fail(f"--out {args.schema_out[:120]}: {why}")
    try:
        with open(args.schema_out, "w") as f:
            f.write(text)
    except OSError as e:
        return _fail(f"--out {args.schema_out}: cannot be written ({e.strerror})")
    print(f"schema: {os.path.abspath(args.schema_out)}")
    return EXIT_PASS


def cmd_list(args) -> int:
    """Fault kinds, properties and the built-in catalog, one line each."""
    from ftharness.faults import REGISTRY
    from ftharness.harness.run.collect import catalog_dir
    from ftharness.scenarios.properties import PLUGINS as PROPERTY_PLUGINS, REGISTRY as PROPERTY_REGISTRY
    from ftharness.scenarios.schema import load_scenario

    what = args.what
    if what in ("all", "faults"):
        print("fault kinds:")
        for kind, cls in REGISTRY.items():
            args = [n for n in cls.Spec.model_fields if n not in ("kind", "at")]
            # a plugin's names and docstring are its author's text: escaped (no terminal sequences)
            print(f"  {printable(kind, False):<20} {_first_line(cls.__doc__)}"
                  f"{f' [plugin: {printable(cls.plugin, False)}]' if cls.plugin else ''}")
            print(f"  {'':<20}   arguments: {printable(', '.join(args), False) or 'none'}")
    if what in ("all", "properties"):
        print("properties:")
        for name, module in PROPERTY_REGISTRY.items():
            print(f"  {printable(name, False):<20} {_first_line(module.__doc__, drop=name + ':')}"
                  f"{' [plugin]' if name in PROPERTY_PLUGINS else ''}")
    if what in ("all", "catalog"):
        print(f"catalog ({catalog_dir()}):")
        for f in sorted(os.listdir(catalog_dir())):
            if f.endswith(".yaml"):
                sc = load_scenario(os.path.join(catalog_dir(), f))
                print(f"  {sc.name:<20} {one_line(sc.description or '', 100)}")
    if what == "known":
        from ftharness.scenarios.known_bugs import listing

        try:
            print("\n".join(listing(args.ray)))
        except ScenarioError as e:
            return _fail(str(e))
    return EXIT_PASS


def _first_line(doc: Optional[str], drop: str = "") -> str:
    """The first sentence of a docstring, on one line."""
    text = " ".join(str(doc or "").strip().split("\n\n")[0].split())
    text = text[len(drop):].strip() if drop and text.startswith(drop) else text
    return printable(one_line(text.split(". ")[0].rstrip("."), 110), False)   # a plugin's text: escaped


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
               ("controller_failure_limit", -1, 10**6))


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
            return f"{flag}: {value} is out of range (allowed: {lo:g} to {hi:g})"
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
def cmd_doctor(args) -> int:
    """Static checks of Ray Train V2 scripts: exit 1 on an error-level finding, 2 on a bad path."""
    from ftharness import releases
    from ftharness.harness.doctor import RULES, analyse, python_files, release_rules, render

    from ftharness.inputs import release_text_problem

    if args.ray and (release_text_problem(args.ray) or releases.release(args.ray) is None):
        return _fail(f"--ray: {args.ray} is not a supported release; allowed: {', '.join(releases.SUPPORTED)}")
    release_rules.set_target(args.ray)
    if args.list_rules:
        for r in RULES.values():
            print(f"{r.id:<32} {r.severity:<8} {r.why}")
        return EXIT_PASS
    if args.run:
        return doctor_probe(args)
    if not args.paths:
        return _fail("doctor: name at least one file or folder (or --list-rules)")
    try:
        files = python_files(args.paths)
        findings = analyse(files)
    except InputError as e:
        return _fail(str(e))
    if args.json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        print(render(findings, len(files)))
    return EXIT_FAIL if any(f.severity == "error" for f in findings) else EXIT_PASS


def doctor_probe(args) -> int:
    """`doctor --run`: one kill on the embedded cluster; exit as the probe's verdict."""
    from ftharness.harness.run.probe import probe_lines, probe_scenario
    from ftharness.harness.run.runner import RunOptions, exit_code as summary_exit, run_scenario

    out = args.out or default_out("doctor-probe")
    try:
        config = json.loads(args.config) if args.config else {}
        if not isinstance(config, dict):
            return _fail("--config: must be a JSON object (the train_loop_config)")
        scenario = probe_scenario(args.run, args.trainer, args.datasets, config)
        target = check_route(scenario, allow_destructive=False)   # the probe kills: never an operator's cluster
        check_out(out)
        summary = run_scenario(scenario, RunOptions(out_dir=out, address=target.address, progress=not args.quiet))
    except json.JSONDecodeError as e:
        return _fail(f"--config: not JSON ({e})")
    except (ScenarioError, ClusterError) as e:
        return _fail(str(e))
    except KeyboardInterrupt:
        print("ftharness: interrupted; cluster torn down", file=sys.stderr)
        return EXIT_INTERRUPTED
    for line in probe_lines(summary):
        print(line)
    print(f"results: {os.path.abspath(out)}")
    return summary_exit(summary)


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
    try:
        why = handed_input_problem(args)
        if why:
            return _fail(why)
        return args.func(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `ftharness list | head`: the reader left; not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE
    except Exception as e:  # noqa: BLE001 - any command: one line, traceback kept, exit 4
        return internal_error(e, getattr(args, "out", None) if isinstance(getattr(args, "out", None), str) else None)


if __name__ == "__main__":
    sys.exit(main())
