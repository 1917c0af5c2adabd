"""Fuzzing ftharness's three doors for bad input: scenario files (`validate`), results
folders (`check`, `trace`) and command-line arguments (every command, with anything that
would start a cluster or a long computation replaced by a sentinel), through the CLI's own
`main` in this process.

Every case must end with an allowed exit (2 for bad input; 0, 1 or 3 where the input is
good or judged; never 4), no traceback, every stderr line at most MAX_MESSAGE (400) characters, one
stderr line for an exit 2 (`validate` lists one line per error), within a time bound and
with bounded growth of this process's peak memory.

Derandomized (the `ci` Hypothesis profile of conftest.py) with a fixed budget: a few
hundred cases in the pure lane; the `full`-marked variants run 2,200 (`make test-full`).
Set FTHARNESS_FUZZ_STATS=FILE to get the counts: cases per target, exit codes seen,
the slowest case and the largest peak-memory growth.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import shutil
import time
from typing import Dict, List

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import REPO
from ftharness.scenarios.language.messages import MAX_MESSAGE

MAX_LINE = MAX_MESSAGE   # one error line, prefix included
DATA = os.path.join(REPO, "tests", "data", "kill-worker")
SCENARIO_BUDGET = {"pure": 150, "full": 1000}
RESULTS_BUDGET = {"pure": 60, "full": 600}
ARGS_BUDGET = {"pure": 90, "full": 600}
#: CPU seconds one case may cost (the program's own work, which a loaded machine does not change)
TIME_BOUND_S = {"scenario": 1.0, "results": 3.0, "args": 3.0}
#: wall seconds one case may take whatever the load: catches a hang (a FIFO waited on), which costs no CPU
HANG_BOUND_S = 30.0
MEMORY_BOUND_KB = 300_000   # growth of this process's peak RSS in one case

STATS: Dict[str, Dict] = {}


class WouldStart(BaseException):
    """Raised by the sentinels that stand in for anything that starts a cluster or a long job."""


@pytest.fixture(scope="module", autouse=True)
def stats_file():
    yield
    path = os.environ.get("FTHARNESS_FUZZ_STATS")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(STATS, sort_keys=True) + "\n")


def record(target: str, code: int, seconds: float, grew_kb: int, case: str) -> None:
    s = STATS.setdefault(target, {"cases": 0, "exit_codes": {}, "slowest_s": 0.0, "slowest_case": "",   # CPU s
                                  "largest_peak_growth_kb": 0})
    s["cases"] += 1
    s["exit_codes"][str(code)] = s["exit_codes"].get(str(code), 0) + 1
    if seconds > s["slowest_s"]:
        s["slowest_s"], s["slowest_case"] = round(seconds, 3), case[:120]
    s["largest_peak_growth_kb"] = max(s["largest_peak_growth_kb"], grew_kb)


def run_main(target: str, argv: List[str], allowed=(0, 1, 2, 3), case: str = "") -> int:
    """The CLI in-process; asserts the contract; returns the exit code."""
    from ftharness.harness.frontends.cli import main

    out, err = io.StringIO(), io.StringIO()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:   # argparse's --help and --version
            code = e.code if isinstance(e.code, int) else 2
        except WouldStart:
            code = 0
    seconds, cpu_s = time.perf_counter() - t, time.process_time() - cpu
    grew = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    record(target, code, cpu_s, grew, case or " ".join(map(repr, argv)))
    lines = err.getvalue().splitlines()
    assert code in allowed, (argv, code, lines[-3:])
    assert "Traceback" not in err.getvalue() and "internal error" not in err.getvalue(), (argv, lines[-3:])
    assert all(len(line) <= MAX_LINE for line in lines), (argv, [len(x) for x in lines])
    if code == 2 and argv[:1] != ["validate"]:
        assert len(lines) == 1, (argv, lines)
    assert cpu_s < TIME_BOUND_S[target], (argv, "CPU s", cpu_s)
    assert seconds < HANG_BOUND_S, (argv, "wall s", seconds)
    assert grew < MEMORY_BOUND_KB, (argv, grew)
    return code


@pytest.fixture(scope="module")
def warm():
    """Import what the commands import (Ray, torch, pandas) once, outside the timed calls."""
    import ftharness.harness.run.runner  # noqa: F401
    import ftharness.reports.html  # noqa: F401
    import ftharness.reports.trace  # noqa: F401
    from ftharness.harness.frontends.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["check", DATA])


def fuzz_settings(n):
    return settings(max_examples=n, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large, HealthCheck.filter_too_much])


# ================================================================== scenario files
KEYS = ["name", "description", "cluster", "nodes", "address", "workload", "steps", "num_workers", "entrypoint",
        "batch_size", "storage_path", "faults", "kind", "at", "step", "target", "rank", "expect", "properties",
        "violations", "failure_config", "max_failures", "timeout_s", "stepz", "nodez", "<<"]
NASTY_SCALARS = ["0b_", "0x" + "f" * 50, "1:" * 30 + "1", "9" * 45, "!!int abc", "!!float x", "!!timestamp junk",
                 "!!binary '@@'", "!!set {a, b}", "!!python/object:os.system ls", "2024-13-01", "2024-01-01 25:00:00",
                 ".nan", "-.inf", "1e99999", "~", "yes", "0o8", "'..'", "'a\\nb'", '"\\x1b[31m"', "&a 1", "*a",
                 "'s3://KEY:SECRET@bucket/x'", "ray://h:10001", "-1", "0", "4097", "1_000_000_000_000", "[]", "{}",
                 "'" + "x" * 400 + "'", "kill_worker", "step", "rank"]


@st.composite
def yaml_fragment(draw, depth=0):
    """A YAML value as text: nasty scalars, flow lists and mappings (duplicate keys included)."""
    choice = draw(st.integers(0, 5 if depth < 3 else 1))
    if choice <= 1:
        return draw(st.sampled_from(NASTY_SCALARS) | st.integers(-10**6, 10**6).map(str)
                    | st.text(max_size=12).map(json.dumps))
    if choice in (2, 3):
        items = draw(st.lists(yaml_fragment(depth + 1), max_size=4))
        return "[" + ", ".join(items) + "]"
    pairs = draw(st.lists(st.tuples(st.sampled_from(KEYS), yaml_fragment(depth + 1)), max_size=4))
    return "{" + ", ".join(f"{k}: {v}" for k, v in pairs) + "}"


@st.composite
def scenario_text(draw):
    how = draw(st.sampled_from(["lines", "lines", "catalog", "bytes", "big"]))
    if how == "bytes":
        return draw(st.binary(max_size=300))
    if how == "big":   # size, count and depth limits
        n = draw(st.sampled_from([1_100, 25_000, 300_000]))
        body = draw(st.sampled_from(["list", "deep", "long", "keys"]))
        if body == "list":
            return b"name: n\nx: [" + b"1, " * n + b"1]\n"
        if body == "deep":
            return b"name: n\nx: " + b"[" * (n // 100) + b"]" * (n // 100) + b"\n"
        if body == "keys":
            return b"name: n\nx: {" + b"".join(b"k%d: 1, " % i for i in range(n // 10)) + b"z: 1}\n"
        return b"name: n\ndescription: '" + b"x" * n + b"'\n"
    lines = []
    if how == "catalog":
        files = sorted(f for f in os.listdir(os.path.join(REPO, "scenarios", "catalog")) if f.endswith(".yaml"))
        with open(os.path.join(REPO, "scenarios", "catalog", draw(st.sampled_from(files)))) as f:
            lines = f.read().splitlines()
        for _ in range(draw(st.integers(1, 3))):   # replace, duplicate or drop a line
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            op = draw(st.sampled_from(["replace", "dup", "drop"]))
            if not lines:
                break
            if op == "replace":
                key = lines[i].split(":", 1)[0] if ":" in lines[i] else draw(st.sampled_from(KEYS))
                lines[i] = f"{key}: {draw(yaml_fragment())}"
            elif op == "dup":
                lines.insert(i, lines[i])
            else:
                del lines[i]
    else:
        lines = ["name: " + draw(st.sampled_from(["n", "'..'", "a/b", "x" * 120, "ok-name"]))]
        for _ in range(draw(st.integers(0, 5))):
            lines.append(f"{draw(st.sampled_from(KEYS))}: {draw(yaml_fragment())}")
    return ("\n".join(lines) + "\n").encode("utf-8", "surrogatepass")


def _scenario_case(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("scn", numbered=True)
    path = folder / "s.yaml"
    path.write_bytes(raw)
    try:
        run_main("scenario", ["validate", str(path)], allowed=(0, 2), case=raw[:120].decode("utf-8", "replace"))
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@fuzz_settings(SCENARIO_BUDGET["pure"])
@given(raw=scenario_text())
def test_fuzz_scenario_files(warm, tmp_path_factory, raw):
    _scenario_case(tmp_path_factory, raw)


@pytest.mark.full
@pytest.mark.slow
@fuzz_settings(SCENARIO_BUDGET["full"])
@given(raw=scenario_text())
def test_fuzz_scenario_files_full(warm, tmp_path_factory, raw):
    _scenario_case(tmp_path_factory, raw)


# ================================================================== results folders
with open(os.path.join(DATA, "history.jsonl"), "rb") as _f:
    HISTORY_LINES = _f.read().splitlines()
WEIRD_JSON = ["Infinity", "-Infinity", "NaN", "1e999", "10000000000000", str(10**30), '"1"', "null", "true", "[]",
              "{}", '"\\u001b[31m"', "-1", "0", "1.5", "[" * 2000 + "]" * 2000]
FIELDS = ["seq", "eseq", "kind", "t", "emitter", "attempt", "rank", "step", "fault", "fit_index", "events", "digest"]


@st.composite
def results_folder(draw):
    """(history bytes, summary bytes or None, scenario bytes or None): the recorded folder, damaged."""
    lines = list(HISTORY_LINES)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["field", "field", "drop", "dup", "swap", "garbage", "truncate", "huge-line"]))
        i = draw(st.integers(0, len(lines) - 1)) if lines else 0
        if not lines:
            break
        if op == "field":
            try:
                e = json.loads(lines[i])
            except (ValueError, RecursionError):
                continue
            if not isinstance(e, dict):
                continue
            key = draw(st.sampled_from(FIELDS))
            text = json.dumps(e)[:-1] + f', "{key}": {draw(st.sampled_from(WEIRD_JSON))}}}'
            lines[i] = text.encode()
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "garbage":
            lines.insert(i, draw(st.binary(max_size=60)).replace(b"\n", b""))
        elif op == "truncate":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            lines.insert(i, b'{"seq": 1, "kind": "' + b"x" * (2 << 20) + b'"}')
    history = b"\n".join(lines) + draw(st.sampled_from([b"\n", b""]))
    summary = draw(st.sampled_from([None, b"[]", b"{", b'{"final_state": 3}', b"null", b'{"verdict": NaN}']))
    scenario = draw(st.sampled_from([None, None, b"name: [x", b"name: other\n", b"- 1\n", b""]))
    return history, summary, scenario


def _results_case(tmp_path_factory, case):
    history, summary, scenario = case
    folder = tmp_path_factory.mktemp("res", numbered=True)
    try:
        for name in ("scenario.yaml", "summary.json"):
            shutil.copy(os.path.join(DATA, name), folder / name)
        (folder / "history.jsonl").write_bytes(history)
        if summary is not None:
            (folder / "summary.json").write_bytes(summary)
        if scenario is not None:
            (folder / "scenario.yaml").write_bytes(scenario)
        label = f"{len(history)} bytes, summary {summary!r}, scenario {scenario!r}"
        code = run_main("results", ["check", str(folder)], allowed=(0, 1, 2, 3), case="check " + label)
        # the final newline is not evidence (the seal covers the events), so its absence is no damage
        if history.rstrip(b"\n") != b"\n".join(HISTORY_LINES):
            assert code != 0, "a damaged history judged PASS"
        run_main("results", ["trace", str(folder), "--out", str(folder / "t.json")], allowed=(0, 2),
                 case="trace " + label)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@fuzz_settings(RESULTS_BUDGET["pure"])
@given(case=results_folder())
def test_fuzz_results_folders(warm, tmp_path_factory, case):
    _results_case(tmp_path_factory, case)


@pytest.mark.full
@pytest.mark.slow
@fuzz_settings(RESULTS_BUDGET["full"])
@given(case=results_folder())
def test_fuzz_results_folders_full(warm, tmp_path_factory, case):
    _results_case(tmp_path_factory, case)


# ================================================================== arguments
COMMANDS = ["run", "soak", "suite", "check", "verdict", "validate", "schema", "list", "doctor", "trace", "plan",
            "report", "compare", "frobnicate"]
FLAGS = ["--out", "--address", "--submit", "--resume", "--steps", "--allow-destructive", "--quiet", "--duration",
         "--seed", "--mtbf", "--mix", "--junit", "--force", "--fail-if", "--accelerators", "--days",
         "--accelerators-per-node", "--runs", "--spot-fraction", "--target", "--max-failures", "--interval-s",
         "--checkpoint-every", "--rate", "--run", "--config", "--json", "--list-rules", "--help", "--version",
         "--bogus", "--step-s", "--notice-s"]
VALUES = ["", "0", "-1", "1", "8", "nan", "inf", "-inf", "1e308", "1" * 400, "10000000000000000000000",
          "/dev/null", "/dev/full", "/proc/self/x", "/etc/passwd", "x" * 5000, "a\nb", "\x1b[31m",
          "ray://h:10001", "s3://KEY:SECRET@bucket/x", "http://u:p@127.0.0.1:1", "127.0.0.1:1", "auto",
          "1000000h", "10m", "0.001s", "kill_worker:1", "kill_worker:x", "boom:1", "gpu=1", "gpu=x",
          "{}", "[1]", "{\"a\": 1}", "mod:fn", "nosuchmod:train", "recovery_s.median > +10%", "a=b",
          "@TMP/file", "@TMP/dir", "@TMP/new/folder", "@DATA", "@CATALOG", "@JOURNAL"]


@st.composite
def argv(draw):
    words = [draw(st.sampled_from(COMMANDS))]
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.integers(0, 2))
        if kind == 0:
            words.append(draw(st.sampled_from(VALUES)))
        else:
            words.append(draw(st.sampled_from(FLAGS)))
            if kind == 2:
                words.append(draw(st.sampled_from(VALUES)))
    return words


@pytest.fixture(scope="module")
def sentinels():
    """Everything that would start a cluster, submit a job or run a long computation."""
    import ftharness.harness.run.runner as runner
    import ftharness.harness.run.soak as soak
    import ftharness.harness.run.submit as submit
    import ftharness.harness.run.suite as suite
    import ftharness.reports.compare as compare
    import ftharness.reports.html as html
    import ftharness.reports.junit as junit
    import ftharness.reports.plan as plan

    def stop(*a, **k):
        raise WouldStart()

    mp = pytest.MonkeyPatch()
    for module, name in ((runner, "run_scenario"), (suite, "run_suite"), (soak, "run_soak"),
                         (submit, "submit_run"), (plan, "plan"), (html, "write_report"), (junit, "write_junit"),
                         (compare, "write_compare")):
        mp.setattr(module, name, stop)
    yield
    mp.undo()


def _args_case(tmp_path_factory, words):
    tmp = tmp_path_factory.mktemp("args", numbered=True)
    (tmp / "file").write_text("x")
    (tmp / "dir").mkdir()
    journal = tmp / "journal.json"
    journal.write_text(json.dumps({"status": "completed", "ftharness": {"run_verdict": "PASS"}}))
    subst = {"@TMP/file": str(tmp / "file"), "@TMP/dir": str(tmp / "dir"), "@TMP/new/folder": str(tmp / "new" / "f"),
             "@DATA": DATA, "@CATALOG": os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"),
             "@JOURNAL": str(journal)}
    real = [subst.get(w, w) for w in words]
    if real[0] in ("run", "soak", "suite", "doctor") and "--out" not in real:
        real += ["--out", str(tmp / "out")]   # never the repository's results/
    cwd = os.getcwd()
    os.chdir(tmp)
    try:
        run_main("args", real, allowed=(0, 1, 2, 3), case=" ".join(words))
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp, ignore_errors=True)


@fuzz_settings(ARGS_BUDGET["pure"])
@given(words=argv())
def test_fuzz_arguments(warm, sentinels, tmp_path_factory, words):
    _args_case(tmp_path_factory, words)


@pytest.mark.full
@pytest.mark.slow
@fuzz_settings(ARGS_BUDGET["full"])
@given(words=argv())
def test_fuzz_arguments_full(warm, sentinels, tmp_path_factory, words):
    _args_case(tmp_path_factory, words)
