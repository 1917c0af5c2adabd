"""budget_accounting: each failure is charged where Ray's policy charges it,
counted, and decided (RETRY/RAISE) as the failure config says; the run fails
exactly when a RAISE happened."""

from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Tuple

from ftharness.history import causal
from ftharness.history.columns import non_steps
from ftharness.history.model import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, Fit, History, as_history
from ftharness.scenarios import policy_model
from ftharness.scenarios.properties.base import (CheckResult, Events, PropertyContext, always, controller_killed,
                                                 failure_text, known_kinds, not_judged, recorded_failure_config,
                                                 unknown_or_result)

ERROR_BUDGETS = {              # budgets Ray may charge each raised error type to
    "ControllerError": {"controller", NOT_RETRYABLE},
    "PreemptionError": {"preemption"},
    "WorkerGroupError": {"worker_group", "preemption"},
}
#: other names a fault's `budget` hint may use: the FailureConfig fields, and a spelling with a space
BUDGET_ALIASES = {**{name: budget for budget, name in LIMIT_FIELD.items()}, "worker group": "worker_group"}
#: when faults share a failure, the budget Ray checks first wins
PRECEDENCE = {NOT_RETRYABLE: 3, "controller": 3, "preemption": 2, "worker_group": 1}


applies = always   # every scenario can judge it


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Each failure is charged where Ray's policy charges it, counted, and
    decided (RETRY/RAISE) as the failure config says; the run fails exactly
    when a RAISE happened."""
    h = as_history(events)
    no_outcome = all(h.outcome(f, context)[0] is None for f in h.fits.values())
    if not any(f.failures for f in h.fits.values()) and no_outcome:  # a mis-charge is judged without one
        return not_judged("budget_accounting", "no failure and no fit() outcome was recorded")
    if policy_model.is_torchrun(context, h.failures()):
        return _check_torchrun(h, context)
    violations: List[str] = []
    findings: List[str] = []
    unknown: List[str] = []
    version = context.get("ray_version")
    hints = {seq: (policy_model.charged(hint[0], version), *hint[1:])   # as the recorded release charges them
             for seq, hint in _budget_hints(h, context, findings).items()}
    standing: List[str] = []
    config: dict = {}
    for fit in [h.fits[i] for i in sorted(h.fits)]:
        config, mismatched = recorded_failure_config(h, fit.index, context)
        unknown += [m for m in mismatched if m not in unknown]
        charges = _charge_violations(h, fit, hints, policy_model.rules(version))
        charges += _preemption_evidence(h, fit, context, policy_model.rules(version), unknown)
        standing += charges
        violations += charges
        violations += _decision_violations(h, fit, config, unknown, version, findings)
        violations += _outcome_violations(h, fit, context, findings)
    failures = [f for fit in h.fits.values() for f in fit.failures]
    counts = Counter(f.get("budget") for f in failures)
    limits = policy_model.limits(config, version)
    summary = (f"{len(failures)} failure(s) charged as Ray's policy does "
               f"({', '.join(f'{b}: {n}' for b, n in sorted(counts.items())) or 'none'}); "
               f"decisions, counts, limits and outcome follow the recorded limits "
               f"({', '.join(f'{b} {_limit_text(n)}' for b, n in limits.items())})")
    return unknown_or_result("budget_accounting", violations, unknown, findings, summary, standing)


def _limit_text(limit: int) -> str:
    return "inf" if limit == -1 else str(limit)


def _normal_budget(budget: Optional[str]) -> Optional[str]:
    return BUDGET_ALIASES.get(budget, budget) if budget else None


def _budget_hints(h: History, context: PropertyContext, findings: List[str]) -> Dict[int, Tuple[str, str]]:
    """Failure seq -> (budget, fault kind) the injected faults say it is charged to.

    A real run's context has `expected_budgets`: derived from each fault's
    landing evidence (faults/*: which fault caused which failure, when the
    preempted node died against its deadline), independently of what Ray
    recorded. Otherwise (synthetic histories) a fault is matched to the first
    failure after its `fault_injected` event; faults that share a failure give
    it the budget Ray checks first; without `fault_injected` events, hinted
    faults and failures are paired in order.
    """
    if context.get("expected_budgets") is not None:
        out: Dict[int, Tuple[str, str]] = {}
        for seq, hint in context["expected_budgets"].items():
            budget, kind = hint[0], hint[1]
            seq = int(seq)
            if seq not in out or PRECEDENCE.get(budget, 0) > PRECEDENCE.get(out[seq][0], 0):
                out[seq] = (budget, kind, *hint[2:3])   # with the fault's index when the landing gives it
        return out
    injected = [(f.get("fault", i), f) for i, f in enumerate(context.get("injected") or [])]
    hinted = [(idx, _normal_budget(f.get("budget")), f.get("kind")) for idx, f in injected
              if _normal_budget(f.get("budget"))]
    failures = [f for fit in h.fits.values() for f in fit.failures]
    done = {e.get("fault"): e for e in non_steps(h.events) if e.get("kind") == "fault_injected"}
    if not done:
        return {f["seq"]: (b, kind) for (_, b, kind), f in zip(hinted, failures)}
    hints: Dict[int, Tuple[str, str]] = {}
    for idx, budget, kind in hinted:
        if idx not in done:
            continue
        after = [f for f in failures if f.get("seq", 0) > done[idx].get("seq", 0)]
        if not after:
            findings.append(f"fault {idx} ({kind}, seq {done[idx].get('seq')}) was followed by no failure")
            continue
        seq = after[0]["seq"]
        if seq not in hints or PRECEDENCE.get(budget, 0) > PRECEDENCE.get(hints[seq][0], 0):
            hints[seq] = (budget, kind)
    return hints



def _charge_violations(h: History, fit: Fit, hints: Dict[int, tuple], release) -> List[str]:
    """The budget of each failure agrees with the injected fault, its error type and
    the budgets the recorded release has."""
    out = []
    for f in fit.failures:
        budget, hint = f.get("budget"), hints.get(f.get("seq"))
        allowed = ERROR_BUDGETS.get(f.get("error_type"), set(BUDGETS) | {NOT_RETRYABLE})
        if budget in BUDGETS and budget not in release.budgets:
            out.append(f"{failure_text(h, f)} charged to {budget}; Ray {release.name} has no {budget} budget")
        elif hint and budget != hint[0]:
            out.append(f"{failure_text(h, f)} charged to {budget}; the injected {hint[1]} "
                       f"is charged to {hint[0]}")
        elif budget not in allowed:
            out.append(f"{failure_text(h, f)} charged to {budget}; Ray charges it to "
                       f"{' or '.join(sorted(allowed))}")
    return out


def _preemption_evidence(h: History, fit: Fit, context: PropertyContext, release, unknown: List[str]) -> List[str]:
    """A failure charged to the preemption budget (on a release that has one) needs a preemption
    to stand on, read from the causal model: a node that hosted ranks of the failed attempt was
    drained for preemption, and either died at or after its own deadline before the failure (a
    preempted death, measured from the kill's own time and the drain's deadline), or the
    controller waited the deadline out (a PreemptionError decided at or after it)."""
    if "preemption" not in release.budgets:
        return []
    from ftharness.faults import kinds_that

    preempting = kinds_that(causes="preemption")   # the kinds that drain a node with a deadline
    model = causal.build(h, context.get("declared") or known_kinds())
    out = []
    for f in fit.failures:
        if f.get("budget") != "preemption":
            continue
        t = f.get("t") if isinstance(f.get("t"), (int, float)) and not isinstance(f.get("t"), bool) else None
        group = model.groups.get(f.get("attempt_id"))
        nodes = {node for _, node in group.workers.values()} if group is not None else set(model.drains)
        drained = [n for n in nodes if n in model.drains]
        undated = [e for e in model.injections.values() if e.get("fault_kind") in preempting and not drained
                   and ((e.get("target_hit") or {}).get("node_id") in nodes
                        or not (e.get("target_hit") or {}).get("node_id"))]
        if undated:   # our own record of the drain lost its deadline: nothing to judge the charge by
            unknown.append(f"{failure_text(h, f)} charged to preemption: the drain of node "
                           f"{str((undated[0].get('target_hit') or {}).get('node_id'))[:8]} recorded no deadline, "
                           f"so whether it died a preempted death is unknown")
            continue
        if not drained:
            out.append(f"{failure_text(h, f)} charged to preemption, but no node of its attempt was drained "
                       f"for preemption")
            continue
        waited = f.get("error_type") == "PreemptionError"
        if t is None or not any(model.preemption_before(n, t, waited) for n in drained):
            deaths = [f"node {str(n)[:8]} {'died' if n in model.node_deaths else 'did not die'}"
                      + (f" {model.node_deaths[n][0] - model.drains[n][0] / 1000:+.1f} s from its deadline"
                         if n in model.node_deaths else "") for n in drained]
            out.append(f"{failure_text(h, f)} charged to preemption, but no drained node of its attempt died at "
                       f"or after its deadline before it ({'; '.join(deaths)}), and it was not decided after a "
                       f"drain deadline ran out")
    return out


def _decision_violations(h: History, fit: Fit, config: dict, unknown: List[str],
                         version: Optional[str] = None, findings: Optional[List[str]] = None) -> List[str]:
    """Counts run 1, 2, ... per budget, each failure carries the limit of its budget, and RAISE
    happens exactly when count > limit; a failure of a budget that records no count or counts
    leaves its accounting unknown (`unknown`), never passed; a missing limit is a finding."""
    findings = [] if findings is None else findings
    classes = [policy_model.failure_class(f.get("budget"), f.get("error_type")) for f in fit.failures]
    known = [(f, c) for f, c in zip(fit.failures, classes) if c is not None]
    out = [f"{failure_text(h, f)} has unknown budget {f.get('budget')!r}"
           for f, c in zip(fit.failures, classes) if c is None]
    model = policy_model.expected_outcome(config, [c for _, c in known], version)
    for (f, _), d in zip(known, model.decisions):
        charged = d.budget != NOT_RETRYABLE
        missing = [k for k in ("count", "counts") if charged and f.get(k) is None]
        if missing:
            unknown.append(f"{failure_text(h, f)} records no {' or '.join(missing)}: its accounting is unknown")
        elif charged and f.get("limit") is None:   # the decision against the recorded config still judges it
            findings.append(f"{failure_text(h, f)} records no limit: the decision is judged against the "
                            f"run's failure_config alone")
        if f.get("count") is not None and f["count"] != d.count:
            out.append(f"{failure_text(h, f)}: {d.budget} count {f['count']}, expected {d.count}")
        if charged and f.get("limit") is not None and f["limit"] != d.limit:
            out.append(f"{failure_text(h, f)}: decided with {d.budget} limit {_limit_text(f['limit'])}, "
                       f"the run's failure_config sets {_limit_text(d.limit)}")
        if f.get("decision") != d.decision:
            out.append(f"{failure_text(h, f)}: {f.get('decision')} with {d.budget} count {d.count} "
                       f"and limit {_limit_text(d.limit)}; Ray decides {d.decision}")
        counts = f.get("counts")
        if isinstance(counts, dict) and {b: counts.get(b, 0) for b in BUDGETS} != d.counts:
            out.append(f"{failure_text(h, f)}: counts {counts}, expected {d.counts}")
        elif counts is not None and not isinstance(counts, dict):
            out.append(f"{failure_text(h, f)}: counts {counts!r} is no mapping of budgets")
    for f, _ in known[len(model.decisions):]:
        out.append(f"{failure_text(h, f)} came after the run had already raised")
    return out + _attempts_after_raise(h, fit)


def _attempts_after_raise(h: History, fit: Fit) -> List[str]:
    raises = [f for f in fit.failures if f.get("decision") == "RAISE"]
    if not raises:
        return []
    first = raises[0].get("seq", 0)
    return [f"{h.label(a.key)} started (seq {a.start_seq}) after the RAISE at seq {first}"
            for a in h.ordered() if a.key[0] == fit.index and a.start and a.start_seq > first]


def _outcome_violations(h: History, fit: Fit, context: PropertyContext, findings: List[str]) -> List[str]:
    """The fit failed exactly when a RAISE happened, with the raised error."""
    outcome, error_type = h.outcome(fit, context)
    raises = [f for f in fit.failures if f.get("decision") == "RAISE"]
    where = f"fit {fit.index}"
    if outcome is None:
        findings.append(f"{where} has no outcome (no run_end)")
        return []
    if outcome == "succeeded":
        return [f"{where} succeeded after the RAISE at seq {raises[0].get('seq')}"] if raises else []
    if raises:
        raised = raises[0].get("error_type")
        if error_type and raised and error_type != raised:
            return [f"{where} failed with {error_type} but the RAISE at seq {raises[0].get('seq')} "
                    f"was for {raised}"]
        return []
    if error_type == "ActorDiedError" and controller_killed(h, context) is not False:
        findings.append(f"{where} failed with ActorDiedError and no failure event: the controller died")
        return []
    return [f"{where} failed ({error_type}) without a RAISE: after {len(fit.failures)} failure(s) "
            f"the budgets still allowed a retry"]


# --------------------------------------------------------------- TorchElastic
#: budgets a torchrun agent may charge each error type to (policy_model.torchrun_expectation)
TORCHRUN_ERROR_BUDGETS = {policy_model.TORCHRUN_RAISED: {policy_model.TORCHRUN_BUDGET},
                          "MembershipChange": {policy_model.TORCHRUN_MEMBERSHIP}}


def _check_torchrun(h: History, context: PropertyContext) -> CheckResult:
    """The torchrun rule: each agent counts its own group's failures against
    `--max-restarts` and retries while its count allows; an agent's own fatal
    error (rendezvous timed out or closed) is charged to no budget and raised;
    the run fails exactly when some agent raised."""
    violations: List[str] = []
    findings: List[str] = []
    unknown: List[str] = []
    standing: List[str] = []
    hints = _budget_hints(h, context, findings)
    limit = policy_model.torchrun_limit(context.get("failure_config"))
    for fit in [h.fits[i] for i in sorted(h.fits)]:
        config, mismatched = recorded_failure_config(h, fit.index, context)
        unknown += [m for m in mismatched if m not in unknown]
        limit = policy_model.torchrun_limit(config)
        for f in fit.failures:
            budget, hint = f.get("budget"), hints.get(f.get("seq"))
            want = TORCHRUN_ERROR_BUDGETS.get(f.get("error_type"), {NOT_RETRYABLE})
            if budget == policy_model.TORCHRUN_MEMBERSHIP and budget in want:
                own = _own_failure(h, f, hint, context)
                if own:
                    standing.append(f"{failure_text(h, f)} charged to membership (counted by nothing), but {own}: "
                                    f"TorchElastic charges it to {policy_model.TORCHRUN_BUDGET}")
                    violations.append(standing[-1])
                elif hint:
                    findings.append(f"{failure_text(h, f)}: the injected {hint[1]} restarted node {f.get('agent')}'s "
                                    f"group as a membership change, which TorchElastic does not count")
            elif hint and budget != hint[0]:
                standing.append(f"{failure_text(h, f)} charged to {budget}; the injected {hint[1]} "
                                f"is charged to {hint[0]}")
                violations.append(standing[-1])
            elif budget not in want:
                standing.append(f"{failure_text(h, f)} charged to {budget}; a torchrun agent charges "
                                f"{f.get('error_type')} to {' or '.join(sorted(want))}")
                violations.append(standing[-1])
        model, known = policy_model.fit_expectation(config, fit.failures, context)
        for f, d in zip(known, model.decisions):
            where = f"{failure_text(h, f)} on node {f.get('agent')}"
            if d.budget == policy_model.TORCHRUN_BUDGET:
                if f.get("count") is None:
                    unknown.append(f"{where} records no count: its accounting is unknown")
                elif f.get("limit") is None:
                    findings.append(f"{where} records no --max-restarts limit: judged against the run's alone")
            if d.budget == policy_model.TORCHRUN_BUDGET and f.get("count") is not None and f["count"] != d.count:
                violations.append(f"{where}: max_restarts count {f['count']}, expected {d.count} "
                                  f"(that agent's failures so far)")
            if f.get("decision") != d.decision:
                violations.append(f"{where}: {f.get('decision')} with count {d.count} and --max-restarts "
                                  f"{limit}; TorchElastic decides {d.decision}")
            if d.budget == policy_model.TORCHRUN_BUDGET and f.get("limit") is not None and f["limit"] != limit:
                violations.append(f"{where}: the agent ran with --max-restarts {f['limit']}, the scenario "
                                  f"asks for {limit}")
        violations += _attempts_after_raise(h, fit)
        violations += _outcome_violations(h, fit, context, findings)
    per_agent = Counter(f.get("agent") for f in h.failures() if f.get("budget") == policy_model.TORCHRUN_BUDGET)
    fatal = sum(1 for f in h.failures() if f.get("budget") == NOT_RETRYABLE)
    moved = sum(1 for f in h.failures() if f.get("budget") == policy_model.TORCHRUN_MEMBERSHIP)
    summary = (f"{sum(per_agent.values())} failure(s) charged to max_restarts as TorchElastic's agents count "
               f"them ({', '.join(f'node {a}: {n}' for a, n in sorted(per_agent.items(), key=str)) or 'none'})"
               f"{f', {moved} membership restart(s) not counted' if moved else ''}"
               f"{f', {fatal} fatal to an agent (no budget)' if fatal else ''}; decisions and outcome follow "
               f"--max-restarts {limit} per agent (Ray Train's separate worker-group, preemption and "
               f"controller budgets do not apply)")
    return unknown_or_result("budget_accounting", violations, unknown, findings, summary, standing)


def _own_failure(h: History, f: dict, hint, context: PropertyContext) -> str:
    """Why a torchrun failure recorded as a membership change was the agent's own group
    failing ('' when nothing says so): its own workers failed (`worker_failures`), or the
    fault its landing names hit a worker of that agent."""
    if f.get("worker_failures"):
        return f"node {f.get('agent')}'s own workers failed ({f['worker_failures']})"
    if not hint:
        return ""
    index = hint[2] if len(hint) > 2 else None
    hits = [e for e in non_steps(h.events) if e.get("kind") == "fault_injected"
            and (index is None or e.get("fault") == index) and e.get("fault_kind") == hint[1]]
    for e in hits:
        hit = e.get("target_hit") or {}
        agent = hit.get("agent")
        if agent is None and isinstance(hit.get("node_id"), str) and hit["node_id"].startswith("agent-"):
            agent = hit["node_id"][len("agent-"):]
        if agent is not None and str(agent) == str(f.get("agent")):
            return f"the injected {hint[1]} (fault {e.get('fault')}) hit node {agent}'s worker"
    return ""
