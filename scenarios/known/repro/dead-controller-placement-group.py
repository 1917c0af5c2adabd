#!/usr/bin/env python
"""dead-controller-placement-group: a SIGKILLed controller's placement group outlives it.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. Two 1-CPU worker nodes (exactly the two workers' CPUs) and a 0-CPU head.
fit() runs in a task on the head; at step 5 the TrainController actor's process is SIGKILLed (its pid
read from the GCS actor table), then fit() is called again with the same name and storage, with
controller_failure_limit=0 and a 20 s worker-group start timeout. Before 2.53 nothing removes the
dead controller's placement group: the second fit() cannot place its workers and fails with a
start timeout. From 2.53 a detached PlacementGroupCleaner removes it (it reads the controller's
liveness through the State API, so it needs `ray[default]`), and the second fit() succeeds.

    python dead-controller-placement-group.py [--expect affected|fixed]

Exit 0: Ray behaved as the corpus says for this release (or as --expect says); 1: it did not.
"""
import argparse
import json
import os
import signal
import sys
import tempfile
import time

import ray
from ray.cluster_utils import Cluster

ID = "dead-controller-placement-group"
AFFECTED, FIXED = ("2.51.0", "2.52.1"), "2.53.0"
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
    log(d, ev="start", rank=rank, pid=os.getpid(), start=start, fit=config["fit"])
    for step in range(start + 1, 11):
        time.sleep(0.2)
        log(d, ev="step", rank=rank, step=step, fit=config["fit"])
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001}, max_retries=0)
def run_fit(d, fit):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d, "fit": fit},
                           scaling_config=ScalingConfig(num_workers=2),
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
    cluster, _ = start_cluster([{"num_cpus": 1}] * 2, env={"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20"})
    try:
        first = run_fit.remote(d, 1)
        wait_for(lambda: any(e["step"] >= 5 for e in events(d, "step")), 300, "step 5")
        from ray._private import state

        ctl = [a for a in state.actors().values() if a["ActorClassName"] == "TrainController" and a["State"] == "ALIVE"]
        os.kill(ctl[0]["Pid"], signal.SIGKILL)
        res1 = ray.get(first, timeout=120)
        pgs = [p for p in ray.util.placement_group_table().values() if p["state"] != "REMOVED"]
        res2 = ray.get(run_fit.remote(d, 2), timeout=300)
        resumed = any(e["fit"] == 2 for e in events(d, "step"))
        saw = (f"first fit() {'returned' if res1['ok'] else 'raised ' + res1['error']} after its controller was "
               f"SIGKILLed ({len(pgs)} placement group(s) left then); the resumed fit() "
               + ("succeeded" if res2["ok"] else f"raised {res2['error']}")
               + (" after training" if resumed else " before any step"))
        return finish(expect, not res2["ok"], saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
