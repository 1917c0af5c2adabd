"""The pieces a history model is made of (an attempt, a fit, an outage, a recovery, a step's span)
and the small functions over events its parts share (spans of time, disrupting state changes,
wall time, the order of events).

A part of the history model: history/model.py builds a `History` of these and re-exports them. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Optional, Tuple

Event = Dict[str, Any]
Key = Tuple[int, int]          # (fit index, attempt ordinal)

#: controller states that take a run off its healthy path
DISRUPTED = frozenset({"PREEMPTING", "RESTARTING", "RESCHEDULING", "ERRORED"})
#: the parts of a recovery, in order; they sum to `recovery_s`
PARTS = ("detection_s", "teardown_s", "scheduling_s", "restore_s", "first_step_s")


# ------------------------------------------------------------------------ times
def span(a: Optional[float], b: Optional[float]) -> Optional[float]:
    """b - a in seconds, to the microsecond of the clocks; None if either is."""
    return None if a is None or b is None else round(b - a, 6)


def first_time(e: Event, *keys: str) -> float:
    """The first of `keys` the event has a value for, else its own `t`."""
    return next((e[k] for k in keys if e.get(k) is not None), e["t"])


def disrupts(e: Event) -> bool:
    """A state change off the healthy path: a failure state, or any state
    carrying an error (SHUTTING_DOWN toward ERRORED). Leaving RUNNING for
    FINISHED or RESIZING is not one."""
    return e.get("cur") in DISRUPTED or bool(e.get("error_type"))


def wall_time(events: Iterable[Event]) -> Optional[float]:
    """From the first run_start to the last run_end (any events if those are
    missing): the time the job held the cluster, gaps between fits included."""
    ev = list(events)
    starts = [e["t"] for e in ev if e.get("kind") == "run_start"] or [e["t"] for e in ev]
    ends = [e["t"] for e in ev if e.get("kind") == "run_end"] or [e["t"] for e in ev]
    return span(min(starts), max(ends)) if starts else None


def _seq(e: Event) -> Any:
    """The order of events in a model: their `seq` (0 when missing)."""
    return e.get("seq", 0)


_INT = {int}


def _all_int(values: List[Any]) -> bool:
    """Every value is an int (not a bool, not a float): what the fast paths of
    the model and the properties take for granted before they skip a check."""
    return set(map(type, values)) <= _INT


def _t(e: Optional[Event]) -> Optional[float]:
    return None if e is None else e["t"]


# ----------------------------------------------------------------------- pieces
@dataclass
class Attempt:
    """The events of one worker-group attempt."""

    key: Key
    attempt_id: Optional[str] = None
    start: Optional[dict] = None        # its first attempt_start
    end: Optional[dict] = None          # its worker_group_shutdown, or the next attempt_start
    starts: List[dict] = field(default_factory=list)         # every attempt_start (RESCHEDULING repeats it)
    groups: List[dict] = field(default_factory=list)         # worker_group_started
    worker_starts: List[dict] = field(default_factory=list)
    steps: List[dict] = field(default_factory=list)
    reports: List[dict] = field(default_factory=list)
    written: List[dict] = field(default_factory=list)
    errors: List[dict] = field(default_factory=list)         # worker_error
    events: List[dict] = field(default_factory=list)         # all of the above and the rest, in seq order
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
    failures: List[dict] = field(default_factory=list)   # copies carrying `_key`, their attempt


@dataclass
class Outage:
    """The controller off its healthy path, from a disrupting state change to
    the fit's next attempt_start."""

    fit_index: int
    attempt: Optional[int]       # the attempt that failed
    t: float
    seq: Optional[int]
    state: Optional[str]
    failures: List[Event] = field(default_factory=list)   # decisions taken during it, with `_key`

    @property
    def retried(self) -> bool:
        return any(f.get("decision") == "RETRY" for f in self.failures)


@dataclass
class Recovery:
    """The path from a fault (or a failure nobody injected) back to training."""

    source: str                          # "fault" | "failure"
    fit_index: int
    t0: float                            # when it started
    outage: Optional[Outage] = None      # the outage it caused (None: it stopped nothing in its fit)
    injected: Optional[Event] = None     # the fault_injected event, for source "fault"
    t_detect: Optional[float] = None
    detection_s: Optional[float] = None
    first_step: Optional[Event] = None   # the step that ended it (None: not recovered)
    recovered: Optional[Key] = None      # the attempt that made that step
    restored_step: Optional[int] = None
    rank_starts: Dict[Any, float] = field(default_factory=dict)   # each rank's first step (time) after it
    teardown_s: Optional[float] = None
    scheduling_s: Optional[float] = None
    restore_s: Optional[float] = None
    first_step_s: Optional[float] = None
    recovery_s: Optional[float] = None

    @property
    def fault(self) -> Optional[int]:
        return None if self.injected is None else self.injected.get("fault")

    @property
    def fault_kind(self) -> Optional[str]:
        return None if self.injected is None else self.injected.get("fault_kind")

    @property
    def t_first_step(self) -> Optional[float]:
        return _t(self.first_step)

    @property
    def decision_event(self) -> Optional[Event]:
        """The outage's first failure decision."""
        return self.outage.failures[0] if self.outage and self.outage.failures else None

    @property
    def retried(self) -> bool:
        return self.outage is not None and self.outage.retried

    def parts(self) -> Dict[str, Optional[float]]:
        return {p: getattr(self, p) for p in PARTS}

    def row(self) -> Event:
        """The recovery as one flat row (ftharness.reports.metrics.RECOVERY_COLUMNS); what
        was not recorded is left out."""
        row: Event = {"source": self.source, "fit_index": self.fit_index, "t0": self.t0}
        if self.injected is not None:
            row.update(fault=self.fault, fault_kind=self.fault_kind,
                       t_requested=self.injected.get("t_requested"))
        if self.outage is not None:
            first = self.decision_event or {}
            row.update(attempt=self.outage.attempt, state=self.outage.state, budget=first.get("budget"),
                       decision=first.get("decision"), error_type=first.get("error_type"))
        row.update(t_detect=self.t_detect, detection_s=self.detection_s)
        if self.first_step is not None:
            row.update(recovered_fit=self.recovered[0], recovered_attempt=self.recovered[1],
                       restored_step=self.restored_step, t_first_step=self.t_first_step,
                       **self.parts(), recovery_s=self.recovery_s,
                       rank_first_step_s={str(k): round(t - self.t0, 6) for k, t in sorted(
                           self.rank_starts.items(), key=lambda kv: str(kv[0]))})
        return row


@dataclass
class StepSpan:
    """One step as the worker group did it: it ends when its last rank recorded
    it and begins when the attempt's previous step ended (None for an
    attempt's first step: start-up is not step time). `lost`: a later attempt
    computed the same step again (work thrown away by a rollback)."""

    fit_index: int
    attempt: int
    step: int
    t_begin: Optional[float]
    t_end: float
    seconds: Optional[float]
    lost: bool

