"""Overhead of ftharness against a plain Ray Train run doing the same job.

On one embedded cluster it alternates, `--runs` times each:
  harness: `ScenarioRunner` with the reference workload, fault-free (its book in
           the cluster's history service, which starts with the cluster as in every
           run, controller callback, worker instrumentation, checks, summary);
  plain:   the same `train_loop` in a plain TorchTrainer, same cluster, same
           Train settings, no callbacks and no instrumentation.
A first, uncounted pair warms up worker processes; pairs alternate which runs first
(ABBA), so a drifting machine does not favour one side. It prints the cluster start
time, per-run wall times, medians and the ratio
harness/plain (aim: <= 1.02), and the median of the per-pair ratios with its
95% bootstrap interval, so a noisy machine shows as a wide interval.

    .venv/bin/python -P benchmarks/overhead.py --runs 9 --steps 30
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


import ray  # noqa: E402

from ftharness.harness.cluster.handles import EmbeddedCluster  # noqa: E402
from ftharness.harness.run.runner import RunOptions, ScenarioRunner, workload_config  # noqa: E402
from ftharness.scenarios.schema import parse_scenario  # noqa: E402


@ray.remote(num_cpus=0, max_retries=0)
def plain_fit(config, num_workers, storage, name, env):
    os.environ.update(env)
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    from ftharness.harness.job.workload import train_loop

    t0 = time.time()
    TorchTrainer(train_loop, train_loop_config=config,
                 scaling_config=ScalingConfig(num_workers=num_workers),
                 run_config=RunConfig(name=name, storage_path=storage)).fit()
    return time.time() - t0


def harness_run(runner: ScenarioRunner) -> dict:
    """`ScenarioRunner.run`, step by step, timing each part: start (results folder, history
    actor, injector), fit (submit to fit() returned), close (flush and stop the history),
    judge (the verdict and summary.json)."""
    parts, t = {}, time.time()
    runner.start()
    parts["start"], t = time.time() - t, time.time()
    try:
        outcome = runner.finish_fits(runner.submit())
        parts["fit"], t = time.time() - t, time.time()
    finally:
        runner.close()
    parts["close"], t = time.time() - t, time.time()
    runner.summarize(outcome, time.time() - runner.t0, runner.use_gpu)
    parts["judge"] = time.time() - t
    return parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--checkpoint-every", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()

    scenario = parse_scenario({"name": "overhead", "workload": {
        "num_workers": args.workers, "steps": args.steps, "checkpoint_every": args.checkpoint_every}})
    t0 = time.time()
    cluster = EmbeddedCluster(nodes=3).start()
    print(f"cluster start: {time.time() - t0:.2f} s (head + 3 worker raylets)")
    harness_s, plain_s = [], []
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(-1, args.runs):  # run -1 warms up worker processes and imports
                def harness():
                    t = time.time()
                    parts = harness_run(ScenarioRunner(scenario, cluster,
                                                       RunOptions(out_dir=f"{tmp}/h{i}", progress=False)))
                    harness_s.append(time.time() - t)
                    return parts

                def plain():
                    t = time.time()
                    inner = ray.get(plain_fit.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                        cluster.head_node_id(), soft=False)).remote(
                        workload_config(scenario, False), args.workers, f"{tmp}/p", f"plain{i}", cluster.train_env()))
                    plain_s.append(time.time() - t)
                    return inner

                # ABBA: odd pairs run plain first, so a machine that drifts (it does, by 10-20% over
                # minutes here) does not always favour the one that runs second
                if i % 2:
                    inner, parts = plain(), harness()
                else:
                    parts, inner = harness(), plain()
                label = "warm-up" if i < 0 else f"run {i + 1}{' (plain first)' if i % 2 else ''}"
                print(f"{label}: harness {harness_s[-1]:.2f} s  plain {plain_s[-1]:.2f} s  "
                      f"(harness: {'  '.join(f'{k} {v:.2f}' for k, v in parts.items())}; plain fit() {inner:.2f})",
                      flush=True)
                if i < 0:
                    harness_s.clear()
                    plain_s.clear()
    finally:
        cluster.close()
    h, p = statistics.median(harness_s), statistics.median(plain_s)
    print(f"median: harness {h:.2f} s  plain {p:.2f} s  ratio {h / p:.3f} "
          f"({args.steps} steps, checkpoint every {args.checkpoint_every}, {args.workers} workers)")
    pairs = [a / b for a, b in zip(harness_s, plain_s)]
    lo, hi = bootstrap_ci(pairs)
    print(f"per pair: median ratio {statistics.median(pairs):.3f}, 95% bootstrap CI {lo:.3f}-{hi:.3f}, "
          f"range {min(pairs):.3f}-{max(pairs):.3f} ({len(pairs)} pairs)")


def bootstrap_ci(values, n: int = 2000, seed: int = 0):
    """95% interval of the median of `values` by resampling (a noisy machine moves single pairs)."""
    import random

    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


if __name__ == "__main__":
    main()
