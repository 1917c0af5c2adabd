"""Where a real run's time goes: Ray's own start, detection and restart against the training
itself and the harness's time between runs, read from recorded histories (no cluster).

    python benchmarks/run_phases.py RESULTS_DIR [RESULTS_DIR ...]

Each RESULTS_DIR is a suite folder, an explore folder (its examples/) or one run's folder;
every history.jsonl under it is read. A suite folder's suite-timing.json (harness/run/suite.py)
splits the time between runs further: after run_end (the run's close, judge and summary), the
heal, and before run_start (the next run's set-up). Ray Train runs only (torchrun's phases differ).
Prints each phase's total, median and share of the runs' wall time, and the gap between
one run's end and the next one's start (the heal, the judge and the next scenario's set-up,
from the runs' own timestamps, in the order they ran).

Phases of one fit(), from its events:
  fit start      run_start -> the first attempt_start (the fit task and the Train controller start)
  group start    attempt_start -> worker_group_started (placement group, worker actors, torch's
                 process group), every attempt
  first step     worker_group_started -> that attempt's first step or restore (the train
                 function's set-up, a checkpoint's restore)
  detection      fault_injected -> the next failure decision (a restarting fault only)
  to restart     failure decision -> the next attempt_start
  end            the last step -> run_end of a fit that succeeded ("end (failed)": one that failed
                 or hung, its timeout included)
  training       what is left: steps, checkpoints, the job's own time (detection overlaps it)
"""

from __future__ import annotations

import json
import os
import statistics
import sys
from typing import Dict, List


def histories(paths: List[str]) -> List[str]:
    found = []
    for root in paths:
        for d, _, files in os.walk(root):
            if "history.jsonl" in files:
                found.append(os.path.join(d, "history.jsonl"))
    return sorted(found)


def read(path: str) -> List[dict]:
    out = []
    with open(path) as f:
        for line in f:
            try:
                out.append(json.loads(line))
            except ValueError:
                pass
    return sorted((e for e in out if isinstance(e.get("t"), (int, float))), key=lambda e: e["t"])


def phases(events: List[dict]) -> Dict[str, float]:
    """Seconds per phase of one run (every fit of it)."""
    got = {k: 0.0 for k in ("fit start", "group start", "first step", "detection", "to restart", "end",
                            "end (failed)")}
    open_fit = open_attempt = open_group = open_fault = open_failure = None
    last_step = None
    for e in events:
        k, t = e["kind"], e["t"]
        if k == "run_start":
            open_fit = t
        elif k == "attempt_start":
            if open_fit is not None:
                got["fit start"] += t - open_fit
                open_fit = None
            if open_failure is not None:
                got["to restart"] += t - open_failure
                open_failure = None
            open_attempt = t
        elif k == "worker_group_started" and open_attempt is not None:
            got["group start"] += t - open_attempt
            open_attempt, open_group = None, t
        elif k in ("step", "restored") and open_group is not None:
            got["first step"] += t - open_group
            open_group = None
        elif k == "fault_injected":
            open_fault = t if open_fault is None else open_fault
        elif k == "failure":
            if open_fault is not None:
                got["detection"] += t - open_fault
                open_fault = None
            open_failure = t
        elif k == "run_end":
            if last_step is not None:   # a run that failed or hung waits here: its timeout, Ray's error
                got["end" if e.get("outcome") == "succeeded" else "end (failed)"] += max(0.0, t - last_step)
            open_fit = open_attempt = open_group = open_failure = None
        if k == "step":
            last_step = t
    return got


def suite_gaps(paths: List[str]) -> Dict[str, List[float]]:
    """From a suite folder's suite-timing.json and its runs' histories, the suite's own seconds per
    run: `after run_end` (the injector's finish, the history's close, the judge and the summary),
    `heal` (leftover actors, nodes replaced, CPUs idle) and `before run_start` (the next run's
    set-up until its run_start)."""
    out: Dict[str, List[float]] = {"after run_end": [], "heal": [], "before run_start": []}
    for root in paths:
        timing_path = os.path.join(root, "suite-timing.json")
        if not os.path.exists(timing_path):
            continue
        with open(timing_path) as f:
            rows = json.load(f)
        for row in rows:
            ev = read(os.path.join(root, row["scenario"], "history.jsonl")) \
                if os.path.exists(os.path.join(root, row["scenario"], "history.jsonl")) else []
            starts = [e["t"] for e in ev if e["kind"] == "run_start"]
            ends = [e["t"] for e in ev if e["kind"] == "run_end"]
            out["heal"].append(row["run_start"] - row["heal_start"])
            if starts and ends:
                out["before run_start"].append(starts[0] - row["run_start"])
                out["after run_end"].append(row["run_end"] - ends[-1])
    return {k: v for k, v in out.items() if v}


def main(argv: List[str]) -> int:
    if not argv:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    runs = []
    for path in histories(argv):
        ev = read(path)
        starts = [e for e in ev if e["kind"] == "run_start"]
        ends = [e for e in ev if e["kind"] == "run_end"]
        if not starts or not ends or starts[0].get("runtime", "ray_train") != "ray_train":
            continue
        wall = ends[-1]["t"] - starts[0]["t"]
        runs.append((starts[0]["t"], ends[-1]["t"], wall, phases(ev), os.path.dirname(path)))
    if not runs:
        print("no Ray Train history under " + ", ".join(argv), file=sys.stderr)
        return 2
    runs.sort()
    total = sum(r[2] for r in runs)
    names = list(runs[0][3])
    print(f"{len(runs)} Ray Train runs, {total:.0f} s of run wall time (run_start to run_end), "
          f"median {statistics.median(r[2] for r in runs):.1f} s per run")
    print(f"{'phase':<14}{'total s':>10}{'median s':>10}{'share':>8}")
    accounted = 0.0
    for name in names:
        values = [r[3][name] for r in runs]
        accounted += sum(values)
        print(f"{name:<14}{sum(values):>10.0f}{statistics.median(values):>10.1f}{sum(values) / total:>8.0%}")
    rest = max(0.0, total - accounted)   # (detection overlaps training: this is a lower bound)
    print(f"{'training':<14}{rest:>10.0f}{'':>10}{rest / total:>8.0%}")
    gaps = [b[0] - a[1] for a, b in zip(runs, runs[1:]) if 0 <= b[0] - a[1] < 600]
    if gaps:
        print(f"between runs (heal, judge, next set-up): {len(gaps)} gaps, total {sum(gaps):.0f} s, "
              f"median {statistics.median(gaps):.1f} s; runs + gaps = {total + sum(gaps):.0f} s")
    split = suite_gaps(argv)
    if split:
        print("the suite's own time per run (suite-timing.json): " + ", ".join(
            f"{k} median {statistics.median(v):.2f} s (total {sum(v):.0f} s)" for k, v in split.items()))
    ray_own = sum(sum(r[3][n] for n in ("fit start", "group start", "first step", "detection", "to restart"))
                  for r in runs)
    print(f"Ray's own start, detection and restart: {ray_own:.0f} s = {ray_own / total:.0%} of run time")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
