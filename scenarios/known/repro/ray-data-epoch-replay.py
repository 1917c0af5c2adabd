#!/usr/bin/env python
"""ray-data-epoch-replay: after a restart the dataset shard starts its epoch again; rows are read twice.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. One 4-CPU worker node and a 0-CPU head; two 1-CPU workers read
ray.data.range(400) through get_dataset_shard("train") in batches of 10, checkpointing after every 4
batches. Rank 1 SIGKILLs its own process after its 10th batch (once, guarded by a marker file). The
restarted workers restore the latest checkpoint and iterate the shard again: Ray Train keeps no
data position, so the epoch starts over and rows read before the failure are read again. This is
the behaviour on every release (missing feature, ray-project/ray#48224); "fixed" would be an epoch
that resumes where the checkpoint was taken.

    python ray-data-epoch-replay.py [--expect affected|fixed]

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

ID = "ray-data-epoch-replay"
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
    shard = ray.train.get_dataset_shard("train")
    step = start
    for batch in shard.iter_batches(batch_size=10):
        step += 1
        log(d, ev="rows", rank=rank, step=step, pid=os.getpid(), rows=[int(x) for x in batch["id"]])
        if rank == 1 and step == 10 and not os.path.exists(os.path.join(d, "killed")):
            open(os.path.join(d, "killed"), "w").close()
            os.kill(os.getpid(), signal.SIGKILL)
        save_and_report(rank, step) if step % 4 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d}, scaling_config=ScalingConfig(num_workers=2),
                           datasets={"train": ray.data.range(400)},
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=1)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:400]}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, _ = start_cluster([{"num_cpus": 4}])
    try:
        res = ray.get(run_fit.remote(d), timeout=300)
        rows = events(d, "rows")
        pids = sorted({e["pid"] for e in rows}, key=lambda p: min(i for i, e in enumerate(rows) if e["pid"] == p))
        first = {r for e in rows if e["pid"] in pids[:2] for r in e["rows"]}
        later = {r for e in rows if e["pid"] in pids[2:] for r in e["rows"]}
        again = first & later
        saw = (f"fit() {'succeeded' if res['ok'] else 'raised ' + res['error']}; the first attempt read "
               f"{len(first)} rows, the restarted one {len(later)}, {len(again)} of them read before the failure")
        return finish(expect, bool(again), saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
