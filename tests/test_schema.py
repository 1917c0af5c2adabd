"""Scenario validation: bad input is refused with one line naming the field."""

import pytest

from ftharness.scenarios.schema import default_scenario_path, load_scenario, parse_scenario
from ftharness.errors import ScenarioError

from conftest import ray_clusters, run_cli


def error_of(data):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source="s.yaml")
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_default_scenario_is_valid():
    sc = load_scenario(default_scenario_path())
    assert sc.workload.num_workers == 2 and sc.cluster.nodes == 3


@pytest.mark.parametrize("data, field, allowed", [
    ({"name": "x", "bogus": 1}, "bogus", "unknown key"),
    ({"name": "x", "workload": {"stepz": 3}}, "workload.stepz", "unknown key"),
    ({"name": "x", "workload": {"steps": "many"}}, "workload.steps", "integer"),
    ({"name": "x", "workload": {"data": "s3"}}, "workload.data", "resumable"),
    ({"name": "x", "cluster": {"nodes": 2, "cpus_per_node": 1}, "workload": {"num_workers": 3}},
     "workload.num_workers", "at most 2"),
    ({"name": "x", "faults": [{"kind": "meteor", "at": {"step": 1}}]}, "faults[0].kind", "kill_worker"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "at": {"step": 1}}]}, "faults[0].target", "needs a target"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {}}]}, "faults[0].at", "exactly one of"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 0}}]}, "faults[0].at.step", "greater than or equal to 1"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"event": "lunch"}}]}, "faults[0].at.event", "checkpoint_written"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}, "notice_s": 3}]},
     "faults[0].notice_s", "not an argument of kill_worker"),
    ({"name": "x", "expect": {"properties": ["fast"]}}, "expect.properties[0]", "exactly_once_restore"),
    ({"name": "bad name!"}, "name", "pattern"),
    ({"name": "x", "faults": [{"kind": "kill_worker", "target": {"rank": 2}, "at": {"step": 2}}]},
     "faults[0].target.rank", "does not exist"),
    ({"name": "x", "faults": [{"kind": "kill_node", "target": {"node": 3}, "at": {"step": 2}}]},
     "faults[0].target.node", "does not exist"),
    ({"name": "x", "workload": {"steps": 10}, "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 11}}]},
     "faults[0].at.step", "never reached"),
    ({"name": "x", "faults": [{"kind": "crash_worker", "target": {"node": 0}, "at": {"step": 2}}]},
     "faults[0].target", "rank or random"),
    ({"name": "x", "faults": [{"kind": "partition_node", "target": {"rank": 0}, "at": {"step": 2}, "mode": "wire"}]},
     "faults[0].mode", "pause"),
    ({"name": "x", "faults": [{"kind": "corrupt_checkpoint", "at": {"step": 2}, "which": "newest"}]},
     "faults[0].which", "latest, oldest, in_flight or 'index N'"),
    ({"name": "x", "faults": [{"kind": "kill_controller", "target": {"rank": 0}, "at": {"step": 2}}]},
     "faults[0].target", "not an argument of kill_controller (allowed: resume)"),
    ({"name": "x", "faults": [{"at": {"step": 2}}]}, "faults[0].kind", "allowed: kill_worker"),
])
def test_bad_input_names_field(data, field, allowed):
    msg = error_of(data)
    assert msg.startswith(f"s.yaml: {field}:"), msg
    assert allowed in msg, msg


def test_not_a_mapping():
    assert "mapping" in error_of(["a", "b"])


def test_elastic_workers_checked():
    assert "min <= max" in error_of({"name": "x", "workload": {"num_workers": [3, 2]}})
    sc = parse_scenario({"name": "x", "workload": {"num_workers": [1, 3]}})
    assert sc.workload.min_workers == 1


@pytest.mark.serial  # compares the host's Ray clusters before and after
def test_cli_refuses_bad_scenario_before_starting_anything(write_scenario):
    path = write_scenario("name: x\ncluster: {nodes: 1}\nworkload: {num_workers: 4}\n")
    before = ray_clusters()
    r = run_cli("run", path, "--out", path + ".out", timeout=60)
    assert r.returncode == 2
    lines = [l for l in r.stderr.splitlines() if l.strip()]
    assert len(lines) == 1 and "workload.num_workers" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
    assert ray_clusters() == before  # no cluster was started, none left behind


def test_cli_refuses_invalid_yaml(write_scenario):
    r = run_cli("run", write_scenario("name: [unclosed\n"), timeout=60)
    assert r.returncode == 2 and "not valid YAML" in r.stderr and "Traceback" not in r.stderr


def test_cli_refuses_missing_file(tmp_path):
    r = run_cli("run", str(tmp_path / "nope.yaml"), timeout=60)
    assert r.returncode == 2 and "no such scenario file" in r.stderr


def test_cli_validate(write_scenario):
    good = write_scenario("name: ok\n", "good.yaml")
    bad = write_scenario("name: bad\nfaults: [{kind: meteor, at: {step: 1}}]\n", "bad.yaml")
    r = run_cli("validate", good, bad, timeout=60)
    assert r.returncode == 2
    assert "ok " in r.stdout and "unknown fault kind 'meteor'" in r.stderr
