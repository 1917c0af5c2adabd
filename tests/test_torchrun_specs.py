"""workload.runtime: torchrun, pure parts (no processes, no Ray): what the
scenario language refuses in one line naming the field, and what it accepts."""

import pytest

from faults import FAULT_KINDS
from harness.errors import ScenarioError
from scenarios.schema import TORCHRUN_FAULTS, TORCHRUN_REFUSED, parse_scenario

TARGETED = ("kill_worker", "crash_worker", "hang_worker", "kill_node", "preempt_node", "partition_node")


def torchrun(**parts):
    data = {"name": "t", "workload": {"runtime": "torchrun", **parts.pop("workload", {})}}
    data.update(parts)
    return data


def refused(data):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source="s.yaml")
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= 300, msg
    return msg


def test_runtime_defaults_to_ray_train_and_takes_only_two_values():
    assert parse_scenario({"name": "x"}).workload.runtime == "ray_train"
    assert parse_scenario(torchrun()).workload.runtime == "torchrun"
    msg = refused({"name": "x", "workload": {"runtime": "torchelastic"}})
    assert msg.startswith("s.yaml: workload.runtime:") and "'ray_train'" in msg and "'torchrun'" in msg


def test_every_fault_kind_is_either_accepted_or_refused_with_a_reason():
    assert set(TORCHRUN_FAULTS) | set(TORCHRUN_REFUSED) == set(FAULT_KINDS)
    assert not set(TORCHRUN_FAULTS) & set(TORCHRUN_REFUSED)


@pytest.mark.parametrize("kind", sorted(TORCHRUN_REFUSED))
def test_faults_torchrun_cannot_do_are_refused_naming_the_field_and_what_is_allowed(kind):
    fault = {"kind": kind, "at": {"step": 2}, **({"target": {"rank": 0}} if kind in TARGETED else {})}
    msg = refused(torchrun(faults=[fault]))
    assert msg.startswith(f"s.yaml: faults[0].kind: {kind} "), msg
    assert "allowed: kill_worker, crash_worker, kill_node" in msg
    # the same fault is fine under Ray Train
    parse_scenario({"name": "x", "faults": [fault]})


@pytest.mark.parametrize("fault", [
    {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}},
    {"kind": "kill_worker", "target": {"node": 0}, "at": {"event": "checkpoint_registered", "nth": 2}},
    {"kind": "kill_worker", "target": {"random": True}, "at": {"time_s": 3}},
    {"kind": "crash_worker", "target": {"rank": 0}, "where": "after_checkpoint_write", "at": {"step": 4}},
    {"kind": "kill_node", "target": {"rank": 0}, "at": {"step": 4}, "replace": True, "replace_after_s": 1},
])
def test_local_process_faults_are_accepted(fault):
    sc = parse_scenario(torchrun(faults=[fault], failure_config={"max_failures": 2}))
    assert sc.faults[0].kind == fault["kind"]


@pytest.mark.parametrize("data, field", [
    (torchrun(cluster={"address": "auto"}), "cluster.address"),
    (torchrun(cluster={"storage": "s3"}), "cluster.storage"),
    (torchrun(workload={"storage_path": "s3://bucket/x"}), "workload.storage_path"),
    (torchrun(workload={"entrypoint": "job:train"}), "workload.entrypoint"),
    (torchrun(workload={"data": "ray_data"}), "workload.data"),
    (torchrun(workload={"jit_checkpoint": True}), "workload.jit_checkpoint"),
    (torchrun(workload={"use_gpu": True}, cluster={"gpus_per_node": 1}), "workload.use_gpu"),
    (torchrun(workload={"num_workers": 4}), "workload.num_workers"),
    (torchrun(workload={"num_workers": [2, 4]}, cluster={"nodes": 1}), "workload.num_workers"),
    (torchrun(cluster={"cpus_per_node": 2}), "workload.cpus_per_worker"),
    (torchrun(failure_config={"max_failures": -1}), "failure_config.max_failures"),
    (torchrun(failure_config={"max_preemption_failures": 1}), "failure_config.max_preemption_failures"),
    (torchrun(failure_config={"controller_failure_limit": 2}), "failure_config.controller_failure_limit"),
    (torchrun(faults=[{"kind": "kill_worker", "graceful": True, "target": {"rank": 0}, "at": {"step": 2}}]),
     "faults[0].graceful"),
    (torchrun(faults=[{"kind": "kill_node", "target": {"node": 3}, "at": {"step": 2}}]), "faults[0].target.node"),
])
def test_ray_only_settings_are_refused_naming_the_field(data, field):
    assert refused(data).startswith(f"s.yaml: {field}:")


def test_elastic_workers_fit_when_the_minimum_has_nodes():
    sc = parse_scenario(torchrun(workload={"num_workers": [2, 4]}, cluster={"nodes": 3}))
    assert sc.workload.min_workers == 2
