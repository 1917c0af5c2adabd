"""`ftharness plan`: budgets, checkpoint cadence and failure limits of a job, simulated.

Every figure comes from ftharness.scenarios.simulator's Monte Carlo runs of the job
under the failure rates (rates.py: Llama 3's published table, or the user's)
and a calibration (measured results folders, or defaults, or given figures),
and is printed labelled as simulated with both sources. Next to the simulated
optimum interval stand Young's and Daly's (ftharness.reports.advice), and Daly's
analytic goodput, so the two models can be compared.

One sample of failures per plan serves every table (common random numbers):
they do not depend on the checkpoint interval or the limits.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Dict, List, Mapping

import numpy as np
import pandas as pd

from ftharness.faults.process import KillWorker
from ftharness.history.model import BUDGETS, LIMIT_FIELD
from ftharness.reports.advice import daly_interval, expected_goodput, young_interval
from ftharness.scenarios.policy_model import limits
from ftharness.scenarios.simulator.calibration import Calibration, describe
from ftharness.scenarios.simulator.engine import Job, cause_rates, sample, simulate
from ftharness.scenarios.simulator.rates import CAUSES, LLAMA3_GPU_HOURS, LLAMA3_INTERRUPTIONS, llama3_rates

GRID = (1 / 8, 1 / 4, 1 / 2, 1 / math.sqrt(2), 1, math.sqrt(2), 2, 4, 8)


def job_mtbf_s(job: Job, rates: Mapping[str, float]) -> float:
    per_s = sum(cause_rates(job, rates).values())
    return 1 / per_s if per_s else math.inf


def mean_recovery_s(job: Job, cal: Calibration, rates: Mapping[str, float]) -> float:
    """Recovery per failure, weighted by the causes' rates (what Daly's R is)."""
    per_s = cause_rates(job, rates)
    if not per_s:
        return cal.mean_recovery_s(KillWorker.kind)
    wait = 0.0 if job.elastic else cal.replacement_s
    total = sum(per_s.values())
    return sum(r / total * (cal.mean_recovery_s(CAUSES[c].kind) + (wait if CAUSES[c].node_loss else 0.0))
               for c, r in per_s.items())


def recommend(counts: np.ndarray, target: float) -> int:
    """The smallest limit L with P(count <= L) >= target (a limit L allows L retries)."""
    return int(np.quantile(counts, target, method="higher")) if len(counts) else 0


def plan(job: Job, cal: Calibration, rates: Mapping[str, float], runs: int = 2000, seed: int = 0,
         target: float = 0.99) -> Dict[str, Any]:
    """The plan's tables (pandas) and figures, every one simulated."""
    if not 0 < target < 1:
        raise ValueError(f"--target: {target!r} is not a probability strictly between 0 and 1")
    if runs < 1:
        raise ValueError(f"--runs: {runs!r} is not a positive integer")
    events = sample(job, cal, rates, runs, np.random.default_rng(seed))
    unlimited = dataclasses.replace(job, failure_config={f: -1 for f in LIMIT_FIELD.values()})
    free = simulate(unlimited, cal, rates, seed=seed, events=events)
    configured = simulate(job, cal, rates, seed=seed, events=events)

    mtbf, rec = job_mtbf_s(job, rates), mean_recovery_s(job, cal, rates)
    cost = max(cal.checkpoint_s, 1e-9)
    young = young_interval(cost, mtbf) if math.isfinite(mtbf) else job.interval_s
    daly = daly_interval(cost, mtbf) if math.isfinite(mtbf) else job.interval_s
    grid: List[float] = []
    for x in sorted([young * g for g in GRID] + [daly, job.interval_s]):
        if not grid or x > grid[-1] * 1.001:   # Daly sits within C of Young: one row
            grid.append(x)
    rows = []
    for interval in grid:
        r = simulate(dataclasses.replace(unlimited, interval_s=interval), cal, rates, seed=seed, events=events)
        ettr = r.values["productive_s"] / r.values["wall_s"]
        rows.append({"interval_s": interval, "interval_steps": interval / cal.step_s,
                     "simulated_ettr": float(ettr.mean()), "simulated_ettr_p5": float(np.percentile(ettr, 5)),
                     "simulated_lost_h": float(r.values["lost_s"].mean() / 3600),
                     "daly_model_goodput": expected_goodput(interval, cost, rec, mtbf) if math.isfinite(mtbf) else 1.0})
    cadence = pd.DataFrame(rows)
    best = cadence.loc[cadence["simulated_ettr"].idxmax()]

    lim = limits(job.failure_config)
    budgets = pd.DataFrame([{"budget": b, "limit_field": LIMIT_FIELD[b], "limit": lim[b],
                             "simulated_p_exhausted": configured.exhausted(b),
                             "simulated_mean_failures": float(free.values[f"count_{b}"].mean())} for b in BUDGETS]
                           + [{"budget": "none (not retryable)", "limit_field": "-", "limit": 0,
                               "simulated_p_exhausted": configured.exhausted("none"),
                               "simulated_mean_failures": float("nan")}])
    recommended = {LIMIT_FIELD[b]: recommend(free.values[f"count_{b}"], target) for b in BUDGETS}
    joint = simulate(dataclasses.replace(job, failure_config=recommended), cal, rates, seed=seed, events=events)
    llama = sum(llama3_rates().values())
    return {"job": job, "calibration": cal, "runs": runs, "seed": seed, "target": target,
            "interruptions": free.mean_interval("interruptions"),
            "llama3_rates": all(math.isclose(rates.get(c, 0), v) for c, v in llama3_rates().items()),
            "llama3_expected": llama * job.accelerators * job.days * 24,
            "success": 1 - float(configured.values["failed"].mean()), "budgets": budgets,
            "cadence": cadence, "young_s": young, "daly_s": daly, "best_s": float(best["interval_s"]),
            "best_ettr": float(best["simulated_ettr"]), "mtbf_s": mtbf, "recovery_s": rec,
            "current": configured, "recommended": recommended,
            "recommended_success": 1 - float(joint.values["failed"].mean())}


def text(p: Dict[str, Any], rates_source: str) -> str:
    """The plan as terminal lines, each labelled simulated."""
    job: Job = p["job"]
    mean, lo, hi = p["interruptions"]
    lines = [f"plan (simulated: {p['runs']} runs, seed {p['seed']}) for {job.accelerators:,} accelerators, "
             f"{job.days:g} days, spot fraction {job.spot_fraction:g}, elastic {'yes' if job.elastic else 'no'}",
             f"  calibration: {p['calibration'].source}",
             "  " + "; ".join(f"{k} {v}" for k, v in describe(p["calibration"]).items() if k != "source"),
             f"  failure rates: {rates_source}",
             f"  job MTBF {p['mtbf_s'] / 3600:.2f} h; mean recovery {p['recovery_s']:.1f} s",
             "",
             f"interruptions (simulated): mean {mean:.1f}, 95% interval {lo:.0f}-{hi:.0f}"]
    if p["llama3_rates"]:
        ref = (f"published: {LLAMA3_INTERRUPTIONS} in 54 days on 16,384 GPUs (Llama 3, Table 5)"
               if math.isclose(p["llama3_expected"], LLAMA3_INTERRUPTIONS) else
               f"Llama 3's published rate ({LLAMA3_INTERRUPTIONS} per {LLAMA3_GPU_HOURS:,} GPU-hours) "
               f"expects {p['llama3_expected']:.1f} hardware/software ones here")
        lines.append(f"  {ref}")
    lines += ["", f"budgets with the given limits (simulated): P(success) {p['success']:.4f}"]
    for r in p["budgets"].to_dict("records"):
        limit = "n/a" if r["limit_field"] == "-" else ("unlimited" if r["limit"] == -1 else r["limit"])
        mean_f = "" if r["simulated_mean_failures"] != r["simulated_mean_failures"] else \
            f", mean failures {r['simulated_mean_failures']:.1f}"
        lines.append(f"  {r['budget']:<22} {r['limit_field']:<26} limit {limit!s:<9} "
                     f"P(exhausted) {r['simulated_p_exhausted']:.4f}{mean_f}")
    lines += ["", "checkpoint cadence (simulated ETTR, budgets unlimited; Daly's model beside it)",
              f"  {'interval_s':>12} {'steps':>10} {'sim ETTR':>9} {'sim p5':>8} {'sim lost h':>10} {'Daly model':>10}"]
    for r in p["cadence"].to_dict("records"):
        mark = " <- simulated optimum" if r["interval_s"] == p["best_s"] else ""
        near = lambda x: math.isclose(r["interval_s"], x, rel_tol=1e-3)
        mark += " <- Young" if near(p["young_s"]) else ""
        mark += " <- Daly" if near(p["daly_s"]) else ""
        mark += " <- current" if near(job.interval_s) else ""
        lines.append(f"  {r['interval_s']:>12.1f} {r['interval_steps']:>10.0f} {r['simulated_ettr']:>9.4f} "
                     f"{r['simulated_ettr_p5']:>8.4f} {r['simulated_lost_h']:>10.1f} {r['daly_model_goodput']:>10.4f}{mark}")
    lines += [f"  optimum: simulated {p['best_s']:.1f} s (ETTR {p['best_ettr']:.4f}); "
              f"Young sqrt(2CM) {p['young_s']:.1f} s; Daly {p['daly_s']:.1f} s",
              "", f"recommended limits for P(success) >= {p['target']:g} per budget (simulated):"]
    lines += [f"  {k}={v}" for k, v in p["recommended"].items()]
    lines.append(f"  simulated P(success) with all three: {p['recommended_success']:.4f}")
    return "\n".join(lines)


def write(p: Dict[str, Any], rates_source: str, out: str) -> List[str]:
    """plan.txt, the tables as CSV and, with matplotlib, plan.png; the paths."""
    os.makedirs(out, exist_ok=True)
    paths = [os.path.join(out, "plan.txt"), os.path.join(out, "cadence.csv"), os.path.join(out, "budgets.csv")]
    with open(paths[0], "w") as f:
        f.write(text(p, rates_source) + "\n")
    p["cadence"].assign(simulated=True, calibration=p["calibration"].source).to_csv(paths[1], index=False)
    p["budgets"].assign(simulated=True, calibration=p["calibration"].source).to_csv(paths[2], index=False)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return paths
    fig, ax = plt.subplots(figsize=(8, 4.5))
    c = p["cadence"]
    ax.plot(c["interval_s"], c["simulated_ettr"], "o-", label="simulated ETTR")
    ax.plot(c["interval_s"], c["daly_model_goodput"], "--", label="Daly model goodput")
    for x, name, style in ((p["best_s"], "simulated optimum", "-"), (p["young_s"], "Young", ":"),
                           (p["daly_s"], "Daly", "-.")):
        ax.axvline(x, linestyle=style, color="grey", label=f"{name} {x:.0f} s")
    ax.set_xscale("log")
    ax.set_xlabel("checkpoint interval (s of step work)")
    ax.set_ylabel("ETTR / goodput")
    job = p["job"]
    ax.set_title(f"SIMULATED: {job.accelerators:,} accelerators, {job.days:g} days ({p['runs']} runs)\n"
                 f"calibration: {p['calibration'].source[:90]}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    paths.append(os.path.join(out, "plan.png"))
    fig.savefig(paths[-1], dpi=100)
    plt.close(fig)
    return paths


def parse_rates(specs: List[str]) -> Dict[str, float]:
    """['gpu=1e-5', ...] -> {cause: rate}; ValueError on a malformed one."""
    out = {}
    for spec in specs:
        name, sep, value = spec.partition("=")
        try:
            out[name] = float(value)
        except ValueError:
            sep = ""
        if not sep or not name:
            raise ValueError(f"--rate {spec!r}: expected CAUSE=PER_ACCELERATOR_HOUR, e.g. gpu=3e-6")
    return out

