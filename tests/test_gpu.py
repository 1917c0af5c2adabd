"""The GPU path without a GPU (issue 26): the device choice through its CUDA seam, the
spec validation and one-line refusals on CPU clusters, the plans the workers act on, the
landings of cuda_error and collective_hang over synthetic histories, the GPU facts of the
summary and the report, the embedded cluster's GPU slices, the suite skipping GPU
scenarios, and scripts/gpu-check.sh without a GPU and as a dry run."""

import io
import os
import subprocess
import sys

import pytest
import torch
import yaml
from pydantic import TypeAdapter

from ftharness.errors import ScenarioError
from ftharness.faults import FaultSpec, make_fault
from ftharness.faults.base import judge_landing
from ftharness.faults import cpu_refusal
from ftharness.faults import spec_model
from ftharness.faults.gpu import detector_env
from ftharness.harness.cluster.handles import gpu_slice, host_gpus
from ftharness.harness.job import device as dv
from ftharness.harness.job.device import CudaInfo, DeviceError
from ftharness.reports.gpu import gpu_lines, gpu_section, gpu_summary
from ftharness.scenarios.schema import MAX_MESSAGE, parse_scenario

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(REPO, "scenarios", "catalog")
GPU_CATALOG = sorted(f for f in os.listdir(CATALOG) if f.startswith("gpu-"))
NO_CUDA = CudaInfo(False, 0, None)
TWO_GPUS = CudaInfo(True, 2, "12.8")


def refused(data):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source="s.yaml")
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= MAX_MESSAGE, msg
    return msg


def cuda_error(**kw):
    return {"kind": "cuda_error", "target": {"rank": 1}, "at": {"step": 3}, **kw}


def hang(**kw):
    return {"kind": "collective_hang", "target": {"rank": 1}, "at": {"step": 3}, **kw}


# ------------------------------------------------------------------ the device choice
def test_use_gpu_auto_takes_the_cluster_s_gpus_and_true_false_are_as_given():
    assert dv.wants_gpu("auto", 2) and not dv.wants_gpu("auto", 0) and not dv.wants_gpu("auto", 0.5)
    assert dv.wants_gpu(True, 0) and not dv.wants_gpu(False, 8)


def test_a_rank_gets_its_own_gpu_or_the_cpu():
    assert dv.choose_device(False, 0, NO_CUDA) == dv.CPU
    assert dv.choose_device(False, 5, TWO_GPUS) == "cpu"       # use_gpu false: CPU even with GPUs
    assert dv.choose_device(True, 0, TWO_GPUS) == "cuda:0"
    assert dv.choose_device(True, 1, TWO_GPUS) == "cuda:1"
    with pytest.raises(DeviceError, match="sees no CUDA device .a CPU build of torch"):
        dv.choose_device(True, 0, NO_CUDA)
    with pytest.raises(DeviceError, match="GPU index 2 but this worker sees 2"):
        dv.choose_device(True, 2, TWO_GPUS)


def test_nccl_on_cuda_gloo_on_cpu():
    assert dv.backend_for("cuda:3") == "nccl" and dv.backend_for("cuda") == "nccl"
    assert dv.backend_for("cpu") == "gloo" and dv.backend_for(torch.device("cpu")) == "gloo"


def test_torchrun_places_by_local_rank_except_when_every_agent_shares_this_host():
    assert dv.torchrun_index(local_rank=1, rank=5, one_host=False) == 1
    assert dv.torchrun_index(local_rank=0, rank=1, one_host=True) == 1


def test_gpus_a_cpu_build_of_torch_cannot_drive_are_refused_in_one_line():
    assert dv.gpu_refusal(False, 4, NO_CUDA) is None
    assert "CPU build" in dv.gpu_refusal(True, 2, NO_CUDA)
    assert "no GPU" in dv.gpu_refusal(True, 0, TWO_GPUS)
    assert dv.gpu_refusal(True, 2, TWO_GPUS) is None


def test_torch_config_names_nccl_on_gpu_workers_and_keeps_ray_s_cpu_default():
    from ftharness.harness.run.fit_task import _torch_config

    assert _torch_config({"use_gpu": True, "trainer": "torch"})["torch_config"].backend == "nccl"
    tc = _torch_config({"use_gpu": True, "trainer": "torch", "collective_timeout_s": 9})["torch_config"]
    assert (tc.backend, tc.timeout_s) == ("nccl", 9)
    assert _torch_config({"use_gpu": False, "trainer": "torch"}) == {}
    assert _torch_config({"use_gpu": True, "trainer": "xgboost"}) == {}


def test_torchrun_takes_one_gpu_per_node_where_the_host_has_them():
    from ftharness.harness.run.torchrun_runner import torchrun_use_gpu

    def sc(**cluster):
        return parse_scenario({"name": "t", "cluster": {"nodes": 2, **cluster},
                               "workload": {"runtime": "torchrun", "num_workers": 2}})

    assert torchrun_use_gpu(sc(), TWO_GPUS) is False               # auto, no GPU declared: CPU
    assert torchrun_use_gpu(sc(gpus_per_node=1), TWO_GPUS) is True
    with pytest.raises(ScenarioError, match="CPU build"):
        torchrun_use_gpu(sc(gpus_per_node=1), NO_CUDA)
    with pytest.raises(ScenarioError, match="need 3 GPUs on this host; it has 2"):
        torchrun_use_gpu(parse_scenario({"name": "t", "cluster": {"nodes": 3, "gpus_per_node": 1},
                                         "workload": {"runtime": "torchrun", "num_workers": 2}}), TWO_GPUS)


# ------------------------------------------------------------------ checkpoints
def test_cuda_state_is_saved_as_cpu_tensors_and_loaded_onto_the_rank_s_device():
    model = torch.nn.Linear(3, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 3)).sum().backward()
    opt.step()
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "acc": [1.0], "step": 4}
    cpu = dv.to_cpu(state)
    tensors = [v for v in cpu["model"].values()] + [cpu["optimizer"]["state"][0]["momentum_buffer"]]
    assert all(t.device.type == "cpu" for t in tensors) and cpu["step"] == 4 and cpu["acc"] == [1.0]
    buf = io.BytesIO()
    torch.save(cpu, buf)
    buf.seek(0)
    back = dv.load_state(buf, "cpu")
    assert torch.equal(back["model"]["weight"], model.state_dict()["weight"])


# ------------------------------------------------------------------ facts
def test_nvidia_smi_compute_apps_are_parsed_and_unreadable_rows_dropped():
    text = "GPU-AbC, 123, 500\nGPU-def, 77, [N/A]\ngarbage\n"
    assert dv.parse_compute_apps(text) == [{"gpu_uuid": "abc", "pid": 123, "used_mib": 500.0}]
    assert dv.norm_uuid("GPU-58E0") == dv.norm_uuid("58e0") == "58e0"


def test_no_nvidia_smi_means_no_process_list_and_a_cpu_rank_has_no_gpu_facts(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    assert dv.compute_apps() is None
    assert dv.gpu_facts("cpu") == {"device": "cpu"} and dv.peak_facts("cpu") == {}


def test_stall_sleeps_for_its_duration_and_a_cuda_error_on_a_cpu_rank_is_refused():
    slept = []
    assert dv.stall(1.2, tick_s=0.5, sleep=slept.append) == pytest.approx(1.2)
    assert slept == [0.5, 0.5, pytest.approx(0.2)]
    with pytest.raises(DeviceError, match="refused at validation on CPU clusters"):
        dv.raise_cuda_error("cpu")


# ------------------------------------------------------------------ validation
def test_a_cuda_error_on_a_cpu_cluster_is_refused_in_one_line():
    msg = refused({"name": "x", "faults": [cuda_error()]})
    assert msg.startswith("s.yaml: faults[0].kind: cuda_error needs GPU workers") and "gpus_per_node: 0" in msg
    msg = refused({"name": "x", "cluster": {"gpus_per_node": 1}, "workload": {"use_gpu": False},
                   "faults": [cuda_error()]})
    assert "workload.use_gpu: false" in msg
    assert parse_scenario({"name": "x", "cluster": {"gpus_per_node": 1}, "faults": [cuda_error()]})
    # an existing cluster: its GPUs are known at run start (ftharness.harness.run.runner.resolve_use_gpu)
    assert parse_scenario({"name": "x", "cluster": {"address": "auto"}, "faults": [cuda_error()]})


def test_cuda_error_takes_a_rank_a_step_and_a_how():
    base = {"name": "x", "cluster": {"gpus_per_node": 1}}
    assert "cuda_error takes rank or random" in refused({**base, "faults": [cuda_error(target={"node": 0})]})
    assert "needs {step: N}" in refused({**base, "faults": [cuda_error(at={"time_s": 3})]})
    assert "faults[0].how" in refused({**base, "faults": [cuda_error(how="segfault")]})


def test_collective_hang_runs_on_gloo_and_needs_its_timeout_a_peer_and_a_torch_group():
    ok = {"name": "x", "workload": {"collective_timeout_s": 5}, "faults": [hang()]}
    assert parse_scenario(ok).faults[0].kind == "collective_hang"     # CPU: gloo's timeout ends it
    assert refused({"name": "x", "faults": [hang()]}).startswith("s.yaml: workload.collective_timeout_s:")
    assert "2 or more" in refused({**ok, "workload": {"collective_timeout_s": 5, "num_workers": 1},
                                   "faults": [hang(target={"rank": 0})]})
    assert "hang_detector: Ray's NCCL hang detector needs NCCL" in refused({**ok, "faults": [hang(hang_detector=True)]})
    assert "detector_confirm_s: only with hang_detector" in refused({**ok, "faults": [hang(detector_confirm_s=9)]})
    gpu = {**ok, "cluster": {"gpus_per_node": 1}, "faults": [hang(hang_detector=True, detector_confirm_s=30)]}
    assert parse_scenario(gpu).faults[0].hang_detector is True


def test_gpu_workers_must_fit_the_declared_gpus():
    msg = refused({"name": "x", "cluster": {"nodes": 2, "cpus_per_node": 4, "gpus_per_node": 1},
                   "workload": {"num_workers": 3}})
    assert msg == ("s.yaml: workload.num_workers: 3 workers of one GPU each do not fit on 2 nodes x 1 GPUs "
                   "(at most 2)")
    assert parse_scenario({"name": "x", "cluster": {"nodes": 2, "cpus_per_node": 4, "gpus_per_node": 1},
                           "workload": {"num_workers": 3, "use_gpu": False}})


def test_gpu_faults_are_refused_under_torchrun_and_torchrun_gpus_are_one_per_node():
    tr = {"name": "t", "workload": {"runtime": "torchrun"}}
    assert "cuda_error is Ray Train-only" in refused({**tr, "cluster": {"gpus_per_node": 1}, "faults": [cuda_error()]})
    assert "collective_hang is Ray Train-only" in refused({**tr, "faults": [hang()]})
    assert refused({**tr, "workload": {"runtime": "torchrun", "use_gpu": True}}).startswith("s.yaml: workload.use_gpu:")
    assert parse_scenario({**tr, "cluster": {"gpus_per_node": 1}}).cluster.gpus_per_node == 1


def test_the_hang_detector_is_refused_on_a_release_without_it():
    from ftharness.scenarios.schema import release_problem

    sc = parse_scenario({"name": "x", "cluster": {"gpus_per_node": 1}, "workload": {"collective_timeout_s": 5},
                         "faults": [hang(hang_detector=True)]})
    assert release_problem(sc, "2.60.0") is None
    from ftharness import releases

    older = [v for v in releases.SUPPORTED if releases.parse(v)[:2] < (2, 60)]
    if older:
        assert release_problem(sc, older[0]).startswith("faults[0].hang_detector: Ray Train's NCCL hang detector")


def test_cpu_refusal_names_the_first_gpu_only_fault():
    assert cpu_refusal([{"kind": "kill_worker"}, {"kind": "cuda_error"}], "why").startswith("faults[1].kind:")
    assert cpu_refusal([{"kind": "collective_hang"}], "why") is None


def test_the_hang_detector_is_turned_on_only_when_asked():
    assert detector_env([spec_model({"kind": "collective_hang"})]) == {}
    env = detector_env([spec_model({"kind": "collective_hang", "hang_detector": True, "detector_confirm_s": 20})])
    assert env["RAY_TRAIN_ENABLE_NCCL_HANG_DETECTOR"] == "1" and env["RAY_TRAIN_NCCL_RAS_ACTION"] == "fail"
    assert env["RAY_TRAIN_NCCL_RAS_CONFIRM_DURATION_S"] == "20"


def test_workers_get_plans_for_the_gpu_faults_they_do_themselves():
    from ftharness.harness.run.injector import IN_WORKER, crash_plans

    sc = parse_scenario({"name": "x", "cluster": {"gpus_per_node": 1}, "workload": {"collective_timeout_s": 7},
                         "faults": [cuda_error(how="invalid_device"), hang(duration_s=4, at={"step": 5}),
                                    {"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}}]})
    plans = crash_plans(sc)
    assert [p["kind"] for p in plans] == ["cuda_error", "collective_hang"]
    assert plans[0] == {"fault": 0, "kind": "cuda_error", "where": "before_step", "rank": 1, "step": 3, "nth": 1,
                        "target_asked": {"rank": 1}, "how": "invalid_device"}
    assert plans[1]["duration_s"] == 4 and plans[1]["collective_timeout_s"] == 7 and plans[1]["step"] == 5
    assert {"cuda_error", "collective_hang", "crash_worker"} <= set(IN_WORKER)


# ------------------------------------------------------------------ landings
def _land(spec, events):
    dumped = TypeAdapter(FaultSpec).validate_python(spec).model_dump(mode="json", exclude_none=True)
    return judge_landing(make_fault(0, dumped), events)


def _injected(seq, kind, **hit):
    return {"seq": seq, "kind": "fault_injected", "fault": 0, "fault_kind": kind, "t": seq, "t_done": seq,
            "target_hit": {"rank": 1, "pid": 11, "step": 3, "device": "cuda:0", **hit}}


def _error(seq, pid, text, error_type="RuntimeError", rank=1):
    return {"seq": seq, "kind": "worker_error", "pid": pid, "rank": rank, "t": seq, "error_type": error_type,
            "error": text}


def _failure(seq, **kw):
    return {"seq": seq, "kind": "failure", "budget": "worker_group", "decision": "RETRY", "t": seq,
            "error_type": "WorkerGroupError", **kw}


END = {"seq": 99, "kind": "run_end", "outcome": "succeeded", "t": 99}


def test_cuda_error_lands_on_its_rank_s_cuda_error_and_the_failure_charged():
    got = _land(cuda_error(), [_injected(2, "cuda_error", how="device_assert"),
                               _error(3, 11, "CUDA error: device-side assert triggered", "AcceleratorError"),
                               _failure(4), END])
    assert got.status == "landed" and got.budget == "worker_group" and got.failure_seq == 4
    assert "device-side assert" in got.evidence and "cuda:0" in got.evidence


def test_cuda_error_without_a_cuda_error_or_a_failure_did_not_land():
    assert _land(cuda_error(), [_injected(2, "cuda_error"), _error(3, 11, "ValueError: x", "ValueError"),
                                _failure(4), END]).status == "missed"
    another = _land(cuda_error(), [_injected(2, "cuda_error"), _error(3, 12, "CUDA error: x"), _failure(4), END])
    assert another.status == "missed" and "recorded no error" in another.evidence
    none = _land(cuda_error(), [_injected(2, "cuda_error"), _error(3, 11, "CUDA error: x"), END])
    assert none.status == "missed" and "no failure decision followed" in none.evidence


def test_collective_hang_lands_on_a_peer_s_collective_timeout():
    got = _land(hang(), [_injected(2, "collective_hang"),
                         _error(7, 10, "Timed out waiting 5000ms for recv operation to complete", rank=0),
                         _failure(8), END])
    assert got.status == "landed" and got.budget == "worker_group"
    assert "rank 0 raised RuntimeError in the collective 5.0 s after the stall" in got.evidence


def test_collective_hang_lands_on_the_hang_detector_s_failure():
    got = _land(hang(), [_injected(2, "collective_hang"), _failure(30, error_type="NCCLHangError"), END])
    assert got.status == "landed" and "NCCLHangError" in got.evidence


def test_collective_hang_lands_on_a_peer_killed_by_nccl_s_watchdog_past_the_timeout():
    state = {"seq": 13, "kind": "controller_state", "t": 13, "cur": "RESTARTING", "worker_failures": {"0": "ActorDiedError"}}
    got = _land(hang(), [_injected(2, "collective_hang", collective_timeout_s=10), state, _failure(14), END])
    assert got.status == "landed" and "past the 10 s collective timeout" in got.evidence
    early = dict(state, seq=5, t=5)   # too soon for the timeout: something else ended the group
    assert _land(hang(), [_injected(2, "collective_hang", collective_timeout_s=10), early, _failure(6), END]
                 ).status == "missed"


def test_collective_hang_with_no_timeout_evidence_did_not_land():
    got = _land(hang(), [_injected(2, "collective_hang"), _error(3, 11, "ChaosCrash: x", rank=1), _failure(4), END])
    assert got.status == "missed" and "neither a peer's error nor the failure" in got.evidence
    assert _land(hang(), [_injected(2, "collective_hang"), END]).status == "missed"


# ------------------------------------------------------------------ summary and report
GIB = 1 << 30


def _start(seq, aid, attempt, rank, pid, procs, mem=0):
    return {"seq": seq, "t": seq, "kind": "worker_start", "attempt_id": aid, "attempt": attempt, "rank": rank,
            "pid": pid, "fit_index": 1, "device": f"cuda:{rank}",
            "gpu": {"device": f"cuda:{rank}", "gpu_name": "NVIDIA H200", "gpu_uuid": f"u{rank}",
                    "mem_allocated": mem, "mem_free": 100 * GIB, "mem_total": 140 * GIB,
                    "gpu_processes": [{"gpu_uuid": f"u{rank}", "pid": p, "used_mib": 600.0} for p in procs]},
            "pg": {"backend": "nccl", "init_s": None, "warmup_s": 0.5 + rank}}


def gpu_history(zombie=True, comparable=True):
    """Two attempts of two CUDA ranks around a kill of rank 1; nvidia-smi's processes listed
    at each start (the worker's own pid where `comparable`, the killed one's where `zombie`)."""
    own = (lambda p: [p]) if comparable else (lambda p: [])
    events = [
        {"seq": 1, "t": 1, "kind": "run_start", "fit_index": 1},
        {"seq": 2, "t": 2, "kind": "attempt_start", "attempt_id": "a1"},
        {"seq": 3, "t": 3, "kind": "worker_group_started", "attempt_id": "a1",
         "workers": [{"rank": 0, "pid": 10}, {"rank": 1, "pid": 11}]},
        _start(4, "a1", 1, 0, 10, own(10)), _start(5, "a1", 1, 1, 11, own(11)),
        {"seq": 6, "t": 6, "kind": "step", "attempt_id": "a1", "rank": 0, "step": 1},
        {"seq": 7, "t": 7, "kind": "fault_injected", "fault": 0, "fault_kind": "kill_worker", "t_requested": 7,
         "t_done": 7, "target_hit": {"rank": 1, "pid": 11}},
        {"seq": 8, "t": 8, "kind": "controller_state", "attempt_id": "a1", "prev": "RUNNING", "cur": "RESTARTING",
         "error_type": "WorkerGroupError"},
        _failure(9, attempt_id="a1"),
        {"seq": 10, "t": 10, "kind": "worker_group_shutdown", "attempt_id": "a1"},
        {"seq": 11, "t": 11, "kind": "attempt_start", "attempt_id": "a2"},
        {"seq": 12, "t": 12, "kind": "worker_group_started", "attempt_id": "a2",
         "workers": [{"rank": 0, "pid": 20}, {"rank": 1, "pid": 21}]},
        _start(13, "a2", 2, 0, 20, own(20) + ([11] if zombie else []), mem=GIB),
        _start(14, "a2", 2, 1, 21, own(21)),
        {"seq": 15, "t": 16, "kind": "step", "attempt_id": "a2", "rank": 0, "step": 2},
        {"seq": 16, "t": 17, "kind": "run_end", "fit_index": 1, "outcome": "succeeded"},
    ]
    for e in events:
        kind = e["kind"]
        e["source"] = ("worker" if kind in ("worker_start", "step") else "injector" if kind == "fault_injected"
                       else "harness" if kind.startswith("run_") else "controller")
    return events


def test_the_summary_has_devices_backend_set_up_per_recovery_and_memory_per_rank():
    s = gpu_summary(gpu_history(zombie=False))
    assert s["devices"] == ["cuda:0", "cuda:1"] and s["gpu_names"] == ["NVIDIA H200"] and s["backend"] == "nccl"
    assert s["pg_setup_first_s"] == 1.5                 # the slowest rank of the first attempt
    (r,) = s["recoveries"]
    assert r["fault_kind"] == "kill_worker" and r["pg_backend"] == "nccl" and r["pg_setup_s"] == 1.5
    assert r["recovery_s"] == pytest.approx(9.0)
    assert [(m["attempt"], m["rank"], m["mem_allocated_mib"]) for m in s["memory"]] == \
        [("attempt 1", 0, 0.0), ("attempt 1", 1, 0.0), ("attempt 2", 0, 1024.0), ("attempt 2", 1, 0.0)]
    assert s["zombie_memory"] == {"judged": True, "why": "", "findings": []}


def test_a_dead_worker_s_pid_holding_gpu_memory_at_a_restart_is_a_finding():
    z = gpu_summary(gpu_history(zombie=True))["zombie_memory"]
    assert z["judged"] and len(z["findings"]) == 1
    f = z["findings"][0]
    assert (f["pid"], f["rank"], f["attempt"], f["seen_at"], f["used_mib"]) == (11, 1, "attempt 1", "attempt 2", 600.0)
    lines = gpu_lines(gpu_summary(gpu_history(zombie=True)))
    assert any(l.startswith("FINDING zombie GPU memory: pid 11 (rank 1 of attempt 1)") for l in lines)


def test_zombie_memory_is_not_judged_when_nvidia_smi_s_pids_are_not_the_workers():
    z = gpu_summary(gpu_history(zombie=True, comparable=False))["zombie_memory"]
    assert not z["judged"] and "another PID namespace" in z["why"] and z["findings"] == []
    cpu = [dict(e, gpu=None, device="cpu") if e["kind"] == "worker_start" else e for e in gpu_history()]
    z = gpu_summary(cpu)["zombie_memory"]
    assert not z["judged"] and "no worker recorded" in z["why"]


def test_the_report_has_a_gpu_section_for_gpu_runs_only(tmp_path):
    import json

    gpu, cpu = tmp_path / "gpu-run", tmp_path / "cpu-run"
    for folder, events in ((gpu, gpu_history()), (cpu, [dict(e, gpu=None, device="cpu", pg={"backend": "gloo",
                           "warmup_s": 0.01}) if e["kind"] == "worker_start" else e for e in gpu_history()])):
        folder.mkdir()
        (folder / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    html = gpu_section([str(gpu), str(cpu)])
    assert html.startswith('<section id="gpu">') and "gpu-run" in html and "cpu-run" not in html
    assert "nccl set-up 1.50 s" in html and "FINDING zombie GPU memory" in html
    assert gpu_section([str(cpu)]) == ""
    s = gpu_summary(json.loads(l) for l in (cpu / "history.jsonl").read_text().splitlines())
    assert s["devices"] == ["cpu"] and s["backend"] == "gloo"


# ------------------------------------------------------------------ cluster, catalog, suite
def test_each_node_of_one_host_gets_gpus_no_live_node_holds():
    assert gpu_slice(["0", "1", "2"], [], 1) == ["0"]
    assert gpu_slice(["0", "1", "2"], ["0"], 1) == ["1"]
    assert gpu_slice(["0", "1"], ["0", "1"], 1) == ["0"]           # more nodes than GPUs: shared
    assert gpu_slice(["0", "1", "2", "3"], ["1"], 2) == ["0", "2"]


def test_the_host_s_gpus_come_from_cuda_visible_devices_or_nvidia_smi(monkeypatch, tmp_path):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert host_gpus() == ["3", "5"]
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert host_gpus() == []
    fake_smi(tmp_path, 2)
    assert host_gpus() == ["0", "1"]


@pytest.mark.parametrize("name", GPU_CATALOG)
def test_gpu_catalog_scenarios_validate_and_say_they_need_a_gpu(name):
    path = os.path.join(CATALOG, name)
    sc = parse_scenario(yaml.safe_load(open(path)))
    assert sc.cluster.gpus_per_node >= 1 and sc.name == name[:-5]
    assert "needs NVIDIA GPUs" in open(path).read()


def test_the_catalog_names_every_gpu_fault_and_the_reference_runs():
    kinds = {f.kind for n in GPU_CATALOG for f in parse_scenario(yaml.safe_load(open(os.path.join(CATALOG, n)))).faults}
    assert {"kill_worker", "kill_node", "cuda_error", "collective_hang"} <= kinds
    assert "gpu-default.yaml" in GPU_CATALOG


def test_a_folder_suite_skips_gpu_scenarios_on_a_host_without_a_gpu(capsys):
    from ftharness.harness.run.collect import collect

    names = [s.name for s in collect([CATALOG], gpus=0)]
    assert names and not any(n.startswith("gpu-") for n in names)
    assert "skipped gpu-kill-node: needs a GPU" in capsys.readouterr().err
    assert {n[:-5] for n in GPU_CATALOG} <= {s.name for s in collect([CATALOG], gpus=1)}
    alone = collect([os.path.join(CATALOG, "gpu-default.yaml")], gpus=0)   # named alone: kept
    assert [s.name for s in alone] == ["gpu-default"]


# ------------------------------------------------------------------ scripts/gpu-check.sh
SCRIPT = os.path.join(REPO, "scripts", "gpu-check.sh")


def fake_smi(folder, gpus):
    path = os.path.join(folder, "nvidia-smi")
    listing = "\\n".join(f"GPU {i}: NVIDIA H200 (UUID: GPU-{i})" for i in range(gpus))
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\ncase "$1" in -L) printf "{listing}\\n";; *) echo "NVIDIA H200, 143771 MiB, 570";; esac\n')
    os.chmod(path, 0o755)


def test_gpu_check_without_a_gpu_says_so_in_one_line_and_exits_0(tmp_path):
    r = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, timeout=30,
                       env={"PATH": f"{tmp_path}:/usr/bin:/bin", "HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    assert r.stdout == "gpu-check: no NVIDIA GPU on this machine (nvidia-smi lists none); nothing to check\n"
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("gpus", [1, 2])
def test_gpu_check_fits_the_gpu_scenarios_to_the_machine(tmp_path, gpus):
    fake_smi(str(tmp_path), gpus)
    out = tmp_path / "out"
    r = subprocess.run(["bash", SCRIPT], capture_output=True, text=True, timeout=240, cwd=str(tmp_path),
                       env={**os.environ, "PATH": f"{tmp_path}:{os.environ['PATH']}", "GPU_CHECK_DRY_RUN": "1",
                            "PYTHON": sys.executable, "OUT": str(out)})
    assert r.returncode == 0, r.stdout + r.stderr
    assert "dry run: would run" in r.stdout and r.stdout.count("\nok ") == len(GPU_CATALOG)
    fitted = {p.stem: yaml.safe_load(p.read_text()) for p in (out / "scenarios").glob("*.yaml")}
    if gpus == 1:
        assert "gpu-collective-hang-gloo" in fitted and "on gloo" in r.stdout
        assert fitted["gpu-collective-hang-gloo"]["workload"]["use_gpu"] is False
        assert fitted["gpu-kill-worker"]["workload"]["num_workers"] == 1
        assert fitted["gpu-cuda-error"]["faults"][0]["target"]["rank"] == 0
    else:
        assert set(fitted) == {n[:-5] for n in GPU_CATALOG}
        assert fitted["gpu-collective-hang"]["workload"]["num_workers"] == 2


def test_gpu_facts_that_cannot_be_read_never_fail_a_summary():
    bad = [{"seq": 1, "kind": "worker_start", "source": "worker", "gpu": "not a mapping", "attempt": 1}]
    s = gpu_summary(bad)
    assert "error" in s and gpu_lines(s)[0].startswith("GPU facts unreadable")
