"""ftharness's public face: what a script that drives ftharness uses (docs/api.md).

`import ftharness` gives these names (lazily: nothing below is loaded until a name is used).
Everything else is inside ftharness and may change between releases.

- run a scenario: `run_scenario`, and its verdict's exit code, `exit_code`;
- check a results folder again from its history alone: `check_results`;
- load a scenario: `load_scenario` (a YAML file), `parse_scenario` (a dict), `Scenario`;
- write a fault kind: `Fault` and its spec bases (`FaultSpecBase`, `TargetedSpec`), what it is
  handed (`FaultContext`, `FaultView`) and returns (`Landing` with `LANDED`, `PENDING`, `MISSED`),
  and what it declares for the oracles (`CERTAIN`, `MAYBE`, `FailureClaim`);
- write a property: `CheckResult`, `PropertyContext`, `result`, `not_judged`;
- the verdicts and the errors: `PASS`, `FAIL`, `INCONCLUSIVE`, `FtharnessError` and its subclasses.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Optional, Tuple, Union

from ftharness.errors import ClusterError, FtharnessError, InputError, ScenarioError
from ftharness.faults.base import (CERTAIN, LANDED, MAYBE, MISSED, PENDING, FailureClaim, Fault, FaultContext,
                                   FaultSpecBase, FaultView, Landing, TargetedSpec)
from ftharness.scenarios.properties.base import CheckResult, PropertyContext, not_judged, result
from ftharness.scenarios.schema import Scenario, load_scenario, parse_scenario
from ftharness.scenarios.verdict import FAIL, INCONCLUSIVE, PASS

__all__ = [
    "run_scenario", "exit_code", "check_results", "load_scenario", "parse_scenario", "Scenario",
    "Fault", "FaultSpecBase", "TargetedSpec", "FaultContext", "FaultView", "Landing", "LANDED", "PENDING", "MISSED",
    "FailureClaim", "CERTAIN", "MAYBE",
    "CheckResult", "PropertyContext", "result", "not_judged",
    "PASS", "FAIL", "INCONCLUSIVE",
    "FtharnessError", "ScenarioError", "ClusterError", "InputError",
]


def run_scenario(scenario: Union[str, "os.PathLike[str]", Scenario, Mapping[str, Any]], out: Optional[str] = None, *,
                 address: Optional[str] = None, allow_destructive: bool = False, resume: Optional[str] = None,
                 progress: bool = False) -> Dict[str, Any]:
    """Run one scenario end to end, as `ftharness run` does, and return its summary (the dict
    `summary.json` holds: `verdict`, `outcome`, `properties`, `faults`, ...).

    `scenario`: a YAML file's path, a dict of the scenario language, or a loaded `Scenario`.
    `out`: the results folder (default: `results/<name>-<time>`). `address`: a Ray cluster ftharness
    did not start (its faults need `allow_destructive=True`); without one ftharness starts an
    embedded cluster, or none for a torchrun scenario. `resume`: an earlier results folder to
    resume. Bad input, a refused route or no cluster raise `ScenarioError` or `ClusterError`."""
    from ftharness.harness.run.arguments import default_out
    from ftharness.harness.run.guard import check_route
    from ftharness.harness.run.runner import RunOptions, runtime_of
    from ftharness.harness.run.runner import run_scenario as run
    from ftharness.scenarios.schema import require_release

    sc = _scenario(scenario)
    require_release(sc)
    route = check_route(sc, allow_destructive, address=address)
    out = out or default_out(sc.name)
    if resume:
        runtime_of(sc).check_resume(resume, sc)
    options = RunOptions(out_dir=out, address=route.address, resume=resume, address_source=route.source,
                         progress=progress, allow_destructive=route.allow_destructive)
    return run(sc, options)


def exit_code(summary: Mapping[str, Any]) -> int:
    """The exit code `ftharness run` gives a summary: 0 PASS, 1 FAIL, 3 INCONCLUSIVE, 4 an internal error."""
    from ftharness.scenarios.verdict import exit_code as of_verdict

    return of_verdict(summary.get("verdict"))


def check_results(folder: Union[str, "os.PathLike[str]"]) -> Tuple[Scenario, Dict[str, Any]]:
    """(scenario, summary) of a results folder judged again from its history alone, as
    `ftharness check` does: no cluster, `summary.json` never read. `ScenarioError` for a folder
    that is no results folder."""
    from ftharness.inputs import results_folder_problem
    from ftharness.reports.judgement import own_name_refusal, rejudge

    results = os.fspath(folder)
    if not os.path.isdir(results):
        raise ScenarioError(f"{results}: not a results folder (no such directory)")
    why = results_folder_problem(results)
    if why:
        raise ScenarioError(why)
    why = own_name_refusal(results)
    if why:
        raise ScenarioError(f"{results}: {why}")
    try:
        scenario = load_scenario(os.path.join(results, "scenario.yaml"))
    except ScenarioError as e:
        raise ScenarioError(f"{results}: not a results folder ({e})") from None
    return scenario, rejudge(results)   # renamed scenario.yaml, fault records of no kind: INCONCLUSIVE there


def _scenario(scenario: Any) -> Scenario:
    if isinstance(scenario, Scenario):
        return scenario
    if isinstance(scenario, Mapping):
        return parse_scenario(dict(scenario), source="run_scenario")
    return load_scenario(os.fspath(scenario))
