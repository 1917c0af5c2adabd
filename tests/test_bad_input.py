"""Bad input gets one clear line and exit 2: malformed scenario files of every
kind (Hypothesis fuzzes them by the thousand, in-process), and the CLI's own
handling of the worst ones (binary files, alias bombs, deep nesting, NaN,
booleans for numbers, contradictory expectations), with no traceback and in
bounded time."""

import json
import os
import subprocess
import time

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ftharness.scenarios.schema import MAX_MESSAGE, load_scenario
from ftharness.errors import ScenarioError
from conftest import FTHARNESS, REPO, run_cli

CATALOG = os.path.join(os.path.dirname(os.path.dirname(__file__)), "scenarios", "catalog")
BASE = yaml.safe_load(open(os.path.join(CATALOG, "default.yaml")))
FUZZ = int(os.environ.get("FTHARNESS_FUZZ", "1000"))

scalars = st.one_of(st.none(), st.booleans(), st.integers(-10**12, 10**12), st.floats(allow_nan=True),
                    st.text(max_size=30), st.sampled_from(["kill_worker", "step", "rank", ".nan", "-.inf"]))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)


def mutated(draw_path, value):
    """The default scenario with the value at one (possibly new) key path replaced."""
    doc = yaml.safe_load(yaml.safe_dump(BASE))
    node = doc
    for key in draw_path[:-1]:
        nxt = node.get(key) if isinstance(node, dict) else None
        if not isinstance(nxt, dict):
            nxt = {}
            node[key] = nxt
        node = nxt
    node[draw_path[-1]] = value
    return doc


KEYS = ["name", "cluster", "nodes", "workload", "num_workers", "steps", "faults", "expect", "properties",
        "violations", "failure_config", "max_failures", "timeout_s", "landing_hold", "kind", "at", "target"]


@st.composite
def scenario_bytes(draw):
    how = draw(st.sampled_from(["yaml_of_mutation", "raw_bytes", "text", "faults"]))
    if how == "raw_bytes":
        return draw(st.binary(max_size=400))
    if how == "text":
        return draw(st.text(max_size=400)).encode("utf-8", "surrogatepass")
    if how == "faults":
        fault = draw(st.dictionaries(st.sampled_from(["kind", "at", "target", "notice_s", "which", "how",
                                                       "duration_s", "ops", "where", "nth"]), values, max_size=5))
        doc = mutated(["faults"], [fault])
    else:
        path = draw(st.lists(st.sampled_from(KEYS), min_size=1, max_size=3))
        doc = mutated(path, draw(values))
    try:
        return yaml.safe_dump(doc, allow_unicode=True).encode()
    except yaml.YAMLError:
        return b"name: [unclosed"


def judge_file(path):
    """(exit code, message) as `ftharness validate` gives them, in-process."""
    try:
        load_scenario(path)
        return 0, ""
    except ScenarioError as e:
        return 2, f"ftharness: error: {e}"


@settings(max_examples=FUZZ, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(raw=scenario_bytes())
def test_malformed_scenarios_get_one_line_and_exit_2(tmp_path, raw):
    path = tmp_path / "s.yaml"
    path.write_bytes(raw)
    t = time.process_time()   # CPU, not wall: a busy machine must not fail it, a YAML bomb must
    code, message = judge_file(str(path))  # anything but ScenarioError propagates and fails the test
    assert time.process_time() - t < 1.0
    if code:
        assert "\n" not in message and len(str(message)) <= MAX_MESSAGE + len("ftharness: error: ")


BOMB = b"""name: bomb
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
"""

BAD = {
    "binary": (b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)), "binary file"),
    "latin1": ("name: caf\xe9\n".encode("latin-1"), "not UTF-8"),
    "alias-bomb": (BOMB, "aliases"),
    "deep": (b"name: deep\nx: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested"),
    "nan": (b"name: n\ntimeout_s: .nan\n", "timeout_s"),
    "inf": (b"name: n\nfaults: [{kind: hang_worker, target: {rank: 0}, at: {step: 2}, duration_s: .inf}]\n",
            "duration_s"),
    "bool-for-int": (b"name: n\nworkload: {steps: true}\n", "workload.steps"),
    "string-for-int": (b"name: n\nworkload: {steps: '30'}\n", "workload.steps"),
    "both-pinned-and-expected": (b"name: n\nexpect: {properties: [recovers], violations: "
                                 b"[{property: recovers, reason: slow}]}\n", "both expected"),
    "pin-without-reason": (b"name: n\nexpect: {violations: [recovers]}\n", "needs a reason"),
    "unknown-kind": (b"name: n\nfaults: [{kind: explode, at: {step: 1}}]\n", "unknown fault kind"),
    "argument-of-another-kind": (b"name: n\nfaults: [{kind: kill_worker, target: {rank: 0}, at: {step: 1}, "
                                 b"notice_s: 3}]\n", "faults[0].notice_s: not an argument of kill_worker"),
    "rank-beyond": (b"name: n\nfaults: [{kind: kill_worker, target: {rank: 7}, at: {step: 1}}]\n", "rank: 7"),
    "huge": (b"name: n\n# " + b"x" * (2 << 20) + b"\n", "more than a scenario may hold"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_refuses_bad_scenarios_in_one_line(tmp_path, case):
    raw, words = BAD[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(raw)
    t = time.time()
    r = run_cli("validate", str(path), timeout=60)
    assert time.time() - t < 30
    assert r.returncode == 2, r.stdout + r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr and len(lines[0]) <= 400, r.stderr[:2000]
    assert words in lines[0], lines[0]


def test_run_refuses_before_anything_starts(tmp_path):
    """`run` on a bad file: exit 2, no results folder, no cluster."""
    path = tmp_path / "bad.yaml"
    path.write_bytes(BAD["alias-bomb"][0])
    out = tmp_path / "out"
    with open(tmp_path / "stderr", "wb") as err:
        child = subprocess.Popen(FTHARNESS + ["run", str(path), "--out", str(out)], stdout=subprocess.DEVNULL,
                                 stderr=err, cwd=REPO)
        _, status, usage = os.wait4(child.pid, 0)
    stderr = (tmp_path / "stderr").read_text()
    assert os.waitstatus_to_exitcode(status) == 2 and len(stderr.strip().splitlines()) == 1, stderr
    assert not out.exists()
    assert usage.ru_maxrss < 1_000_000  # KiB: this run's own peak stays under ~1 GB (the bomb never expands)


@pytest.mark.parametrize("args", [["run", "--steps", "x"], ["frobnicate"], ["check"], ["run", "--bogus"]])
def test_bad_arguments_get_one_line(args):
    r = run_cli(*args, timeout=60)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.parametrize("flag", [False, True])
def test_faults_on_a_cluster_named_in_the_scenario_need_the_opt_in(tmp_path, flag):
    """`cluster.address` in the scenario is guarded like --address."""
    path = tmp_path / "remote.yaml"
    path.write_text("name: remote\ncluster: {address: '127.0.0.1:1'}\n"
                    "failure_config: {max_failures: 1}\n"
                    "faults: [{kind: kill_worker, target: {rank: 1}, at: {step: 2}}]\n")
    args = ["run", str(path), "--out", str(tmp_path / "out")] + (["--allow-destructive"] if flag else [])
    r = run_cli(*args, timeout=120)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    if flag:  # past the guard: the cluster itself is unreachable, said in one line
        assert "--allow-destructive" not in r.stderr
    else:
        assert "cluster.address: 127.0.0.1:1 is a cluster ftharness did not start; its faults need --allow-destructive" in r.stderr


# ---------------------------------------------------------------- issue 24, "What was seen" 6 and 8
def cli(capsys, *args):
    """(exit code, stderr lines) of the CLI in-process (how fast a refusal comes is measured in
    benchmarks, not asserted here: a loaded machine made the bound flaky)."""
    from ftharness.harness.frontends.cli import main

    code = main(list(args))
    err = capsys.readouterr().err.strip().splitlines()
    return code, err


def one_error(code, err, *words, exit_code=2):
    assert code == exit_code and len(err) == 1 and len(err[0]) <= MAX_MESSAGE, (code, err)
    assert "Traceback" not in err[0]
    for w in words:
        assert w in err[0], err[0]
    return err[0]


CONVERTERS = {
    "binary-int": (b"name: n\nworkload: {steps: 0b_}\n", "int value"),
    "explicit-int": (b"name: n\nworkload: {steps: !!int abc}\n", "int value"),
    "explicit-float": (b"name: n\ntimeout_s: !!float abc\n", "float value"),
    "long-int": (b"name: n\nworkload: {steps: " + b"9" * 4301 + b"}\n", "a number of 4301 characters"),
    "hex-kind": (b"name: n\nfaults: [{kind: 0x" + b"f" * 4000 + b"}]\n", "a number of 4002 characters"),
    "sexagesimal": (b"name: n\nworkload: {steps: " + b"1:" * 60_000 + b"1}\n", "characters"),
    "timestamp-junk": (b"name: n\nworkload: {steps: !!timestamp junk}\n", "workload.steps"),
    "binary-tag": (b"name: n\ndescription: !!binary '@@@'\n", "description"),
    "duplicate-key": (b"name: n\nfaults: [{kind: kill_worker, target: {rank: 0}, at: {step: 1}}]\nfaults: []\n",
                      "key 'faults' given twice"),
    "long-list": (b"name: n\nexpect: {monotonic: [" + b"a, " * 5000 + b"a]}\n", "entries in one list"),
    "many-values": (b"name: n\ntrain: {" + b"".join(b"k%d: [" % i + b"1, " * 900 + b"1], " for i in range(25))
                    + b"z: 1}\n", "more than 20000 values"),
    "long-value": (b"name: n\ndescription: '" + b"x" * 20_000 + b"'\n", "a value of 20000 characters"),
    "long-name": (b"name: " + b"n" * 101 + b"\n", "name"),
    "dotdot": (b"name: '..'\n", "name"),
    "many-faults": (b"name: n\nworkload: {steps: 500}\nfaults: [" +
                    b", ".join(b"{kind: kill_worker, target: {rank: 0}, at: {step: %d}}" % (i + 1) for i in range(101))
                    + b"]\n", "faults"),
    "big-count": (b"name: n\nworkload: {batch_size: 100000000000}\n", "workload.batch_size"),
}


@pytest.mark.parametrize("case", sorted(CONVERTERS))
def test_every_converter_error_and_limit_is_one_line(tmp_path, capsys, case):
    raw, words = CONVERTERS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_bytes(raw)
    code, err = cli(capsys, "validate", str(path))
    assert code == 2 and err and all(len(line) <= MAX_MESSAGE for line in err), err
    assert words in err[0], err


def test_a_date_is_a_name_not_a_crash(tmp_path, capsys):
    path = tmp_path / "d.yaml"
    path.write_bytes(b"name: 2024-13-01\n")
    assert cli(capsys, "validate", str(path))[0] == 0


def test_a_long_path_and_a_newline_in_the_name_stay_one_line(tmp_path, capsys):
    deep = tmp_path / ("d" * 200) / ("e" * 200)
    deep.mkdir(parents=True)
    for name in ("x" * 200 + ".yaml", "two\nlines.yaml"):
        path = deep / name
        path.write_bytes(b"name: [unclosed\n")
        one_error(*cli(capsys, "validate", str(path)), "not valid YAML")


def test_the_300_character_cap_holds_for_the_whole_line(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: n\nexpect: {error_type: '" + "E" * 250 + "'}\n")
    one_error(*cli(capsys, "validate", str(path)), "expect.error_type")


def test_validate_lists_every_error_with_suggestions(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: n\nworkload: {stepz: 3, batch_size: -1}\ncluster: {nodez: 2}\ntimeout_s: -1\n")
    code, err = cli(capsys, "validate", str(path))
    assert code == 2 and len(err) == 4, err
    assert any("workload.stepz: unknown key; did you mean steps? allowed: kind, entrypoint" in e for e in err), err
    assert any("cluster.nodez: unknown key; did you mean nodes?" in e for e in err), err
    assert all(len(e) <= MAX_MESSAGE for e in err)


def test_validate_checks_what_run_checks(tmp_path, capsys):
    path = tmp_path / "s.yaml"
    path.write_text("name: n\nworkload: {entrypoint: 'nosuchmod:train'}\n")
    one_error(*cli(capsys, "validate", str(path)), "workload.entrypoint", "nosuchmod")
    kill = tmp_path / "k.yaml"
    kill.write_text("name: k\nfailure_config: {max_failures: 1}\n"
                    "faults: [{kind: kill_worker, target: {rank: 0}, at: {step: 2}}]\n")
    one_error(*cli(capsys, "validate", str(kill), "--address", "10.1.1.1:6379"), "--allow-destructive")
    one_error(*cli(capsys, "validate", str(kill), "--out", "/proc/x"), "--out", "/proc")
    assert cli(capsys, "validate", str(kill), "--address", "10.1.1.1:6379", "--allow-destructive")[0] == 0


@pytest.mark.parametrize("out, words", [
    ("FILE", "is a file"), ("/proc/self/x", "/proc"), ("/dev/null", "/dev"), ("x" * 5000, "characters"),
    ("NOWRITE/sub", "not writable"), ("a\nb", "control character")])
def test_run_checks_out_before_anything_starts(tmp_path, capsys, out, words):
    (tmp_path / "FILE").write_text("x")
    ro = tmp_path / "NOWRITE"
    ro.mkdir(mode=0o500)
    out = str(tmp_path / out) if out in ("FILE", "NOWRITE/sub") else out
    if os.geteuid() == 0 and "NOWRITE" in out:
        pytest.skip("root writes anywhere")
    for command in (["run"], ["soak", "--duration", "10s"], ["suite"]):
        one_error(*cli(capsys, *command, "--out", out), "--out", words)


@pytest.mark.parametrize("args, words", [
    (["soak", "--duration", "1000000h"], "--duration"), (["soak", "--duration", "1" * 5000], "--duration"),
    (["soak", "--mtbf", "0.001s", "--duration", "7d"], "--mtbf"),
    (["plan", "--accelerators", "8", "--days", "1", "--accelerators-per-node", "0"], "--accelerators-per-node"),
    (["plan", "--accelerators", "8", "--days", "1e308"], "--days"),
    (["plan", "--accelerators", "8", "--days", "1", "--runs", "0"], "--runs"),
    (["plan", "--accelerators", "8", "--days", "nan"], "--days"),
    (["run", "--steps", "100000000000"], "workload.steps")])
def test_numbers_and_durations_are_bounded(capsys, args, words):
    one_error(*cli(capsys, *args), words)


def test_report_compare_verdict_outputs(tmp_path, capsys):
    data = os.path.join(REPO, "tests", "data", "kill-worker")
    one_error(*cli(capsys, "report", data, "--out", str(tmp_path / "r"), "--junit", "/dev/full"), "--junit", "/dev")
    (tmp_path / "FILE").write_text("x")
    one_error(*cli(capsys, "compare", f"a={data}", "--out", str(tmp_path / "FILE")), "--out", "is a file")
    for journal in ({"ftharness": "x"}, {"experiment": []}, {"ftharness": {"mismatches": 3}}, [1]):
        (tmp_path / "j.json").write_text(json.dumps(journal))
        one_error(*cli(capsys, "verdict", str(tmp_path / "j.json")), "j.json")
    (tmp_path / "deep.json").write_text("[" * 200_000 + "]" * 200_000)
    one_error(*cli(capsys, "verdict", str(tmp_path / "deep.json")), "deep.json")
    one_error(*cli(capsys, "schema", "--out", "/dev/full"), "--out")


# ---------------------------------------------------------------- issue 24, "What was seen" 7
def damaged(tmp_path, history=None, summary=None, scenario=None):
    """A copy of tests/data/kill-worker with one file replaced."""
    import shutil

    folder = tmp_path / "r"
    shutil.copytree(os.path.join(REPO, "tests", "data", "kill-worker"), folder)
    for name, value in (("history.jsonl", history), ("summary.json", summary), ("scenario.yaml", scenario)):
        if value is not None:
            (folder / name).unlink()
            if callable(value):
                value(str(folder / name))
            else:
                (folder / name).write_bytes(value if isinstance(value, bytes) else value.encode())
    return str(folder)


HISTORIES = {
    "infinity": b'{"seq": Infinity, "kind": "run_start"}\n',
    "deep": b"[" * 200_000 + b"]" * 200_000 + b"\n",
    "string-seq": b'{"seq": "1", "kind": "run_start"}\n{"seq": null}\n',
    "trillion": b'{"seq": 1, "kind": "run_start"}\n{"seq": 1000000000000, "kind": "x", "emitter": "e", '
                b'"eseq": 1000000000000}\n',
    "long-line": b'{"seq": 1, "kind": "' + b"x" * (3 << 20) + b'"}\n{"seq": 2}\n',
    "no-newline": b"x" * (3 << 20),
    "dev-zero": lambda p: os.symlink("/dev/zero", p),
    "fifo": lambda p: os.mkfifo(p),
}


@pytest.mark.parametrize("case", sorted(HISTORIES))
def test_damaged_histories_are_read_in_bounded_time(tmp_path, capsys, case):
    folder = damaged(tmp_path, history=HISTORIES[case])
    for command in (["check", folder], ["trace", folder, "--out", str(tmp_path / "t.json")],
                    ["report", folder, "--out", str(tmp_path / "rep")]):
        code, err = cli(capsys, *command)
        assert code in (0, 2, 3), (command, code, err)
        assert not any("internal error" in e or "Traceback" in e for e in err), err
        assert all(len(e) <= MAX_MESSAGE for e in err)
    assert cli(capsys, "check", folder)[0] in (2, 3)   # never PASS on a damaged history


@pytest.mark.parametrize("what", ["summary-list", "summary-garbage", "scenario-garbage", "scenario-fifo"])
def test_damaged_summary_and_scenario_are_one_line(tmp_path, capsys, what):
    folder = damaged(tmp_path, **{
        "summary-list": {"summary": "[]"}, "summary-garbage": {"summary": "{\"verdict\": "},
        "scenario-garbage": {"scenario": "name: [x"}, "scenario-fifo": {"scenario": lambda p: os.mkfifo(p)}}[what])
    for command in (["check", folder], ["report", folder, "--out", str(tmp_path / "rep")]):
        code, err = cli(capsys, *command)
        assert code in (0, 2, 3) and not any("internal error" in e for e in err), (command, code, err)


def test_another_scenario_yaml_cannot_relabel_the_history(tmp_path, capsys):
    """What was seen 7: a swapped-in scenario.yaml turned a recorded kill_worker into a landed kill_node."""
    text = open(os.path.join(REPO, "tests", "data", "kill-worker", "scenario.yaml")).read()
    folder = damaged(tmp_path, scenario=text.replace("- kind: kill_worker", "- kind: kill_node"))
    one_error(*cli(capsys, "check", folder), "fault 0 is kill_node in scenario.yaml, kill_worker in the history")


# ------------------------------------------------- found by fuzzing the CLI (2026-12-02)
ENTRYPOINTS = {   # module file (or None), entrypoint, words of the one line
    "empty-module": (None, ":train", "must be 'module:function'"),
    "relative": (None, ".pkg:train", "must be 'module:function'"),
    "no-function": (None, "json:", "must be 'module:function'"),
    "syntax-error": ("def train(:\n", "broken_job:train", "does not parse"),
    "no-such-module": (None, "no_such_job_module:train", "no module named 'no_such_job_module'"),
    "no-such-function": ("def other(config):\n    pass\n", "broken_job:train", "has no function 'train'"),
}
#: modules `validate` passes (it proves the function is there, statically) and `run` refuses in
#: one line when it imports them, before a cluster starts
FAILS_ON_IMPORT = {
    "raises-on-import": ("def train(config):\n    pass\nraise RuntimeError('boom')\n", "RuntimeError: boom"),
    "exits-on-import": ("import sys\ndef train(config):\n    pass\nsys.exit(0)\n", "SystemExit: 0"),
}


@pytest.mark.parametrize("case", sorted(FAILS_ON_IMPORT))
def test_a_module_that_fails_on_import_is_refused_by_run_not_run_by_validate(tmp_path, capsys, monkeypatch, case):
    import sys

    from ftharness.harness.run.preflight import preflight
    from ftharness.scenarios.schema import load_scenario

    source, words = FAILS_ON_IMPORT[case]
    (tmp_path / "broken_job.py").write_text(source)
    (tmp_path / "s.yaml").write_text("name: n\nworkload: {entrypoint: 'broken_job:train'}\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    code, err = cli(capsys, "validate", str(tmp_path / "s.yaml"))
    assert code == 0 and not err and "broken_job" not in sys.modules, (code, err)
    with pytest.raises(ScenarioError) as e:
        preflight(load_scenario(str(tmp_path / "s.yaml")))   # what `run` asks before a cluster starts
    assert words in str(e.value) and "workload.entrypoint" in str(e.value)
    sys.modules.pop("broken_job", None)


@pytest.mark.parametrize("case", sorted(ENTRYPOINTS))
def test_an_entrypoint_that_cannot_be_imported_is_one_line_and_exit_2(tmp_path, capsys, monkeypatch, case):
    import sys

    source, ref, words = ENTRYPOINTS[case]
    if source is not None:
        (tmp_path / "broken_job.py").write_text(source)
    (tmp_path / "s.yaml").write_text(f"name: n\nworkload: {{entrypoint: '{ref}'}}\n")
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    before = set(os.listdir(tmp_path))
    code, err = cli(capsys, "validate", str(tmp_path / "s.yaml"))
    one_error(code, err, "workload.entrypoint", words)
    assert set(os.listdir(tmp_path)) == before   # nothing left beside it
    sys.modules.pop("broken_job", None)


def test_each_scenario_imports_its_own_module_of_a_shared_name(tmp_path, capsys):
    import sys

    for folder, body in (("a", "def train(config):\n    pass\n"), ("b", "x = 1\n")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "fth_shared_job.py").write_text(body)
        (tmp_path / folder / "s.yaml").write_text("name: n\nworkload: {entrypoint: 'fth_shared_job:train'}\n")
    try:
        code, err = cli(capsys, "validate", str(tmp_path / "a" / "s.yaml"), str(tmp_path / "b" / "s.yaml"))
    finally:
        sys.modules.pop("fth_shared_job", None)
    assert code == 2 and len(err) == 1, err
    assert str(tmp_path / "b" / "s.yaml") in err[0] and "has no function 'train'" in err[0]


SCHEMA_EDGES = {   # the file, and the words of its one line (None: valid)
    "key-named-int": (b"name: n\n'int': 1\n", "int: unknown key"),
    "key-named-str-in-workload": (b"name: n\nworkload: {str: 1}\n", "workload.str: unknown key"),
    "union-field-once": (b"name: n\nworkload: {num_workers: '2'}\n", "a valid integer or a valid tuple"),
    "bool-or-auto-once": (b"name: n\nworkload: {use_gpu: 'yes'}\n", "a valid boolean or must be one of 'auto'"),
    "merge-key": (b"name: n\nworkload: {<<: {steps: 5}, steps: 6}\n", "merge keys"),
    "base-dir-given": (b"name: n\nbase_dir: /etc\n", "base_dir"),
    "address-not-a-host": (b"name: n\ncluster: {address: 'not a host!!'}\n", "cluster.address"),
    "address-empty": (b"name: n\ncluster: {address: ''}\n", "cluster.address"),
    "address-port-too-big": (b"name: n\ncluster: {address: 'h:99999'}\n", "port 1-65535"),
    "yaml12-exponent": (b"name: n\ntimeout_s: 1e3\n", None),
    "yaml12-dot-exponent": (b"name: n\ntimeout_s: .5e3\nworkload: {duration_s: 5e0}\n", None),
}


@pytest.mark.parametrize("case", sorted(SCHEMA_EDGES))
def test_schema_edges_are_one_line_naming_the_field(tmp_path, capsys, case):
    raw, words = SCHEMA_EDGES[case]
    (tmp_path / "s.yaml").write_bytes(raw)
    code, err = cli(capsys, "validate", str(tmp_path / "s.yaml"))
    if words is None:
        assert code == 0 and err == [], err
    else:
        one_error(code, err, words)


def test_outputs_never_replace_the_results_they_read(tmp_path, capsys):
    import shutil

    run = tmp_path / "r"
    shutil.copytree(os.path.join(REPO, "tests", "data", "kill-worker"), run)
    before = (run / "history.jsonl").read_bytes()
    one_error(*cli(capsys, "trace", str(run), "--out", str(run / "history.jsonl")), "would overwrite")
    one_error(*cli(capsys, "trace", str(run), "--out", ""), "--out: empty")
    one_error(*cli(capsys, "report", str(run), "--out", str(tmp_path / "o"), "--junit", str(tmp_path / "o")),
              "is the --out folder")
    one_error(*cli(capsys, "report", str(run), "--out", str(tmp_path / "o2"), "--junit", str(run / "summary.json")),
              "would overwrite")
    assert (run / "history.jsonl").read_bytes() == before
    assert not (tmp_path / "o").exists() and not (tmp_path / "o2").exists()


def test_a_plan_too_large_to_simulate_is_refused_not_a_memory_error(capsys):
    one_error(*cli(capsys, "plan", "--accelerators", "10000000", "--days", "3650", "--runs", "100000"),
              "--runs 100000", "events to simulate")


def test_verdict_judges_the_run_behind_the_journal_from_its_history(tmp_path, capsys):
    """A journal's own copy of the run's verdict is not evidence: the history decides, and a
    results_dir with no history is INCONCLUSIVE, never PASS."""
    import shutil

    run = tmp_path / "r"
    shutil.copytree(os.path.join(REPO, "tests", "data", "kill-worker"), run)
    base = {"status": "completed", "deviated": False, "experiment": {"title": "t"}}
    cases = [({"run_verdict": "PASS", "results_dir": "/nonexistent"}, 3),
             ({"run_verdict": "PASS", "results_dir": 3}, 3),
             ({"run_verdict": "FAIL", "mismatches": ["edited"], "results_dir": str(run)}, 0),   # history: PASS
             ]
    for fth, want in cases:
        (tmp_path / "j.json").write_text(json.dumps({**base, "ftharness": fth}))
        code, err = cli(capsys, "verdict", str(tmp_path / "j.json"))
        assert code == want and err == [], (fth, code, err)
    lines = (run / "history.jsonl").read_text().splitlines()
    (run / "history.jsonl").write_text("\n".join(l for l in lines if '"kind": "fault_injected"' not in l) + "\n")
    (tmp_path / "j.json").write_text(json.dumps({**base, "ftharness": {"run_verdict": "PASS", "results_dir": str(run)}}))
    code, _ = cli(capsys, "verdict", str(tmp_path / "j.json"))
    assert code == 3   # a lost event (a gap in the history): never the journal's PASS


def test_validate_refuses_the_flags_run_would_refuse(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("name: n\n")
    (tmp_path / "ran").mkdir()
    (tmp_path / "ran" / "summary.json").write_text("{}")
    one_error(*cli(capsys, "validate", "--out", str(tmp_path / "ran"), str(tmp_path / "s.yaml")), "already holds a run")
    one_error(*cli(capsys, "validate", "--address", "", str(tmp_path / "s.yaml")), "--address")
    one_error(*cli(capsys, "validate", "--address", "h:99999", str(tmp_path / "s.yaml")), "port 1-65535")
