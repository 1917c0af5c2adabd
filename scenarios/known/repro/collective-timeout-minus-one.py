#!/usr/bin/env python
"""collective-timeout-minus-one: RAY_TRAIN_COLLECTIVE_TIMEOUT_S=-1 ("no timeout" up to 2.55) times out at once from 2.56.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. The driver sets RAY_TRAIN_COLLECTIVE_TIMEOUT_S=-1, which Ray 2.52-2.55
document as disabling the collective timeout ("Disable the timeout by setting the environment
variable to -1."). Two 1-CPU worker nodes and a 0-CPU head, two workers, FailureConfig(max_failures=1),
no fault: each rank reports 6 steps (a checkpoint every 2). Up to 2.55 -1 means no timeout and
fit() succeeds. From 2.56 the value reaches asyncio.wait_for unchanged, so the barrier of the
first ray.train.report times out at once: BroadcastCollectiveTimeoutError, a WorkerGroupError,
and the retry fails the same way.

    python collective-timeout-minus-one.py [--expect affected|fixed]

Exit 0: Ray behaved as the corpus says for this release (or as --expect says); 1: it did not.
"""
import argparse
import json
import os
import re
import sys
import tempfile
import time

import ray
from ray.cluster_utils import Cluster

ID = "collective-timeout-minus-one"
AFFECTED, FIXED = ("2.56.0", "2.60.0"), None
#: a regression: from 2.52 (where the variable appeared) to 2.55, -1 means no timeout (the good behaviour)
UNAFFECTED_FROM = "2.52.0"
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
        return "fixed" if v >= _v(UNAFFECTED_FROM) else "n/a"
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
    log(d, ev="start", rank=rank, pid=os.getpid(), start=restored_step(),
        timeout=os.environ.get("RAY_TRAIN_COLLECTIVE_TIMEOUT_S"))
    for step in range(restored_step() + 1, 7):
        time.sleep(0.3)
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
        failures = getattr(e, "worker_failures", None) or {}
        said = [m.group(0) for x in [e, *failures.values()]
                for m in [re.search(r"The collective operation timed out after [0-9.]+ seconds", str(x))] if m]
        return {"ok": False, "error": type(e).__name__, "text": said[0] if said else str(e)[-300:],
                "failures": {int(r): type(x).__name__ for r, x in failures.items()}}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    if expect == "n/a":
        return not_applicable(t0, f"no RAY_TRAIN_COLLECTIVE_TIMEOUT_S before {UNAFFECTED_FROM}")
    cluster, nodes = start_cluster([{"num_cpus": 1}] * 2, env={"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "-1"})
    try:
        res = ray.get(run_fit.remote(d), timeout=300)
        starts = events(d, "start")
        seen = sorted({e["timeout"] for e in starts if e.get("timeout") is not None})
        if seen != ["-1"]:   # the setting must have reached the workers for either answer to mean anything
            print(f"\n{ID}: Ray {ray.__version__}: the workers saw RAY_TRAIN_COLLECTIVE_TIMEOUT_S={seen}: exit 1", flush=True)
            return 1
        timed_out = not res["ok"] and "BroadcastCollectiveTimeoutError" in (res["text"] + str(res["failures"]))
        steps = max((e["step"] for e in events(d, "step")), default=0)
        saw = (f"{len(starts)} worker start(s), last step {steps}; fit() " + (
            "succeeded" if res["ok"] else f"raised {res['error']} (worker_failures {res['failures']}): "
                                          f"{res['text'][:160]!r}"))
        if not res["ok"] and not timed_out:
            print(f"\n{ID}: Ray {ray.__version__}: {saw}: failed for another reason: exit 1", flush=True)
            return 1
        return finish(expect, timed_out, saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
