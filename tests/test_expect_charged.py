"""`expect.charged` and `expect.worker_failure_types` (issue 47): judged on a real recorded history
(tests/data/kill-worker: rank 1 SIGKILLed, one failure charged to worker_group, the controller's
RESTARTING state naming {0: RuntimeError, 1: WorkerHealthCheckFailedError}) through `ftharness check`,
PASS as recorded and FAIL once a mismatch is planted, in the expectation or in the resealed history;
a bad value is refused at load in one line. Pure: no Ray."""

import json
import os
import shutil

import pytest
import yaml

from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli import main
from ftharness.history.records import read_history, sealed_lines
from ftharness.scenarios.schema import parse_scenario
from ftharness.scenarios.verdict import evaluate

KILL = os.path.join(os.path.dirname(__file__), "data", "kill-worker")


def folder(tmp_path, expect=None, events=None):
    """A copy of the recorded kill-worker run: its scenario.yaml's expect extended by `expect`,
    its history replaced by `events` (resealed, as a harness recording that run would write it)."""
    dst = tmp_path / "run"
    shutil.copytree(KILL, dst)
    doc = yaml.safe_load((dst / "scenario.yaml").read_text())
    doc["expect"].update(expect or {})
    (dst / "scenario.yaml").write_text(yaml.safe_dump(doc))
    if events is not None:
        (dst / "history.jsonl").write_bytes(b"".join(line + b"\n" for line in sealed_lines(events)))
    return str(dst)


def check(path, capsys):
    code = main(["check", path])
    return code, capsys.readouterr().out


def recorded():
    read = read_history(KILL)
    assert read.problems == []
    return read.events


def test_charged_as_recorded_passes(tmp_path, capsys):
    code, out = check(folder(tmp_path, {"charged": {"worker_group": 1, "preemption": 0, "controller": 0}}), capsys)
    assert code == 0 and out.strip().splitlines()[-1] == "PASS kill-worker", out


def test_a_wrong_charge_in_the_expectation_fails(tmp_path, capsys):
    code, out = check(folder(tmp_path, {"charged": {"worker_group": 2}}), capsys)
    assert code == 1 and "charged worker_group 1 (expected 2)" in out, out
    assert "FAIL kill-worker" in out


def test_a_charge_planted_in_the_recorded_history_fails(tmp_path, capsys):
    events = recorded()
    for e in events:   # the history charges the kill to the preemption budget instead
        if e["kind"] == "failure":
            e.update(budget="preemption", counts={"worker_group": 0, "preemption": 1, "controller": 0})
    code, out = check(folder(tmp_path, {"charged": {"worker_group": 1, "preemption": 0}, "properties": ["recovers"]},
                             events), capsys)
    assert code == 1, out
    assert "charged worker_group 0 (expected 1)" in out and "charged preemption 1 (expected 0)" in out, out


def test_a_budget_left_out_is_not_judged(tmp_path, capsys):
    code, out = check(folder(tmp_path, {"charged": {"controller": 0}}), capsys)
    assert code == 0, out


def test_worker_failure_types_as_recorded_pass(tmp_path, capsys):
    code, out = check(folder(tmp_path, {"worker_failure_types": {1: "WorkerHealthCheckFailedError"}}), capsys)
    assert code == 0 and out.strip().splitlines()[-1] == "PASS kill-worker", out


def test_a_wrapped_worker_failure_planted_in_the_history_fails(tmp_path, capsys):
    """What Ray 2.54 records for a user's exception: the wrapper's class, not the user's."""
    events = recorded()
    for e in events:
        if e["kind"] == "controller_state" and e.get("worker_failures"):
            e["worker_failures"] = {"1": "UserExceptionWithTraceback"}
    code, out = check(folder(tmp_path, {"worker_failure_types": {"1": "WorkerHealthCheckFailedError"},
                                        "properties": ["recovers"]}, events), capsys)
    assert code == 1, out
    assert "worker_failure_types rank 1 UserExceptionWithTraceback (expected WorkerHealthCheckFailedError)" in out, out


def test_a_rank_that_did_not_fail_and_a_history_without_failures_fail(tmp_path, capsys):
    code, out = check(folder(tmp_path, {"worker_failure_types": {"3": "ValueError"}}), capsys)
    assert code == 1 and "worker_failure_types rank 3 did not fail (expected ValueError)" in out, out
    events = [dict(e, worker_failures={}) if e["kind"] == "controller_state" else e for e in recorded()]
    code, out = check(folder(tmp_path / "b", {"worker_failure_types": {"1": "WorkerHealthCheckFailedError"},
                                              "properties": ["recovers"]}, events), capsys)
    assert code == 1 and "worker_failure_types: no worker failure recorded (expected rank 1 " \
                         "WorkerHealthCheckFailedError)" in out, out


def _scenario(expect):
    doc = yaml.safe_load(open(os.path.join(KILL, "scenario.yaml")))
    doc["expect"].update(expect)
    return parse_scenario(doc)


def test_without_its_evidence_a_mismatch_is_inconclusive_not_fail():
    events = [e for e in recorded() if e["kind"] != "fault_injected"]
    summary = json.load(open(os.path.join(KILL, "summary.json")))
    out = {"outcome": "succeeded", "error": None, "error_type": None,
           "return_value": {"acc": summary["final_state"]["accumulators"]}}
    s = evaluate(_scenario({"charged": {"worker_group": 3}}), events, out, [])
    assert s["verdict"] == "INCONCLUSIVE"
    assert any("charged worker_group 1 (expected 3), but the evidence is incomplete" in r for r in s["inconclusive"])


@pytest.mark.parametrize("expect, words", [
    ({"charged": {"max_failures": 1}}, "expect.charged: 'max_failures' is not a budget (the FailureConfig field "
                                       "max_failures limits the budget worker_group)"),
    ({"charged": {"retries": 1}}, "allowed: worker_group, preemption, controller, max_restarts"),
    ({"charged": {"worker_group": -1}}, "expect.charged.worker_group: '-1' is not a count"),
    ({"charged": {"worker_group": True}}, "expect.charged.worker_group: 'True' is not a count"),
    ({"worker_failure_types": {"one": "ValueError"}}, "worker_failure_types: 'one' is not a rank"),
    ({"worker_failure_types": {"1": "not a class"}}, "expect.worker_failure_types: rank 1: 'not a class' is not an exception"),
    ({"worker_failure_types": {}}, "worker_failure_types"),
])
def test_bad_values_are_refused_at_load_in_one_line(expect, words):
    with pytest.raises(ScenarioError) as e:
        _scenario(expect)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)
