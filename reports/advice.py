"""How often to checkpoint, extrapolated from what a run measured.

The harness measures, on a small cluster, what a checkpoint costs (C) and
what a recovery costs (R). The optimal interval between checkpoints then
depends on how often a failure strikes, which a small cluster cannot measure:
the rate is taken from a published large-cluster report and scaled to N
accelerators, so every number here is an extrapolation, and labelled so.

- Young (1974), "A first order approximation to the optimum checkpoint
  interval", CACM 17(9): tau = sqrt(2 C M).
- Daly (2006), "A higher order estimate of the optimum checkpoint interval for
  restart dumps", Future Generation Computer Systems 22(3): tau = sqrt(2 C M)
  [1 + (1/3) sqrt(C / 2M) + (1/9) (C / 2M)] - C for C < 2M, else M; and the
  expected wall time of T of work with exponential failures,
  M e^(R/M) (e^((tau + C)/M) - 1) T / tau, whose inverse ratio is the goodput.
- Failure rate: Meta, "The Llama 3 Herd of Models" (Dubey et al., 2024,
  arXiv:2407.21783, section 3.3.4): 419 unexpected interruptions in a 54-day
  snapshot of pre-training on 16,384 H100 GPUs, i.e. a per-GPU MTBF of
  54 * 24 * 16384 / 419 = 50,677 hours, and a job MTBF of about 3.1 hours at
  that scale, assuming failures independent across GPUs.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Iterable, List, Optional

import numpy as np
import pandas as pd

from ftharness.reports import metrics
from ftharness.reports.frames import PathLike, read_results, results_folders

Event = Dict[str, Any]

LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS = 419, 54, 16_384
#: hours between unexpected interruptions per accelerator (Llama 3 pre-training)
LLAMA3_MTBF_PER_GPU_H = LLAMA3_DAYS * 24 * LLAMA3_GPUS / LLAMA3_INTERRUPTIONS
CHECKPOINT_KINDS = ("checkpoint_written", "report")

#: advise() keys worth showing, with their labels
LABELS = {
    "checkpoint_cost_s": "checkpoint cost C (s, measured)",
    "plain_step_s": "plain step (s, measured)",
    "recovery_s": "recovery R (s, measured mean)",
    "current_interval_s": "current checkpoint interval (s, measured)",
    "accelerators": "accelerators N",
    "mtbf_per_accelerator_h": "MTBF per accelerator (h, Llama 3)",
    "cluster_mtbf_s": "job MTBF M at N (s)",
    "young_interval_s": "Young interval sqrt(2CM) (s)",
    "daly_interval_s": "Daly interval (s)",
    "goodput_at_daly": "expected goodput at Daly interval",
    "goodput_at_current": "expected goodput at current interval",
}
#: the LABELS keys this harness's runs measure; the others are extrapolated from a published failure rate
MEASURED = ("checkpoint_cost_s", "plain_step_s", "recovery_s", "current_interval_s")


# ------------------------------------------------------------------ formulas
def young_interval(cost_s: float, mtbf_s: float) -> float:
    return math.sqrt(2 * cost_s * mtbf_s)


def daly_interval(cost_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum; it stays below Young's by about C."""
    if cost_s >= 2 * mtbf_s:
        return mtbf_s
    x = cost_s / (2 * mtbf_s)
    return math.sqrt(2 * cost_s * mtbf_s) * (1 + math.sqrt(x) / 3 + x / 9) - cost_s


def expected_goodput(interval_s: float, cost_s: float, recovery_s: float, mtbf_s: float) -> float:
    """Work over expected wall time under Daly's model: a checkpoint every
    `interval_s` of work, exponential failures of mean `mtbf_s`, each costing
    `recovery_s` plus the work since the last checkpoint."""
    wall_per_work = mtbf_s * math.exp(recovery_s / mtbf_s) * math.expm1((interval_s + cost_s) / mtbf_s) / interval_s
    return 1 / wall_per_work


def extrapolate(cost_s: Optional[float], recovery_s: Optional[float], accelerators: int,
                mtbf_per_accelerator_h: float = LLAMA3_MTBF_PER_GPU_H,
                current_interval_s: Optional[float] = None) -> Dict[str, Any]:
    """Optimal intervals and goodput for a job on `accelerators`; the values
    that need an unmeasured C or R are None."""
    mtbf_s = mtbf_per_accelerator_h * 3600 / accelerators
    out: Dict[str, Any] = {"accelerators": accelerators, "mtbf_per_accelerator_h": mtbf_per_accelerator_h,
                           "cluster_mtbf_s": mtbf_s, "young_interval_s": None, "daly_interval_s": None,
                           "goodput_at_daly": None, "goodput_at_current": None}
    if cost_s is None or cost_s <= 0:
        return out
    out["young_interval_s"] = young_interval(cost_s, mtbf_s)
    out["daly_interval_s"] = daly_interval(cost_s, mtbf_s)
    if recovery_s is not None:
        out["goodput_at_daly"] = expected_goodput(out["daly_interval_s"], cost_s, recovery_s, mtbf_s)
        if current_interval_s:
            out["goodput_at_current"] = expected_goodput(current_interval_s, cost_s, recovery_s, mtbf_s)
    return out


# ---------------------------------------------------------------- measurement
def step_intervals(events: Iterable[Event]) -> pd.DataFrame:
    """metrics.step_table with `checkpointed`: the step's interval holds a
    checkpoint write or report of its attempt. A checkpoint is written after
    its step is recorded, so its cost lands in the next step's seconds."""
    ev = metrics.annotate(events)
    steps = metrics.step_table(ev).dropna(subset=["seconds"])
    marks = [(e["fit_index"], e["attempt"], e["t"]) for e in ev
             if e.get("kind") in CHECKPOINT_KINDS and (e.get("kind") != "report" or e.get("checkpoint"))]
    steps["checkpointed"] = [any(f == fit and a == att and begin <= t < end for f, a, t in marks)
                             for fit, att, begin, end in
                             zip(steps["fit_index"], steps["attempt"], steps["t_begin"], steps["t_end"])]
    return steps


def checkpoint_intervals(events: Iterable[Event]) -> List[float]:
    """Seconds between consecutive registered checkpoints of one attempt."""
    reg = [e for e in metrics.annotate(events) if e.get("kind") == "checkpoint_registered"]
    times = pd.DataFrame([(e["fit_index"], e["attempt"], e["t"]) for e in reg], columns=["fit", "attempt", "t"])
    return times.sort_values("t").groupby(["fit", "attempt"])["t"].diff().dropna().tolist()


def _median(values) -> Optional[float]:
    values = list(values)
    return float(np.median(values)) if values else None


def measure(results_paths: Iterable[PathLike]) -> Dict[str, Any]:
    """C, R and the current interval, pooled over the folders: C is the
    median step holding a checkpoint less the median plain step."""
    intervals, recoveries, spacing = [], [], []
    for folder in results_folders(results_paths):
        events = read_results(folder)[1]
        intervals.append(step_intervals(events))
        recoveries += metrics.recovery_table(events)["recovery_s"].dropna().tolist()
        spacing += checkpoint_intervals(events)
    steps = pd.concat(intervals, ignore_index=True)
    ckpt, plain = (_median(steps.loc[steps["checkpointed"] == flag, "seconds"]) for flag in (True, False))
    return {"checkpoint_cost_s": None if ckpt is None or plain is None else ckpt - plain,
            "plain_step_s": plain,
            "recovery_s": float(np.mean(recoveries)) if recoveries else None,
            "current_interval_s": _median(spacing),
            "samples": {"timed_steps": int(len(steps)), "checkpointed_steps": int(steps["checkpointed"].sum()),
                        "recoveries": len(recoveries), "checkpoint_intervals": len(spacing)}}


def gaps(found: Dict[str, Any]) -> Dict[str, str]:
    """For each LABELS key advise() left empty (or could not use): why, and
    what run would measure it. Keys with a value are absent."""
    n = found.get("samples") or {}
    cost = found.get("checkpoint_cost_s")
    if not n.get("timed_steps"):
        c = ("no timed steps in these runs (a step's time needs a step before it in the same attempt); "
             "run more than one step per attempt")
    elif not n.get("checkpointed_steps"):
        c = ("checkpoint cost not measured: no checkpoint_written/report pair in these runs; "
             "run a scenario with checkpoint_every > 0")
    elif n["checkpointed_steps"] == n["timed_steps"]:
        c = ("checkpoint cost not measured: every timed step held a checkpoint, so there is no plain step to "
             "compare with; set checkpoint_every > 1")
    elif cost is not None and cost <= 0:
        c = (f"checkpoint cost measured as {cost:.4f} s, not above a plain step: the checkpoint is cheaper "
             "than the noise; run more steps, or a larger model, to measure it")
    else:
        c = ""
    r = "" if found.get("recovery_s") is not None else (
        "recovery not measured: no recovery in these runs; run a scenario with a fault the job recovers "
        "from (e.g. kill_worker with max_failures >= 1)")
    i = "" if found.get("current_interval_s") is not None else (
        "current interval not measured: no two checkpoints registered in one attempt; run more steps than "
        "2 x checkpoint_every with checkpoint_every > 0")
    needs_c = "needs the checkpoint cost C, not measured (see above)" if c else ""
    out = {"checkpoint_cost_s": c if cost is None or cost <= 0 else "",
           "plain_step_s": "" if found.get("plain_step_s") is not None else (
               "no step without a checkpoint in these runs; set checkpoint_every > 1"),
           "recovery_s": r, "current_interval_s": i,
           "young_interval_s": needs_c, "daly_interval_s": needs_c,
           "goodput_at_daly": needs_c or ("needs the recovery time R, not measured (see above)" if r else ""),
           "goodput_at_current": needs_c or ("needs the recovery time R, not measured (see above)" if r else "")
           or ("needs the current interval, not measured (see above)" if i else "")}
    return {k: v for k, v in out.items() if v and (found.get(k) is None or k == "checkpoint_cost_s")}


def cluster_accelerators(results_paths: Iterable[PathLike]) -> int:
    """The accelerators of the runs' own cluster: the most workers any of their
    scenarios trains on (one accelerator each; workload.num_workers, else
    the worker_group_started world size), at least 1."""
    from ftharness.reports.judgement import scenario_data

    most = 0
    for folder in results_folders(results_paths):
        workload = scenario_data(str(folder)).get("workload")
        workers = workload.get("num_workers") if isinstance(workload, dict) else None
        if not isinstance(workers, int):
            sizes = [e.get("world_size") for e in read_results(folder)[1] if e.get("kind") == "worker_group_started"]
            workers = max((w for w in sizes if isinstance(w, int)), default=0)
        most = max(most, workers)
    return max(most, 1)


def advise(results_paths: Iterable[PathLike], accelerators: int = LLAMA3_GPUS,
           mtbf_per_accelerator_h: float = LLAMA3_MTBF_PER_GPU_H) -> Dict[str, Any]:
    """measure() then extrapolate() to `accelerators`, with `basis` saying how."""
    found = measure(results_paths)
    basis = (f"C and R measured on this harness's cluster; failures assumed independent and exponential "
             f"with a per-accelerator MTBF of {mtbf_per_accelerator_h:,.0f} h (Llama 3: "
             f"{LLAMA3_INTERRUPTIONS} unexpected interruptions in {LLAMA3_DAYS} days on {LLAMA3_GPUS:,} GPUs), "
             f"scaled to {accelerators:,} accelerators; intervals by Young (1974) and Daly (2006), "
             f"goodput by Daly's expected wall-time model.")
    return {**found, **extrapolate(found["checkpoint_cost_s"], found["recovery_s"], accelerators,
                                   mtbf_per_accelerator_h, found["current_interval_s"]),
            "extrapolated": True, "basis": basis}
