"""Turns a run's history and fit() outcome into the verdict of `summary.json`.

Pure: it reads events and the scenario, never Ray, so an old results folder can
be re-judged (`ftharness check RESULTS`).
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from harness.workload import WorkloadConfig, expected_accumulators, expected_accumulators_ray_data
from scenarios.schema import PROPERTIES, Scenario

BUDGETS = ("worker_group", "preemption", "controller")


def budgets_used(events: List[Dict[str, Any]]) -> Dict[str, int]:
    used = {b: 0 for b in BUDGETS}
    for e in events:
        if e.get("kind") == "failure" and e.get("budget") in used:
            used[e["budget"]] += 1
    return used


def attempts(events: List[Dict[str, Any]]) -> int:
    ids = {(e.get("attempt_id")) for e in events if e.get("kind") == "attempt_start"}
    return len(ids)


def last_step(events: List[Dict[str, Any]]) -> int:
    steps = [int(e.get("step") or 0) for e in events if e.get("kind") == "step"]
    return max(steps, default=0)


def recovery_times(events: List[Dict[str, Any]]) -> List[float]:
    """Seconds from each fault (or failure) to the first step of the next attempt."""
    from reports.metrics import recovery_table

    table = recovery_table(events)
    if table.empty:
        return []
    return [round(float(v), 3) for v in table["recovery_s"].dropna()]


def final_state(scenario: Scenario, events: List[Dict[str, Any]], outcome: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The reference workload's accumulators against what a fault-free run ends with."""
    if scenario.workload.kind != "reference":
        return None
    start = next((e for e in events if e.get("kind") == "run_start"), None)
    if start is None:
        return None
    cfg = WorkloadConfig(**start["workload"])
    if cfg.data == "ray_data":
        sizes = {e.get("world_size") for e in events if e.get("kind") == "worker_group_started"}
        expected = expected_accumulators_ray_data(cfg, sizes.pop()) if len(sizes) == 1 else None
    else:
        expected = expected_accumulators(cfg)
    final = (outcome.get("return_value") or {}).get("acc")
    return {"accumulators": final, "expected": expected,
            "exact": (final == expected) if (final is not None and expected is not None) else None}


def check_context(scenario: Scenario, events, outcome, state) -> Dict[str, Any]:
    start = next((e for e in events if e.get("kind") == "run_start"), {})
    return {
        "failure_config": scenario.failure_config.model_dump(),
        "outcome": outcome.get("outcome"),
        "error_type": outcome.get("error_type"),
        "workload": start.get("workload") if scenario.workload.kind == "reference" else None,
        "data": scenario.workload.data,
        "expected_final": (state or {}).get("expected"),
        "final": (state or {}).get("accumulators"),
        "recovery_bound_s": scenario.expect.recovery_bound_s,
        "injected": [e for e in events if e.get("kind") == "fault_injected"],
    }


def run_properties(scenario, events, outcome, state) -> Dict[str, Dict[str, Any]]:
    try:
        from scenarios.checks import run_checks
    except ImportError:  # pragma: no cover - the checks module ships with the package
        return {}
    results = run_checks(events, check_context(scenario, events, outcome, state), list(PROPERTIES))
    return {name: {"passed": r.passed, "explanation": r.explanation, "findings": list(r.findings)}
            for name, r in results.items()}


def evaluate(scenario: Scenario, events: List[Dict[str, Any]], outcome: Dict[str, Any]) -> Dict[str, Any]:
    state = final_state(scenario, events, outcome)
    props = run_properties(scenario, events, outcome, state)
    mismatches = []
    if outcome.get("outcome") != scenario.expect.outcome:
        mismatches.append(f"outcome {outcome.get('outcome')} (expected {scenario.expect.outcome})")
    if scenario.expect.error_type and outcome.get("error_type") != scenario.expect.error_type:
        mismatches.append(f"error_type {outcome.get('error_type')} (expected {scenario.expect.error_type})")
    for name in scenario.expect.properties:
        verdict = props.get(name)
        if verdict is None:
            mismatches.append(f"property {name} could not be decided")
        elif not verdict["passed"]:
            mismatches.append(f"property {name} failed: {verdict['explanation']}")
    for name in scenario.expect.violations:
        verdict = props.get(name)
        if verdict is not None and verdict["passed"]:
            mismatches.append(f"property {name} held, but the scenario pins a known violation of it")
    return {
        "scenario": scenario.name,
        "outcome": outcome.get("outcome"),
        "error": outcome.get("error"),
        "error_type": outcome.get("error_type"),
        "matches_expectation": not mismatches,
        "mismatches": mismatches,
        "attempts": attempts(events),
        "steps": last_step(events),
        "budgets": budgets_used(events),
        "failure_config": scenario.failure_config.model_dump(),
        "properties": props,
        "recovery_times_s": recovery_times(events),
        "final_state": state,
        "metrics": outcome.get("metrics"),
        "run_metrics": _run_metrics(events),
        "events": len(events),
    }


def _run_metrics(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    from reports.metrics import run_metrics

    try:
        return run_metrics(events)
    except Exception as e:  # metrics must never hide the verdict
        return {"error": f"{type(e).__name__}: {e}"}
