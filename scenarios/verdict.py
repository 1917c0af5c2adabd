"""Turns a run's history and fit() outcome into the verdict of `summary.json`.

Pure: it reads events and the scenario, never Ray, so an old results folder can
be re-judged (`ftharness check RESULTS`). Three verdicts, as Jepsen's checkers
give true, false and :unknown: PASS, FAIL, INCONCLUSIVE (see `evaluate`).
"""

from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

from ftharness import profiles, releases
from ftharness.faults.base import spec_record
from ftharness.history import causal
from ftharness.history.columns import non_steps
from ftharness.history.model import History, as_history, charged
from ftharness.history.records import gc_paused
from ftharness.scenarios.job_error import evidence_text, job_error
from ftharness.scenarios.policy_model import TORCHRUN_BUDGET
from ftharness.scenarios.properties import OPT_IN, PROPERTIES, Facts, applicable, run_checks
from ftharness.scenarios.properties.base import PropertyContext
from ftharness.scenarios.run_summary import RunSummary
from ftharness.scenarios.reference_data import WorkloadConfig, expected_accumulators, expected_accumulators_ray_data
from ftharness.scenarios.schema import Scenario

Events = Union[History, Iterable[Dict[str, Any]]]


def budgets_used(events: Iterable[Dict[str, Any]]) -> Dict[str, int]:
    """Failures charged to each budget; never raises, whatever the events."""
    return charged(events)


def attempts(events: Events) -> int:
    """The attempts the controller started (ftharness.history.model)."""
    return len(as_history(events).started())


def last_step(events: Events) -> int:
    return as_history(events).last_step()


def recovery_times(events: Events) -> List[float]:
    """Seconds from each fault (or failure) to the first step of the next
    attempt: the recoveries of ftharness.history.model, to the millisecond."""
    return [round(r.recovery_s, 3) for r in as_history(events).recoveries() if r.recovery_s is not None]


def final_step(outcome: Dict[str, Any], events: List[Dict[str, Any]] = ()) -> Optional[int]:
    """The step a run that stopped on its deadline ended at (its return value)."""
    step = (returned(events, outcome) or {}).get("step")
    return int(step) if isinstance(step, (int, float)) and not isinstance(step, bool) else None


def returned(events: List[Dict[str, Any]], outcome: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Rank 0's return value: fit()'s Result.return_value (Ray 2.56+), else the one rank 0's
    last `worker_end` recorded (every release), when the run succeeded."""
    if outcome.get("return_value") is not None:
        value = outcome["return_value"]
        return value if isinstance(value, dict) else None
    if outcome.get("outcome") != "succeeded":
        return None
    ends = [e for e in non_steps(events) if e.get("kind") == "worker_end" and e.get("rank") == 0 and "return_value" in e]
    value = ends[-1]["return_value"] if ends else None
    return value if isinstance(value, dict) else None


def final_state(scenario: Scenario, events: List[Dict[str, Any]], outcome: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The reference workload's accumulators against what a fault-free run ends with."""
    if scenario.workload.kind != "reference":
        return None
    start = next((e for e in non_steps(events) if e.get("kind") == "run_start"), None)
    if start is None:
        return None
    cfg = WorkloadConfig(**start["workload"]).ended_at(final_step(outcome, events))
    if cfg.stop_at is not None and final_step(outcome, events) is None:
        expected = None      # stopped on a deadline without saying where: nothing exact to compare
    elif cfg.data == "ray_data":
        sizes = {e.get("world_size") for e in non_steps(events) if e.get("kind") == "worker_group_started"}
        expected = expected_accumulators_ray_data(cfg, sizes.pop()) if len(sizes) == 1 else None
    else:
        expected = expected_accumulators(cfg)
    final = (returned(events, outcome) or {}).get("acc")
    return {"accumulators": final, "expected": expected,
            "exact": (final == expected) if (final is not None and expected is not None) else None}


PASS, FAIL, INCONCLUSIVE, ERROR = "PASS", "FAIL", "INCONCLUSIVE", "ERROR"
#: exit codes (docs/verdicts.md): 2 = could not run (bad input, no cluster, refused); 4 = ftharness itself broke
EXIT_PASS, EXIT_FAIL, EXIT_CANNOT_RUN, EXIT_INCONCLUSIVE, EXIT_INTERNAL = 0, 1, 2, 3, 4
EXIT_CODES = {PASS: EXIT_PASS, FAIL: EXIT_FAIL, INCONCLUSIVE: EXIT_INCONCLUSIVE, ERROR: EXIT_INTERNAL}


def exit_code(verdict: str) -> int:
    return EXIT_CODES.get(verdict, EXIT_INTERNAL)


def overall(verdicts: List[str]) -> str:
    """A suite's verdict: an internal error, else any FAIL, else any INCONCLUSIVE, else PASS."""
    for v in (ERROR, FAIL, INCONCLUSIVE):
        if v in verdicts:
            return v
    return PASS if verdicts else INCONCLUSIVE


def facts(scenario: Scenario) -> Facts:
    """What the scenario says before it runs, for the properties it expects by default."""
    from ftharness.faults import REGISTRY

    kinds = [f.kind for f in scenario.faults]
    return Facts(reference_workload=scenario.workload.kind == "reference",
                 restarts=any(REGISTRY[k].budget is not None or REGISTRY[k].ends_fit for k in kinds),
                 retried=any(REGISTRY[k].budget is not None for k in kinds),
                 expect_outcome=scenario.expect.outcome,
                 monotonic=bool(scenario.expect.monotonic),
                 row_ids=scenario.workload.kind == "entrypoint" and scenario.workload.row_id is not None)


def applicable_properties(scenario: Scenario) -> List[str]:
    """The properties a run of this scenario can judge: the default of `expect.properties`."""
    pinned = {p.property for p in scenario.expect.violations}
    return [p for p in applicable(facts(scenario)) if p not in pinned]


def expected_properties(scenario: Scenario) -> List[str]:
    if scenario.expect.properties is not None:
        return list(scenario.expect.properties)
    return applicable_properties(scenario)


def recorded(events: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """What the runner wrote into the history for the verdict (docs/history.md): the
    failure_config and runtime of the first fit() (`run_start`), whether it was a soak, and
    the faults it injected (`run_end.fault_specs` of the last fit that has them). A key is
    absent when the history does not hold it (an older ftharness)."""
    out: Dict[str, Any] = {}
    for e in non_steps(events):
        kind = e.get("kind")
        if kind == "run_start" and "run_start" not in out:
            out["run_start"] = e
            for key in ("failure_config", "runtime", "soak"):
                if e.get(key) is not None:
                    out[key] = e[key]
        elif kind == "run_end" and isinstance(e.get("fault_specs"), list):
            out["fault_specs"] = e["fault_specs"]
    return out


def scenario_specs(scenario: Scenario) -> List[Dict[str, Any]]:
    """The scenario's faults as a run records them (`run_end.fault_specs`), to compare with the record."""
    return [spec_record(f) for f in scenario.faults]


def fault_landings(scenario: Scenario, events: List[Dict[str, Any]],
                   specs: Optional[List[Dict[str, Any]]] = None,
                   facts_: Optional[Dict[str, Any]] = None) -> List[Dict[str, Any]]:
    """summary.json's `faults`: for each fault (`specs`: those the run injected, a soak's
    or a Chaos Toolkit experiment's too; by default those the history recorded, else the
    scenario's), whether it landed and why. `facts_`: `recorded(events)`, when known
    (one pass over a long history fewer)."""
    from ftharness.faults import landings

    if specs is None:
        specs = (recorded(events) if facts_ is None else facts_).get("fault_specs")
    if specs is None:
        specs = list(scenario.faults)   # the spec models: no record to read them from
    torchrun = scenario.workload.runtime == "torchrun"
    out = []
    for i, (spec, landing) in enumerate(landings(specs, events)):
        budget = landing.budget
        if torchrun and budget is not None:   # TorchElastic charges every failure to its one budget
            budget = TORCHRUN_BUDGET
        out.append({"index": i, "kind": spec["kind"] if isinstance(spec, dict) else spec.kind, "landed": landing.status == "landed",
                    "status": landing.status, "evidence": landing.evidence,
                    "expected_budget": budget, "failure_seq": landing.failure_seq})
    return out


def check_context(scenario: Scenario, events, outcome, state, faults=None, facts_=None) -> PropertyContext:
    """What the properties read besides the history (every key PropertyContext declares, built
    here and nowhere else for a run); `facts_`: `recorded(events)`, when known."""
    if facts_ is None:
        facts_ = recorded(events)
    start = facts_.get("run_start", {})
    workload, missing = _recorded_workload(scenario, start, outcome, events)
    expected_budgets = {f["failure_seq"]: (f["expected_budget"], f["kind"], f["index"]) for f in faults or []
                        if f["landed"] and f["expected_budget"] and f["failure_seq"] is not None}
    context: PropertyContext = {
        "runtime": facts_.get("runtime") or scenario.workload.runtime,
        "ray_version": start.get("ray_version"),   # None: recorded before 2.51 support, i.e. on 2.60
        "failure_config": scenario.failure_config.model_dump(),
        "outcome": outcome.get("outcome"),
        "error_type": outcome.get("error_type"),
        "workload": workload,
        #: why a reference workload's config is unknown (run_start.workload missing or unreadable):
        #: what needs it (final state, lineage end, sampler rows, cadence) is then not judged
        "workload_missing": missing,
        "data": (scenario.workload.data if scenario.workload.kind == "reference"
                 else "ray_data" if scenario.workload.datasets else None),
        "expected_final": (state or {}).get("expected"),
        "final": (state or {}).get("accumulators"),
        "recovery_bound_s": scenario.expect.recovery_bound_s,
        "max_lost_steps": scenario.expect.max_lost_steps,
        "monotonic": list(scenario.expect.monotonic or []),
        "injected": [e for e in non_steps(events) if e.get("kind") == "fault_injected"],
        "expected_budgets": expected_budgets,
        "landed": [{"index": f["index"], "kind": f["kind"], "failure_seq": f["failure_seq"]}
                   for f in faults or [] if f["landed"]],
        #: what the causal model takes as given (ftharness.history.causal.Declared)
        "declared": declared(scenario, facts_),
        #: the health-check timeout a recovery may wait for: the declared one, when a fault of the scenario
        #: is only noticed after it (recovers)
        "health_check_s": _health_wait(scenario),
        #: the checkpoint cadence the scenario declares (a bound never comes from the run it judges)
        "checkpoint_every": scenario.workload.checkpoint_every if scenario.workload.kind == "reference" else None,
    }
    return context


def _recorded_workload(scenario: Scenario, start: Dict[str, Any], outcome, events):
    """(the reference workload's recorded config, None) or (None, why it is unknown); (None,
    None) for a user job, which has none."""
    if scenario.workload.kind != "reference":
        return None, None
    raw = start.get("workload") if isinstance(start, dict) else None
    if not isinstance(raw, dict) or not raw:
        return None, "the run's workload config (run_start.workload) is not in the history"
    try:
        return WorkloadConfig(**raw).ended_at(final_step(outcome, events)).to_dict(), None
    except (TypeError, ValueError, AttributeError, OverflowError) as e:
        return None, f"the run's workload config (run_start.workload) cannot be read ({type(e).__name__})"


def run_properties(scenario, events, outcome, state, faults=None, model=None,
                   facts_=None) -> Dict[str, Dict[str, Any]]:
    """Every property over the history (`model`: its History, `facts_`: `recorded(events)`,
    when already known), less the opt-in ones the scenario does not judge (their evidence is
    recorded only when asked for: shown, they would only say it is missing)."""
    context = check_context(scenario, events, outcome, state, faults, facts_)
    asked = set(scenario.expect.properties or []) | {v.property for v in scenario.expect.violations}
    names = [p for p in PROPERTIES if p not in OPT_IN or p in asked]
    results = run_checks(events if model is None else model, context, names)
    return {name: {"status": r.status, "passed": r.passed, "explanation": r.explanation,
                   "findings": list(r.findings), "violations": list(r.violations),
                   "standing": list(getattr(r, "standing", []))}
            for name, r in results.items()}


#: history problems that say an event was lost (never arrived, or the file was cut short),
#: so what is present is as written; any other problem (a changed, removed, duplicated or
#: reordered line) leaves nothing in the file to stand on
LOST_MARKS = ("never reached the history", "no history_end", "torn last line dropped", "no run_end")


def gap_kind(problems: Optional[List[str]]) -> Optional[str]:
    """None (complete), "lost" (events missing, the rest as written) or "altered"."""
    if not problems:
        return None
    return "lost" if all(any(m in p for m in LOST_MARKS) for p in problems) else "altered"


def unasked_failures(scenario: Scenario, props: Dict[str, Dict[str, Any]],
                     expected: List[str]) -> List[Dict[str, str]]:
    """Properties judged and failed that the scenario neither expects nor pins: shown as a
    warning (summary.json `unasked_failures`, the terminal), never changing the verdict."""
    pinned = {p.property for p in scenario.expect.violations}
    return [{"property": name, "explanation": v["explanation"]} for name, v in props.items()
            if v["status"] == "failed" and name not in expected and name not in pinned]


def pin_problems(scenario: Scenario, props: Dict[str, Dict[str, Any]]) -> Tuple[List[str], List[str]]:
    """(fail reasons, inconclusive reasons) for the pinned violations: a pin is
    met only by a failure whose every violation carries one of its reasons."""
    fail, unknown = [], []
    reasons: Dict[str, List[str]] = {}
    for pin in scenario.expect.violations:
        reasons.setdefault(pin.property, []).append(pin.reason)
    for name, wanted in reasons.items():
        verdict = props.get(name) or {"status": "not_judged", "explanation": "not run"}
        if verdict["status"] == "not_judged":
            unknown.append(f"pinned property {name} could not be judged: {verdict['explanation']}")
        elif verdict["status"] == "passed":
            fail.append(f"property {name} held, but the scenario pins a known violation of it "
                        f"({'; '.join(wanted)}): the gap may have closed")
        else:
            other = [v for v in verdict.get("violations") or [verdict["explanation"]]
                     if not any(r.lower() in v.lower() for r in wanted)]
            if other:
                fail.append(f"property {name} failed for a reason that is not pinned: {other[0]}"
                            + (f" (+{len(other) - 1} more)" if len(other) > 1 else ""))
    return fail, unknown


def evaluate(scenario: Scenario, events: List[Dict[str, Any]], outcome: Dict[str, Any],
             history_problems: Optional[List[str]] = None,
             fault_specs: Optional[List[Dict[str, Any]]] = None) -> RunSummary:
    """The verdict of a run (docs/verdicts.md): PASS only on complete evidence.

    - FAIL: a property expected to hold was violated, a pinned violation did not
      occur as pinned, or (with every fault landed and a complete history) the
      outcome differs from `expect`.
    - INCONCLUSIVE: the history has a gap, a fault did not land, or an expected
      property could not judge anything; each reason is named.
    """
    with gc_paused():   # one pass over many objects: see ftharness.history.records.gc_paused
        return _evaluate(scenario, events, outcome, history_problems, fault_specs)


def _evaluate(scenario: Scenario, events: List[Dict[str, Any]], outcome: Dict[str, Any],
              history_problems: Optional[List[str]], fault_specs: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    known = _safe(recorded, events, None)   # one pass for all its readers (None: each meets the damage)
    facts_ = {} if known is None else known
    damage = _safe(causal.type_damage, events, [])   # odd values: named damage, then left out of every rule
    events = causal.well_typed(events) if damage else events
    faults = fault_landings(scenario, events, fault_specs, known)
    model = _safe(History, events, events)  # one model for all; on a malformed history each figure fails alone
    # (after the model: the epochs final_state draws are kept for shard_reassignment, and a long
    # history's model is built without them in memory)
    state = _safe(lambda evs: final_state(scenario, evs, outcome), events, None)
    props = run_properties(scenario, events, outcome, state, faults, model, known)
    expected = expected_properties(scenario)
    gap = gap_kind(history_problems) or ("altered" if damage else None)   # odd values: a damaged record
    violated, unknown = [], [f"history: {p}" for p in history_problems or []]
    found = _safe(lambda m: causal.build(m, declared(scenario, facts_, fault_specs)).findings, model, None)
    if found is None:
        unknown.append("model: the history could not be read as a run")
    for f in damage + (found or []):   # the record disagrees with itself (docs/verdicts.md, "One model of the run")
        if f.blame == causal.SYSTEM and (gap is None or (gap == "lost" and not f.absence)):
            violated.append(f.line())
        else:
            unknown.append(f.line())
    unknown += release_problems(facts_)
    unknown += [f"fault {f['index']} ({f['kind']}) did not land: {evidence_text(f['evidence'])}"
                for f in faults if not f["landed"]]
    unknown += _recorded_mismatches(scenario, facts_, fault_specs) + _unrecorded(scenario, events, facts_, faults)
    if facts_.get("soak") is not None and not any(e.get("kind") == "fault_injected" for e in non_steps(events)):
        unknown.append("the soak injected no fault: it tested nothing (a longer --duration or a shorter --mtbf)")
    evidence_complete = not unknown
    outcome_mismatch = []
    if outcome.get("outcome") != scenario.expect.outcome:
        got = outcome.get("outcome") or "not recorded"
        outcome_mismatch.append(f"outcome {got} (expected {scenario.expect.outcome})")
    want = scenario.expect.error_type
    if want and want not in (outcome.get("error_type"), outcome.get("error_cause")):
        cause = outcome.get("error_cause")
        raised = f"{outcome.get('error_type')}" + (f" (its constructor raised {cause})" if cause else "")
        outcome_mismatch.append(f"error_type {raised} (expected {want})")
    for key, check in (("charged", charged_mismatches), ("worker_failure_types", worker_failure_mismatches)):
        lines = _safe(lambda evs: check(scenario, evs), events, None)
        if lines is None:
            unknown.append(f"expect.{key}: the history could not be read for it")
        outcome_mismatch += lines or []
    for name in expected:
        verdict = props[name]
        if verdict["status"] == "failed":
            standing = verdict.get("standing") or []
            if gap is None:
                violated.append(f"property {name} failed: {verdict['explanation']}")
            elif gap == "lost" and standing:   # stands on events a lost one cannot explain
                violated.append(f"property {name} failed: {'; '.join(standing[:3])}")
            else:
                unknown.append(f"property {name} failed, but the history has a gap that may explain it: "
                               f"{verdict['explanation']}")
        elif verdict["status"] == "not_judged":
            unknown.append(f"property {name} {verdict['explanation']}")
    pin_fail, pin_unknown = pin_problems(scenario, props)
    pin_held = [m for m in pin_fail if "the gap may have closed" in m]
    if gap is None:
        violated += [m for m in pin_fail if m not in pin_held]
    else:
        unknown += [f"{m}, but the history has a gap" for m in pin_fail if m not in pin_held]
    unknown += pin_unknown
    if evidence_complete:
        violated = outcome_mismatch + violated + pin_held
    else:  # without its evidence an outcome, or a violation that did not occur, proves nothing
        unknown += [f"{m}, but the evidence is incomplete" for m in outcome_mismatch + pin_held]
    verdict = FAIL if violated else INCONCLUSIVE if unknown else PASS
    steps = _safe(last_step, model, 0)
    job = _safe(lambda evs: job_error(evs, outcome, steps), events, None)
    if job is not None and verdict != PASS:   # a job that cannot train is named first (scenarios/job_error.py)
        (violated if verdict == FAIL else unknown).insert(0, job["reason"])
    return {
        "scenario": scenario.name,
        "runtime": scenario.workload.runtime,
        "verdict": verdict,
        "outcome": outcome.get("outcome"),
        "error": outcome.get("error"),
        "error_type": outcome.get("error_type"),
        "error_cause": outcome.get("error_cause"),
        "matches_expectation": verdict == PASS,
        "mismatches": violated,
        "inconclusive": unknown,
        "expected_properties": expected,
        "attempts": _safe(attempts, model, 0),
        "steps": steps,
        "job_error": job,
        "budgets": budgets_used(events),
        "failure_config": facts_.get("failure_config") or scenario.failure_config.model_dump(),
        "faults": faults,
        "properties": props,
        "unasked_failures": unasked_failures(scenario, props, expected),
        "history": {"complete": not history_problems, "problems": list(history_problems or [])},
        "recovery_times_s": _safe(recovery_times, model, []),
        "final_state": state,
        "metrics": outcome.get("metrics"),
        "run_metrics": _run_metrics(model),
        "events": len(events),
    }


def charged_mismatches(scenario: Scenario, events: Iterable[Dict[str, Any]]) -> List[str]:
    """`expect.charged` against the failures the history charged to each budget (the summary's
    `budgets`): one line per budget whose count differs."""
    want = scenario.expect.charged or {}
    used = budgets_used(events) if want else {}
    return [f"charged {b} {used.get(b, 0)} (expected {n})" for b, n in sorted(want.items()) if used.get(b, 0) != n]


def last_worker_failures(events: Iterable[Dict[str, Any]]) -> Optional[Dict[str, str]]:
    """{rank: exception class} of the last controller state that names worker failures
    (`controller_state.worker_failures`, the error's own `worker_failures`); None when none does."""
    last = None
    for e in non_steps(events):
        failures = e.get("worker_failures") if e.get("kind") == "controller_state" else None
        if isinstance(failures, dict) and failures:
            last = {str(k): str(v) for k, v in failures.items()}
    return last


def worker_failure_mismatches(scenario: Scenario, events: Iterable[Dict[str, Any]]) -> List[str]:
    """`expect.worker_failure_types` against the last recorded worker failures: one line per rank
    that failed with another class, or not at all."""
    want = scenario.expect.worker_failure_types or {}
    if not want:
        return []
    got = last_worker_failures(events)
    if got is None:
        return [f"worker_failure_types: no worker failure recorded (expected {_types_text(want)})"]
    return [f"worker_failure_types rank {r} {got.get(r, 'did not fail')} (expected {cls})"
            for r, cls in sorted(want.items(), key=lambda kv: int(kv[0])) if got.get(r) != cls]


def _types_text(types: Dict[str, str]) -> str:
    return ", ".join(f"rank {r} {c}" for r, c in sorted(types.items(), key=lambda kv: int(kv[0])))


def declared(scenario: Scenario, facts_: Dict[str, Any],
             fault_specs: Optional[List[Dict[str, Any]]] = None) -> causal.Declared:
    """What the causal model may take as given: the scenario (its faults as the run injected them,
    its runtime, its detection profile's health-check timeout), never what the run recorded of itself."""
    specs = fault_specs if fault_specs is not None else _safe(lambda _: scenario_specs(scenario), None, [])
    profile = scenario.cluster.profile if scenario.cluster.address is None else None
    from ftharness.faults import echoes_of, kind_facts

    w = scenario.workload
    reference = w.kind == "reference"
    return causal.Declared(runtime=w.runtime, fault_specs=tuple(specs or ()), reference=reference,
                           health_check_timeout_s=_health_check_timeout_s(scenario, profile),
                           num_workers=tuple(w.num_workers) if isinstance(w.num_workers, (tuple, list)) else w.num_workers,
                           checkpoint_every=w.checkpoint_every if reference else None,
                           steps=w.steps if reference and w.duration_s is None else None,
                           kinds=kind_facts(), echoes=tuple(echoes_of(s) for s in (specs or ())))


def _health_check_timeout_s(scenario: Scenario, profile: Optional[str]) -> float:
    """How long Ray Train waits for a hung worker: the scenario's own cluster.train_env setting,
    else its profile's (or the release's default)."""
    own = scenario.cluster.train_env.get("RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S")
    try:
        return float(own) if own is not None else profiles.health_check_timeout_s(profile)
    except (TypeError, ValueError):
        return profiles.health_check_timeout_s(profile)


def _health_wait(scenario: Scenario) -> float:
    from ftharness.faults import REGISTRY

    waits = any(getattr(REGISTRY.get(f.kind), "waits_for_health_check", False) for f in scenario.faults)
    return declared(scenario, {}).health_check_timeout_s if waits else 0.0


def release_problems(facts_: Dict[str, Any]) -> List[str]:
    """A history is judged by the rules of the release it recorded: one ftharness does not
    support (or cannot read) has no rules here, and a setting that release lacks was not in force."""
    version = (facts_.get("run_start") or {}).get("ray_version")
    if version is None:   # recorded before ftharness wrote the release down: all such runs were on 2.60
        return []
    rel = releases.release(version) if isinstance(version, str) else None
    if rel is None:
        return [f"release: the history was recorded on Ray {str(version)[:40]!r}, which ftharness does not "
                f"support ({releases.RANGE_TEXT}): no release's rules judge it"]
    out = []
    config = facts_.get("failure_config")
    for name, value in (config.items() if isinstance(config, dict) else ()):
        if name not in rel.failure_config and releases.field_needs(name) is not None:
            out.append(f"release: the history records failure_config.{name} = {str(value)[:20]}, a setting Ray "
                       f"{rel.name} does not have (from {releases.field_needs(name).name}): it was not in force")
    return out


def _recorded_mismatches(scenario: Scenario, facts_: Dict[str, Any],
                         fault_specs: Optional[List[Dict[str, Any]]]) -> List[str]:
    """Where the scenario (an editable scenario.yaml) says other than what the run recorded:
    the history was judged by what it recorded, but it may not be the run the scenario asks for."""
    out = []
    specs = facts_.get("fault_specs")
    mine = _safe(lambda _: scenario_specs(scenario), None, [])
    if fault_specs is None and specs is not None and specs[:len(mine)] != mine:
        out.append(f"the scenario's faults differ from those the run recorded (run_end.fault_specs, "
                   f"{len(specs)} fault(s)): judged by the recorded ones")
    runtime = facts_.get("runtime")
    if runtime is not None and runtime != scenario.workload.runtime:
        out.append(f"the run recorded runtime {runtime}, the scenario says {scenario.workload.runtime}")
    start = facts_.get("run_start") or {}
    recorded, mine = start.get("workload"), _safe(lambda _: {**_workload_defaults(), **scenario.workload.model_dump()},
                                                  None, {})
    if scenario.workload.kind == "reference" and isinstance(recorded, dict):
        for key in WORKLOAD_KEYS:   # the run may not be the one the scenario asks for: name each difference
            if key in recorded and key in mine and recorded[key] != mine[key]:
                out.append(f"the run recorded workload.{key} = {str(recorded[key])[:30]}, the scenario says "
                           f"{str(mine[key])[:30]}: judged by the scenario's")
    n = start.get("num_workers")
    if type(n) is int and isinstance(scenario.workload.num_workers, int) and n != scenario.workload.num_workers:
        out.append(f"the run recorded num_workers = {n}, the scenario says {scenario.workload.num_workers}")
    gpu = recorded.get("use_gpu") if isinstance(recorded, dict) else None
    if isinstance(scenario.workload.use_gpu, bool) and isinstance(gpu, bool) and gpu != scenario.workload.use_gpu:
        out.append(f"the run recorded workload.use_gpu = {gpu}, the scenario says {scenario.workload.use_gpu}")
    health = start.get("health_check_timeout_s")
    if scenario.cluster.address is None and type(health) in (int, float) and scenario.workload.runtime != "torchrun":
        want = declared(scenario, facts_).health_check_timeout_s
        if abs(float(health) - want) > 1e-6:
            out.append(f"the run recorded Ray Train's worker health-check timeout {health:g} s, the scenario's "
                       f"detection profile declares {want:g} s")
    restarts = start.get("max_restarts")
    if type(restarts) is int and scenario.workload.runtime == "torchrun" \
            and restarts != scenario.failure_config.max_failures:
        out.append(f"the run's agents recorded --max-restarts {restarts}, the scenario's max_failures is "
                   f"{scenario.failure_config.max_failures}")
    return out


def _workload_defaults() -> Dict[str, Any]:
    """The reference workload's own settings a scenario cannot change (features, seed, lr)."""
    import dataclasses

    return {f.name: f.default for f in dataclasses.fields(WorkloadConfig)
            if f.name in ("features", "seed", "lr") and f.default is not dataclasses.MISSING}


#: the reference workload's settings a run records in run_start.workload and the verdict compares
WORKLOAD_KEYS = ("steps", "batch_size", "epochs", "checkpoint_every", "model", "data", "features", "seed", "lr",
                 "step_delay_s", "jit_checkpoint", "rows_per_epoch")


def _unrecorded(scenario: Scenario, events: List[Dict[str, Any]], facts_: Dict[str, Any],
                faults: List[Dict[str, Any]]) -> List[str]:
    """Facts a verdict needs that an older history lacks: INCONCLUSIVE, never a silent skip."""
    out = []
    known = {f["index"] for f in faults}
    extra = sorted({e.get("fault") for e in non_steps(events) if e.get("kind") in ("fault_injected", "fault_skipped")
                    and type(e.get("fault")) is int and e.get("fault") not in known})
    if extra:   # an old soak's (its faults came from its plan), or a scenario.yaml with faults left out
        out.append(f"fault(s) {', '.join(map(str, extra))} were injected but neither the history "
                   f"(run_end.fault_specs) nor the scenario specifies them: their landing is unknown")
    workload = (facts_.get("run_start") or {}).get("workload")
    if (scenario.workload.duration_s is not None and isinstance(workload, dict) and "stop_at" not in workload):
        out.append("the run trained to a deadline (workload.duration_s) that its history does not record "
                   "(run_start.workload.stop_at, an older ftharness): where it should end is unknown")
    return out


def _safe(fn, events, default):
    """A figure of a malformed history is unknown; it never hides the verdict."""
    try:
        return fn(events)
    except Exception:  # noqa: BLE001
        return default


def _run_metrics(events: Events) -> Dict[str, Any]:
    """summary.json's `run_metrics` (ftharness.history.model.History.run_metrics)."""
    try:
        return as_history(events).run_metrics()
    except Exception as e:  # metrics must never hide the verdict
        return {"error": f"{type(e).__name__}: {e}"}
