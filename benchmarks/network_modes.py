"""What namespace hosts cost against the shared network namespace, on this machine.

For each of `--modes` (shared, namespaces), `--runs` times: start an embedded cluster
of `--nodes` worker nodes (1 CPU each), run the fault-free `default` catalog scenario
on it, and close it. Prints start, run and close seconds per mode, their medians, and the
namespaces/shared ratios. Needs root for namespaces.

    .venv/bin/python benchmarks/network_modes.py --runs 2
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time


from ftharness.harness.cluster.handles import EmbeddedCluster  # noqa: E402
from ftharness.harness.run.runner import RunOptions, ScenarioRunner  # noqa: E402
from ftharness.scenarios.schema import parse_scenario  # noqa: E402

SCENARIO = {"name": "bench-fault-free", "workload": {"num_workers": 2, "steps": 20, "checkpoint_every": 5},
            "expect": {"outcome": "succeeded", "properties": ["exactly_once_restore"]}}


def once(mode: str, nodes: int, out: str) -> dict:
    t0 = time.perf_counter()
    cluster = EmbeddedCluster(nodes=nodes, cpus_per_node=1, network=mode).start()
    t1 = time.perf_counter()
    try:
        sc = parse_scenario(dict(SCENARIO, cluster={"nodes": nodes, "network": mode}))
        ScenarioRunner(sc, cluster, RunOptions(out_dir=out, progress=False)).run()
        t2 = time.perf_counter()
    finally:
        cluster.close()
    t3 = time.perf_counter()
    return {"start": t1 - t0, "run": t2 - t1, "close": t3 - t2}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--nodes", type=int, default=3)
    ap.add_argument("--modes", default="shared,namespaces")
    args = ap.parse_args()
    modes = args.modes.split(",")
    res = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            for m in modes:
                r = once(m, args.nodes, os.path.join(tmp, f"{m}-{i}"))
                res[m].append(r)
                print(f"{m:<10} run {i + 1}: start {r['start']:6.1f} s  run {r['run']:6.1f} s  close {r['close']:5.1f} s",
                      flush=True)
    med = {m: {k: statistics.median(r[k] for r in rs) for k in ("start", "run", "close")} for m, rs in res.items()}
    for m in modes:
        print(f"median {m:<10} start {med[m]['start']:6.1f} s  run {med[m]['run']:6.1f} s  close {med[m]['close']:5.1f} s")
    if "shared" in med and "namespaces" in med:
        print("namespaces/shared: " + "  ".join(f"{k} x{med['namespaces'][k] / med['shared'][k]:.2f}"
                                                for k in ("start", "run", "close")))


if __name__ == "__main__":
    main()
