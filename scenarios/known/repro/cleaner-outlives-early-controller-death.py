#!/usr/bin/env python
"""cleaner-outlives-early-controller-death: a controller killed right after its start leaves its PlacementGroupCleaner alive.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. Three 1-CPU worker nodes and a 0-CPU head; fit() of two workers. The
Train controller creates a detached PlacementGroupCleaner as it starts; the moment that actor is
registered in the GCS (before its process runs), the controller is SIGKILLed. In 2.53-2.54 the
cleaner only starts watching its controller once a worker group started; from 2.55 the controller
asks it to start with a call it does not wait for (`start_monitoring.remote()`), which dies with the
controller when the cleaner is not up yet. Either way the cleaner is alive 15 s after fit() raised,
and stays for the life of the cluster. Releases before 2.53 have no cleaner: nothing outlives.

    python cleaner-outlives-early-controller-death.py [--expect affected|fixed]

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

ID = "cleaner-outlives-early-controller-death"
AFFECTED, FIXED = ("2.53.0", "2.60.0"), None
SETTLE_S = 15.0
# fast node-death detection, so a killed node's actors die with their cause (as Ray's own tests set it)
FAST = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 500, "health_check_timeout_ms": 500,
        "health_check_failure_threshold": 3, "timeout_ms_task_wait_for_death_info": 10000}


def _v(s):
    return tuple(int(x) for x in s.split(".")[:3])


def expectation():
    """--expect, else what the corpus says of the installed release: affected from 2.53 (the
    cleaner's first release); before it nothing of Ray Train can outlive the run this way."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--expect", choices=("affected", "fixed"))
    a = ap.parse_args()
    if a.expect:
        return a.expect
    return "affected" if _v(ray.__version__) >= _v(AFFECTED[0]) else "fixed"


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

    for step in range(1, 7):
        time.sleep(0.1)
        ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=0)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:300]}


def actors(cls):
    """Actors of class `cls` in the GCS actor table: [(state, pid)]."""
    from ray._private import state

    return [(a.get("State"), a.get("Pid")) for a in state.actors().values()
            if (a.get("ActorClassName") or "").rsplit(".", 1)[-1] == cls]


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, _ = start_cluster([{"num_cpus": 1}] * 3)
    try:
        ref = run_fit.remote(d)
        cleaner_seen = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:   # the cleaner registered, its process maybe not up yet
            ctrl = [pid for st, pid in actors("TrainController") if st == "ALIVE" and pid]
            cleaners = actors("PlacementGroupCleaner")
            if ctrl and (cleaners or _v(ray.__version__) < _v(AFFECTED[0]) and time.monotonic() - t0 > 5):
                cleaner_seen = [st for st, _ in cleaners]
                os.kill(ctrl[0], signal.SIGKILL)
                break
            time.sleep(0.01)
        else:
            return finish(expect, False, "no controller came up in 120 s", t0)
        res = ray.get(ref, timeout=300)
        time.sleep(SETTLE_S)
        alive = [st for st, _ in actors("PlacementGroupCleaner") if st == "ALIVE"]
        saw = (f"controller SIGKILLed with its cleaner {cleaner_seen or 'not created'}; fit() "
               f"{'succeeded' if res['ok'] else 'raised ' + res['error']}; {len(alive)} PlacementGroupCleaner "
               f"alive {SETTLE_S:.0f} s later")
        return finish(expect, bool(alive), saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
