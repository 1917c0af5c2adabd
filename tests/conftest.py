"""Shared helpers for ftharness's own tests (fixtures come from ftharness.harness.frontends.pytest_plugin)."""

import os
import subprocess
import sys

import pytest
from hypothesis import settings

# CI is deterministic: Hypothesis draws the same examples on every run (derandomized,
# no example database). FTHARNESS_HYPOTHESIS=explore draws new ones, for hunting bugs.
# No per-example deadline: a wall-clock limit fails on a busy machine (the pure lane runs at
# nice 19 beside a real cluster), not on slow code; cost is measured in benchmarks/.
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, deadline=None)
settings.register_profile("explore", derandomize=False, deadline=None)
settings.load_profile(os.environ.get("FTHARNESS_HYPOTHESIS", "ci"))

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FTHARNESS = [sys.executable, "-m", "ftharness.harness.frontends.cli"]


def run_cli(*args, timeout=300, env=None, cwd=None):
    """Run the ftharness CLI in a child process; returns CompletedProcess."""
    return subprocess.run(FTHARNESS + list(args), capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, cwd=cwd or REPO)


def ray_clusters():
    """pids of GCS servers on this host: one per running Ray cluster."""
    out = subprocess.run(["pgrep", "-f", "gcs_server"], capture_output=True, text=True).stdout.split()
    return {int(p) for p in out}


@pytest.fixture
def write_scenario(tmp_path):
    """Write a scenario YAML (text) into tmp_path; returns its path."""
    def _write(text, name="scenario.yaml"):
        p = tmp_path / name
        p.write_text(text)
        return str(p)
    return _write
