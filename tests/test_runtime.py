"""The runtime interface (harness/run/runtime.py): every runtime the scenario language names has
one implementation, chosen once; `drive` closes a run whatever happens; the light modules read
the runtimes' declarations without loading a runner (pure)."""

import subprocess
import sys
import typing

import pytest

from ftharness.errors import ScenarioError
from ftharness.harness.run.runtime import DECLARED, Runtime, declared_of, drive
from ftharness.scenarios.schema import Scenario, parse_scenario


def test_every_runtime_the_schema_allows_is_declared_and_implemented_once():
    from ftharness.harness.run.runner import runtimes

    workload = Scenario.model_fields["workload"].annotation
    allowed = set(typing.get_args(workload.model_fields["runtime"].annotation))
    implemented = runtimes()
    assert allowed == set(DECLARED) == set(implemented)
    for name, cls in implemented.items():
        assert issubclass(cls, Runtime) and cls.declared is DECLARED[name] and cls().name == name


@pytest.mark.parametrize("runtime, cls", [("ray_train", "RayTrain"), ("torchrun", "Torchrun")])
def test_the_scenario_chooses_its_runtime(runtime, cls):
    from ftharness.harness.run.runner import runtime_of

    sc = parse_scenario({"name": "r", "workload": {"runtime": runtime}}, source="t")
    assert type(runtime_of(sc)).__name__ == cls and declared_of(sc) is DECLARED[runtime]


def test_a_runtime_without_a_ray_cluster_refuses_one_in_one_line():
    torchrun, ray = DECLARED["torchrun"], DECLARED["ray_train"]
    assert ray.cluster_refusal("--address", "auto") is None
    assert torchrun.cluster_refusal("--submit") == \
        "--submit: workload.runtime torchrun starts its own agents and uses no Ray cluster"
    line = torchrun.cluster_refusal("--address", "ray://user:pw@host:10001")
    assert line.startswith("--address: workload.runtime torchrun starts") and "pw" not in line


class FakeRun:
    def __init__(self, fail_in=None):
        self.calls, self.fail_in, self.t0 = [], fail_in, 0.0

    def _step(self, name):
        self.calls.append(name)
        if name == self.fail_in:
            raise ScenarioError(name)

    def start(self):
        self._step("start")

    def wait(self):
        self._step("wait")
        return {"outcome": "succeeded"}

    def close(self):
        self._step("close")

    def summarize(self, outcome, wall):
        self.calls.append("summarize")
        return dict(outcome, wall=wall)


def test_drive_closes_the_run_whatever_happens_and_summarizes_only_an_outcome():
    run = FakeRun()
    assert drive(run)["outcome"] == "succeeded" and run.calls == ["start", "wait", "close", "summarize"]
    run = FakeRun(fail_in="wait")
    with pytest.raises(ScenarioError):
        drive(run)
    assert run.calls == ["start", "wait", "close"]
    run = FakeRun(fail_in="start")   # a start that fails cleans up after itself (the runners do)
    with pytest.raises(ScenarioError):
        drive(run)
    assert run.calls == ["start"]


def test_the_guard_and_preflight_read_declarations_without_loading_a_runner():
    code = ("import sys, ftharness.harness.run.guard, ftharness.harness.run.preflight, ftharness.harness.run.entrypoints;"
            "loaded = [m for m in sys.modules if m.endswith(('.runner', '.torchrun_runner')) or m == 'ray'];"
            "assert not loaded, loaded")
    r = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
