#!/usr/bin/env python
"""resume-missing-checkpoint-folder: a resumed fit() whose latest checkpoint folder is gone is not refused by name.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. One 2-CPU worker node and a 0-CPU head. A first fit() trains 6 steps and
registers checkpoints; the latest checkpoint's folder (Result.checkpoint) is deleted; fit() is called again with the same name and storage,
which resumes from that snapshot. From 2.56 the resume is refused with
CheckpointManagerInitializationError naming the missing checkpoint. Before, it is not: 2.51-2.53
check the folders before the snapshot is loaded (the resume goes on), 2.54-2.55 raise the check's
error with a keyword its class does not take (the controller dies of a TypeError).

    python resume-missing-checkpoint-folder.py [--expect affected|fixed]

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

ID = "resume-missing-checkpoint-folder"
AFFECTED, FIXED = ("2.51.0", "2.55.1"), "2.56.0"
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
    log(d, ev="start", rank=rank, start=start, fit=config["fit"])
    for step in range(start + 1, config["steps"] + 1):
        log(d, ev="step", rank=rank, step=step, fit=config["fit"])
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001}, max_retries=0)
def run_fit(d, fit, steps):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d, "fit": fit, "steps": steps},
                           scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=1,
                                                                             controller_failure_limit=0)))
    try:
        result = trainer.fit()
        return {"ok": True, "checkpoint": result.checkpoint.path if result.checkpoint else None}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)}   # whole: the cause is at its end


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, _ = start_cluster([{"num_cpus": 2}])
    try:
        res1 = ray.get(run_fit.remote(d, 1, 6), timeout=300)
        assert res1["ok"], res1
        import shutil

        name = os.path.basename(res1["checkpoint"])      # the latest registered checkpoint's folder
        shutil.rmtree(res1["checkpoint"])
        res2 = ray.get(run_fit.remote(d, 2, 10), timeout=300)
        starts = [e["start"] for e in events(d, "start") if e["fit"] == 2]
        if res2["ok"] or starts:
            saw = (f"deleted {name}; the resumed fit() went on (its workers started from step "
                   f"{sorted(set(starts)) or '?'}) and " + ("succeeded" if res2["ok"] else f"raised {res2['error']}"))
            return finish(expect, True, saw, t0)
        text = res2["text"]
        named = "CheckpointManagerInitializationError" in text and name in text and "TypeError" not in text
        cause = ("TypeError" if "TypeError" in text else "CheckpointManagerInitializationError"
                 if "CheckpointManagerInitializationError" in text else "no CheckpointManagerInitializationError")
        saw = (f"deleted {name}; the resumed fit() raised {res2['error']} ({cause}"
               f"{', naming the folder' if name in text else ', not naming the folder'})")
        return finish(expect, not named, saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
