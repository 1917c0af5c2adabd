"""bounded_lost_work: no restart redoes more steps than the job's checkpoint
cadence allows, and none restores nothing when a checkpoint was there to restore.

Lost work is counted per restart: every attempt that started workers after the
history's first one (a second fit() resuming from storage too) threw away the
steps above the step it restored, up to the highest step the lineage had
reached. A "step" is the history's: one optimizer step for the reference
workload, one `ray.train.report` for a user job.

The bound is `max_lost_steps` when the scenario gives one; otherwise the
largest gap between the steps of reported checkpoints (from step 0) plus the
registration lag: a checkpoint reported at step s is registered by the
controller a little later, and a failure in between legitimately loses back to
the previous registered one. With `checkpoint_registered` events the lag is
measured: the most steps a reporting attempt recorded past a checkpoint
before it was registered (or, for the checkpoints still in flight when the
attempt ended, before it ended). Without them one more checkpoint gap is
allowed, and the summary says so.
"""

from __future__ import annotations

import bisect
from functools import partial
from itertools import accumulate
from typing import Dict, List, Optional, Tuple

from ftharness.history.model import Attempt, History, _seq, as_history
from ftharness.scenarios.properties.base import MAX_SHOWN, CheckResult, Events, Facts, failure_text, not_judged, result


def applies(facts: Facts) -> bool:
    """A fault restarts the job and the run should succeed, so it restarts at
    least once (a run expected to fail may raise before any restart)."""
    return facts.restarts and facts.expect_outcome == "succeeded"


def check(events: Events, context: dict) -> CheckResult:
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
    """What the history says about checkpoints: the steps of reported ones,
    their registrations, and the registration lag in steps."""

    def __init__(self, h: History):
        self.reports = sorted((e for a in h.ordered() for e in a.reports), key=lambda e: e.get("seq", 0))
        self.reported = [e for e in self.reports if e.get("checkpoint")]
        self.registered = bool(h.registered)
        self.registered_at: Dict[str, int] = {}
        self.step_of: Dict[str, int] = {}
        for e in h.registered:
            self.registered_at.setdefault(e.get("checkpoint"), e.get("seq", 0))
        for e in list(h.registered) + self.reported:
            if _is_step(e.get("step")):
                self.step_of.setdefault(e.get("checkpoint"), e["step"])
        steps = sorted({e["step"] for e in self.reported if _is_step(e.get("step"))})
        self.gap = max((b - a for a, b in zip([0] + steps, steps)), default=None)
        self.lag = _lag(h, self.registered_at) if self.registered else None


def _lag(h: History, registered_at: Dict[str, int]) -> int:
    """The most steps an attempt recorded past a checkpoint it reported before
    the controller registered it; checkpoints never registered that came after
    the attempt's last registered one were in flight when it ended: counted
    up to its last step."""
    lag = 0
    for att in h.ordered():
        mine = [e for e in att.reports if e.get("checkpoint") and _is_step(e.get("step"))]
        if not mine:
            continue
        steps = h.column(att, "step")
        if h.int_seqs and h.all_int(att, "step"):   # every step counts: the running maximum at once
            highest = list(accumulate(steps, max))
            count, position = len(steps), partial(bisect.bisect_left, att.steps, key=_seq)   # seqs ascend
        else:
            seqs, highest = [], []   # the attempt's steps in seq order, and the highest step so far
            for e in att.steps:
                if _is_step(e.get("step")) and type(e.get("seq", 0)) is int:
                    seqs.append(e.get("seq", 0))
                    highest.append(max(e["step"], highest[-1]) if highest else e["step"])
            count, position = len(seqs), partial(bisect.bisect_left, seqs)
        last_registered = max((e["step"] for e in mine if e["checkpoint"] in registered_at), default=None)
        for e in mine:
            until = registered_at.get(e["checkpoint"])
            if until is None and last_registered is not None and e["step"] <= last_registered:
                continue   # an older one Ray skipped or a later one superseded: not in flight
            i = count if until is None or type(until) is not int else position(until)
            reached = highest[i - 1] if i else e["step"]
            lag = max(lag, reached - e["step"])
    return lag


def _bound(ckpts: _Checkpoints, context: dict) -> Tuple[Optional[int], str]:
    """(most steps a restart may lose, how it was set); None when nothing sets it."""
    if context.get("max_lost_steps") is not None:
        return int(context["max_lost_steps"]), "expect.max_lost_steps"
    if ckpts.gap is None:
        return None, "no checkpoint was reported"
    if ckpts.lag is not None:
        return ckpts.gap + ckpts.lag, (f"largest checkpoint gap {ckpts.gap} + registration lag {ckpts.lag}, "
                                       f"measured on checkpoint_registered events")
    return 2 * ckpts.gap, (f"largest checkpoint gap {ckpts.gap} + one more gap for the registration lag: "
                           f"no checkpoint_registered events")


def _judge(h: History, att: Attempt, name: Optional[str], lost: int, bound: Optional[int], basis: str,
           ckpts: _Checkpoints, context: dict) -> Tuple[str, str]:
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
    steps = h.column(att, "step")
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
