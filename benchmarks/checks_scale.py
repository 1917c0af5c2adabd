"""Cost of judging a long history: what `summary.json` costs, against the history's length.

For each size N it plays a synthetic run of the reference workload
(`ftharness.scenarios.synthetic`) with 4 ranks, a checkpoint every 10 steps and a fault
(worker kills and preemptions in turn, all retried) every ~25,000 events (at most 100), sized
to reach about N events; writes it as a complete, sealed `history.jsonl`; and
then, in a fresh child process, does what a run does after fit() returns:
`ftharness.history.records.read_history` and `ftharness.scenarios.verdict.evaluate` (fault
landings, the five properties, the final accumulators, `run_metrics`).

One line per size:

    100121 events: 1.9 s, 230 MB  (CPU 1.8 s = read 0.8 + judge 1.0; judge wall 1.0 s; verdict PASS)
      against the target (10,000,000 events in 30 s within 2,000 MB): wall x6.33, CPU x6.00 (pro rata), peak RSS x0.12

The seconds are what a run pays after fit() returns, wall clock: reading and
verifying the file plus `evaluate`; CPU is their process time, split between
the two. The MB are the peak RSS of the child
(`resource.getrusage(RUSAGE_SELF).ru_maxrss`), which holds the events read
from the file and everything judging them needs; for a file read in two
processes (ftharness.history.split), the second one's peak follows in brackets
(it lives only while the file is read, and the first one's peak is later, while
judging), and for checks run in two processes (ftharness.scenarios.forked_checks)
the forked child's peak RSS and its private memory at its end: its RSS counts
the pages it reads of the parent's (shared, copy-on-write: not copied), the
private MB are what it added. CPU counts both children. Then the ratio of CPU time
per event between consecutive sizes (1.0: linear; CPU time, since wall time
also counts whatever else the machine runs), and the machine's load average
before and after (wall time on a loaded machine is longer than the CPU time).
Under each size, its ratio to the target of 10^7 events read and judged in 30 s
within 2,000 MB: the seconds pro rata to the events (x1.00: on target; below 1
is within it), the peak RSS against 2,000 MB whatever the size (memory is to be
bounded, not linear).

    .venv/bin/python benchmarks/checks_scale.py                      # 10^4 and 10^5 events
    .venv/bin/python benchmarks/checks_scale.py --events 1000000
    .venv/bin/python benchmarks/checks_scale.py --keep /tmp/hist     # keep the histories ...
    .venv/bin/python benchmarks/checks_scale.py --histories /tmp/hist --events 10000   # ... and judge them again
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

WORKERS = 4
CHECKPOINT_EVERY = 10
BATCH = 32
EVENTS_PER_FAULT = 25_000
#: a day of soak (issue 24): this many events read and judged within these seconds and this peak RSS
TARGET_EVENTS, TARGET_S, TARGET_MB = 10_000_000, 30.0, 2_000
#: the most steps and faults a scenario file may ask for (ftharness.scenarios.schema): beyond
#: 2.5 million events the faults come further apart than every EVENTS_PER_FAULT
MAX_SCENARIO_STEPS, MAX_SCENARIO_FAULTS = 1_000_000, 100


def workers_for(n: int) -> int:
    """The ranks a run of about `n` events needs so that its steps stay within what a scenario may
    ask for (workload.steps <= 10^6): the history judged is then the run its scenario declares
    (10^7 events: 10 ranks, about 893,000 steps), never one the verdict must call INCONCLUSIVE. Each
    rank reads BATCH / WORKERS rows a step whatever the ranks (a global batch of 80 for 10 ranks), so a
    step event is the same size and the shards split evenly, as at 4 ranks."""
    w = WORKERS
    while n / (w + (2 + w) / CHECKPOINT_EVERY) > MAX_SCENARIO_STEPS:
        w += 1
    return w


def plan_for(n: int, epochs: int):
    """A plan whose history holds about `n` events."""
    from ftharness.scenarios.reference_data import WorkloadConfig
    from ftharness.scenarios.synthetic import Fault, Plan

    workers = workers_for(n)
    per_step = workers + (2 + workers) / CHECKPOINT_EVERY   # steps, and written+registered+reports
    steps = max(2 * CHECKPOINT_EVERY, int(n / per_step))
    faults = min(MAX_SCENARIO_FAULTS, max(3, n // EVENTS_PER_FAULT))
    every = max(CHECKPOINT_EVERY + 1, steps // (faults + 1))
    plan_faults = [Fault("worker_group" if i % 2 == 0 else "preemption", after_steps=every + 3 + (i % 7),
                         recovery_s=1.0 + (i % 5) * 0.5) for i in range(faults)]
    cfg = WorkloadConfig(steps=steps, batch_size=BATCH // WORKERS * workers, epochs=min(epochs, steps),
                         checkpoint_every=CHECKPOINT_EVERY)
    return Plan(cfg, num_workers=workers, failure_config={"max_failures": -1, "max_preemption_failures": -1},
                faults=plan_faults, step_s=0.05)


def scenario_for(plan) -> dict:
    cfg = plan.workload
    kinds = {"worker_group": "kill_worker", "preemption": "preempt_node"}
    return {
        "name": "checks-scale",
        "cluster": {"nodes": max(4, plan.num_workers), "cpus_per_node": 1},
        "workload": {"kind": "reference", "num_workers": plan.num_workers, "steps": cfg.steps,
                     "batch_size": cfg.batch_size, "epochs": cfg.epochs, "checkpoint_every": cfg.checkpoint_every},
        "failure_config": dict(plan.failure_config),
        "faults": [{"kind": kinds[f.cls], "at": {"step": 1}, "target": {"rank": plan.num_workers - 1}} for f in plan.faults],
        "expect": {"outcome": "succeeded"},
    }


class _Spool:
    """The events of a synthetic run, written to history.jsonl as they age: a
    10^7-event run does not fit in memory as dicts. The generator only appends
    and counts its events, and changes an event (if at all) just after it
    emitted it, so each is written once the run is KEEP events past it."""

    KEEP = 100_000

    def __init__(self, f):
        self.f, self.digest, self.n, self.last = f, hashlib.sha256(), 0, None
        self.recent = collections.deque()

    def append(self, e: dict) -> None:
        self.recent.append(e)
        self.n += 1
        if len(self.recent) > self.KEEP:
            self._write(self.recent.popleft())

    def __len__(self) -> int:
        return self.n

    def _write(self, e: dict) -> None:
        line = json.dumps(e).encode() + b"\n"
        self.digest.update(line)
        self.f.write(line)
        self.last = e

    def close(self) -> None:
        while self.recent:
            self._write(self.recent.popleft())


def generate(n: int, epochs: int, folder: str) -> None:
    """Write folder/history.jsonl (sealed), scenario.json and outcome.json."""
    from ftharness.history.records import seal
    from ftharness.scenarios.synthetic import _Run

    plan = plan_for(n, epochs)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "history.jsonl"), "wb") as f:
        run = _Run(plan)
        run.events = spool = _Spool(f)
        syn = run.play()
        spool.close()
        end = {"seq": len(spool) + 1, "t": spool.last["t"], "kind": "history_end", "source": "history",
               "run": "synthetic", "events": len(spool), "emitters": {}, "digest": spool.digest.hexdigest()}
        end["seal"] = seal(end)
        f.write(json.dumps(end).encode() + b"\n")
    with open(os.path.join(folder, "scenario.json"), "w") as f:
        json.dump(scenario_for(plan), f)
    with open(os.path.join(folder, "outcome.json"), "w") as f:
        json.dump({"outcome": syn.context["outcome"], "error_type": syn.context["error_type"], "error": None,
                   "return_value": {"acc": syn.context["final"]}}, f)


def judge(folder: str) -> dict:
    """Read and judge one history, as a run does after fit() returns (run in a fresh process)."""
    from ftharness import faults  # noqa: F401 - imported by evaluate on first use; not the judging's cost
    from ftharness.history.records import read_history
    from ftharness.scenarios import forked_checks
    from ftharness.scenarios.schema import parse_scenario
    from ftharness.scenarios.verdict import evaluate

    with open(os.path.join(folder, "scenario.json")) as f:
        data = json.load(f)
    scenario = parse_scenario(data)
    with open(os.path.join(folder, "outcome.json")) as f:
        outcome = json.load(f)
    t0, c0 = time.perf_counter(), time.process_time() + _children_cpu()
    read = read_history(folder)
    t1, c1 = time.perf_counter(), time.process_time() + _children_cpu()   # (with a split reader's)
    reader_child_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024   # (the only child so far)
    summary = evaluate(scenario, read.events, outcome, read.problems)
    t2, c2 = time.perf_counter(), time.process_time() + _children_cpu()
    json.dumps(summary, default=str)
    return {"events": len(read.events), "read_s": t1 - t0, "judge_s": t2 - t1, "judge_cpu_s": c2 - c1,
            "read_cpu_s": c1 - c0, "total_s": t2 - t0, "cpu_s": c2 - c0,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            # the process that read the second half of a long file (ftharness.history.split), if any
            "child_peak_mb": reader_child_mb,
            "checks_child": forked_checks.last_child_mb,
            "verdict": summary["verdict"], "why": (summary["mismatches"] + summary["inconclusive"])[:2]}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _child(*args: str) -> str:
    out = subprocess.run([sys.executable, os.path.abspath(__file__), *args], cwd=ROOT, check=True,
                         stdout=subprocess.PIPE, text=True)
    return out.stdout


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--events", type=int, nargs="+", default=[10_000, 100_000], help="history sizes (events)")
    p.add_argument("--epochs", type=int, default=4, help="epochs of the reference workload (rows grow with N)")
    p.add_argument("--keep", help="write the histories under this folder and keep them")
    p.add_argument("--histories", help="judge the histories kept under this folder (no generation)")
    p.add_argument("--generate", nargs=2, metavar=("N", "FOLDER"), help=argparse.SUPPRESS)
    p.add_argument("--judge", metavar="FOLDER", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.generate:
        generate(int(a.generate[0]), a.epochs, a.generate[1])
        return 0
    if a.judge:
        print(json.dumps(judge(a.judge)))
        return 0
    base = a.histories or a.keep or tempfile.mkdtemp(prefix="checks_scale_")
    rows = []
    load = "load average %.2f %.2f %.2f" % os.getloadavg()
    for n in a.events:
        folder = os.path.join(base, str(n))
        if not a.histories:
            t = time.perf_counter()
            _child("--generate", str(n), folder, "--epochs", str(a.epochs))
            gen_s = time.perf_counter() - t
        r = json.loads(_child("--judge", folder))
        rows.append(r)
        extra = f"; generated in {gen_s:.1f} s" if not a.histories else ""
        why = f" ({'; '.join(r['why'])[:200]})" if r["verdict"] != "PASS" else ""
        child = f" (+{r['child_peak_mb']:.0f} MB split reader)" if r.get("child_peak_mb") else ""
        if r.get("checks_child"):
            child += (f" (forked checks: {r['checks_child']['peak_rss']:.0f} MB RSS, "
                      f"{r['checks_child']['private']:.0f} MB private)")
        print(f"{r['events']} events: {r['total_s']:.1f} s, {r['peak_mb']:.0f} MB{child}  "
              f"(CPU {r['cpu_s']:.1f} s = read {r['read_cpu_s']:.1f} + judge {r['judge_cpu_s']:.1f}; "
              f"judge wall {r['judge_s']:.1f} s; verdict {r['verdict']}{why}{extra})", flush=True)
        budget_s = TARGET_S * r["events"] / TARGET_EVENTS   # the target's seconds, pro rata
        print(f"  against the target ({TARGET_EVENTS:,} events in {TARGET_S:.0f} s within {TARGET_MB:,} MB): "
              f"wall x{r['total_s'] / budget_s:.2f}, CPU x{r['cpu_s'] / budget_s:.2f} (pro rata), "
              f"peak RSS x{r['peak_mb'] / TARGET_MB:.2f}", flush=True)
    for prev, cur in zip(rows, rows[1:]):   # on CPU time: wall time also counts other load on the machine
        ratio = (cur["cpu_s"] / cur["events"]) / (prev["cpu_s"] / prev["events"])
        print(f"CPU time per event, {cur['events']} vs {prev['events']} events: x{ratio:.2f}")
    print(f"{os.cpu_count()} CPUs; before: {load}; after: " + "load average %.2f %.2f %.2f" % os.getloadavg())
    if not a.keep and not a.histories:
        import shutil

        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
