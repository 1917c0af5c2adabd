"""pytest plugin: chaos tests on a real embedded Ray cluster in a few lines.

Installed with ftharness (entry point `pytest11`), it gives:

- `ftharness_cluster`: one embedded cluster (3 worker nodes x 1 CPU, fast
  detection profile) shared by the whole test session, started on first use.
- `run_scenario`: a function `run_scenario(scenario, **overrides) -> summary`
  taking a scenario dict, a `Scenario` or a YAML path, running it on the shared
  cluster into a fresh folder under `tmp_path`, and returning `summary.json`'s
  content (with `results_dir`).

    def test_kill_one_worker(run_scenario):
        s = run_scenario({"name": "kill", "faults": [
            {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}],
            "failure_config": {"max_failures": 1}})
        assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]

Tests that need a cluster of their own (other node counts, an operator-started
cluster) take `exclusive_ray`: it stops the shared cluster first, since several
Ray clusters on one host confuse each other, and the next user restarts it.
Such tests run last (`@pytest.mark.exclusive_ray` sorts them to the end).
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Union

import pytest

SHARED_SHAPE = {"nodes": 3, "cpus_per_node": 1, "gpus_per_node": 0, "profile": "fast"}


class SharedCluster:
    """Holds the session's embedded cluster; can stop it for exclusive tests."""

    def __init__(self):
        self.cluster = None

    def get(self):
        if self.cluster is None:
            from ftharness.harness.cluster.handles import EmbeddedCluster

            self.cluster = EmbeddedCluster(**SHARED_SHAPE).start()
        return self.cluster

    def release(self) -> None:
        if self.cluster is not None:
            self.cluster.close()
            self.cluster = None


_shared = SharedCluster()


def pytest_configure(config):
    config.addinivalue_line("markers", "exclusive_ray: starts its own Ray cluster; runs after the shared-cluster tests")


def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: 1 if item.get_closest_marker("exclusive_ray") else 0)


def pytest_sessionfinish(session, exitstatus):
    _shared.release()


@pytest.fixture
def ftharness_cluster():
    """The shared embedded cluster, healed (all worker nodes alive) before each test."""
    cluster = _shared.get()
    cluster.heal()
    return cluster


@pytest.fixture
def exclusive_ray():
    """Stops the shared cluster so the test can start its own."""
    _shared.release()
    yield
    _shared.release()


@pytest.fixture
def run_scenario(ftharness_cluster, tmp_path):
    """Run a scenario on the shared cluster; returns its summary dict."""
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner
    from ftharness.scenarios.schema import Scenario, load_scenario, parse_scenario

    counter = {"n": 0}

    def _run(scenario: Union[str, Dict[str, Any], Scenario], out: Optional[str] = None,
             resume: Optional[str] = None, **overrides: Any) -> Dict[str, Any]:
        if isinstance(scenario, (str, os.PathLike)):
            sc = load_scenario(str(scenario))
        elif isinstance(scenario, Scenario):
            sc = scenario
        else:
            sc = parse_scenario(dict(scenario, **overrides), base_dir=str(tmp_path))
        counter["n"] += 1
        out = out or str(tmp_path / f"run{counter['n']}")
        options = RunOptions(out_dir=out, resume=resume, progress=False)
        return ScenarioRunner(sc, ftharness_cluster, options).run()

    return _run
