"""ftharness as a Chaos Toolkit extension: discovery, validation before anything
is injected, a real `chaos run` on the embedded cluster, and a plain verdict."""

import json
import os
import subprocess
import sys

import pytest
import yaml

from ftharness.harness.frontends.ctk.control import journal_verdict, validate_experiment
from ftharness.harness.frontends.ctk.session import Session
from ftharness.errors import ScenarioError

from conftest import REPO, ray_clusters, run_cli

CHAOS = os.path.join(os.path.dirname(sys.executable), "chaos")
EXAMPLE = os.path.join(REPO, "scenarios", "chaostoolkit", "preempt-and-kill.yaml")


def example():
    with open(EXAMPLE) as f:
        return yaml.safe_load(f)


def control_scenario(exp):
    return Session.from_arguments(exp["controls"][0]["provider"]["arguments"]["scenario"]).scenario


def test_json_example_is_the_yaml_example():
    with open(EXAMPLE.replace(".yaml", ".json")) as f:
        assert json.load(f) == example()


def test_example_validates():
    exp = example()
    validate_experiment(exp, control_scenario(exp))


@pytest.mark.parametrize("change, message", [
    (lambda p: p.update(func="meteor_strike"), "unknown fault kind 'meteor_strike'"),
    (lambda p: p["arguments"].update(target={"rank": 7}), "target.rank: 7 does not exist"),
    (lambda p: p["arguments"].update(target={"rank": 0, "node": 1}), "exactly one of rank, node, node_id, ip, label, random"),
    (lambda p: p["arguments"].update(notice_s=-1), "notice_s"),
])
def test_bad_action_arguments_fail_validation_in_one_line(change, message):
    exp = example()
    change(exp["method"][0]["provider"])
    with pytest.raises(ScenarioError) as e:
        validate_experiment(exp, control_scenario(exp))
    assert message in str(e.value) and "\n" not in str(e.value)
    assert "preempt-the-node-of-rank-1" in str(e.value)


def test_discover_lists_actions_and_probes(tmp_path):
    out = tmp_path / "discovery.json"
    r = subprocess.run([CHAOS, "--no-log-file", "discover", "--no-install", "ftharness",
                        "--discovery-path", str(out)], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    names = {(a["type"], a["name"]) for a in json.loads(out.read_text())["activities"]}
    for action in ("kill_worker", "preempt_node", "partition_node", "corrupt_checkpoint", "kill_controller",
                   "starve_resources", "storage_errors", "hang_worker", "kill_node", "heal_all"):
        assert ("action", action) in names
    for probe in ("training_progresses", "current_attempt", "budget_use", "property_holds"):
        assert ("probe", probe) in names


OK_RUN = {"run_verdict": "PASS", "matches_expectation": True}


@pytest.mark.parametrize("journal, verdict", [
    ({"status": "completed", "deviated": False, "ftharness": OK_RUN}, "PASS"),
    ({"status": "completed", "deviated": True, "ftharness": OK_RUN}, "FAIL"),
    ({"status": "interrupted", "deviated": False, "ftharness": OK_RUN}, "FAIL"),
    ({"status": "completed", "deviated": False,
      "steady_states": {"after": {"steady_state_met": False}}, "ftharness": OK_RUN}, "FAIL"),
    ({"status": "completed", "deviated": False,
      "ftharness": {"run_verdict": "FAIL", "mismatches": ["property recovers failed"]}}, "FAIL"),
    ({"status": "completed", "deviated": False,
      "ftharness": {"run_verdict": "INCONCLUSIVE", "inconclusive": ["fault 0 did not land"]}}, "INCONCLUSIVE"),
    ({"status": "completed", "deviated": False, "ftharness": {"matches_expectation": True}}, "INCONCLUSIVE"),
    ({"status": "completed", "deviated": False}, "INCONCLUSIVE"),
])
def test_verdict_is_not_chaos_exit_code(journal, verdict):
    assert journal_verdict(journal)["verdict"] == verdict
    assert journal_verdict(journal)["passed"] is (verdict == "PASS")


def chaos_run(path, cwd, journal="journal.json"):
    r = subprocess.run([CHAOS, "--no-log-file", "run", "--journal-path", journal, path],
                       capture_output=True, text=True, timeout=900, cwd=cwd)
    with open(os.path.join(cwd, journal)) as f:
        return r, json.load(f)


@pytest.mark.full
@pytest.mark.exclusive_ray
@pytest.mark.slow
def test_chaos_run_on_the_embedded_cluster(exclusive_ray, tmp_path):
    r, journal = chaos_run(EXAMPLE, tmp_path)
    assert r.returncode == 0, r.stderr[-3000:]
    assert journal["status"] == "completed" and not journal["deviated"]
    fth = journal["ftharness"]
    assert fth["verdict"]["passed"], fth
    summary = json.load(open(os.path.join(fth["results_dir"], "summary.json")))
    assert summary["budgets"] == {"worker_group": 1, "preemption": 1, "controller": 0}
    events = [json.loads(l) for l in open(os.path.join(fth["results_dir"], "history.jsonl"))]
    done = [e["fault_kind"] for e in events if e["kind"] == "fault_injected"]
    assert done == ["preempt_node", "kill_worker"]
    assert [e["phase"] for e in events if e["kind"] == "experiment"] == ["start", "end"]
    v = run_cli("verdict", str(tmp_path / "journal.json"), timeout=60)
    assert v.returncode == 0 and v.stdout.startswith("PASS")
    rep = run_cli("report", str(tmp_path / "journal.json"), "--out", str(tmp_path / "report"), timeout=120)
    assert rep.returncode == 0 and (tmp_path / "report" / "index.html").exists()


@pytest.mark.exclusive_ray
def test_bad_target_interrupts_before_anything_starts(exclusive_ray, tmp_path):
    exp = example()
    exp["method"][0]["provider"]["arguments"]["target"] = {"rank": 7}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(exp))
    before = ray_clusters()
    r, journal = chaos_run(str(path), tmp_path)
    assert journal["status"] == "interrupted" and "ftharness" not in journal
    assert "target.rank: 7 does not exist" in r.stderr + r.stdout
    assert ray_clusters() == before
    v = run_cli("verdict", str(tmp_path / "journal.json"), timeout=60)
    assert v.returncode == 1 and v.stdout.startswith("FAIL")
