"""The base on the shared embedded cluster: a fault-free run is recorded in full
and ends in the exact expected state; a resumed fit() restores the latest
registered checkpoint and redoes no step; any user train function is recorded."""

import json
import os
import textwrap
from collections import defaultdict

import pytest

from ftharness.history.records import load_history, read_events, read_history
from ftharness.scenarios.reference_data import WorkloadConfig, expected_accumulators, global_batch, rank_slice

pytestmark = pytest.mark.cluster


def kinds(events, kind):
    return [e for e in events if e["kind"] == kind]


def test_fault_free_run_records_everything(ftharness_run):
    s = ftharness_run({"name": "fault-free", "workload": {"num_workers": 2, "steps": 12, "checkpoint_every": 3},
                      "expect": {"outcome": "succeeded"}})
    assert s["outcome"] == "succeeded" and s["matches_expectation"], s["mismatches"]
    events = read_events(s["results_dir"])

    # every step on every rank, each rank with the rows the sampler assigns it
    cfg = WorkloadConfig(**kinds(events, "run_start")[0]["workload"])
    steps = defaultdict(dict)
    for e in kinds(events, "step"):
        steps[e["step"]][e["rank"]] = e["rows"]
    assert sorted(steps) == list(range(1, 13))
    for step, by_rank in steps.items():
        assert sorted(by_rank) == [0, 1]
        for rank, rows in by_rank.items():
            assert rows == rank_slice(global_batch(cfg, step - 1), rank, 2).tolist()

    # every checkpoint reported by rank 0 was registered by the controller
    reported = [e["checkpoint"] for e in kinds(events, "report") if e["checkpoint"]]
    registered = [e["checkpoint"] for e in kinds(events, "checkpoint_registered")]
    assert len(reported) == 4 and reported == registered
    assert [e["step"] for e in kinds(events, "checkpoint_registered")] == [3, 6, 9, 12]

    # the final state is exactly what a fault-free run must produce
    assert s["final_state"]["exact"] is True
    assert s["final_state"]["accumulators"] == expected_accumulators(cfg)
    assert s["attempts"] == 1 and s["budgets"] == {"worker_group": 0, "preemption": 0, "controller": 0}

    # every worker event carries time, attempt, rank, world size, node and pid
    for e in kinds(events, "step") + kinds(events, "worker_start"):
        assert e["attempt"] == 1 and e["world_size"] == 2 and e["node_id"] and e["pid"] > 0
    assert [e["seq"] for e in events] == list(range(1, len(events) + 1))

    # one-call pandas loading, and the summary on disk
    df = load_history(s["results_dir"])
    assert len(df) == len(events) and {"kind", "t", "seq", "time"} <= set(df.columns)
    on_disk = json.load(open(os.path.join(s["results_dir"], "summary.json")))
    assert on_disk["versions"]["ray"].startswith("2.60") and on_disk["wall_time_s"] > 0


@pytest.mark.full
def test_resume_restores_latest_registered_and_redoes_nothing(ftharness_run):
    base = {"name": "resume", "workload": {"num_workers": 2, "checkpoint_every": 2, "rows_per_epoch": 640}}
    first = ftharness_run(dict(base, workload=dict(base["workload"], steps=6)))
    assert first["outcome"] == "succeeded"
    second = ftharness_run(dict(base, workload=dict(base["workload"], steps=12)), resume=first["results_dir"])
    assert second["outcome"] == "succeeded" and second["run_name"] == first["run_name"]

    e1, e2 = read_events(first["results_dir"]), read_events(second["results_dir"])
    latest = kinds(e1, "checkpoint_registered")[-1]
    starts = kinds(e2, "worker_start")
    assert len(starts) == 2
    assert all(w["restored_checkpoint"] == latest["checkpoint"] and w["restored_step"] == 6 for w in starts)
    done_before = {(e["rank"], e["step"]) for e in kinds(e1, "step")}
    done_after = {(e["rank"], e["step"]) for e in kinds(e2, "step")}
    assert not done_before & done_after
    assert sorted({s for _, s in done_after}) == list(range(7, 13))
    # two fit() calls together consumed exactly what one 12-step run consumes
    cfg = WorkloadConfig(**kinds(e2, "run_start")[0]["workload"])
    assert second["final_state"]["accumulators"] == expected_accumulators(cfg)


USER_JOB = textwrap.dedent('''
    import os, tempfile, json
    import ray.train
    from ray.train import Checkpoint

    def train_func(config):
        start = 0
        ckpt = ray.train.get_checkpoint()
        if ckpt:
            with ckpt.as_directory() as d:
                start = json.load(open(os.path.join(d, "state.json")))["i"]
        for i in range(start, config["n"]):
            with tempfile.TemporaryDirectory() as tmp:
                json.dump({"i": i + 1}, open(os.path.join(tmp, "state.json"), "w"))
                ck = Checkpoint.from_directory(tmp) if ray.train.get_context().get_world_rank() == 0 else None
                ray.train.report({"i": i + 1}, checkpoint=ck)
        return "done"
''')


@pytest.mark.full
def test_user_entrypoint_is_instrumented(ftharness_run, tmp_path):
    (tmp_path / "userjob.py").write_text(USER_JOB)
    s = ftharness_run({"name": "user-job", "workload": {"entrypoint": "userjob:train_func",
                                                        "train_loop_config": {"n": 5}, "num_workers": 2}})
    assert s["outcome"] == "succeeded", s["error"]
    events = read_events(s["results_dir"])
    by_rank = defaultdict(list)
    for e in kinds(events, "step"):
        by_rank[e["rank"]].append(e["step"])
    assert by_rank == {0: [1, 2, 3, 4, 5], 1: [1, 2, 3, 4, 5]}
    assert [e["step"] for e in kinds(events, "checkpoint_registered")] == [1, 2, 3, 4, 5]
    assert s["steps"] == 5


def test_history_survives_killed_emitter(ftharness_cluster, tmp_path):
    """An event handed over before a process is SIGKILLed is on disk: waited for at once
    (nothing armed yet), or, once nothing can gate a step, settled by `settle()`."""
    import signal
    import ray
    from ftharness.harness.cluster.history_service import Emitter, start_history

    @ray.remote(num_cpus=1)
    def emit_then_die(book):
        em = Emitter(book, "worker", {"pid": os.getpid()})
        for i in range(50):
            em.emit("step", step=i + 1)
        em.settle()
        os.kill(os.getpid(), signal.SIGKILL)

    for run, armed in (("durability", False), ("durability-armed", True)):
        handle = start_history(str(tmp_path / run / "history.jsonl"), run)
        if armed:
            ray.get(handle.arm.remote([]))   # no trigger: every step is acknowledged one event late
        with pytest.raises(Exception):
            ray.get(emit_then_die.options(max_retries=0).remote(handle))
        ray.get(handle.close.remote())
        ray.kill(handle.service)
        read = read_history(str(tmp_path / run))
        assert [e["step"] for e in read.events if e["kind"] == "step"] == list(range(1, 51)), run
        assert read.problems == ["no run_end: no fit() outcome was recorded"]  # no gap, manifest agrees


def test_a_step_a_trigger_gates_on_holds_its_emitter_until_released(ftharness_cluster, tmp_path):
    """With a trigger at step 3 armed, step events are waited for at once: the emitter
    stops at step 3 until the injector releases it, as "at step 3" promises."""
    import time
    import ray
    from ftharness.harness.cluster.history_service import Emitter, start_history

    handle = start_history(str(tmp_path / "history.jsonl"), "gated")
    ray.get(handle.arm.remote([{"at": {"step": 3}}]))

    @ray.remote(num_cpus=1)
    def five_steps(book):
        em = Emitter(book, "worker", {"pid": os.getpid()})
        em.emit("worker_start")
        for i in range(5):
            em.emit("step", step=i + 1)
        em.emit("worker_end")

    ref = five_steps.remote(handle)
    try:
        pending, deadline = [], time.time() + 60
        while not pending and time.time() < deadline:
            pending = ray.get(handle.take_pending.remote())["pending"]
            time.sleep(0.05)
        assert [p["fault"] for p in pending] == [0] and pending[0]["event"]["step"] == 3
        time.sleep(1.0)   # a worker that did not wait would be done by now
        assert ray.get(handle.progress.remote())["step"] == 3
        ray.get(handle.release.remote(0))
        ray.get(ref, timeout=60)
    finally:
        ray.get(handle.close.remote())
        ray.kill(handle.service)
    steps = [e["step"] for e in read_history(str(tmp_path)).events if e["kind"] == "step"]
    assert steps == [1, 2, 3, 4, 5]


@pytest.mark.full   # harness-internal resilience, two runs: make test-full (the core lane shares the process in every run)
def test_runs_share_the_clusters_history_process_and_a_dead_one_is_replaced(ftharness_cluster, ftharness_run):
    """The history service starts with the cluster, so a run starts no process of its own;
    a service that died (here killed) is replaced at the next run, whose history is whole."""
    import ray

    service = ftharness_cluster.history_service()
    pid = ray.get(service.ping.remote())
    first = ftharness_run({"name": "shared-history", "workload": {"num_workers": 2, "steps": 2}})
    assert first["verdict"] == "PASS", (first["mismatches"], first["inconclusive"])
    assert ray.get(ftharness_cluster.history_service().ping.remote()) == pid   # the same process served it
    ray.kill(service)
    second = ftharness_run({"name": "shared-history", "workload": {"num_workers": 2, "steps": 2}})
    assert second["verdict"] == "PASS", (second["mismatches"], second["inconclusive"])
    assert ray.get(ftharness_cluster.history_service().ping.remote()) != pid
    read = read_history(second["results_dir"])
    assert read.problems == [] and [e["step"] for e in kinds(read.events, "step") if e["rank"] == 0] == [1, 2]


def test_heal_ends_a_leftover_ray_train_actor_that_holds_cpus(ftharness_cluster, capfd):
    """A planted leftover: an actor of a Ray Train class (RayTrainWorker) holding a worker
    node's CPU after its run. Found by `ftharness explore` on 2.60.0: a worker killed while
    its group started left the controller and a worker alive after fit() raised, and the next
    example waited 60 s for CPUs that never came free. heal() ends it and says so."""
    import ray

    @ray.remote(num_cpus=1)
    class RayTrainWorker:
        def pid(self):
            return os.getpid()

    from ray.util.placement_group import placement_group

    leftover = RayTrainWorker.remote()   # the head has no CPU: it lands on a worker node
    pid = ray.get(leftover.pid.remote())
    group = placement_group([{"CPU": 1}])   # and a worker group's reservation, left behind with it
    ray.get(group.ready(), timeout=60)
    ftharness_cluster.heal()
    ended = ftharness_cluster.leftovers
    assert [a["pid"] for a in ended if a["class_name"].rsplit(".", 1)[-1] == "RayTrainWorker"] == [pid]
    assert [a["id"] for a in ended if a["class_name"] == "placement group"] == [group.id.hex()]
    err = capfd.readouterr().err
    assert "heal: ended a leftover" in err and "RayTrainWorker (pid" in err
    assert "heal: removed a leftover placement group" in err
    ftharness_cluster.wait_idle(timeout_s=10)   # every CPU free again
    assert ftharness_cluster.heal() == [] and ftharness_cluster.leftovers == []


def test_the_profiles_node_environment_reaches_the_processes_ray_starts_on_each_node(ftharness_cluster):
    """The Train controller reads TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S in its own process, on
    the head (Ray Train attaches it to the driver's node) and does not take it from the driver:
    the raylets must start with it. The driver's own environment is left as it was."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ftharness.profiles import PROFILES

    want = PROFILES["fast"]["node_env"]
    assert want and ftharness_cluster.node_env() == want

    @ray.remote(num_cpus=0)
    def seen(names):
        return {n: os.environ.get(n) for n in names}

    node_ids = [ftharness_cluster.head_node_id()] + [ftharness_cluster.node_id(i)
                                                      for i in ftharness_cluster.worker_node_indices()]
    for node_id in node_ids:
        got = ray.get(seen.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
                      .remote(list(want)), timeout=60)
        assert got == want, node_id
    assert not any(n in os.environ for n in want)
