#!/usr/bin/env python
"""drain-without-death-restarts: a drained node keeps its workers training until it dies.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. Three 1-CPU worker nodes (one spare) and a 0-CPU head; two workers train
with FailureConfig(max_failures=1). At step 4 the node of rank 1 is drained through the GCS with
reason PREEMPTION and a 3 s deadline, but killed only 30 s after that deadline (a cloud that
reclaims late). Before 2.58 Ray Train ignores the drain: the workers on the draining node train on
until the node dies, and the group restarts only after the death. From 2.58 the controller enters
PREEMPTING at the notice and restarts the group at the deadline (PreemptionError,
drain_timed_out=True), about 30 s before the node dies.

    python drain-without-death-restarts.py [--expect affected|fixed]

Exit 0: Ray behaved as the corpus says for this release (or as --expect says); 1: it did not.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import ray
from ray.cluster_utils import Cluster

ID = "drain-without-death-restarts"
AFFECTED, FIXED = ("2.51.0", "2.57.1"), "2.58.0"
LATE_S = 30.0  # the node dies this long after its drain deadline
# fast node-death detection, so a killed node's actors die with their cause (as Ray's own tests set it)
FAST = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 500, "health_check_timeout_ms": 500,
        "health_check_failure_threshold": 3, "timeout_ms_task_wait_for_death_info": 10000}


def _v(s):
    return tuple(int(x) for x in s.split(".")[:3])


def expectation():
    """--expect, else what the corpus says of the installed release ("n/a": the entry names no behaviour here)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expect", choices=("affected", "fixed"))
    a = ap.parse_args()
    if a.expect:
        return a.expect
    v = _v(ray.__version__)
    if v < _v(AFFECTED[0]):
        return "n/a"
    return "fixed" if FIXED and v >= _v(FIXED) else "affected"


def finish(expect, affected, saw, t0):
    got = "affected" if affected else "fixed"
    code = 0 if got == expect else 1
    # one write starting on a line of its own (Ray Data's progress bars share the terminal)
    print(f"\n{ID}: Ray {ray.__version__}: {saw}: the {got} behaviour, expected {expect}: exit {code} "
          f"({time.monotonic() - t0:.0f} s)", flush=True)
    return code


def not_applicable(t0, why):
    print(f"\n{ID}: Ray {ray.__version__}: not applicable ({why}): exit 2 ({time.monotonic() - t0:.0f} s)", flush=True)
    return 2


def log(d, **kw):
    with open(os.path.join(d, "events.jsonl"), "a") as f:
        f.write(json.dumps(kw) + "\n")


def events(d, ev=None):
    p = os.path.join(d, "events.jsonl")
    out = [json.loads(x) for x in open(p)] if os.path.exists(p) else []
    return [e for e in out if ev is None or e["ev"] == ev]


def wait_for(cond, timeout, what):
    t = time.monotonic()
    while not cond():
        if time.monotonic() - t > timeout:
            raise TimeoutError(what)
        time.sleep(0.2)


def start_cluster(worker_nodes, env=None):
    """A 0-CPU head (it keeps the driver and the controller) and `worker_nodes` (add_node kwargs)."""
    os.environ.update(env or {})
    cluster = Cluster(initialize_head=True,
                      head_node_args={"num_cpus": 0, "resources": {"head": 1}, "_system_config": FAST})
    nodes = [cluster.add_node(**kw) for kw in worker_nodes]
    cluster.wait_for_nodes()
    ray.init(address=cluster.address)
    return cluster, nodes


def save_and_report(rank, step, metrics=None, files=None):
    """Every rank reports; rank 0 attaches a checkpoint holding state.json (and `files`)."""
    import ray.train

    with tempfile.TemporaryDirectory() as tmp:
        json.dump({"step": step}, open(os.path.join(tmp, "state.json"), "w"))
        for name, data in (files or {}).items():
            open(os.path.join(tmp, name), "wb").write(data)
        ck = ray.train.Checkpoint.from_directory(tmp) if rank == 0 else None
        ray.train.report(dict(metrics or {}, step=step), checkpoint=ck)


def restored_step():
    import ray.train

    ck = ray.train.get_checkpoint()
    if not ck:
        return 0
    with ck.as_directory() as p:
        return json.load(open(os.path.join(p, "state.json")))["step"]



def train_loop(config):
    import ray.train

    d, rank = config["dir"], ray.train.get_context().get_world_rank()
    start = restored_step()
    log(d, ev="start", t=time.time(), rank=rank, pid=os.getpid(), node=ray.get_runtime_context().get_node_id(), start=start)
    for step in range(start + 1, 101):
        time.sleep(0.5)
        log(d, ev="step", rank=rank, step=step)
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d}, scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=1)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:300]}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, nodes = start_cluster([{"num_cpus": 1}] * 3)
    try:
        ref = run_fit.remote(d)
        wait_for(lambda: any(e["step"] >= 4 for e in events(d, "step")), 300, "step 4")
        node_id = next(e["node"] for e in events(d, "start") if e["rank"] == 1)
        from ray.core.generated import autoscaler_pb2

        deadline_ms = int(time.time() * 1000) + 3000
        ok, msg = ray._raylet.GcsClient(address=cluster.gcs_address).drain_node(
            node_id, autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION"), "spot reclaim",
            deadline_ms)
        assert ok, msg
        drained_at = time.time()
        time.sleep(max(0.0, deadline_ms / 1000 - time.time()) + LATE_S)
        killed_at = time.time()
        cluster.remove_node(next(n for n in nodes if n.node_id == node_id), allow_graceful=False)
        res = ray.get(ref, timeout=300)
        if not res["ok"]:
            return finish(expect, True, f"fit() raised {res['error']}: {res['text'][:120]}", t0)
        first = min(e["t"] for e in events(d, "start"))
        restarts = sorted(e["t"] for e in events(d, "start") if e["t"] > drained_at and e["rank"] == 0)
        if not restarts:
            return finish(expect, True, "fit() succeeded with no restart at all", t0)
        rel = restarts[0] - killed_at
        saw = (f"the group restarted {rel:+.1f} s from the node's death ({restarts[0] - deadline_ms / 1000:+.1f} s "
               f"from the drain deadline; first start {drained_at - first:.0f} s before the drain)")
        return finish(expect, rel > 0, saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
