"""The one live ftharness run a Chaos Toolkit experiment drives.

The control starts it (embedded cluster, history, the workload's fit() running
in the background), actions inject faults into it now, probes read its history,
and the control closes it and writes the results folder like `ftharness run`.

The cluster is the guard's choice (ftharness.harness.run.guard.check_route): the
embedded one, or the scenario's `cluster.address` / RAY_ADDRESS; on a cluster
ftharness did not start, every fault action is refused unless the control's
arguments say `allow_destructive: true`.
"""

from __future__ import annotations

import os
import time
from typing import Any, Dict, List, Optional

import ray

from ftharness.harness.cluster.handles import open_cluster
from ftharness.history.records import read_events
from ftharness.harness.run.guard import Target, check_live_fault, check_route
from ftharness.harness.run.runner import RunOptions, ScenarioRunner
from ftharness.scenarios.schema import Scenario, parse_scenario, scenario_data
from ftharness.errors import ScenarioError
from ftharness.errors import NoSession

_session: Optional["Session"] = None
#: why the control could not start the run (one line), so that the actions after it say the cause
start_failure: Optional[str] = None


def session_or_none() -> Optional["Session"]:
    return _session


def current() -> "Session":
    if _session is None:
        if start_failure:
            raise NoSession(f"no ftharness run: the control could not start it: {start_failure}")
        raise NoSession("no ftharness run: add the control `ftharness.harness.frontends.ctk.control` to the experiment")
    return _session


def validate_fault(kind: str, arguments: Dict[str, Any], where: str = "fault",
                   scenario: Optional[Scenario] = None) -> Any:
    """A fault action's arguments as a validated spec model, checked against the run's
    scenario (ranks and nodes that exist); ScenarioError (one line) otherwise."""
    spec = {k: v for k, v in arguments.items() if v is not None}
    spec["kind"] = kind
    spec.setdefault("at", {"time_s": 0})
    base = scenario_data(scenario) if scenario else {"name": "x"}
    try:
        sc = parse_scenario({**base, "faults": [spec]}, source=where)
    except ScenarioError as e:
        raise ScenarioError(str(e).replace("faults[0].", "").replace("faults[0]: ", "")) from None
    return sc.faults[0]


class Session:
    def __init__(self, scenario: Scenario, out_dir: str, allow_destructive: bool = False):
        self.scenario = scenario
        #: decided before anything starts; faults fired later are checked against it
        self.target: Target = check_route(scenario, allow_destructive)
        self.out_dir = os.path.abspath(out_dir)
        self.cluster = None
        self.runner: Optional[ScenarioRunner] = None
        self.ref = None
        self.summary: Optional[Dict[str, Any]] = None

    @classmethod
    def from_arguments(cls, scenario: Any = None, out: Optional[str] = None,
                       allow_destructive: bool = False) -> "Session":
        if isinstance(scenario, str):
            from ftharness.scenarios.schema import load_scenario

            sc = load_scenario(scenario)
        else:
            # a mapping's modules are looked up in the folder `chaos run` runs in (docs/chaostoolkit.md)
            sc = parse_scenario(dict(scenario or {"name": "chaostoolkit"}), source="control scenario",
                                base_dir=os.getcwd())
        out = out or os.path.join("results", f"{sc.name}-ctk-{time.strftime('%Y%m%d-%H%M%S')}")
        from ftharness.safety import output_dir_problem

        why = output_dir_problem(out)
        if why:
            raise ScenarioError(f"out {out[:120]}: {why}")
        return cls(sc, out, allow_destructive=allow_destructive is True)

    def start(self) -> None:
        global _session
        self.cluster = open_cluster(self.scenario.cluster, self.target.address).start()
        try:
            options = RunOptions(self.out_dir, address=self.target.address, address_source=self.target.source,
                                 progress=False, allow_destructive=self.target.allow_destructive)
            self.runner = ScenarioRunner(self.scenario, self.cluster, options)
            self.runner.start()
            self.ref = self.runner.submit()
        except BaseException:
            self.cluster.close()
            raise
        _session = self

    # -- used by actions and probes
    def inject(self, kind: str, arguments: Dict[str, Any]) -> Dict[str, Any]:
        check_live_fault(self.target, kind)
        spec = validate_fault(kind, arguments, where=kind, scenario=self.scenario)
        return self.runner.injector.fire_now(spec)

    def heal_all(self) -> List[int]:
        return self.runner.injector.heal_all()

    def progress(self) -> Dict[str, Any]:
        self.runner.injector.tick()
        return ray.get(self.runner.history.progress.remote(), timeout=30)

    def events(self) -> List[Dict[str, Any]]:
        return read_events(self.runner.history_path)

    def fit_done(self) -> bool:
        ready, _ = ray.wait([self.ref], timeout=0)
        return bool(ready)

    # -- end
    def finish(self) -> Dict[str, Any]:
        """Wait for fit() (resuming after a controller kill), judge, tear down."""
        global _session
        try:
            outcome = self.runner.finish_fits(self.ref)
            self.runner.close()
            self.summary = self.runner.summarize(outcome, time.time() - self.runner.t0, self.runner.use_gpu)
            return self.summary
        finally:
            self.cluster.close()
            _session = None

    def abort(self) -> None:
        global _session
        try:
            if self.runner is not None and self.runner.history is not None:
                self.runner.close()
        finally:
            if self.cluster is not None:
                self.cluster.close()
            _session = None
