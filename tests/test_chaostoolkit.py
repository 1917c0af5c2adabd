"""ftharness as a Chaos Toolkit extension: discovery, validation before anything
is injected, a real `chaos run` on the embedded cluster, and a plain verdict."""

import json
import os
import subprocess
import sys

import pytest
import yaml

pytest.importorskip("chaoslib", reason="pip install -e '.[ctk]' (Chaos Toolkit is an extra)")

from ftharness.harness.frontends.ctk.control import journal_verdict, validate_experiment  # noqa: E402
from ftharness.harness.frontends.ctk.session import Session  # noqa: E402
from ftharness.faults import FAULT_KINDS  # noqa: E402
from ftharness.errors import ScenarioError  # noqa: E402

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
    for action in (*FAULT_KINDS, "heal_all"):   # an action for every kind of the registry
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
def test_chaos_run_on_the_embedded_cluster(ftharness_exclusive, tmp_path):
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
def test_bad_target_interrupts_before_anything_starts(ftharness_exclusive, tmp_path):
    exp = example()
    exp["method"][0]["provider"]["arguments"]["target"] = {"rank": 7}
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(exp))
    before = ray_clusters()
    r = subprocess.run([CHAOS, "--no-log-file", "run", "--journal-path", "journal.json", str(path)],
                       capture_output=True, text=True, timeout=900, cwd=tmp_path)
    assert "target.rank: 7 does not exist" in r.stderr + r.stdout
    assert ray_clusters() == before
    journal_path = tmp_path / "journal.json"
    if journal_path.exists():   # refused by the control's run-time check: an interrupted journal
        journal = json.loads(journal_path.read_text())
        assert journal["status"] == "interrupted" and "ftharness" not in journal
        v = run_cli("verdict", str(journal_path), timeout=60)
        assert v.returncode == 1 and v.stdout.startswith("FAIL")
    else:                       # refused by validate_control, before the experiment ran at all
        assert r.returncode != 0


# ------------------------------------------------ an action for every fault kind
def test_every_fault_kind_has_an_action_with_every_argument_of_its_spec():
    """Seen: no action for network_degrade nor crash_worker; partition_node could only pause."""
    import inspect

    from ftharness.faults import REGISTRY
    from ftharness.harness.frontends.ctk import actions

    for kind, fault in REGISTRY.items():
        assert kind in actions.__all__, kind
        params = set(inspect.signature(getattr(actions, kind)).parameters)
        wanted = set(fault.Spec.arguments()) | ({"target"} if "target" in fault.Spec.model_fields else set())
        assert wanted <= params, (kind, wanted - params)
        assert getattr(actions, kind).__doc__, kind


def _with_action(func, arguments, name="the-action", network=None):
    exp = example()
    exp["method"] = [{"type": "action", "name": name, "provider": {
        "type": "python", "module": "ftharness.harness.frontends.ctk.actions", "func": func, "arguments": arguments}}]
    if network:
        exp["controls"][0]["provider"]["arguments"]["scenario"]["cluster"] = {"network": network}
    return exp


@pytest.mark.parametrize("func, arguments, network", [
    ("partition_node", {"target": {"node": 1}, "mode": "pause", "duration_s": 5}, None),
    ("partition_node", {"target": {"node": 1}, "mode": "network", "direction": "in", "cut_from": "head"}, "namespaces"),
    ("partition_node", {"target": {"node": 1}, "mode": "network", "cut_from": "workers"}, "namespaces"),
    ("network_degrade", {"target": {"node": 1}, "loss_pct": 20, "direction": "out", "duration_s": 5}, "namespaces"),
    ("network_degrade", {"target": {"rank": 0}, "rate_mbit": 10, "latency_ms": 50}, "namespaces"),
    ("crash_worker", {"target": {"rank": 1}, "at": {"step": 5}, "where": "after_checkpoint_write"}, None),
    ("storage_errors", {"ops": ["write"], "error_rate": 0.5, "partial": True}, None),
])
def test_every_mode_validates(func, arguments, network):
    exp = _with_action(func, arguments, network=network)
    validate_experiment(exp, control_scenario(exp))


def test_crash_worker_actions_are_armed_in_the_control_scenario_before_training():
    from ftharness.harness.frontends.ctk.control import _with_armed

    exp = _with_action("crash_worker", {"target": {"rank": 1}, "at": {"step": 5}})
    session = Session.from_arguments(exp["controls"][0]["provider"]["arguments"]["scenario"])
    _with_armed(session, exp)
    (fault,) = session.scenario.faults
    assert fault.kind == "crash_worker" and fault.target.rank == 1 and fault.at.step == 5


def _chaos_validate(tmp_path, exp):
    path = tmp_path / "exp.json"
    path.write_text(json.dumps(exp))
    return subprocess.run([CHAOS, "--no-log-file", "validate", str(path)], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONSAFEPATH": "1"})


def test_chaos_validate_refuses_a_bad_target_and_accepts_the_example(tmp_path):
    """Seen: `chaos validate` accepted a bad target."""
    good = _chaos_validate(tmp_path, example())
    assert good.returncode == 0, good.stdout + good.stderr
    bad = _with_action("kill_worker", {"target": {"rank": 7}}, name="kill-rank-7")
    r = _chaos_validate(tmp_path, bad)
    assert r.returncode != 0
    assert "target.rank: 7 does not exist" in r.stdout + r.stderr and "kill-rank-7" in r.stdout + r.stderr


def test_probes_are_documented():
    from ftharness.harness.frontends.ctk import probes

    text = open(os.path.join(REPO, "docs", "chaostoolkit.md")).read()
    for name in probes.__all__:
        assert getattr(probes, name).__doc__, name
        assert f"`{name}" in text, name
