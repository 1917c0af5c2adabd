#!/usr/bin/env python
"""worker-failures-unwrapped: WorkerGroupError.worker_failures holds Ray's wrapper, not the user's exception.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. Two 1-CPU worker nodes and a 0-CPU head, two workers,
FailureConfig(max_failures=0). At step 3 rank 1's train function raises UserError (a ValueError
subclass of the script's own); nothing retries it, so fit() raises a WorkerGroupError. Up to 2.54
its worker_failures[1] is Ray's UserExceptionWithTraceback wrapper (`isinstance(...,
UserError)` is False); from 2.55 (ray-project/ray#61153) it is the UserError itself.

    python worker-failures-unwrapped.py [--expect affected|fixed]

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

ID = "worker-failures-unwrapped"
AFFECTED, FIXED = ("2.51.0", "2.54.1"), "2.55.0"
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


class UserError(ValueError):
    """The user's own exception class: what a caller of fit() catches and inspects."""


def train_loop(config):
    import ray.train

    d, rank = config["dir"], ray.train.get_context().get_world_rank()
    log(d, ev="start", rank=rank, pid=os.getpid(), start=restored_step())
    for step in range(1, 7):
        time.sleep(0.3)
        log(d, ev="step", rank=rank, step=step)
        if rank == 1 and step == 3:
            raise UserError(f"rank 1 fails at step {step}")
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d}, scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=0)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        failures = getattr(e, "worker_failures", None) or {}
        return {"ok": False, "error": type(e).__name__,
                "failures": {int(r): type(x).__name__ for r, x in failures.items()},
                "is_user_error": {int(r): isinstance(x, UserError) for r, x in failures.items()}}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    if expect == "n/a":
        return not_applicable(t0, f"Ray Train V2 before {AFFECTED[0]}")
    cluster, nodes = start_cluster([{"num_cpus": 1}] * 2)
    try:
        res = ray.get(run_fit.remote(d), timeout=300)
        if res["ok"] or 1 not in res["failures"]:
            print(f"\n{ID}: Ray {ray.__version__}: fit() did not fail with rank 1's error ({res}): exit 1", flush=True)
            return 1
        saw = (f"fit() raised {res['error']}; worker_failures[1] is {res['failures'][1]} "
               f"(isinstance UserError: {res['is_user_error'][1]})")
        return finish(expect, not res["is_user_error"][1], saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
