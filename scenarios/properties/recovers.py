"""recovers: when the budgets allowed it the run succeeded, and every recovery
Ray owed fit `recovery_bound_s`.

A recovery is `ftharness.history.model`'s: from the fault (or, with none, the
failed attempt's first error) to the first step of an attempt restarted after
the outage, the same number the reports' recovery table shows. One is owed per
outage in which a failure was retried.

The bound is `recovery_bound_s` (`expect.recovery_bound_s`) when the scenario
gives one, else `DEFAULT_RECOVERY_BOUND_S` plus, when a fault of the scenario is
only noticed after Ray Train's worker health check (a hung worker, a paused node),
the health-check timeout the scenario's detection profile declares (the release's
600 s without one): never the value the run recorded about itself. A recovery ends
when every rank of the restarted attempt has stepped (the slowest rank). The default is five times the slowest recovery the catalog
was seen to take (about 60 s: a hung worker on a loaded machine, README "What
Ray was seen to do"; the recorded runs in tests/data recovered in 19-30 s), so
a run that does not come back in minutes fails. A fault that landed (the
landings in `landed`) with no recovery measured in a run that succeeded is a
violation: something restarted the job, and nothing shows it training again.
"""

from __future__ import annotations

from typing import List

from ftharness.history.model import NOT_RETRYABLE, History, Recovery, as_history
from ftharness.scenarios import policy_model
from ftharness.scenarios.properties.base import (CheckResult, Events, Facts, PropertyContext, controller_killed,
                                                 failure_text, not_judged, recorded_failure_config, result)

#: seconds a recovery may take when the scenario gives no bound (see the module doc)
DEFAULT_RECOVERY_BOUND_S = 300.0


def applies(facts: Facts) -> bool:
    return facts.retried and facts.expect_outcome == "succeeded"


def check(events: Events, context: PropertyContext) -> CheckResult:
    """When the budgets allowed it the run succeeded, and every recovery owed
    (fault or failure -> first step of an attempt restarted after it) fit the bound."""
    h = as_history(events)
    fit = h.last_fit()
    config, _ = recorded_failure_config(h, fit.index, context)   # a mismatch is budget_accounting's to report
    model, known = policy_model.fit_expectation(config, fit.failures, context)
    if model.outcome == "failed":
        i = next(i for i, d in enumerate(model.decisions) if d.decision == "RAISE")  # Ray's is the last
        d, f = model.decisions[i], known[i]
        why = ("is not retryable" if d.budget == NOT_RETRYABLE else
               f"exhausted the {d.budget} budget (count {d.count} > limit {d.limit})")
        return not_judged("recovers", f"{failure_text(h, f)} {why}: no recovery owed")
    retried = any(f.get("decision") == "RETRY" for fi in h.fits.values() for f in fi.failures)
    landed = [f for f in context.get("landed") or [] if f.get("failure_seq") is not None]
    if not retried and not landed and h.outcome(fit, context)[0] == "succeeded":
        return not_judged("recovers", "no failure was retried: nothing to recover from")
    violations: List[str] = []
    findings: List[str] = []
    outcome, error_type = h.outcome(fit, context)
    if outcome is None:
        return not_judged("recovers", f"fit {fit.index} has no recorded outcome")
    raised = any(f.get("decision") == "RAISE" for f in fit.failures)
    if outcome == "failed" and error_type == "ActorDiedError" and not raised and controller_killed(h, context) is not False:
        # (budget_accounting holds an unexplained controller death against the run)
        return not_judged("recovers", f"fit {fit.index} ended ActorDiedError: its controller was killed, and Ray's "
                                      f"budgets retry no controller death (a second fit() resumes it): no recovery owed")
    if outcome != "succeeded":
        violations.append(f"fit {fit.index} ended {outcome or 'without an outcome'}"
                          f"{f' ({error_type})' if error_type else ''} although the budgets allowed a retry")
    bound, basis = _bound(h, context)
    owed, loose = h.retried_recoveries()
    findings += [f"{failure_text(h, f)} was retried in no recorded outage (no controller state change): "
                 f"its recovery is not measured" for f in loose]
    times = []
    for r in owed:
        if r.recovery_s is None:
            why = _unstepped(h, r) if outcome == "succeeded" else None
            if why is not None:   # a succeeded run whose restart never trained owes an explanation
                violations.append(f"{cause(h, r)}: {why}")
            else:
                findings.append(f"{cause(h, r)}: no step followed; the restart restored the run's last step")
            continue
        times.append(r.recovery_s)
        if bound is not None and r.recovery_s > bound:
            violations.append(f"recovery from {cause(h, r)} took {r.recovery_s:.2f} s (first step: "
                              f"{h.label(r.recovered)} seq {r.first_step.get('seq')}), "
                              f"over the {bound:g} s bound" + (f" ({basis})" if "default" in basis else ""))
    unmeasured = [r for r in owed if r.recovery_s is None]
    if landed and not times and not unmeasured and outcome == "succeeded":
        f = landed[0]
        violations.append(f"fault {f.get('index')} ({f.get('kind')}) landed (failure seq {f.get('failure_seq')}) "
                          f"but no recovery was recorded: no retried outage led to a restarted attempt's step")
    if not times and not violations:   # "0 recoveries" is no pass
        return not_judged("recovers", "; ".join(findings[:3]) or "no recovery was measured")
    slowest = f", slowest {max(times):.2f} s" if times else ""
    summary = (f"run succeeded; {len(times)} recovery(ies) from a fault or failure to the next first step"
               f"{slowest}{f' within the {bound:g} s bound ({basis})' if times else ''}")
    return result("recovers", violations, findings, summary)


def _unstepped(h: History, r: Recovery):
    """Why a retried outage of a run that succeeded, followed by no step, is no recovery (None: the
    restarted attempt restored the run's last step, so it had nothing left to train)."""
    outage = r.outage
    if outage is None:
        return None
    later = [a for a in h.ordered() if a.key[0] == outage.fit_index and a.start is not None
             and (a.start.get("t") or 0) >= outage.t]
    if not later:
        return "no attempt was started after it, yet the run succeeded"
    last = h.last_step()
    restored = [w.get("restored_step") for a in later for w in a.worker_starts]
    if any(type(s) is int and s == last for s in restored):
        return None
    got = sorted({s for s in restored if type(s) is int})
    return (f"no attempt started after it stepped, and none restored the run's last step {last} "
            f"({'restored step(s) ' + ', '.join(map(str, got)) if got else 'no rank started'})")


def _bound(h: History, context: PropertyContext):
    """(seconds a recovery may take, where that comes from): the scenario's bound, else the default
    plus, where a fault of the scenario is only noticed after a health check, the health-check
    timeout the scenario's detection profile (or the release) declares; never the run's own record."""
    if context.get("recovery_bound_s") is not None:
        return float(context["recovery_bound_s"]), "expect.recovery_bound_s"
    health = context.get("health_check_s")
    if health is None and "declared" not in context:   # a synthetic history judged alone: the recorded one
        start = next((f.start for _, f in sorted(h.fits.items()) if f.start is not None), None) or {}
        health = start.get("health_check_timeout_s")
    health = float(health) if type(health) in (int, float) and health >= 0 else 0.0
    return DEFAULT_RECOVERY_BOUND_S + health, (f"default {DEFAULT_RECOVERY_BOUND_S:g} s"
                                               + (f" + the {health:g} s health-check timeout" if health else ""))


def cause(h: History, r: Recovery) -> str:
    """'fault 0 (kill_worker), failure seq 57 (attempt 1, WorkerGroupError)'."""
    failure = failure_text(h, next(f for f in r.outage.failures if f.get("decision") == "RETRY"))
    return failure if r.injected is None else f"fault {r.fault} ({r.fault_kind}), {failure}"
