"""pytest plugin: chaos tests on a real embedded Ray cluster in a few lines.

Installed with ftharness (entry point `pytest11`), it gives, under ftharness's
own names:

- `ftharness_cluster`: one embedded cluster (3 worker nodes x 1 CPU, fast
  detection profile) shared by the whole test session, started on first use.
- `ftharness_run`: a function `ftharness_run(scenario, **overrides) -> summary`
  taking a scenario dict, a `Scenario` or a YAML path, with `overrides` merged
  into it (nested mappings key by key: `workload={"steps": 8}` keeps the other
  workload keys), running it on the shared cluster into a fresh folder, and
  returning `summary.json`'s content (with `results_dir`).
- `ftharness_results`: the folder this test's runs go to: under
  `--ftharness-results DIR` (kept after the session, one subfolder per test; each run gets the
  next `runN` folder that is new or empty, so a later session never writes into an earlier run),
  else under pytest's `tmp_path` (pruned after a few sessions).
- `ftharness_explore`: a bounded `ftharness explore` as a test (`budget`, `seed`,
  `max_faults`), on the shared cluster; returns explore.json's content.
- `ftharness_exclusive` (fixture and marker): the test needs a cluster of its
  own (other node counts, an operator-started cluster); the fixture stops the
  shared cluster first, since several Ray clusters on one host confuse each
  other, and the next user restarts it.

    def test_kill_one_worker(ftharness_run):
        s = ftharness_run({"name": "kill", "faults": [
            {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}],
            "failure_config": {"max_failures": 1}})
        assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]

Nothing of another project is reordered: only ftharness's own test suite
(tests under this checkout's tests/ folder) runs its exclusive tests last.

Deprecated (kept for one release, with a DeprecationWarning): the fixtures
`run_scenario` (= ftharness_run) and `exclusive_ray` (= ftharness_exclusive),
and the marker `exclusive_ray`.
"""

from __future__ import annotations

import os
import re
import warnings
from typing import Any, Dict, Optional, Union

import pytest

SHARED_SHAPE = {"nodes": 3, "cpus_per_node": 1, "gpus_per_node": 0, "profile": "fast"}
EXCLUSIVE_MARKERS = ("ftharness_exclusive", "exclusive_ray")
#: ftharness's own tests: the only ones this plugin may reorder
OWN_TESTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))), "tests")


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


def pytest_addoption(parser):
    group = parser.getgroup("ftharness")
    group.addoption("--ftharness-results", metavar="DIR", default=None,
                    help="keep the results folders of ftharness_run in DIR/<test> (default: pytest's tmp_path)")


def pytest_configure(config):
    config.addinivalue_line("markers", "ftharness_exclusive: starts its own Ray cluster (ftharness); "
                                       "stops the shared one first")
    config.addinivalue_line("markers", "exclusive_ray: deprecated name of ftharness_exclusive")


def _own(item) -> bool:
    path = os.path.realpath(str(getattr(item, "path", None) or item.fspath))
    return path.startswith(OWN_TESTS + os.sep)


def pytest_collection_modifyitems(config, items):
    """ftharness's own exclusive tests run after its shared-cluster tests;
    any other project's order is left alone."""
    own = [i for i in items if _own(i)]
    if not own or not any(i.get_closest_marker(m) for i in own for m in EXCLUSIVE_MARKERS):
        return
    late = [i for i in own if any(i.get_closest_marker(m) for m in EXCLUSIVE_MARKERS)]
    late_ids = {id(i) for i in late}
    slots = [k for k, i in enumerate(items) if _own(i)]
    ordered = [i for i in own if id(i) not in late_ids] + late
    for k, item in zip(slots, ordered):
        items[k] = item


def pytest_sessionfinish(session, exitstatus):
    _shared.release()


def _deprecated(old: str, new: str) -> None:
    warnings.warn(f"the ftharness fixture {old!r} is deprecated; use {new!r} (the old name goes in the next release)",
                  DeprecationWarning, stacklevel=3)


@pytest.fixture
def ftharness_cluster():
    """The shared embedded cluster, healed (all worker nodes alive) before each test."""
    cluster = _shared.get()
    cluster.heal()
    return cluster


@pytest.fixture
def ftharness_exclusive():
    """Stops the shared cluster so the test can start its own."""
    _shared.release()
    yield
    _shared.release()


@pytest.fixture
def exclusive_ray(ftharness_exclusive):
    """Deprecated: ftharness_exclusive."""
    _deprecated("exclusive_ray", "ftharness_exclusive")
    yield


def results_dir(option: Optional[str], nodeid: str, tmp_path) -> str:
    """Where a test's runs go: DIR/<test id as a folder name> with --ftharness-results, else tmp_path."""
    if not option:
        return str(tmp_path)
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", nodeid).strip("_")[:200] or "test"
    path = os.path.join(os.path.abspath(option), name)
    os.makedirs(path, exist_ok=True)
    return path


#: what a folder holding a run has (a run's history, or its summary)
RUN_MARKERS = ("history.jsonl", "summary.json")


def holds_run(path: str) -> bool:
    return any(os.path.exists(os.path.join(path, m)) for m in RUN_MARKERS)


def fresh_folder(base: str, prefix: str, counter: Dict[str, int]) -> str:
    """The next `base/<prefix>N` that does not exist or is empty: a second session with the same
    --ftharness-results starts after the first one's folders, never in them."""
    while True:
        counter["n"] += 1
        path = os.path.join(base, f"{prefix}{counter['n']}")
        if not os.path.exists(path) or (os.path.isdir(path) and not os.listdir(path)):
            return path


def refuse_run_folder(out: str) -> None:
    """An `out=` given by the test that already holds a run is refused, naming it (as `run --out`
    refuses it): appending a second run's events to a history makes it INCONCLUSIVE."""
    from ftharness.errors import ScenarioError

    if holds_run(out):
        raise ScenarioError(f"out {out}: already holds a run (its history.jsonl or summary.json); "
                            f"choose another folder, or leave out= to get a fresh one")


@pytest.fixture
def ftharness_results(request, tmp_path) -> str:
    """The folder this test's results folders go to (see --ftharness-results)."""
    return results_dir(request.config.getoption("--ftharness-results"), request.node.nodeid, tmp_path)


def merge(base: Dict[str, Any], overrides: Dict[str, Any]) -> Dict[str, Any]:
    """`overrides` over `base`: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for k, v in overrides.items():
        out[k] = merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def with_overrides(scenario: Any, overrides: Dict[str, Any], base_dir: str):
    """A Scenario from a dict, a Scenario or a YAML path, with `overrides`
    merged in and validated again (a fault may aim past a new end)."""
    from ftharness.scenarios.schema import Scenario, load_scenario, parse_scenario, scenario_data

    if isinstance(scenario, (str, os.PathLike)):
        sc = load_scenario(str(scenario))
    elif isinstance(scenario, Scenario):
        sc = scenario
    else:
        return parse_scenario(merge(dict(scenario), overrides), base_dir=base_dir)
    if not overrides:
        return sc
    data = scenario_data(sc)
    return parse_scenario(merge(data, overrides), source="overrides", base_dir=sc.base_dir or base_dir)


@pytest.fixture
def ftharness_run(ftharness_results, tmp_path):
    """Run a scenario (with overrides) on the shared cluster; returns its summary dict.

    The cluster is the guard's choice (ftharness.harness.run.guard.check_route, as on every
    route), made before any cluster starts: a scenario whose `cluster.address` (or RAY_ADDRESS)
    names a cluster ftharness did not start runs there, and its faults need
    `allow_destructive=True`; otherwise the shared cluster is started on first use."""
    from ftharness.harness.run.guard import check_route
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner, run_scenario as run_on_address

    counter = {"n": 0}

    def _run(scenario: Union[str, Dict[str, Any], Any], out: Optional[str] = None,
             resume: Optional[str] = None, allow_destructive: bool = False, **overrides: Any) -> Dict[str, Any]:
        sc = with_overrides(scenario, overrides, str(tmp_path))
        target = check_route(sc, allow_destructive)
        if out is None:
            out = fresh_folder(ftharness_results, "run", counter)
        elif resume is None:
            refuse_run_folder(out)
        options = RunOptions(out_dir=out, resume=resume, progress=False, address=target.address,
                             address_source=target.source, allow_destructive=target.allow_destructive)
        if target.address:
            return run_on_address(sc, options)
        cluster = _shared.get()
        cluster.heal()
        return ScenarioRunner(sc, cluster, options).run()

    return _run


@pytest.fixture
def ftharness_explore(ftharness_results, tmp_path):
    """A bounded `ftharness explore` as a test: `ftharness_explore(scenario=None, budget="2m",
    seed=0, max_faults=2, out=None, **overrides) -> explore.json's content` (the reference job
    by default), every example on the shared cluster. `result["exit_code"]` is the command's:
    1 a finding (`result["findings"]`), 3 only inconclusive, 0 all passed.

        def test_no_finding_in_two_minutes(ftharness_explore):
            result = ftharness_explore("my_job.yaml", budget="2m", seed=0)
            assert result["exit_code"] == 0, result["findings"]
    """
    from ftharness.harness.run.explore import ClusterExecutor, Explorer
    from ftharness.harness.run.explore_command import parse_budget
    from ftharness.harness.run.guard import check_route
    from ftharness.scenarios.schema import default_scenario_path

    counter = {"n": 0}

    def _explore(scenario: Union[str, Dict[str, Any], Any, None] = None, budget: str = "2m", seed: int = 0,
                 max_faults: int = 2, out: Optional[str] = None, **overrides: Any) -> Dict[str, Any]:
        sc = with_overrides(scenario if scenario is not None else default_scenario_path(), overrides, str(tmp_path))
        target = check_route(sc, False, started_by_us=True, has_faults=True)
        out = out or fresh_folder(ftharness_results, "explore", counter)
        cluster = _shared.get()
        executor = ClusterExecutor(cluster, target.address, target.source, target.allow_destructive)
        return Explorer(sc, executor, out, parse_budget(budget), seed=seed, max_faults=max_faults).explore().to_dict()

    return _explore


@pytest.fixture
def run_scenario(ftharness_run):
    """Deprecated: ftharness_run."""
    _deprecated("run_scenario", "ftharness_run")
    return ftharness_run
