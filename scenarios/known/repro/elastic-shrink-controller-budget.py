#!/usr/bin/env python
"""elastic-shrink-controller-budget: after a node death an elastic restart is sized from resources already gone.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. Three 1-CPU worker nodes (custom resource "w") and a 0-CPU head; elastic
ScalingConfig(num_workers=(1, 3)), FailureConfig(max_failures=1, controller_failure_limit=0), the
worker-group start timeout shortened to 20 s. At step 4 the node of rank 0 is removed
(cluster.remove_node, no drain). The elastic policy sizes the restart from the autoscaling
coordinator's reservation, which still counts the dead node (it refreshes its node view on a 20 s
tick), so the restart asks for 3 workers again, cannot be placed, and its start timeout is charged
to controller_failure_limit (0): fit() raises ControllerError. "Fixed" would be a restart sized to
the 2 nodes left: fit() succeeds.

    python elastic-shrink-controller-budget.py [--expect affected|fixed]

Exit 0: Ray behaved as the corpus says for this release (or as --expect says); 1: it did not; 2: before 2.55.
"""
import argparse
import json
import os
import sys
import tempfile
import time

import ray
from ray.cluster_utils import Cluster

ID = "elastic-shrink-controller-budget"
AFFECTED, FIXED = ("2.55.0", "2.60.0"), None
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

    ctx = ray.train.get_context()
    d, rank = config["dir"], ctx.get_world_rank()
    start = restored_step()
    log(d, ev="start", rank=rank, pid=os.getpid(), node=ray.get_runtime_context().get_node_id(), start=start,
        world=ctx.get_world_size())
    for step in range(start + 1, 13):
        time.sleep(0.2)
        log(d, ev="step", rank=rank, step=step)
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d},
                           scaling_config=ScalingConfig(num_workers=(1, 3), resources_per_worker={"CPU": 1, "w": 1}),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=1,
                                                                             controller_failure_limit=0)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:400]}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    if expect == "n/a":
        return not_applicable(t0, "no elastic num_workers before 2.55")
    cluster, nodes = start_cluster([{"num_cpus": 1, "resources": {"w": 1}}] * 3,
                                   env={"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20"})
    try:
        ref = run_fit.remote(d)
        wait_for(lambda: any(e["step"] >= 4 for e in events(d, "step")), 300, "step 4")
        first = events(d, "start")
        node_id = next(e["node"] for e in first if e["rank"] == 0)
        cluster.remove_node(next(n for n in nodes if n.node_id == node_id), allow_graceful=False)
        res = ray.get(ref, timeout=300)
        worlds = sorted({e["world"] for e in events(d, "start")[len(first):]})
        saw = (f"first group of {first[0]['world']} worker(s); rank 0's node removed; restarts trained with "
               f"world size {worlds or 'none'}; fit() " + ("succeeded" if res["ok"] else
                                                              f"raised {res['error']}: {res['text'][:120]!r}"))
        return finish(expect, not res["ok"], saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
