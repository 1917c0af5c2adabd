"""Property checks over a run's history (the events of docs/history.md).

Every check is a pure function `check_xxx(events, context) -> CheckResult` over
the list `harness.history.read_events` returns, so a history can be re-judged
offline, long after the cluster is gone; nothing here imports ray.

`context` holds what the runner knows besides the history; every key is
optional and a check skips what it cannot judge without it:

| key | used by |
| --- | --- |
| `failure_config` {max_failures, max_preemption_failures, controller_failure_limit} | budget_accounting, recovers |
| `outcome`, `error_type` (of the last fit() when it has no `run_end`) | exactly_once_restore, budget_accounting, recovers |
| `workload` (WorkloadConfig fields; None for a user job) | exactly_once_restore, shard_reassignment |
| `data` (`resumable` / `ray_data`) | shard_reassignment |
| `expected_final`, `final` (accumulators) | exactly_once_restore |
| `recovery_bound_s` | recovers |
| `injected` [{kind, budget, fault?}] (the scenario's faults, in order) | budget_accounting |

An attempt is identified by (fit index, attempt ordinal): the ordinal of its
`attempt_id` among the fit's `attempt_start` events (worker events fall back
on their own `attempt`). The "lineage" is the sequence of steps whose effect
survives: when an attempt restores step r, steps above r done before are
thrown away and the restored attempt's steps replace them.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Callable, Dict, Iterable, List, Optional, Tuple

from scenarios.reference_data import ACC_FIELDS, WorkloadConfig, global_batch, rank_slice
from scenarios import policy_model

Key = Tuple[int, int]          # (fit index, attempt ordinal)
MAX_SHOWN = 3                  # violations spelled out in an explanation
ZOMBIE_KINDS = ("step", "report", "checkpoint_written")
ERROR_BUDGETS = {              # budgets Ray may charge each raised error type to
    "ControllerError": {"controller", "none"},
    "PreemptionError": {"preemption"},
    "WorkerGroupError": {"worker_group", "preemption"},
}
BUDGET_ALIASES = {
    "max_failures": "worker_group", "worker group": "worker_group",
    "max_preemption_failures": "preemption", "controller_failure_limit": "controller",
}
PRECEDENCE = {"none": 3, "controller": 3, "preemption": 2, "worker_group": 1}


PASSED, FAILED, NOT_JUDGED = "passed", "failed", "not_judged"


@dataclass
class CheckResult:
    """A property's verdict. `passed` is None when the history held nothing the
    property could judge (status `not_judged`): absence is not success."""

    name: str
    passed: Optional[bool]
    explanation: str
    findings: List[str] = field(default_factory=list)
    violations: List[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        return NOT_JUDGED if self.passed is None else PASSED if self.passed else FAILED


def not_judged(name: str, why: str) -> CheckResult:
    return CheckResult(name, None, f"not judged: {why}")


# ------------------------------------------------------------------ history model
@dataclass
class Attempt:
    """The events of one worker-group attempt."""

    key: Key
    attempt_id: Optional[str] = None
    start: Optional[dict] = None        # its first attempt_start
    end: Optional[dict] = None          # its worker_group_shutdown, or the next attempt_start
    worker_starts: List[dict] = field(default_factory=list)
    steps: List[dict] = field(default_factory=list)
    reports: List[dict] = field(default_factory=list)
    written: List[dict] = field(default_factory=list)
    first_seq: Optional[int] = None

    @property
    def start_seq(self) -> int:
        return self.start["seq"] if self.start else self.first_seq

    def restored_step(self) -> Optional[int]:
        """The lineage step the lowest started rank restored (0 for a fresh start)."""
        if not self.worker_starts:
            return None
        first = min(self.worker_starts, key=lambda e: (e.get("rank") or 0))
        return first.get("restored_step") or 0


@dataclass
class Fit:
    index: int
    start: Optional[dict] = None
    end: Optional[dict] = None
    failures: List[dict] = field(default_factory=list)


class History:
    """Events grouped by fit() and attempt, in `seq` order."""

    def __init__(self, events: Iterable[dict]):
        self.events = sorted(events, key=lambda e: e.get("seq", 0))
        self.fits: Dict[int, Fit] = {}
        self.attempts: Dict[Key, Attempt] = {}
        self.registered: List[dict] = []
        self.key_of_id: Dict[str, Key] = {}
        self._fit: Optional[int] = None
        for e in self.events:
            self._add(e)

    def _add(self, e: dict) -> None:
        kind = e.get("kind")
        if kind == "run_start":
            self._fit = e.get("fit_index") or (self._fit or 0) + 1
            self._fit_of(self._fit).start = e
            return
        if kind == "run_end":
            self._fit_of(e.get("fit_index") or self.fit_index).end = e
            return
        if kind == "checkpoint_registered":
            self.registered.append(e)
        if kind == "attempt_start":
            self._close_open_attempts(e)
        att = self._attempt_of(e)
        if kind == "failure":
            e = dict(e, _key=att.key if att else None)
            self._fit_of(att.key[0] if att else self.fit_index).failures.append(e)
        if att is not None:
            self._file(att, e)

    @property
    def fit_index(self) -> int:
        return self._fit or 1

    def _fit_of(self, index: int) -> Fit:
        return self.fits.setdefault(index, Fit(index))

    def _close_open_attempts(self, start: dict) -> None:
        for att in self.attempts.values():
            if att.end is None and att.attempt_id != start.get("attempt_id"):
                att.end = start

    def _attempt_of(self, e: dict) -> Optional[Attempt]:
        source, aid = e.get("source"), e.get("attempt_id")
        if source not in ("worker", "controller"):
            return None
        key = self.key_of_id.get(aid) if aid is not None else None
        if key is None:
            if source == "worker":
                key = (self.fit_index, e.get("attempt") or 0)
            elif e.get("kind") == "attempt_start":
                key = (self.fit_index, self._next_ordinal())
            else:
                return None
            if aid is not None:
                self.key_of_id[aid] = key
        self._fit_of(key[0])
        att = self.attempts.setdefault(key, Attempt(key, aid))
        if att.first_seq is None:
            att.first_seq = e.get("seq", 0)
        return att

    def _next_ordinal(self) -> int:
        return 1 + max((k[1] for k in self.attempts if k[0] == self.fit_index), default=0)

    @staticmethod
    def _file(att: Attempt, e: dict) -> None:
        kind = e.get("kind")
        if kind == "attempt_start" and att.start is None:
            att.start = e
        elif kind == "worker_group_shutdown" and att.end is None:
            att.end = e
        elif kind == "worker_start":
            att.worker_starts.append(e)
        elif kind == "step":
            att.steps.append(e)
        elif kind == "report":
            att.reports.append(e)
        elif kind == "checkpoint_written":
            att.written.append(e)

    # -- queries
    def ordered(self) -> List[Attempt]:
        return [self.attempts[k] for k in sorted(self.attempts)]

    def label(self, key: Optional[Key]) -> str:
        if key is None:
            return "no attempt"
        if len(self.fits) > 1:
            return f"fit {key[0]} attempt {key[1]}"
        return f"attempt {key[1]}"

    def latest_registered(self, before_seq: int) -> Optional[dict]:
        earlier = [e for e in self.registered if e.get("seq", 0) < before_seq]
        return earlier[-1] if earlier else None

    def last_fit(self) -> Fit:
        return self.fits[max(self.fits)] if self.fits else Fit(1)

    def outcome(self, fit: Fit, context: dict) -> Tuple[Optional[str], Optional[str]]:
        """(outcome, error type) of a fit: its run_end, else the context for the last fit."""
        if fit.end is not None:
            return fit.end.get("outcome"), fit.end.get("error_type")
        if fit.index == self.last_fit().index:
            return context.get("outcome"), context.get("error_type")
        return None, None


def lineage(h: History) -> Tuple[Dict[int, Optional[Key]], List[str]]:
    """Kept lineage step -> the attempt whose copy of it survives (None: before
    this history, for a run resumed from elsewhere), and restores of steps the
    lineage never reached."""
    kept: Dict[int, Optional[Key]] = {}
    problems: List[str] = []
    started = False
    for att in h.ordered():
        r = att.restored_step()
        if r is None:
            continue
        top = max(kept, default=0)
        if r > top and started:
            problems.append(f"{h.label(att.key)} restored step {r} but the lineage only reached "
                            f"step {top}: steps {top + 1}-{r} were never run")
        for s in range(top + 1, r + 1):
            kept[s] = None
        for s in [s for s in kept if s > r]:
            del kept[s]
        for s in sorted({e.get("step") for e in att.steps if (e.get("step") or 0) > r}):
            kept[s] = att.key
        started = True
    return kept, problems


def _segments(h: History, kept: Dict[int, Optional[Key]]) -> str:
    """'attempt 1: 1-4, attempt 2: 5-12' for a lineage."""
    parts: List[List] = []
    for s in sorted(kept):
        if parts and parts[-1][0] == kept[s] and parts[-1][2] == s - 1:
            parts[-1][2] = s
        else:
            parts.append([kept[s], s, s])
    return ", ".join(f"{h.label(k) if k else 'earlier run'}: {a}-{b}" for k, a, b in parts)


def _result(name: str, violations: List[str], findings: List[str], summary: str) -> CheckResult:
    if not violations:
        return CheckResult(name, True, summary, findings)
    more = f" (+{len(violations) - MAX_SHOWN} more)" if len(violations) > MAX_SHOWN else ""
    return CheckResult(name, False, "; ".join(violations[:MAX_SHOWN]) + more, violations + findings,
                       list(violations))


def workload_config(context: dict) -> Optional[WorkloadConfig]:
    """The reference workload's config from `context["workload"]`, or None."""
    wl = context.get("workload")
    if not wl:
        return None
    names = {f.name for f in dataclasses.fields(WorkloadConfig)}
    return WorkloadConfig(**{k: v for k, v in wl.items() if k in names})


# ----------------------------------------------------------- exactly_once_restore
def check_exactly_once_restore(events: List[dict], context: dict) -> CheckResult:
    """Each restart resumes from the latest registered checkpoint, and the kept
    lineage applies every step exactly once."""
    h = History(events)
    if not any(a.worker_starts or a.steps for a in h.ordered()):
        return not_judged("exactly_once_restore", "no worker started and no step was recorded")
    violations: List[str] = []
    findings: List[str] = []
    for att in h.ordered():
        violations += _restore_violations(h, att, findings)
        violations += _sequence_violations(h, att)
    kept, gaps = lineage(h)
    violations += gaps
    violations += _final_violations(h, kept, context)
    restarts = sum(1 for a in h.ordered() if a.worker_starts) - 1
    summary = (f"{max(restarts, 0)} restart(s) each restored the latest registered checkpoint on every "
               f"rank; lineage steps contiguous ({_segments(h, kept) or 'no steps'})")
    if context.get("expected_final") is not None and context.get("final") is not None:
        summary += "; final accumulators exact"
    return _result("exactly_once_restore", violations, findings, summary)


def _restore_violations(h: History, att: Attempt, findings: List[str]) -> List[str]:
    """Every started rank restored the checkpoint latest registered before the attempt."""
    if not att.worker_starts:
        return []
    want = h.latest_registered(att.start_seq)
    run_start = h.fits[att.key[0]].start or {}
    if want is None and run_start.get("resume_of"):
        findings.append(f"{h.label(att.key)} resumes {run_start['resume_of']}: its restore is not checked")
        return []
    problems = []
    for ws in att.worker_starts:
        got = ws.get("restored_checkpoint")
        if got != (want or {}).get("checkpoint"):
            problems.append((ws, f"restored {got or 'nothing'} but {_latest_text(h, want, got)}"))
        elif want and want.get("step") is not None and ws.get("restored_step") != want["step"]:
            problems.append((ws, f"restored {got} at step {ws.get('restored_step')}, "
                                 f"registered at step {want['step']}"))
        if ws.get("restored_intact") is False:
            problems.append((ws, f"restored {got} whose files differ from what was reported (digest mismatch)"))
    return _by_rank(h.label(att.key), problems)


def _by_rank(label: str, problems: List[Tuple[dict, str]]) -> List[str]:
    """One line per distinct problem, naming the ranks (and their events) that share it."""
    ranks: Dict[str, List[dict]] = defaultdict(list)
    for e, text in problems:
        ranks[text].append(e)
    out = []
    for text, es in ranks.items():
        names = ", ".join(str(e.get("rank")) for e in es)
        seqs = ", ".join(str(e.get("seq")) for e in es)
        out.append(f"{label} rank{'s' if len(es) > 1 else ''} {names} (seq {seqs}): {text}")
    return out


def _latest_text(h: History, want: Optional[dict], got: Optional[str]) -> str:
    latest = (f"the latest registered checkpoint was {want['checkpoint']} (step {want.get('step')}, "
              f"seq {want.get('seq')})" if want else "no checkpoint was registered yet")
    names = [e.get("checkpoint") for e in h.registered]
    if got is not None and got not in names:
        return latest + f"; {got} was never registered"
    if got is not None and want is not None and names.index(got) < names.index(want.get("checkpoint")):
        return latest + f"; {got} is older"
    return latest


def _sequence_violations(h: History, att: Attempt) -> List[str]:
    """Each worker's steps run restored_step+1, +2, ... with none skipped or repeated."""
    starts = {(e.get("rank"), e.get("pid")): e for e in att.worker_starts}
    default_base = att.restored_step() or 0
    by_worker: Dict[tuple, List[dict]] = defaultdict(list)
    for e in att.steps:
        by_worker[(e.get("rank"), e.get("pid"))].append(e)
    problems = []
    for (rank, pid), steps in sorted(by_worker.items(), key=lambda kv: str(kv[0])):
        ws = starts.get((rank, pid))
        base = (ws.get("restored_step") or 0) if ws else default_base
        problem = _first_gap([e.get("step") for e in steps], base)
        if problem:
            problems.append((steps[problem[0]], problem[1]))
    return _by_rank(h.label(att.key), problems)


def _first_gap(steps: List[int], base: int) -> Optional[Tuple[int, str]]:
    """(index, problem) of the first step that is not the next one after `base`."""
    for i, got in enumerate(steps):
        want = base + 1 + i
        if got == want:
            continue
        if i == 0 and got <= base:
            return i, f"first step was {got} after restoring step {base}: {_span(got, base)} applied twice"
        if i == 0:
            return i, f"first step was {got} after restoring step {base}: {_span(want, got - 1)} skipped"
        if got in steps[:i]:
            return i, f"{_span(got, got)} applied twice"
        if got > want:
            return i, f"{_span(want, got - 1)} skipped after step {steps[i - 1]}"
        return i, f"went back from step {steps[i - 1]} to {got}"
    return None


def _span(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _final_violations(h: History, kept: Dict[int, Optional[Key]], context: dict) -> List[str]:
    out = []
    expected, final = context.get("expected_final"), context.get("final")
    if expected is not None and final is not None:
        diffs = [f"{name} {f!r} != {x!r}" for name, f, x in zip(ACC_FIELDS, final, expected)
                 if float(f) != float(x)]
        if len(final) != len(expected):
            diffs.append(f"{len(final)} values, expected {len(expected)}")
        if diffs:
            out.append("final accumulators differ from the exactly-once value: " + ", ".join(diffs))
    cfg = workload_config(context)
    outcome, _ = h.outcome(h.last_fit(), context)
    top = max(kept, default=0)
    if cfg is not None and outcome == "succeeded" and top != cfg.steps:
        out.append(f"the run succeeded but its lineage ends at step {top}, not {cfg.steps}")
    return out


# --------------------------------------------------------------- budget_accounting
def check_budget_accounting(events: List[dict], context: dict) -> CheckResult:
    """Each failure is charged where Ray's policy charges it, counted, and
    decided (RETRY/RAISE) as the failure config says; the run fails exactly
    when a RAISE happened."""
    h = History(events)
    no_outcome = all(h.outcome(f, context)[0] is None for f in h.fits.values())
    if not any(f.failures for f in h.fits.values()) and no_outcome:  # a mis-charge is judged without one
        return not_judged("budget_accounting", "no failure and no fit() outcome was recorded")
    violations: List[str] = []
    findings: List[str] = []
    hints = _budget_hints(h, context, findings)
    for fit in [h.fits[i] for i in sorted(h.fits)]:
        violations += _charge_violations(h, fit, hints)
        violations += _decision_violations(h, fit, context)
        violations += _outcome_violations(h, fit, context, findings)
    failures = [f for fit in h.fits.values() for f in fit.failures]
    counts = Counter(f.get("budget") for f in failures)
    limits = policy_model.limits(context.get("failure_config"))
    summary = (f"{len(failures)} failure(s) charged as Ray's policy does "
               f"({', '.join(f'{b}: {n}' for b, n in sorted(counts.items())) or 'none'}); "
               f"decisions and outcome follow the limits "
               f"({', '.join(f'{b} {_limit_text(n)}' for b, n in limits.items())})")
    return _result("budget_accounting", violations, findings, summary)


def _limit_text(limit: int) -> str:
    return "inf" if limit == -1 else str(limit)


def _normal_budget(budget: Optional[str]) -> Optional[str]:
    return BUDGET_ALIASES.get(budget, budget) if budget else None


def _budget_hints(h: History, context: dict, findings: List[str]) -> Dict[int, Tuple[str, str]]:
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
        for seq, (budget, kind) in context["expected_budgets"].items():
            seq = int(seq)
            if seq not in out or PRECEDENCE.get(budget, 0) > PRECEDENCE.get(out[seq][0], 0):
                out[seq] = (budget, kind)
        return out
    injected = [(f.get("fault", i), f) for i, f in enumerate(context.get("injected") or [])]
    hinted = [(idx, _normal_budget(f.get("budget")), f.get("kind")) for idx, f in injected
              if _normal_budget(f.get("budget"))]
    failures = [f for fit in h.fits.values() for f in fit.failures]
    done = {e.get("fault"): e for e in h.events if e.get("kind") == "fault_injected"}
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


def _failure_text(h: History, f: dict) -> str:
    return f"failure seq {f.get('seq')} ({h.label(f.get('_key'))}, {f.get('error_type')})"


def _charge_violations(h: History, fit: Fit, hints: Dict[int, Tuple[str, str]]) -> List[str]:
    """The budget of each failure agrees with the injected fault and its error type."""
    out = []
    for f in fit.failures:
        budget, hint = f.get("budget"), hints.get(f.get("seq"))
        allowed = ERROR_BUDGETS.get(f.get("error_type"), set(policy_model.LIMIT_KEYS) | {"none"})
        if hint and budget != hint[0]:
            out.append(f"{_failure_text(h, f)} charged to {budget}; the injected {hint[1]} "
                       f"is charged to {hint[0]}")
        elif budget not in allowed:
            out.append(f"{_failure_text(h, f)} charged to {budget}; Ray charges it to "
                       f"{' or '.join(sorted(allowed))}")
    return out


def _decision_violations(h: History, fit: Fit, context: dict) -> List[str]:
    """Counts run 1, 2, ... per budget and RAISE happens exactly when count > limit."""
    classes = [policy_model.failure_class(f.get("budget"), f.get("error_type")) for f in fit.failures]
    known = [(f, c) for f, c in zip(fit.failures, classes) if c is not None]
    out = [f"{_failure_text(h, f)} has unknown budget {f.get('budget')!r}"
           for f, c in zip(fit.failures, classes) if c is None]
    model = policy_model.expected_outcome(context.get("failure_config"), [c for _, c in known])
    for (f, _), d in zip(known, model.decisions):
        if f.get("count") is not None and f["count"] != d.count:
            out.append(f"{_failure_text(h, f)}: {d.budget} count {f['count']}, expected {d.count}")
        if f.get("decision") != d.decision:
            out.append(f"{_failure_text(h, f)}: {f.get('decision')} with {d.budget} count {d.count} "
                       f"and limit {_limit_text(d.limit)}; Ray decides {d.decision}")
        counts = f.get("counts")
        if counts is not None and {b: counts.get(b, 0) for b in policy_model.BUDGETS} != d.counts:
            out.append(f"{_failure_text(h, f)}: counts {counts}, expected {d.counts}")
    for f, _ in known[len(model.decisions):]:
        out.append(f"{_failure_text(h, f)} came after the run had already raised")
    return out + _attempts_after_raise(h, fit)


def _attempts_after_raise(h: History, fit: Fit) -> List[str]:
    raises = [f for f in fit.failures if f.get("decision") == "RAISE"]
    if not raises:
        return []
    first = raises[0].get("seq", 0)
    return [f"{h.label(a.key)} started (seq {a.start_seq}) after the RAISE at seq {first}"
            for a in h.ordered() if a.key[0] == fit.index and a.start and a.start_seq > first]


def _outcome_violations(h: History, fit: Fit, context: dict, findings: List[str]) -> List[str]:
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
    if error_type == "ActorDiedError" and _controller_killed(h, context) is not False:
        findings.append(f"{where} failed with ActorDiedError and no failure event: the controller died")
        return []
    return [f"{where} failed ({error_type}) without a RAISE: after {len(fit.failures)} failure(s) "
            f"the budgets still allowed a retry"]


def _controller_killed(h: History, context: dict) -> Optional[bool]:
    """Whether a kill_controller fault was injected; None when nothing says."""
    kinds = [f.get("kind") for f in context.get("injected") or []]
    kinds += [e.get("fault_kind") for e in h.events if e.get("kind") == "fault_injected"]
    if not kinds and context.get("injected") is None:
        return None
    return "kill_controller" in kinds


# ------------------------------------------------------------- shard_reassignment
def check_shard_reassignment(events: List[dict], context: dict) -> CheckResult:
    """Ranks never share rows within a step or epoch; with the resumable sampler
    the kept lineage consumes every row of every epoch exactly once."""
    h = History(events)
    if not any(e.get("rows") is not None for a in h.ordered() for e in a.steps):
        return not_judged("shard_reassignment", "no step recorded the rows it consumed")
    cfg = workload_config(context)
    mode = context.get("data") or (context.get("workload") or {}).get("data") or "resumable"
    violations = _overlap_violations(h)
    findings: List[str] = []
    kept, _ = lineage(h)
    if mode == "ray_data":
        violations += _range_violations(h, cfg)
        findings += _replay_findings(h, kept) + _drop_findings(h, cfg)
        summary = "within every attempt and epoch the ranks' rows are disjoint (ray_data: no position promised)"
    else:
        violations += _slice_violations(h, cfg) + _lineage_row_violations(h, kept, cfg)
        if cfg is None:
            findings.append("no workload config: rows not compared with the sampler, epochs not checked complete")
        summary = (f"rows disjoint across ranks; every row of each epoch consumed exactly once "
                   f"over the kept lineage ({_segments(h, kept)})")
    return _result("shard_reassignment", violations, findings, summary)


def _overlap_violations(h: History) -> List[str]:
    """Within one attempt and epoch no row is consumed twice (by any rank or step)."""
    out = []
    for att in h.ordered():
        seen: Dict[tuple, tuple] = {}
        dups: Dict[int, List[str]] = defaultdict(list)
        for e in att.steps:
            here = (e.get("rank"), e.get("step"), e.get("seq"))
            for row in e.get("rows") or []:
                first = seen.setdefault((e.get("epoch"), row), here)
                if first is not here:
                    dups[e.get("epoch")].append(f"row {row} by rank {first[0]} step {first[1]} (seq {first[2]}) "
                                                f"and rank {here[0]} step {here[1]} (seq {here[2]})")
        out += [f"{h.label(att.key)} epoch {ep}: {len(d)} row(s) consumed twice, e.g. {d[0]}"
                for ep, d in sorted(dups.items(), key=lambda kv: str(kv[0]))]
    return out


def _slice_violations(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    """Each step's rows are the sampler's global batch split by rank_slice."""
    if cfg is None:
        return []
    out = []
    for att in h.ordered():
        for e in att.steps:
            step, ws = e.get("step"), e.get("world_size")
            if e.get("rows") is None or not step or not ws:
                continue
            want = rank_slice(global_batch(cfg, step - 1), e.get("rank") or 0, ws).tolist()
            where = f"{h.label(att.key)} rank {e.get('rank')} step {step}"
            if e["rows"] != want:
                missing, extra = sorted(set(want) - set(e["rows"])), sorted(set(e["rows"]) - set(want))
                out.append(f"{where} (seq {e.get('seq')}): rows differ from the sampler's slice "
                           f"(missing {missing[:5]}, unexpected {extra[:5]})")
            elif e.get("epoch") is not None and e["epoch"] != (step - 1) // cfg.steps_per_epoch:
                out.append(f"{where}: epoch {e['epoch']}, expected {(step - 1) // cfg.steps_per_epoch}")
    return out


def _lineage_rows(h: History, kept: Dict[int, Optional[Key]]) -> Dict[int, List[tuple]]:
    """Epoch -> [(row, step, attempt key)] over the kept lineage, in step order."""
    by_step: Dict[tuple, List[dict]] = defaultdict(list)
    for att in h.ordered():
        for e in att.steps:
            by_step[(att.key, e.get("step"))].append(e)
    rows: Dict[int, List[tuple]] = defaultdict(list)
    for s in sorted(kept):
        for e in by_step.get((kept[s], s), []):
            rows[e.get("epoch")] += [(r, s, kept[s]) for r in e.get("rows") or []]
    return rows


def _lineage_row_violations(h: History, kept: Dict[int, Optional[Key]],
                            cfg: Optional[WorkloadConfig]) -> List[str]:
    """No row twice in an epoch of the lineage; with a config, complete epochs miss none."""
    out = []
    for epoch, rows in sorted(_lineage_rows(h, kept).items(), key=lambda kv: str(kv[0])):
        counts = Counter(r for r, _, _ in rows)
        twice = sorted(r for r, n in counts.items() if n > 1)
        if twice:
            steps = [s for r, s, _ in rows if r == twice[0]]
            out.append(f"epoch {epoch}: {len(twice)} row(s) applied more than once in the kept "
                       f"lineage, e.g. row {twice[0]} at steps {steps}")
        if cfg is not None and _epoch_kept(kept, cfg, epoch):
            missing = sorted(set(range(cfg.rows)) - set(counts))
            if missing:
                out.append(f"epoch {epoch}: {len(missing)} row(s) never consumed in the kept lineage, "
                           f"e.g. row {missing[0]}")
    return out


def _epoch_kept(kept: Dict[int, Optional[Key]], cfg: WorkloadConfig, epoch) -> bool:
    """All steps of the epoch are in the lineage and recorded in this history."""
    if not isinstance(epoch, int):
        return False
    spe = cfg.steps_per_epoch
    return all(kept.get(s) is not None for s in range(epoch * spe + 1, (epoch + 1) * spe + 1))


def _range_violations(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    if cfg is None:
        return []
    bad = [(a.key, e) for a in h.ordered() for e in a.steps
           if any(not 0 <= r < cfg.rows for r in e.get("rows") or [])]
    return [f"{h.label(k)} rank {e.get('rank')} step {e.get('step')}: row ids outside the dataset "
            f"[0, {cfg.rows})" for k, e in bad]


def _replay_findings(h: History, kept: Dict[int, Optional[Key]]) -> List[str]:
    """Rows a restarted attempt consumed again in an epoch the lineage had begun."""
    out = []
    for epoch, rows in sorted(_lineage_rows(h, kept).items(), key=lambda kv: str(kv[0])):
        first: Dict[int, Key] = {}
        replays: Counter = Counter()
        for r, _, key in rows:
            if first.setdefault(r, key) != key:
                replays[key] += 1
        out += [f"epoch {epoch} replayed {n} rows after {h.label(k)} restart" for k, n in sorted(replays.items())]
    return out


def _drop_findings(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    """Rows the equal split left out of an attempt's completed pass over an epoch."""
    if cfg is None:
        return []
    out = []
    for att in h.ordered():
        epochs: Dict[int, set] = defaultdict(set)
        for e in att.steps:
            epochs[e.get("epoch")].update(e.get("rows") or [])
        labels = [ep for ep in epochs if isinstance(ep, int)]
        for ep in sorted(labels):
            dropped = cfg.rows - len(epochs[ep])
            if ep < max(labels) and dropped > 0:
                out.append(f"{h.label(att.key)} epoch {ep}: equal split dropped {dropped} of {cfg.rows} rows")
    return out


# ---------------------------------------------------------------- no_zombie_writes
def check_no_zombie_writes(events: List[dict], context: dict) -> CheckResult:
    """Nothing a finished attempt does afterwards lands in what later attempts
    rely on: its late checkpoints are neither registered nor restored.

    Workers of an ended attempt often keep computing for a moment while Ray
    tears them down; those late steps and reports are listed as findings.
    """
    h = History(events)
    if not any(a.end is not None for a in h.ordered()):
        return not_judged("no_zombie_writes", "no attempt ended: nothing could be a zombie")
    findings: List[str] = []
    late_ckpts: Dict[str, str] = {}
    for att in h.ordered():
        if att.end is None:
            continue
        for e in sorted(att.steps + att.reports + att.written, key=lambda e: e.get("seq", 0)):
            if _after(e, att.end):
                text = (f"{h.label(att.key)} rank {e.get('rank')} wrote {e.get('kind')} (step {e.get('step')}) "
                        f"at seq {e.get('seq')} after the attempt ended at seq {att.end.get('seq')} "
                        f"({att.end.get('kind')})")
                findings.append(text)
                if e.get("kind") == "report" and e.get("checkpoint"):
                    late_ckpts[e["checkpoint"]] = text
    violations = _dead_registrations(h) + _zombie_restores(h, late_ckpts)
    ended = sum(1 for a in h.ordered() if a.end is not None)
    summary = (f"{ended} ended attempt(s): no late checkpoint registered or restored; "
               f"{len(h.registered)} registered checkpoint(s) all reported by live attempts"
               + (f"; {len(findings)} late write(s) during teardown (findings)" if findings else ""))
    return _result("no_zombie_writes", violations, findings, summary)


def _zombie_restores(h: History, late_ckpts: Dict[str, str]) -> List[str]:
    out = []
    for att in h.ordered():
        for ws in att.worker_starts:
            if ws.get("restored_checkpoint") in late_ckpts:
                out.append(f"{h.label(att.key)} rank {ws.get('rank')} restored "
                           f"{ws['restored_checkpoint']}, persisted by a zombie: {late_ckpts[ws['restored_checkpoint']]}")
    return out


def _after(e: dict, end: dict) -> bool:
    """Later in seq and, when both carry a clock, in time: an event that was
    in flight when the shutdown was recorded is no zombie."""
    if e.get("seq", 0) <= end.get("seq", 0):
        return False
    return e.get("t") is None or end.get("t") is None or e["t"] > end["t"]


def _dead_registrations(h: History) -> List[str]:
    reporters: Dict[str, List[Attempt]] = defaultdict(list)
    for att in h.ordered():
        for e in att.reports:
            if e.get("checkpoint"):
                reporters[e["checkpoint"]].append(att)
    out = []
    for reg in h.registered:
        atts = reporters.get(reg.get("checkpoint"), [])
        if atts and all(a.end is not None and a.end.get("seq", 0) < reg.get("seq", 0) for a in atts):
            out.append(f"checkpoint {reg.get('checkpoint')} registered at seq {reg.get('seq')} was reported "
                       f"only by {h.label(atts[0].key)}, which ended at seq {atts[0].end.get('seq')}")
    return out


# ------------------------------------------------------------------------ recovers
def check_recovers(events: List[dict], context: dict) -> CheckResult:
    """When the budgets allowed it the run succeeded, and every recovery
    (failure -> first step of a worker started after it) fit the bound."""
    h = History(events)
    fit = h.last_fit()
    known = [f for f in fit.failures if policy_model.failure_class(f.get("budget"), f.get("error_type"))]
    model = policy_model.expected_outcome(
        context.get("failure_config"),
        [policy_model.failure_class(f.get("budget"), f.get("error_type")) for f in known])
    if model.outcome == "failed":
        d, f = model.decisions[-1], known[len(model.decisions) - 1]
        why = ("is not retryable" if d.budget == "none" else
               f"exhausted the {d.budget} budget (count {d.count} > limit {d.limit})")
        return not_judged("recovers", f"{_failure_text(h, f)} {why}: no recovery owed")
    retried = any(f.get("decision") == "RETRY" for fi in h.fits.values() for f in fi.failures)
    if not retried and h.outcome(fit, context)[0] == "succeeded":
        return not_judged("recovers", "no failure was retried: nothing to recover from")
    violations: List[str] = []
    findings: List[str] = []
    outcome, error_type = h.outcome(fit, context)
    if outcome is None:
        return not_judged("recovers", f"fit {fit.index} has no recorded outcome")
    if outcome != "succeeded":
        violations.append(f"fit {fit.index} ended {outcome or 'without an outcome'}"
                          f"{f' ({error_type})' if error_type else ''} although the budgets allowed a retry")
    bound = context.get("recovery_bound_s")
    times = []
    for f, step in _recoveries(h):
        if step is None:
            findings.append(f"{_failure_text(h, f)}: no step followed (restored at the last step?)")
            continue
        took = step.get("t", 0) - f.get("t", 0)
        times.append(took)
        if bound is not None and took > bound:
            violations.append(f"recovery from {_failure_text(h, f)} took {took:.1f} s (first step: "
                              f"{h.label(h.key_of_id.get(step.get('attempt_id')))} seq {step.get('seq')}), "
                              f"over the {bound:g} s bound")
    slowest = f", slowest {max(times):.1f} s" if times else ""
    summary = (f"run succeeded; {len(times)} recovery(ies) from a failure decision to the next first step{slowest}"
               f"{f' within the {bound:g} s bound' if bound is not None and times else ''}")
    return _result("recovers", violations, findings, summary)


def _recoveries(h: History) -> List[Tuple[dict, Optional[dict]]]:
    """Each retried failure with the first step of a worker that started after it."""
    started: Dict[tuple, int] = {}
    steps = []
    for att in h.ordered():
        for e in att.worker_starts:
            started[(att.key, e.get("rank"), e.get("pid"))] = e.get("seq", 0)
        steps += [(att.key, e) for e in att.steps]
    steps.sort(key=lambda ke: ke[1].get("seq", 0))
    out = []
    for fit in h.fits.values():
        for f in fit.failures:
            if f.get("decision") != "RETRY":
                continue
            seq = f.get("seq", 0)
            nxt = next((e for k, e in steps if e.get("seq", 0) > seq
                        and started.get((k, e.get("rank"), e.get("pid")), -1) > seq), None)
            out.append((f, nxt))
    return out


# ------------------------------------------------------------------------ registry
CHECKS: Dict[str, Callable[[List[dict], dict], CheckResult]] = {
    "exactly_once_restore": check_exactly_once_restore,
    "budget_accounting": check_budget_accounting,
    "shard_reassignment": check_shard_reassignment,
    "no_zombie_writes": check_no_zombie_writes,
    "recovers": check_recovers,
}


def run_checks(events: List[dict], context: Optional[dict] = None,
               names: Optional[Iterable[str]] = None) -> Dict[str, CheckResult]:
    """Run the named checks (all by default). A check that crashes on a
    malformed history judged nothing: it is not judged (never passed), with
    the error, and the others still run."""
    results = {}
    for name in names or CHECKS:
        try:
            results[name] = CHECKS[name](events, context or {})
        except Exception as e:  # noqa: BLE001 - a history we cannot judge is judged by nobody
            results[name] = not_judged(name, f"the check crashed ({type(e).__name__}: {str(e)[:200]})")
    return results
