"""Chaos Toolkit control: an embedded cluster and the training run for the
experiment, validated first and torn down after.

    "controls": [{"name": "ftharness", "provider": {"type": "python", "module": "ftharness.harness.frontends.ctk.control",
                  "arguments": {"scenario": {"name": "ctk-demo", "workload": {"steps": 60}}, "out": "results/ctk"}}}]

`scenario` is a scenario mapping (or a YAML path) without faults, or with
faults that must be armed before training (crash_worker); the experiment's
actions bring the rest. Before anything starts, every ftharness action of the
experiment is validated; a bad one interrupts the experiment with one line.
After the experiment the run is finished and judged like `ftharness run`, the
experiment is recorded in the history, and the journal gets an `ftharness`
section with the verdict and the results folder.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, Dict, List, Optional

from chaoslib.exceptions import InterruptExecution

from ftharness.harness.frontends.ctk import actions
from ftharness.harness.frontends.ctk.journal import journal_verdict
from ftharness.harness.frontends.ctk.session import Session, session_or_none, validate_fault
from ftharness.harness.run.guard import check_live_fault
from ftharness.safety import redact
from ftharness.harness.cluster.history_service import Emitter
from ftharness.errors import ScenarioError

__all__ = ["before_experiment_control", "after_experiment_control", "cleanup_control",
           "validate_experiment", "validate_control", "armed_faults"]


def _activities(experiment: Dict[str, Any]) -> List[Dict[str, Any]]:
    ssh = experiment.get("steady-state-hypothesis") or {}
    return list(ssh.get("probes", [])) + list(experiment.get("method", [])) + list(experiment.get("rollbacks", []))


def validate_experiment(experiment: Dict[str, Any], scenario=None) -> None:
    """Raise ScenarioError (one line) for the first ftharness action that does not fit."""
    for act in _activities(experiment):
        provider = act.get("provider") or {}
        if provider.get("module") != "ftharness.harness.frontends.ctk.actions":
            continue
        func, name = provider.get("func"), act.get("name", "?")
        if func not in actions.__all__:
            raise ScenarioError(f"activity {name!r}: unknown fault kind {func!r}; allowed: "
                                f"{', '.join(a for a in actions.__all__ if a != 'heal_all')}")
        if func != "heal_all":
            validate_fault(func, provider.get("arguments") or {}, where=f"activity {name!r}", scenario=scenario)


def armed_faults(experiment: Dict[str, Any], scenario) -> List[Any]:
    """The experiment's actions that must be armed before training
    (crash_worker), as fault spec models for the control's scenario."""
    from ftharness.harness.frontends.ctk.session import validate_fault

    out = []
    for act in _activities(experiment):
        provider = act.get("provider") or {}
        if provider.get("module") == "ftharness.harness.frontends.ctk.actions" and \
                provider.get("func") in actions.ARMED_BEFORE_TRAINING:
            out.append(validate_fault(provider["func"], dict(provider.get("arguments") or {}),
                                      where=f"activity {act.get('name', '?')!r}", scenario=scenario))
    return out


def _with_armed(session: Session, experiment: Dict[str, Any]) -> None:
    """The control's scenario with the experiment's crash_worker actions among its faults."""
    from ftharness.faults.base import spec_record
    from ftharness.scenarios.schema import parse_scenario, scenario_data

    armed = armed_faults(experiment, session.scenario)
    if armed:
        data = scenario_data(session.scenario)
        data["faults"] = list(data.get("faults") or []) + [spec_record(a) for a in armed]   # scenario data
        session.scenario = parse_scenario(data, source="control scenario", base_dir=session.scenario.base_dir)


def _experiment_of(control: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The experiment a control belongs to: chaoslib's validate_control hook is
    handed the control only, so the experiment is found on the caller's stack."""
    import inspect

    frame = inspect.currentframe()
    try:
        while frame is not None:
            exp = frame.f_locals.get("experiment")
            if isinstance(exp, dict) and any(c is control or c == control for c in exp.get("controls") or []):
                return exp
            frame = frame.f_back
    finally:
        del frame
    return None


def validate_control(control: Dict[str, Any]) -> None:
    """`chaos validate` (and `chaos run` before it starts): the control's
    scenario and every ftharness action of the experiment, against it; a bad
    one (an unknown kind, a target that does not exist, a bad argument) is one
    line, InvalidActivity."""
    from chaoslib.exceptions import InvalidActivity

    arguments = (control.get("provider") or {}).get("arguments") or {}
    try:
        session = Session.from_arguments(arguments.get("scenario"), arguments.get("out"),
                                         allow_destructive=arguments.get("allow_destructive") is True)
        experiment = _experiment_of(control)
        if experiment is not None:
            validate_experiment(experiment, session.scenario)
            _with_armed(session, experiment)
            if not session.target.allow_destructive and _has_fault_actions(experiment):
                check_live_fault(session.target, "the experiment's fault actions")
    except ScenarioError as e:
        raise InvalidActivity(f"ftharness: {e}") from None


def _has_fault_actions(experiment: Dict[str, Any]) -> bool:
    return any((a.get("provider") or {}).get("module") == "ftharness.harness.frontends.ctk.actions"
               and (a.get("provider") or {}).get("func") != "heal_all" for a in _activities(experiment))


def before_experiment_control(context: Dict[str, Any], scenario: Any = None, out: Optional[str] = None,
                              **kwargs: Any) -> None:
    from ftharness.errors import ClusterError
    from ftharness.harness.frontends.ctk import session as sessions

    sessions.start_failure = None
    try:
        session = Session.from_arguments(scenario, out, allow_destructive=kwargs.get("allow_destructive") is True)
        validate_experiment(context, session.scenario)
        _with_armed(session, context)
        if not session.target.allow_destructive and _has_fault_actions(context):
            check_live_fault(session.target, "the experiment's fault actions")
        session.start()   # its preflight refuses a job that cannot be imported, in one line
    except (ScenarioError, ClusterError) as e:   # said on the terminal and in the journal, not only in the log
        sessions.start_failure = str(e)
        print(f"ftharness: the run did not start: {e}", file=sys.stderr, flush=True)
        raise InterruptExecution(f"ftharness: the run did not start: {e}") from None
    Emitter(session.runner.history, "harness").emit(
        "experiment", phase="start", title=context.get("title"),
        method=[a.get("name") for a in context.get("method", [])])


def after_experiment_control(context: Dict[str, Any], state: Dict[str, Any], **kwargs: Any) -> None:
    from ftharness.harness.frontends.ctk import session as sessions

    session = session_or_none()
    if session is None:
        if sessions.start_failure and isinstance(state, dict):   # `ftharness verdict` says the run never started
            state["ftharness"] = {"results_dir": None, "not_started": sessions.start_failure}
        return
    Emitter(session.runner.history, "harness").emit(
        "experiment", phase="end", status=state.get("status"), deviated=state.get("deviated"))
    summary = session.finish()
    verdict = journal_verdict({**state, "ftharness": summary})
    summary["chaostoolkit"] = {"status": state.get("status"), "deviated": state.get("deviated"),
                               "verdict": verdict}
    with open(os.path.join(summary["results_dir"], "summary.json"), "w") as f:
        json.dump(redact(summary), f, indent=2, default=str)
    state["ftharness"] = {"results_dir": summary["results_dir"], "outcome": summary["outcome"],
                          "matches_expectation": summary["matches_expectation"],
                          "run_verdict": summary["verdict"], "inconclusive": summary["inconclusive"],
                          "mismatches": summary["mismatches"], "verdict": verdict,
                          "properties": {k: v["passed"] for k, v in summary["properties"].items()}}


def cleanup_control(**kwargs: Any) -> None:
    """An interrupted experiment still leaves nothing running."""
    session = session_or_none()
    if session is not None:
        session.abort()
