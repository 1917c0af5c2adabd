"""bounded_lost_work: no restart redoes more steps than the job's checkpoint
cadence allows, and none restores nothing when a checkpoint was there to restore.

Lost work is counted per restart: every attempt that started workers after the
history's first one (a second fit() resuming from storage too) threw away the
steps above the step it restored, up to the highest step the lineage had
reached. A "step" is the history's: one optimizer step for the reference
workload, one `ray.train.report` for a user job.

The bound comes from the scenario, never from the run it judges:
`expect.max_lost_steps` when given; otherwise two checkpoint intervals, the
cadence (`workload.checkpoint_every` as the scenario declares it, `context["checkpoint_every"]`;
a synthetic history judged without a scenario falls back on the recorded one; for a
user job, whose cadence no scenario key states, the largest gap between the
steps of the checkpoints it reported) plus the registration allowance, one more
interval (`REGISTRATION_ALLOWANCE`): a checkpoint reported at step s is
registered by the controller a little later, and a failure in between
legitimately restores the one before it. A longer registration lag (steps much
faster than the controller registers) is the scenario's to declare with
`expect.max_lost_steps`. Steps a cut-off attempt recorded after it ended (a
zombie's) were never reached by the lineage and are not counted as lost.
"""

from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ftharness.history.columns import having
from ftharness.history.model import Attempt, History, as_history
from ftharness.scenarios.properties.base import (MAX_SHOWN, CheckResult, Events, Facts, PropertyContext, failure_text,
                                                 not_judged, result, workload_config)

#: checkpoint intervals a restart may lose beyond the cadence by default: one checkpoint may be
#: reported but not yet registered when the failure hits (`expect.max_lost_steps` overrides)
REGISTRATION_ALLOWANCE = 1
#: the fields of a report with a checkpoint this check reads (ftharness.history.columns.having)
_REPORT_FIELDS = ("seq", "step")


def applies(facts: Facts) -> bool:
    """A fault restarts the job and the run should succeed, so it restarts at
    least once (a run expected to fail may raise before any restart)."""
    return facts.restarts and facts.expect_outcome == "succeeded"


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Each restart redoes at most the bound's steps, and restores a checkpoint
    when one was reported (and registered) before it."""
    h = as_history(events)
    started = [a for a in h.ordered() if a.worker_starts]
    if len(started) < 2:
        return not_judged("bounded_lost_work", "no restart: no work could be lost")
    if not any(a.steps for a in h.ordered()):
        return not_judged("bounded_lost_work", "no step was recorded: the lost work is unknown")
    ckpts = _Checkpoints(h)
    bound, basis = _bound(ckpts, context)
    violations: List[str] = []
    findings: List[str] = []
    judged: List[int] = []
    top = _top(h, started[0], _restored(started[0], ckpts)[1] or 0)
    for prev, att in zip(started, started[1:]):
        name, r = _restored(att, ckpts)
        if r is None:
            findings.append(f"{h.label(att.key)} restored {name} at an unknown step: its lost work is not judged")
            top = max([top] + _steps(h, att))
            continue
        lost = max(0, top - r)
        where = f"{h.label(att.key)} ({_cause(h, att, prev)})"
        what = (f"restored {'nothing' if name is None else f'step {r} ({name})'} after the lineage reached "
                f"step {top}: {lost} step(s) lost{f' ({_span(r + 1, top)})' if lost else ''}")
        problem, unjudged = _judge(h, att, name, lost, bound, basis, ckpts, context)
        if problem:
            violations.append(f"{where} {what}{problem}")
        elif unjudged:
            findings.append(f"{where} {what}; {unjudged}")
        else:
            findings.append(f"{where} {what}")
            judged.append(lost)
        top = _top(h, att, r)
    if not violations and not judged:
        more = f" (+{len(findings) - MAX_SHOWN} more)" if len(findings) > MAX_SHOWN else ""
        return not_judged("bounded_lost_work", "; ".join(findings[:MAX_SHOWN]) + more)
    within = f", within the bound of {bound} ({basis})" if bound is not None else ""
    summary = (f"{len(started) - 1} restart(s), {len(judged)} judged: at most {max(judged, default=0)} "
               f"step(s) lost per restart{within}")
    return result("bounded_lost_work", violations, findings, summary)


class _Checkpoints:
    """What the history says about checkpoints: the steps of reported ones and
    their registrations."""

    def __init__(self, h: History):
        self._h = h
        # (a stable sort: those with a checkpoint in the order all the reports sort in)
        self.reported = sorted((e for a in h.ordered() for e in having(a.reports, "checkpoint", _REPORT_FIELDS)),
                               key=lambda e: e.get("seq", 0))
        # registrations are recorded (Ray Train's controller and the torchrun agents record each
        # one, and the attempts they start): none before a restart then means none was there to
        # restore; a history without that recorder falls back on the reports (`_restorable`)
        self.registered = bool(h.registered) or any(
            e.get("source") == "controller" for a in h.ordered() for e in [a.start] if isinstance(e, dict))
        self.registered_at: Dict[str, int] = {}
        self.step_of: Dict[str, int] = {}
        for e in h.registered:
            self.registered_at.setdefault(e.get("checkpoint"), e.get("seq", 0))
        for e in list(h.registered) + self.reported:
            if _is_step(e.get("step")):
                self.step_of.setdefault(e.get("checkpoint"), e["step"])
        steps = sorted({e["step"] for e in self.reported if _is_step(e.get("step"))})
        self.gap = max((b - a for a, b in zip([0] + steps, steps)), default=None)

    @property
    def reports(self) -> List[dict]:
        """Every report, in seq order (made when first read: a long history has many)."""
        if not hasattr(self, "_reports"):
            self._reports = sorted((e for a in self._h.ordered() for e in a.reports), key=lambda e: e.get("seq", 0))
        return self._reports


def _bound(ckpts: _Checkpoints, context: PropertyContext) -> Tuple[Optional[int], str]:
    """(most steps a restart may lose, how it was set); None when nothing sets it."""
    if context.get("max_lost_steps") is not None:
        return int(context["max_lost_steps"]), "expect.max_lost_steps"
    declared = context.get("checkpoint_every")   # the scenario's: a bound never comes from the run it judges
    cfg = workload_config(context) if "checkpoint_every" not in context else None
    if type(declared) is int and declared > 0:
        cadence, where = declared, "workload.checkpoint_every"
    elif context.get("workload_missing"):   # its cadence sets the bound: never the run's own gaps instead
        return None, context["workload_missing"]
    elif cfg is not None and type(cfg.checkpoint_every) is int and cfg.checkpoint_every > 0:
        cadence, where = cfg.checkpoint_every, "workload.checkpoint_every"
    elif ckpts.gap is not None:
        cadence, where = ckpts.gap, "the largest gap between the job's reported checkpoints"
    else:
        return None, "no checkpoint was reported"
    allowance = REGISTRATION_ALLOWANCE * cadence
    return cadence + allowance, (f"checkpoint cadence {cadence} ({where}) + {allowance} for a checkpoint "
                                 f"not yet registered when the failure hit; expect.max_lost_steps sets another")


def _judge(h: History, att: Attempt, name: Optional[str], lost: int, bound: Optional[int], basis: str,
           ckpts: _Checkpoints, context: PropertyContext) -> Tuple[str, str]:
    """(violation text to append, or ''; why it is not judged, or '')."""
    if lost == 0:
        return "", ""
    if name is None:
        before = [e for e in ckpts.reports if e.get("seq", 0) < att.start_seq]
        if before and not ckpts.reported and context.get("max_lost_steps") is None:
            steps = len({e.get("step") for e in before})
            return (f": no checkpoint was ever reported (the job reported {steps} step(s) before the restart "
                    f"to ray.train.report, none with a checkpoint)"), ""
        missed = _restorable(h, att, ckpts)
        if missed:
            return f": a checkpoint was reported but not restored ({missed})", ""
    if bound is None:
        return "", f"no bound: {basis} and no expect.max_lost_steps"
    if lost > bound:
        return f", over the bound of {bound} ({basis})", ""
    return "", ""


def _restorable(h: History, att: Attempt, ckpts: _Checkpoints) -> str:
    """The checkpoint a restart that restored nothing should have restored, as
    text ('' when none was sure to be there): the latest registered before it;
    without registration events, a reported one older than the latest (that
    one may still have been in flight)."""
    if ckpts.registered:
        reg = h.latest_registered(att.start_seq)
        if reg is None:
            return ""
        reported = next((e for e in ckpts.reported if e.get("checkpoint") == reg.get("checkpoint")), None)
        at = f"reported at seq {reported.get('seq')}, " if reported else ""
        return f"{reg.get('checkpoint')} at step {reg.get('step')}, {at}registered at seq {reg.get('seq')}"
    before = [e for e in ckpts.reported if e.get("seq", 0) < att.start_seq and _is_step(e.get("step"))]
    steps = sorted({e["step"] for e in before})
    if len(steps) < 2:
        return ""
    e = [x for x in before if x["step"] == steps[-2]][-1]
    return f"{e.get('checkpoint')} at step {e['step']}, reported at seq {e.get('seq')}"


def _restored(att: Attempt, ckpts: _Checkpoints) -> Tuple[Optional[str], Optional[int]]:
    """(checkpoint name or None, step) the lowest started rank restored: step 0
    for nothing, None when a checkpoint was restored at a step nobody recorded."""
    first = min(att.worker_starts, key=lambda e: (e.get("rank") or 0))
    name = first.get("restored_checkpoint")
    if name is None:
        return None, 0
    step = first.get("restored_step")
    return name, step if _is_step(step) else ckpts.step_of.get(name)


def _steps(h: History, att: Attempt) -> List[int]:
    """The attempt's steps recorded before it ended (a cut-off worker's later steps, a
    zombie's, reached no lineage)."""
    steps = h.column(att, "step")
    end = (att.end or {}).get("seq")
    if h.int_seqs and type(end) is int and att.steps and att.steps[-1].get("seq", 0) > end:
        return [e["step"] for e in att.steps if e.get("seq", 0) < end and _is_step(e.get("step"))]
    if h.all_int(att, "step"):
        return list(steps)
    return [e["step"] for e in att.steps if _is_step(e.get("step"))]


def _top(h: History, att: Attempt, r: int) -> int:
    """The lineage's highest step after `att`, which restored step `r`."""
    top = max(_steps(h, att), default=r)
    return top if top > r else r


def _is_step(v) -> bool:
    return type(v) is int


def _span(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _cause(h: History, att: Attempt, prev: Attempt) -> str:
    """'recovery from fault 0 (kill_worker), failure seq 57 (attempt 1, WorkerGroupError)',
    or what ended the previous attempt when no recovery led to this one."""
    parts = []
    for r in h.recoveries():
        if r.recovered != att.key:
            continue
        failure = next((f for f in (r.outage.failures if r.outage else []) if f.get("decision") == "RETRY"),
                       r.decision_event)
        text = ", ".join(([f"fault {r.fault} ({r.fault_kind})"] if r.injected is not None else [])
                         + ([failure_text(h, failure)] if failure else []))
        if text:
            parts.append(text)
    if parts:
        return "recovery from " + "; ".join(parts)
    failures = [f for f in h.failures() if f.get("_key") == prev.key]
    if failures:
        return "after " + failure_text(h, failures[-1])
    if att.key[0] != prev.key[0]:
        return f"fit {att.key[0]} resumed after fit {prev.key[0]} ended"
    return f"after {h.label(prev.key)} ended"
