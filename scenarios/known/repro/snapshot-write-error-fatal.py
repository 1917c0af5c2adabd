#!/usr/bin/env python
"""snapshot-write-error-fatal: an error writing the checkpoint snapshot ends the run as a ControllerError.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. One 2-CPU worker node and a 0-CPU head, two workers, every step
checkpointed, FailureConfig(max_failures=3, controller_failure_limit=3). After step 3 rank 0 replaces
the run's checkpoint_manager_snapshot.json by a folder of that name, so the controller's next write
of the snapshot fails (IsADirectoryError, even as root), and removes the folder 3 s later. The
controller wraps the error in a ControllerError (made so by ray-project/ray#57869) that the default
failure policy does not retry (only worker-group start errors are retryable): fit() raises at once,
whatever the budgets (on 2.51-2.53 the controller's shutdown then hits the same error and fit()
raises it raw, wrapped in a RayTaskError). This is the behaviour on every release (documented behaviour); "fixed" would
be a run that retries or survives the 3 s of storage errors.

    python snapshot-write-error-fatal.py [--expect affected|fixed]

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

ID = "snapshot-write-error-fatal"
AFFECTED, FIXED = ("2.51.0", "2.60.0"), None
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
    for step in range(start + 1, 11):
        time.sleep(0.3)
        if step == 4 and rank == 0 and not os.path.exists(os.path.join(d, "broken")):
            snap = os.path.join(config["run"], "checkpoint_manager_snapshot.json")
            os.replace(snap, snap + ".saved")
            os.mkdir(snap)
            open(os.path.join(d, "broken"), "w").write(str(time.time()))
        save_and_report(rank, step)


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    storage = os.path.join(d, "storage")
    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d, "run": os.path.join(storage, "repro")},
                           scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=storage,
                                                failure_config=FailureConfig(max_failures=3,
                                                                             controller_failure_limit=3)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:400]}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, _ = start_cluster([{"num_cpus": 2}])
    try:
        ref = run_fit.remote(d)
        wait_for(lambda: os.path.exists(os.path.join(d, "broken")), 300, "the broken snapshot")
        time.sleep(3)
        snap = os.path.join(d, "storage", "repro", "checkpoint_manager_snapshot.json")
        if os.path.isdir(snap):
            os.rmdir(snap)
        res = ray.get(ref, timeout=300)
        saw = ("fit() succeeded after 3 s of snapshot write errors" if res["ok"] else
               f"fit() raised {res['error']} after 3 s of snapshot write errors (budgets 3 and 3): "
               f"{res['text'].splitlines()[0][-120:]!r}")
        # 2.54+: a ControllerError; 2.51-2.53: the policy RAISEs that ControllerError, then the
        # controller's shutdown writes the snapshot again and run() dies of the raw error
        return finish(expect, not res["ok"], saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
