#!/usr/bin/env python
"""worker-death-at-train-launch: a worker that dies while the train function is launched ends the run unretried.

Standalone reproduction (Ray, torch and the standard library only) of the entry of the same id in
scenarios/known_bugs.yaml. One 2-CPU worker node and a 0-CPU head, two workers,
FailureConfig(max_failures=2). The trigger is plain Python: train_loop_config holds a Tripwire
object whose unpickling SIGKILLs the process of rank 1 (once, guarded by a marker file). Each
worker unpickles the train function (and its config) inside the actor call run_train_fn, which
WorkerGroup._start_impl awaits after the worker group has started and outside the guard that turns
a worker death into a retryable WorkerGroupStartupFailedError. The raw ActorDiedError becomes a
ControllerError that the default policy does not retry: fit() raises although max_failures allows 2
retries, and the surviving worker is left alive after fit() raised. Any death in that window (an
OOM kill, a node loss) takes the same path; the tripwire only makes it deterministic. "Fixed" would
be the death charged to max_failures and retried.

    python worker-death-at-train-launch.py [--expect affected|fixed]

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

ID = "worker-death-at-train-launch"
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



class Tripwire:
    """Unpickled by each worker in run_train_fn: rank 1 dies there, once."""

    def __init__(self, d):
        self.d = d

    def __reduce__(self):
        return (_trip, (self.d,))


def _trip(d):
    try:
        import ray.train

        rank = ray.train.get_context().get_world_rank()
    except Exception:      # unpickled outside a train worker (the driver, the controller)
        return Tripwire(d)
    marker = os.path.join(d, "tripped")
    if rank == 1 and os.path.isdir(d) and not os.path.exists(marker):
        open(marker, "w").write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return Tripwire(d)


def train_loop(config):
    import ray.train

    d, rank = config["dir"], ray.train.get_context().get_world_rank()
    start = restored_step()
    log(d, ev="start", rank=rank, pid=os.getpid(), start=start)
    for step in range(start + 1, 11):
        time.sleep(0.2)
        save_and_report(rank, step) if step % 2 == 0 else ray.train.report({"step": step})


@ray.remote(num_cpus=0, resources={"head": 0.001})
def run_fit(d):
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    trainer = TorchTrainer(train_loop, train_loop_config={"dir": d, "tripwire": Tripwire(d)},
                           scaling_config=ScalingConfig(num_workers=2),
                           run_config=RunConfig(name="repro", storage_path=os.path.join(d, "storage"),
                                                failure_config=FailureConfig(max_failures=2)))
    try:
        trainer.fit()
        return {"ok": True}
    except Exception as e:  # what fit() raised is the observation
        return {"ok": False, "error": type(e).__name__, "text": str(e)[:400]}


def main():
    expect, t0, d = expectation(), time.monotonic(), tempfile.mkdtemp(prefix="repro-")
    cluster, _ = start_cluster([{"num_cpus": 2}])
    try:
        res = ray.get(run_fit.remote(d), timeout=300)
        tripped = os.path.exists(os.path.join(d, "tripped"))
        time.sleep(2)
        from ray._private import state

        left = [a["ActorClassName"] for a in state.actors().values()
                if a["State"] == "ALIVE" and a["ActorClassName"] in ("RayTrainWorker", "TrainController")]
        saw = (f"rank 1 {'died' if tripped else 'did not die'} while its train function was launched; fit() "
               + ("succeeded" if res["ok"] else f"raised {res['error']}: {res['text'].splitlines()[0][:100]!r}")
               + f"; {len(left)} Train actor(s) still alive after fit() returned ({', '.join(sorted(left)) or '-'})")
        if not tripped:
            return finish(expect, False, saw + " (the trigger did not fire)", t0) or 1
        return finish(expect, not res["ok"] and res["error"] == "ControllerError", saw, t0)
    finally:
        ray.shutdown()
        cluster.shutdown()


if __name__ == "__main__":
    sys.exit(main())
