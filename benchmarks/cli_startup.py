"""What a CI user waits for before a command answers: the wall time of commands that only read
their input or refuse it, in fresh interpreters, against the time to import Ray Train (what
these commands paid before harness/run/collect.py and the late imports in the CLI).

Each command runs `--runs` times (median printed); the ratio is command / `import ray.train`.
Nothing starts a cluster.

    .venv/bin/python -P benchmarks/cli_startup.py --runs 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

COMMANDS = (
    ("list", ["list"]),
    ("validate (the catalog folder)", ["validate", "scenarios/catalog"]),
    ("run of a missing file (refused)", ["run", "nosuch.yaml"]),
    ("suite of a missing file (refused)", ["suite", "nosuch.yaml"]),
    ("explore --budget 0s (refused)", ["explore", "--budget", "0s"]),
    ("check (a recorded run)", ["check", "tests/data/kill-worker"]),
)


def wall(argv, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        subprocess.run(argv, cwd=REPO, capture_output=True, check=False)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    py = [sys.executable, "-P"]
    base = wall(py + ["-c", "import ray.train.torch"], args.runs)
    print(f"import ray.train.torch alone: {base:.2f} s (median of {args.runs})")
    for name, argv in COMMANDS:
        t = wall(py + ["-m", "ftharness"] + argv, args.runs)
        print(f"{name:<36} {t:5.2f} s   x{t / base:.2f} of importing Ray Train")


if __name__ == "__main__":
    main()
