"""Issue 49, item 3: a continued `ftharness explore` takes its folder's state as data, never as
instructions. `explore --out OUT` on an existing OUT replays each finding's schedule first; what
OUT/explore.json holds is checked against what the strategies could have drawn for the base
(kinds, triggers, ranks, argument values, workload settings), re-validated as a scenario is, and
read through the one bounded reader, all before a cluster starts: anything else is one line
naming the key, exit 2. Pure: no cluster (open_cluster is replaced by one that fails the test)."""

import copy
import json
import os

import pytest

from ftharness.harness.run.explore_state import StateRefused, load_state
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import default_scenario_path, load_scenario

BASE = load_scenario(default_scenario_path())

FINDING = {"signature": "exactly_once_restore", "scenario_file": "findings/x.yaml", "status": "confirmed",
           "first_found_s": 1.0, "examples_before": 0, "repeat": None,
           "example": {"index": 1, "name": "explore-0123abcd",
                       "faults": [{"kind": "corrupt_checkpoint", "at": {"step": 5}, "which": "latest", "how": "bitflip"},
                                  {"kind": "kill_worker", "at": {"step": 6}, "target": {"rank": 1}}],
                       "phases": ["steady", "close_pair"], "status": "FAIL", "signature": "exactly_once_restore",
                       "workload": {}, "purpose": "search", "session": 1, "landed": [True, True]}}
STATE = {"base": "default", "seed": 0, "session": 1, "examples": [copy.deepcopy(FINDING["example"])],
         "findings": [FINDING]}


@pytest.fixture
def no_cluster(monkeypatch):
    import ftharness.harness.cluster.handles as handles

    def refuse(*a, **k):
        raise AssertionError("a cluster was opened")
    monkeypatch.setattr(handles, "open_cluster", refuse)


def _explore(out, capsys):
    from ftharness.harness.frontends.cli import main

    code = main(["explore", "--out", str(out), "--budget", "90s"])
    err = capsys.readouterr().err.strip().splitlines()
    return code, [line for line in err if not line.startswith("explore ")]   # the banner line aside


def _write(out, state):
    out.mkdir(exist_ok=True)
    (out / "explore.json").write_text(json.dumps(state))


def test_what_explore_writes_is_continued():
    support = es.supported(BASE)
    import tempfile
    from pathlib import Path

    with tempfile.TemporaryDirectory() as d:
        _write(Path(d), STATE)
        examples, findings = load_state(d, BASE, support)
    assert examples == STATE["examples"]
    assert findings == [(FINDING["example"]["faults"], {})]


def _set(path, value):
    state = copy.deepcopy(STATE)
    node = state
    *head, last = path
    for p in head:
        node = node[p]
    if value is KeyError:
        del node[last]
    else:
        node[last] = value
    return state


F0 = ["findings", 0, "example"]
HOSTILE = [
    # the reported attack: a workload override that points the run at other code or storage
    (F0 + ["workload"], {"entrypoint": "os:system"}, "workload.entrypoint"),
    (F0 + ["workload"], {"storage_path": "s3://someone-else/bucket"}, "workload.storage_path"),
    (F0 + ["workload"], {"train_loop_config": {"cmd": "id"}}, "workload.train_loop_config"),
    (F0 + ["workload"], {"data": "/etc/passwd"}, "workload.data"),
    (F0 + ["workload"], "os:system", "workload"),
    # faults: only kinds, triggers, ranks and argument values explore draws
    (F0 + ["faults", 1, "kind"], "no_such_kind", "faults[1].kind"),
    (F0 + ["faults", 1, "command"], "rm -rf ~", "faults[1].command"),
    (F0 + ["faults", 1, "target"], {"rank": 7}, "faults[1].target"),
    (F0 + ["faults", 1, "target"], {"node_ip": "10.0.0.1"}, "faults[1].target"),
    (F0 + ["faults", 0, "how"], "shred", "faults[0].how"),
    (F0 + ["faults", 1, "at"], {"step": 10 ** 12}, "faults[1].at.step"),
    (F0 + ["faults", 1, "at"], {"step": True}, "faults[1].at.step"),
    (F0 + ["faults", 1, "at"], {"event": "history_end"}, "faults[1].at.event"),
    (F0 + ["faults", 1, "at"], {"time_s": 1e9}, "faults[1].at.time_s"),
    (F0 + ["faults", 1, "at"], {"step": 2, "shell": "x"}, "faults[1].at.shell"),
    (F0 + ["faults"], [], "example.faults"),
    (F0 + ["faults"], [{"kind": "kill_worker", "at": {"step": 6}, "target": {"rank": 0}}] * 9, "example.faults"),
    # the records around them
    (F0 + ["name"], "../../victim", "example.name"),
    (F0 + ["folder"], {"x": 1}, "example.folder"),
    (F0 + ["hook"], "x", "example.hook"),
    (F0, KeyError, "findings[0].example"),
    (["findings", 0, "extra"], 1, "findings[0].extra"),
    (["examples", 0, "workload"], {"entrypoint": "os:system"}, "examples[0].workload.entrypoint"),
    (["examples", 0, "session"], "1", "examples[0].session"),
    (["findings"], {"a": 1}, "findings"),
    (["hooks"], ["x"], "hooks"),
]


@pytest.mark.parametrize("path, value, words", HOSTILE, ids=[h[2] + f"-{i}" for i, h in enumerate(HOSTILE)])
def test_anything_explore_never_draws_is_refused_naming_the_key_before_a_cluster(tmp_path, capsys, no_cluster,
                                                                                   path, value, words):
    out = tmp_path / "out"
    _write(out, _set(path, value))
    code, err = _explore(out, capsys)
    assert code == 2 and len(err) == 1, err
    assert words in err[0] and "Traceback" not in err[0], err
    assert not (out / "examples").exists()


def test_a_schedule_the_scenario_refuses_is_refused(tmp_path, capsys, no_cluster):
    # every value drawable one by one, but the scenario they make is no valid one: a rank of the run,
    # with a crash point the schema ties to an event trigger (re-validated as a scenario is)
    state = _set(F0 + ["faults"], [{"kind": "crash_worker", "at": {"time_s": 2.0}, "target": {"rank": 0},
                                    "where": "after_step"}])
    out = tmp_path / "out"
    _write(out, state)
    code, err = _explore(out, capsys)
    assert code == 2 and len(err) == 1 and "explore.json" in err[0], err


def _fifo(p):
    os.mkfifo(p)


def _dev_zero(p):
    os.symlink("/dev/zero", p)


def _huge(p):
    with open(p, "wb") as f:
        f.truncate(200 << 20)     # sparse: 200 MiB of nothing


def _write_bytes(data):
    def make(p):
        with open(p, "wb") as f:
            f.write(data)
    return make


DAMAGED = [
    ("fifo", _fifo, "regular file"),
    ("dev-zero", _dev_zero, "symlink"),
    ("huge", _huge, "bytes"),
    ("truncated", _write_bytes(json.dumps(STATE)[:-20].encode()), "not JSON"),
    ("binary", _write_bytes(b"\xff\xfe\x00garbage"), "not JSON"),
    ("deep", _write_bytes(b"[" * 100_000 + b"]" * 100_000), "nested"),
    ("many-objects", _write_bytes(b"[" + b"{}," * 600_000 + b"{}]"), "objects and arrays"),
    ("many-values", _write_bytes(b"[" + b"1," * 3_000_000 + b"1]"), "values"),
    ("a-list", _write_bytes(b"[1, 2]"), "mapping"),
    ("a-folder", lambda p: os.mkdir(p), "regular file"),
]


@pytest.mark.timeout(60)
@pytest.mark.parametrize("name, make, words", DAMAGED, ids=[d[0] for d in DAMAGED])
def test_a_damaged_explore_json_is_one_line_exit_2_never_a_hang(tmp_path, capsys, no_cluster, name, make, words):
    out = tmp_path / "out"
    out.mkdir()
    make(str(out / "explore.json"))
    code, err = _explore(out, capsys)
    assert code == 2 and len(err) == 1, err
    assert "explore.json" in err[0] and words in err[0], err


@pytest.mark.timeout(60)
@pytest.mark.parametrize("make", [_fifo, _dev_zero, _huge], ids=["fifo", "dev-zero", "huge"])
def test_the_example_database_holds_only_small_regular_files(tmp_path, capsys, no_cluster, make):
    out = tmp_path / "out"
    (out / ".hypothesis" / "abc").mkdir(parents=True)
    make(str(out / ".hypothesis" / "abc" / "entry"))
    code, err = _explore(out, capsys)
    assert code == 2 and len(err) == 1 and ".hypothesis" in err[0], err


def test_the_checked_fields_are_explore_s_own():
    from ftharness.harness.run.explore import Example, FoundGap
    from ftharness.harness.run.explore_state import EXAMPLE_FIELDS, FINDING_FIELDS

    assert EXAMPLE_FIELDS == tuple(Example.__dataclass_fields__)
    assert FINDING_FIELDS == tuple(FoundGap.__dataclass_fields__)


def test_the_state_reader_refuses_dev_zero_itself(tmp_path):
    """Without the command's check of planted symlinks (the pytest plugin's route): the reader's own."""
    os.symlink("/dev/zero", tmp_path / "explore.json")
    with pytest.raises(StateRefused.__mro__[1], match="/dev"):
        load_state(str(tmp_path), BASE, es.supported(BASE))


def test_the_explorer_itself_checks_what_it_continues(tmp_path):
    """The pytest plugin's route builds an Explorer without the command: it checks the state too."""
    from ftharness.harness.run.explore import Explorer

    _write(tmp_path, _set(F0 + ["workload"], {"entrypoint": "os:system"}))
    with pytest.raises(StateRefused, match="workload.entrypoint"):
        Explorer(BASE, executor=None, out=str(tmp_path), budget_s=10, say=lambda line: None)
