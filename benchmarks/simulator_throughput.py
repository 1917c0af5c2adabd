"""Simulator throughput: simulated job-months per wall minute (no Ray).

A realistic job: 16,384 accelerators at the Llama 3 failure rate (about 233
interruptions a month), half of them on spot capacity, the built-in
calibration, a checkpoint every 30 minutes. Runs batches for about
--seconds and prints e.g. `job-months/min: 123456 (16384 accelerators, ...)`.
"""

from __future__ import annotations

import argparse
import os
import sys
import time


from ftharness.scenarios.simulator import DEFAULTS, Job, simulate  # noqa: E402
from ftharness.scenarios.simulator.rates import make_rates  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--accelerators", type=int, default=16_384)
    ap.add_argument("--days", type=float, default=30.0)
    ap.add_argument("--runs", type=int, default=2000, help="runs per batch")
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    job = Job(args.accelerators, args.days, 1800.0, {"max_failures": -1}, spot_fraction=0.5)
    rates = make_rates()
    simulate(job, DEFAULTS, rates, runs=100, seed=0)   # warm-up
    months, interruptions, seed = 0.0, 0.0, 0
    start = time.perf_counter()
    while time.perf_counter() - start < args.seconds:
        runs = simulate(job, DEFAULTS, rates, runs=args.runs, seed=seed)
        months += runs.job_months
        interruptions += runs.values["interruptions"].sum()
        seed += 1
    elapsed = time.perf_counter() - start
    print(f"job-months/min: {months / elapsed * 60:,.0f} ({args.accelerators} accelerators, Llama 3 rates, "
          f"spot fraction 0.5, {args.days:g}-day jobs, {months:,.0f} job-months in {elapsed:.1f} s, "
          f"{interruptions / months:.0f} interruptions per job-month)")


if __name__ == "__main__":
    main()
