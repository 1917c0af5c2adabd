"""Chaos Toolkit experiments beside scenarios (docs/chaostoolkit.md): `ftharness validate DIR`
and `ftharness suite DIR` recognise an experiment file (a mapping with a `method`, or a `title`
and `controls` or a `steady-state-hypothesis`, and no scenario `name`) and check it as an
experiment, not as a scenario: what Chaos Toolkit itself requires of one (`title`,
`description`, `method`), the ftharness control's scenario, and every ftharness action against that scenario, as `chaos validate` does through the control.
The control's scenario is read as `chaos run` reads it from the current folder: a mapping's
`workload.entrypoint` is looked up in the folder `chaos run` runs in (then where Python finds it),
a scenario given as a YAML path beside that file.
Nothing here imports Chaos Toolkit: `validate` works without the `[ctk]` extra."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from ftharness.errors import ScenarioError

from ftharness.harness.run.collect import is_experiment_file, looks_like_experiment, read_experiment as read

#: what the CLI asks of an experiment file; the recognisers live in harness/run/collect.py (a suite collects too)
__all__ = ["control_of", "control_scenario", "problems", "validate_actions", "is_experiment_file",
           "looks_like_experiment", "CONTROL_MODULE"]

CONTROL_MODULE = "ftharness.harness.frontends.ctk.control"
#: what Chaos Toolkit requires of every experiment (chaoslib.experiment.ensure_experiment_is_valid)
REQUIRED = ("title", "description", "method")


def control_of(experiment: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The experiment's ftharness control, or None."""
    for c in experiment.get("controls") or []:
        if isinstance(c, dict) and (c.get("provider") or {}).get("module") == CONTROL_MODULE:
            return c
    return None


def control_scenario(experiment: Dict[str, Any], folder: str):
    """The control's scenario as the control reads it under `chaos run` (ctk/session.py
    Session.from_arguments): a YAML path (relative to `folder`, where `chaos run` runs), whose
    modules are looked up beside it, or a mapping, whose modules are looked up in `folder`;
    raises ScenarioError (one line)."""
    from ftharness.scenarios.schema import load_scenario, parse_scenario

    control = control_of(experiment)
    arguments = ((control or {}).get("provider") or {}).get("arguments") or {}
    scenario = arguments.get("scenario")
    if isinstance(scenario, str):
        path = scenario if os.path.isabs(scenario) else os.path.join(folder, scenario)
        return load_scenario(path)
    if scenario is not None and not isinstance(scenario, dict):
        raise ScenarioError(f"controls[ftharness].provider.arguments.scenario: a mapping or a YAML path, "
                            f"not {type(scenario).__name__}")
    return parse_scenario(dict(scenario or {"name": "chaostoolkit"}), source="the ftharness control's scenario",
                          base_dir=folder)


def problems(path: str, data: Optional[Dict[str, Any]] = None) -> List[str]:
    """Every problem of the experiment at `path`, one line each ([] when it is fine)."""
    from ftharness.harness.run.preflight import preflight

    data = read(path) if data is None else data
    if not isinstance(data, dict):
        return ["not a Chaos Toolkit experiment (not a mapping)"]
    out = [f"{key}: required by Chaos Toolkit" for key in REQUIRED if not data.get(key)]
    if not isinstance(data.get("method") or [], list):
        out.append("method: must be a list of activities")
    if control_of(data) is None:
        uses = any(isinstance(a, dict) and str((a.get("provider") or {}).get("module", "")).startswith(
            "ftharness.") for a in _activities(data))
        if uses:
            out.append(f"controls: the experiment uses ftharness's actions or probes but not the control "
                       f"{CONTROL_MODULE}, which starts the cluster and the run they act on")
        return out
    try:
        scenario = control_scenario(data, os.getcwd())   # where `chaos run` would run: here
        preflight(scenario, static=True)   # its entrypoint, looked up there first
        validate_actions(data, scenario)
    except ScenarioError as e:
        out += [str(p) for p in (getattr(e, "problems", None) or [str(e)])]
    return out


def validate_actions(experiment: Dict[str, Any], scenario) -> None:
    """Every ftharness action of the experiment against the control's scenario, as the control's
    validate_control does under `chaos validate` (ftharness.harness.frontends.ctk.control
    .validate_experiment), without Chaos Toolkit; raises ScenarioError (one line)."""
    from ftharness.harness.frontends.ctk import actions
    from ftharness.harness.frontends.ctk.session import validate_fault

    for act in _activities(experiment):
        provider = (act.get("provider") if isinstance(act, dict) else None) or {}
        if provider.get("module") != "ftharness.harness.frontends.ctk.actions":
            continue
        func, name = provider.get("func"), act.get("name", "?")
        if func not in actions.__all__:
            raise ScenarioError(f"activity {name!r}: unknown fault kind {func!r}; allowed: "
                                f"{', '.join(a for a in actions.__all__ if a != 'heal_all')}")
        if func != "heal_all":
            validate_fault(func, provider.get("arguments") or {}, where=f"activity {name!r}", scenario=scenario)


def _activities(experiment: Dict[str, Any]) -> List[Any]:
    ssh = experiment.get("steady-state-hypothesis") or {}
    lists = [ssh.get("probes") if isinstance(ssh, dict) else None, experiment.get("method"),
             experiment.get("rollbacks")]
    return [a for acts in lists if isinstance(acts, list) for a in acts]
