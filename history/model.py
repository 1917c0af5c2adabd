"""One model of a history: events -> fits -> attempts -> failures -> recoveries.

Pure (no Ray, no pandas), over the event dicts of `ftharness.history.records`
(docs/history.md), so an old results folder and a synthetic history are
understood alike. This is the one place that decides what an attempt, an
outage and a recovery are: the properties, the verdict and the reports all
read `History`, so a recovery time is the same number wherever it is shown.

Attempts. An attempt is identified by (fit index, attempt ordinal): the
ordinal of its `attempt_id` among the fit's `attempt_start` events
(RESCHEDULING reuses an id, so it stays one attempt). An event carrying a
known id, a zombie's too, belongs to that id's attempt and fit; a worker event
with an unknown id falls back on its own `attempt`. Only run_start and run_end
name their fit; every other event without a known id belongs to the fit it
arrived in.

Outages. One opens at the first disrupting controller state change (a failure
state, or any state carrying an error) and lasts until the fit's next
attempt_start, so RUNNING->PREEMPTING->RESTARTING is one outage and the
failure decisions taken during it belong to it.

Recoveries. One per injected fault, plus one per outage with a failure
decision that no fault claims. A fault claims the first outage of its fit that
opened at or after it was asked for (`t_requested`), and its recovery starts
when it was done (`t_done`); an outage on its own starts at the failed
attempt's first `worker_error`, else at the controller's state change. It ends
at the first step of an attempt (re)started after the outage opened, and its
parts telescope: detection (to the outage) + teardown (to the recovering
attempt's attempt_start) + scheduling (to worker_group_started) + restore (to
its first worker_start) + first step = recovery.

Times are differences of the emitters' `t` (wall clocks). Order among the
events of one source follows `seq`; across sources only `t` is meaningful.
"""

from __future__ import annotations

import bisect
from collections import Counter
from dataclasses import dataclass, field
from operator import eq, itemgetter
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

import numpy as np

from ftharness.history.columns import Events, EventsAt, non_steps
from ftharness.history.filing import file_columnar

Event = Dict[str, Any]
Key = Tuple[int, int]          # (fit index, attempt ordinal)

# ---------------------------------------------------------------------- budgets
#: Ray Train's failure budgets, in the order its FailureConfig lists them
BUDGETS = ("worker_group", "preemption", "controller")
#: the budget class of a failure that is not retryable (charged to no budget)
NOT_RETRYABLE = "none"
#: budget -> the FailureConfig field that limits it
LIMIT_FIELD: Dict[str, str] = {
    "worker_group": "max_failures",
    "preemption": "max_preemption_failures",
    "controller": "controller_failure_limit",
}

#: steps of a recovering attempt read to find each rank's first one (its ranks step together: a few suffice)
RANK_SCAN_LIMIT = 10_000
#: controller states that take a run off its healthy path
DISRUPTED = frozenset({"PREEMPTING", "RESTARTING", "RESCHEDULING", "ERRORED"})
#: the parts of a recovery, in order; they sum to `recovery_s`
PARTS = ("detection_s", "teardown_s", "scheduling_s", "restore_s", "first_step_s")


#: TorchElastic's one budget (`--max-restarts`, counted by each node's agent), for torchrun runs
TORCHRUN_BUDGET = "max_restarts"


def charged(events: Iterable[Event]) -> Dict[str, int]:
    """Failure events charged to each budget (never raises on a malformed event);
    `max_restarts` appears only when a torchrun agent charged something to it."""
    used = {b: 0 for b in BUDGETS}
    for e in [e for e in non_steps(events) if e.get("kind") == "failure"]:
        if e.get("budget") == TORCHRUN_BUDGET:
            used[TORCHRUN_BUDGET] = used.get(TORCHRUN_BUDGET, 0) + 1
        elif e.get("budget") in used:
            used[e["budget"]] += 1
    return used


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


def _ascending(events: Events) -> bool:
    """Whether the events' seqs (0 when missing) are ints that ascend: `_in_order` keeps them as they are."""
    seqs = events.seqs(missing=0)
    return seqs is not None and bool((seqs[1:] >= seqs[:-1]).all())


def _by_t(events: Iterable[Event]) -> List[Event]:
    return sorted(events, key=lambda e: e["t"])


def _last_within(events: List[Event], since: float, until: float) -> Optional[Event]:
    hits = [e for e in events if since < e["t"] <= until]
    return hits[-1] if hits else None


def _first_from(events: List[Event], t: Optional[float]) -> Optional[Event]:
    return next((e for e in events if t is not None and e["t"] >= t), None)


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


# ---------------------------------------------------------------------- history
class History:
    """Events grouped by fit() and attempt, in `seq` order, with the outages,
    recoveries, steps and budgets they show."""

    def __init__(self, events: Iterable[dict]):
        self.events: List[dict] = []
        self.fits: Dict[int, Fit] = {}
        self.attempts: Dict[Key, Attempt] = {}
        self.registered: List[dict] = []
        self.key_of_id: Dict[str, Key] = {}
        #: per event of `events`: (its fit, its attempt key or None)
        self.placed: List[Tuple[int, Optional[Key]]] = []
        self._fit: Optional[int] = None
        self._failure_copy: Dict[int, dict] = {}   # id of a failure event -> its copy with `_key`
        self._open: Dict[Key, Attempt] = {}          # attempts without an end yet, in creation order
        self._ordinals: Dict[Any, List[Any]] = {}    # fit -> [ordinals of its attempts not yet in the max, max]
        self._kinds: Dict[Any, List[int]] = {}       # kind -> positions in `events`, in seq order
        #: attempt id -> how its steps, reports and written checkpoints are filed (see _file_fast)
        self._filing: Dict[Any, tuple] = {}
        #: every event's seq (0 when missing) is an int: each list of events in the model ascends in it
        self.int_seqs = True
        if isinstance(events, Events) and events.stored and _ascending(events):
            self._add_columns(events)
        else:
            self._add_all(self._in_order(events))

    def _add_columns(self, events: Events) -> None:
        """`_add_all(events)` for a history read into columns (ftharness.history.filing)."""
        self._reset_derived()
        self.events = events
        file_columnar(self, events)
        self._registered_seqs = [e.get("seq", 0) for e in self.registered]
        self._registered_sorted = all(type(q) is int for q in self._registered_seqs)

    def _in_order(self, events: Iterable[dict]) -> List[dict]:
        """`events` sorted by seq (as they come when their seqs are ints that ascend already)."""
        events = list(events)
        seqs = [e.get("seq", 0) for e in events]
        if _all_int(seqs):
            return events if seqs == sorted(seqs) else sorted(events, key=_seq)
        self.int_seqs = False
        return sorted(events, key=_seq)

    def extend(self, events: Iterable[dict]) -> bool:
        """Add events that follow those in the model: the model becomes the one
        of all the events (what a live view reads as the history grows). False,
        and nothing added, when one of them sorts before the last event in: the
        caller builds the model again from all of them."""
        if isinstance(self.events, Events):   # built from columns: the caller builds it again
            return False
        int_seqs = self.int_seqs
        new = self._in_order(events)
        if new and self.events:
            try:
                if _seq(new[0]) < _seq(self.events[-1]):
                    self.int_seqs = int_seqs
                    return False
            except TypeError:   # seqs that do not compare: the whole sort decides
                self.int_seqs = int_seqs
                return False
        self._add_all(new)
        return True

    def _reset_derived(self) -> None:
        self._recoveries: Optional[List[Recovery]] = None
        self._spans: Optional[List[StepSpan]] = None
        self._of_kind: Dict[str, List[Tuple[Event, int, Optional[Key]]]] = {}
        self.memo: Dict[str, Any] = {}

    def _add_all(self, events: List[dict]) -> None:
        """File `events` (in seq order, after those in) and reset what was derived from the model."""
        self._recoveries: Optional[List[Recovery]] = None
        self._spans: Optional[List[StepSpan]] = None
        self._of_kind: Dict[str, List[Tuple[Event, int, Optional[Key]]]] = {}
        #: views derived from the model that several readers share, computed once by the first
        #: (e.g. ftharness.scenarios.properties.base.lineage)
        self.memo: Dict[str, Any] = {}
        kinds, filing, add_placed = self._kinds, self._filing, self.placed.append
        first = len(self.events)
        self.events += events
        for i, e in enumerate(events, first):
            kind = e.get("kind")
            # the bulk of a history (steps, reports, written checkpoints) of an attempt already
            # known: what _add does with them, without its other cases
            if kind == "step" or kind == "report" or kind == "checkpoint_written":
                source = e.get("source")
                if source == "worker" or source == "controller":
                    aid = e.get("attempt_id")
                    to = filing.get(aid) if aid is not None else None
                    if to is not None:   # (att.events, att.steps, att.reports, att.written, placement, kinds)
                        to[0](e)
                        to[1 if kind == "step" else 2 if kind == "report" else 3](e)
                        add_placed(to[4])
                        to[5 if kind == "step" else 6 if kind == "report" else 7](i)
                        continue
            add_placed(self._add(e))
            self._indexed(kinds, kind, i, e)
        self._registered_seqs = [e.get("seq", 0) for e in self.registered]
        self._registered_sorted = all(type(q) is int for q in self._registered_seqs)

    def column(self, att: "Attempt", name: str) -> List[Any]:
        """`e.get(name)` of each of the attempt's step events, in order (kept
        until the model changes: several properties read the same ones)."""
        columns = self.memo.setdefault("columns", {})
        found = columns.get((att.key, name))
        if found is None and isinstance(att.steps, EventsAt):
            if len(columns) > 16:   # a few at a time: the columns of all of a long history's steps would not fit
                columns.clear()
            found = columns[(att.key, name)] = att.steps.column(name)
        if found is None:
            try:   # where every event has the field (no Python call per event)
                found = list(map(itemgetter(name), att.steps))
            except KeyError:
                found = [e.get(name) for e in att.steps]
            columns[(att.key, name)] = found
        return found

    def all_int(self, att: "Attempt", name: str) -> bool:
        """`_all_int(self.column(att, name))`, kept like the column."""
        checked = self.memo.setdefault("all_int", {})
        found = checked.get((att.key, name))
        if found is None and isinstance(att.steps, EventsAt):
            a = att.steps.array(name)
            if a is not None and a.dtype.kind == "i":
                found = checked[(att.key, name)] = True
        if found is None:
            found = checked[(att.key, name)] = _all_int(self.column(att, name))
        return found

    # -- building
    def _indexed(self, kinds: Dict[Any, List[int]], kind: Any, i: int, e: dict) -> None:
        """Event `i`, already added, noted under its kind (and filed for its attempt's fast
        paths if it is a step, a report or a written checkpoint)."""
        try:
            kinds.setdefault(kind, []).append(i)
        except TypeError:   # an unhashable kind is no kind we look for
            pass
        if kind == "step" or kind == "report" or kind == "checkpoint_written":
            self._file_fast(e, kind)

    def _file_fast(self, e: dict, kind: str) -> None:
        """After `_add` filed `e` (a step, report or written checkpoint): when
        its attempt id names an attempt with a first seq, the next events of
        that id are filed the same way without `_add` (`_filing`)."""
        source, aid = e.get("source"), e.get("attempt_id")
        if (source == "worker" or source == "controller") and aid is not None and aid not in self._filing:
            key = self.key_of_id.get(aid)
            att = self.attempts.get(key) if key is not None else None
            if att is not None and att.first_seq is not None:
                kinds = self._kinds
                self._filing[aid] = (att.events.append, att.steps.append, att.reports.append, att.written.append,
                                     (key[0], key), kinds.setdefault("step", []).append,
                                     kinds.setdefault("report", []).append,
                                     kinds.setdefault("checkpoint_written", []).append)

    def _add(self, e: dict) -> Tuple[int, Optional[Key]]:
        kind = e.get("kind")
        if kind == "run_start":
            self._fit = e.get("fit_index") or (self._fit or 0) + 1
            self._fit_of(self._fit).start = e
            return self._fit, None
        if kind == "run_end":
            index = e.get("fit_index") or self.fit_index
            self._fit_of(index).end = e
            return index, None
        if kind == "checkpoint_registered":
            self.registered.append(e)
        if kind == "attempt_start":
            self._close_open_attempts(e)
        att = self._attempt_of(e)
        key = att.key if att is not None else None
        index = key[0] if key is not None else self.fit_index
        if kind == "failure":
            raw, e = e, dict(e, _key=key)
            self._failure_copy[id(raw)] = e
            self._fit_of(index).failures.append(e)
        if att is not None:
            self._file(att, e)
        return index, key

    @property
    def fit_index(self) -> int:
        return self._fit or 1

    def _fit_of(self, index: int) -> Fit:
        fit = self.fits.get(index)
        if fit is None:
            fit = self.fits[index] = Fit(index)
        return fit

    def _close_open_attempts(self, start: dict) -> None:
        for key, att in list(self._open.items()):
            if att.end is not None:
                del self._open[key]
            elif att.attempt_id != start.get("attempt_id"):
                att.end = start
                del self._open[key]

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
        att = self.attempts.get(key)
        if att is None:
            att = self.attempts[key] = self._open[key] = Attempt(key, aid)
            self._ordinals.setdefault(key[0], [None]).append(key[1])
        if att.first_seq is None:
            att.first_seq = e.get("seq", 0)
        return att

    def _next_ordinal(self) -> int:
        """1 + the highest ordinal of the fit's attempts (a running max: the
        same comparisons, in the same order, as a max over all of them)."""
        seen = self._ordinals.get(self.fit_index)
        if seen is None:
            return 1
        best = seen[0]
        for ordinal in seen[1:]:
            best = ordinal if best is None else max(best, ordinal)
        del seen[1:]
        seen[0] = best
        return 1 + (0 if best is None else best)

    @staticmethod
    def _file(att: Attempt, e: dict) -> None:
        att.events.append(e)
        kind = e.get("kind")
        if kind == "attempt_start":
            att.starts.append(e)
            if att.start is None:
                att.start = e
        elif kind == "worker_group_shutdown" and att.end is None:
            att.end = e
        elif kind == "worker_group_started":
            att.groups.append(e)
        elif kind == "worker_start":
            att.worker_starts.append(e)
        elif kind == "step":
            att.steps.append(e)
        elif kind == "report":
            att.reports.append(e)
        elif kind == "checkpoint_written":
            att.written.append(e)
        elif kind == "worker_error":
            att.errors.append(e)

    # -- attempts and fits
    def ordered(self) -> List[Attempt]:
        return [self.attempts[k] for k in sorted(self.attempts)]

    def started(self) -> List[Attempt]:
        """The attempts the controller started (an attempt_start), in order."""
        return [a for a in self.ordered() if a.start is not None]

    def label(self, key: Optional[Key]) -> str:
        if key is None:
            return "no attempt"
        if len(self.fits) > 1:
            return f"fit {key[0]} attempt {key[1]}"
        return f"attempt {key[1]}"

    def latest_registered(self, before_seq: int) -> Optional[dict]:
        """The last checkpoint_registered with a seq below `before_seq`."""
        if self._registered_sorted and type(before_seq) is int:   # seqs ascend: a binary search
            i = bisect.bisect_left(self._registered_seqs, before_seq)
            return self.registered[i - 1] if i else None
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

    def failures(self) -> List[dict]:
        """Every failure decision, in seq order, each with `_key` (its attempt)."""
        return sorted((f for fit in self.fits.values() for f in fit.failures), key=lambda f: f.get("seq", 0))

    def last_step(self) -> int:
        """The highest step any worker recorded (0 for none)."""
        steps = self._step_values()
        if isinstance(steps, tuple):   # columns: the highest of the stored steps and of the others
            values, stored, complete = steps
            if complete and _all_int(values):
                return max(max(values, default=0), int(stored.max()) if len(stored) else 0)
        elif _all_int(steps):
            return max(steps, default=0)   # `or 0` and int() change no int
        return max((int(e.get("step") or 0) for e, _, _ in self._of("step")), default=0)

    def forget_check_caches(self) -> None:
        """Drop what the checks cached here (each attempt's columns as lists, the lineage, its
        segments, the shard tables): hundreds of MB for a day of soak, and what reads them after
        the checks builds them again."""
        for key in ("columns", "lineage", "segments", "shard_tables", "all_int"):
            self.memo.pop(key, None)

    def _step_values(self) -> Union[List[Any], Tuple[List[Any], np.ndarray, bool]]:
        """The `step` of every step event, in seq order; for a model of columns
        (the `step` of the steps kept as dicts, those of the stored ones that have one,
        whether all stored ones do)."""
        if "step_values" not in self.memo and isinstance(self.events, Events):
            self.memo["step_values"] = _stored_step_values(self.events, self._kinds.get("step", ()))
        if "step_values" not in self.memo:
            events = self.events
            self.memo["step_values"] = [events[i].get("step") for i in self._kinds.get("step", ())]
        return self.memo["step_values"]

    def failure_config(self) -> Dict[str, Any]:
        """The failure_config the first fit() ran with ({} when none was recorded)."""
        return next((e.get("failure_config") or {} for e in non_steps(self.events) if e.get("kind") == "run_start"), {})

    def annotated(self) -> List[Event]:
        """Copies of the events in `seq` order, each with its `fit_index` and
        `attempt` (None when it belongs to no attempt)."""
        return [dict(e, fit_index=fit, attempt=key[1] if key is not None else e.get("attempt"))
                for e, (fit, key) in zip(self.events, self.placed)]

    def _of(self, kind: str) -> List[Tuple[Event, int, Optional[Key]]]:
        """(event, fit, attempt key) of the events of one kind, in seq order."""
        found = self._of_kind.get(kind)
        if found is None:
            found = self._of_kind[kind] = [(self.events[i], *self.placed[i]) for i in self._kinds.get(kind, ())]
        return list(found)

    def _positions(self, *kinds: str) -> List[int]:
        """Positions in `events` of the events of these kinds, in seq order."""
        return sorted(i for kind in kinds for i in self._kinds.get(kind, ()))

    # -- outages and recoveries
    def outages(self) -> List[Outage]:
        """Outages as the controller recorded them, in order (see the module doc)."""
        out: List[Outage] = []
        cur: Optional[Outage] = None
        # in the order of their clocks: under torchrun each node's agent records its own decisions and
        # the rendezvous its rounds, and one may arrive after the next round's start it preceded
        # (within one process, clocks and arrival agree; the causal model names a clock that does not)
        positions = self._positions("attempt_start", "run_start", "controller_state", "failure")
        if any(self.events[i].get("source") == "controller" and self.events[i].get("agent") is not None
               for i in positions):
            positions.sort(key=lambda i: (self.events[i].get("t") if type(self.events[i].get("t")) in (int, float)
                                          else 0.0, i))
        for i in positions:
            e, (fit, key) = self.events[i], self.placed[i]
            kind = e.get("kind")
            if kind in ("attempt_start", "run_start"):
                cur = None
            elif kind == "controller_state" and cur is None and disrupts(e):
                cur = Outage(fit, key[1] if key is not None else e.get("attempt"), e["t"], e.get("seq"),
                             e.get("cur"))
                out.append(cur)
            elif kind == "failure" and cur is not None:
                cur.failures.append(self._failure_copy[id(e)])
        return out

    def recoveries(self) -> List[Recovery]:
        """One per injected fault, plus one per outage with a failure decision
        that no fault claims; in order of their start."""
        if self._recoveries is None:
            self._recoveries = self._measure()
        return list(self._recoveries)

    def retried_recoveries(self) -> Tuple[List[Recovery], List[dict]]:
        """The recoveries a run owes: one per outage in which a failure was
        retried, from its nearest start (when two faults claim one outage, the
        later one caused it); and the retried failures that no outage holds
        (their controller state change is missing), whose recovery is unknown."""
        nearest: Dict[int, Recovery] = {}
        for r in self.recoveries():
            if r.retried and (id(r.outage) not in nearest or r.t0 >= nearest[id(r.outage)].t0):
                nearest[id(r.outage)] = r
        held = {id(f) for o in self.outages() for f in o.failures}
        loose = [f for f in self.failures() if f.get("decision") == "RETRY" and id(f) not in held]
        return sorted(nearest.values(), key=lambda r: r.t0), loose

    def _measure(self) -> List[Recovery]:
        found = self.outages()
        steps = _AttemptSteps.of(self)
        out: List[Recovery] = []
        claimed = set()
        for e, fit, _ in self._of("fault_injected"):
            asked = first_time(e, "t_requested", "t_done")
            outage = next((o for o in found if o.fit_index == fit and o.t >= asked), None)
            if outage is not None:
                claimed.add(id(outage))
            out.append(self._recover(Recovery("fault", fit, first_time(e, "t_done"), outage, e), steps))
        for o in found:
            if o.failures and id(o) not in claimed:
                out.append(self._recover(Recovery("failure", o.fit_index, self._origin(o), o), steps))
        return sorted(out, key=lambda r: r.t0)

    def _origin(self, outage: Outage) -> float:
        """When an outage with no injected fault began: the first worker_error of
        the failed attempt, else the controller's own state change (detection 0)."""
        att = self.attempts.get((outage.fit_index, outage.attempt))
        errors = att.errors if att is not None else []
        return min([e["t"] for e in errors if e["t"] <= outage.t] + [outage.t])

    def _recover(self, r: Recovery, steps: "_Steps") -> Recovery:
        """Measure `r` on the attempt that made the first step after its outage
        (with a cascade of failed restarts that attempt is the last of them, and
        teardown covers the failed ones). Without an outage in its fit the fault
        did not stop training there unless the fit itself ended (a lost
        controller): then only a later fit recovers."""
        r.t_detect = None if r.outage is None else r.outage.t
        r.detection_s = span(r.t0, r.t_detect)
        since = r.t0 if r.t_detect is None else r.t_detect

        def restarted(key: Key) -> bool:
            later = r.outage is not None or key[0] > r.fit_index
            return later and any(s["t"] > since for s in self.attempts[key].starts)

        key, step = steps.first_after(since, restarted)
        if step is None:
            return r
        att = self.attempts[key]
        start = _last_within(_by_t(att.starts), since, step["t"])
        group = _last_within(_by_t(att.groups), since, step["t"])
        ready = _t(start) if group is None else _t(group)
        wstart = _first_from(_by_t(att.worker_starts), ready)
        step, r.rank_starts = self._every_rank_stepped(att, step, since)
        r.first_step, r.recovered = step, key
        r.restored_step = (wstart or {}).get("restored_step")
        r.teardown_s = span(since, _t(start))
        r.scheduling_s = span(_t(start), _t(group))
        r.restore_s = span(_t(group), _t(wstart))
        r.first_step_s = span(_t(wstart), step["t"])
        r.recovery_s = span(r.t0, step["t"])
        return r

    def _every_rank_stepped(self, att: Attempt, first: Event, since: float) -> Tuple[Event, Dict[Any, float]]:
        """(the step by which every rank of the recovering attempt had stepped, each rank's first step
        time): a recovery ends when the slowest rank is training again, not the fastest. Read from
        the attempt's first steps, until every rank of its group (or of its worker starts) is seen."""
        ranks = {w.get("rank") for g in att.groups for w in (g.get("workers") or []) if isinstance(w, dict)} \
            or {w.get("rank") for w in att.worker_starts}
        seen: Dict[Any, Event] = {}
        for n, e in enumerate(att.steps):
            if n >= RANK_SCAN_LIMIT or (ranks and set(seen) >= ranks):
                break
            t = e.get("t")
            if e.get("rank") not in seen and type(t) in (int, float) and t > since:
                seen[e.get("rank")] = e
        if not seen:
            return first, {}
        last = max(seen.values(), key=lambda e: e["t"])
        return (last if last["t"] >= first["t"] else first), {k: e["t"] for k, e in seen.items()}

    # -- steps, lost work, budgets
    def step_spans(self) -> List[StepSpan]:
        """Steps as the worker groups did them, by (fit, attempt, step)."""
        if self._spans is None:
            self._spans = self._step_spans()
        return list(self._spans)

    def _step_spans(self) -> List[StepSpan]:
        try:
            return self._step_spans_by_attempt()
        except Exception:  # noqa: BLE001 - keys or steps that are not ints: the general pass (and its error)
            return self._step_spans_all()

    def _step_spans_by_attempt(self) -> List[StepSpan]:
        """`_step_spans_all` one attempt at a time, where every attempt key and
        step is an int (it raises otherwise)."""
        groups, last_rank = self._span_groups()
        out: List[StepSpan] = []
        for i, ((fit, attempt), steps_in_order, latest, seconds) in enumerate(groups):
            out += [StepSpan(fit, attempt, n, begin, end, span_s, i < last_rank[n])
                    for n, begin, end, span_s in zip(steps_in_order, [None] + latest[:-1], latest, seconds)]
        return out

    def _span_totals(self) -> Tuple[int, Any, Any]:
        """(lost steps, the sum of their seconds, the sum of the seconds of the others): what
        `lost_work` and `ettr` add up over `step_spans()`, in its order, without a StepSpan
        per step (a long history has millions)."""
        if self._spans is None and History._step_spans_by_attempt is _SPANS_BY_ATTEMPT:
            if "span_totals" in self.memo:
                return self.memo["span_totals"]
            try:
                found = self._span_totals_arrays()
            except Exception:  # noqa: BLE001 - the pass below decides
                found = None
            if found is not None:
                self.memo["span_totals"] = found
                return found
            try:
                groups, last_rank = self._span_groups()
            except Exception:  # noqa: BLE001 - the general pass decides (below)
                groups = None
            if groups is not None:
                def spans():   # (lost, seconds) per span, in step_spans' order
                    for i, (_, steps, _, seconds) in enumerate(groups):
                        for n, span_s in zip(steps, seconds):
                            yield i < last_rank[n], span_s
                found = self.memo["span_totals"] = (
                    sum(1 for was, _ in spans() if was), sum(v for was, v in spans() if was and v is not None),
                    sum(v for was, v in spans() if not was and v is not None))
                return found
        spans = self.step_spans()
        lost = [s for s in spans if s.lost]
        return (len(lost), sum(s.seconds for s in lost if s.seconds is not None),
                sum(s.seconds for s in spans if not s.lost and s.seconds is not None))

    def _span_totals_arrays(self) -> Optional[Tuple[int, Any, Any]]:
        """`_span_totals` where every attempt's steps are stored rows (their columns: no list
        or dict per step, which for a day of soak would be the peak of judging); None otherwise.
        The seconds are added by `sum` in the same order, so the floats are the same."""
        groups = self._span_groups(arrays=True)
        if groups is None:
            return None
        if not groups:
            return 0, 0, 0
        steps = np.concatenate([g[1] for g in groups])
        group = np.repeat(np.arange(len(groups)), [len(g[1]) for g in groups])
        order = np.lexsort((group, steps))   # by step, then group: each step's last group ends its run
        s = steps[order]
        ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))
        last = np.empty(len(steps), dtype=np.int64)
        last[order] = np.repeat(group[order][ends], np.diff(np.append(-1, ends)))
        lost = group < last
        del steps, group, order, s, last

        def seconds(want: bool):   # the spans' seconds (the first of each attempt has none), in order
            at = 0
            for _, _, latest in groups:
                mine = lost[at + 1:at + len(latest)]
                yield from np.diff(latest)[mine if want else ~mine].tolist()
                at += len(latest)
        return int(lost.sum()), sum(seconds(True)), sum(seconds(False))

    def _span_groups(self, arrays: bool = False):
        """Per attempt with steps, in key order: (key, its distinct steps ascending, each one's
        latest time, seconds since the previous one), and step -> the last group that has it."""
        groups: List[Tuple[Key, List[int], List[Any], List[Any]]] = []   # attempts with steps, in key order:
        for key in sorted(self.attempts):                                   # steps ascending, their ends, seconds
            if type(key[0]) is not int or type(key[1]) is not int:
                raise TypeError("not an int key")
            att = self.attempts[key]
            steps = times = None
            if arrays and att.steps and not isinstance(att.steps, EventsAt):
                return None   # (`arrays`: (key, distinct steps, latest times) as arrays, or None)
            if isinstance(att.steps, EventsAt):   # stored: the columns as they are (floats without NaN)
                steps, times = att.steps.array("step"), att.steps.array("t")
                if steps is None or times is None or steps.dtype.kind != "i" or times.dtype.kind != "f" \
                        or not len(steps) or np.isnan(times).any() or not times.min() > 0:
                    steps = times = None
                else:
                    steps, times = steps.astype(np.int64), times.astype(np.float64)
            if steps is None and arrays and att.steps:
                return None
            if steps is None:
                numbers, ts = self.column(att, "step"), self.column(att, "t")
                if numbers and self.all_int(att, "step") and set(map(type, ts)) == {float} and min(ts) > 0:
                    steps, times = np.array(numbers, dtype=np.int64), np.array(ts, dtype=np.float64)
            if steps is not None:
                # numpy: each step's latest time (no NaN, no -0.0: the max is the one value max() keeps)
                order = np.argsort(steps, kind="stable")
                distinct, first = np.unique(steps[order], return_index=True)
                latest = np.maximum.reduceat(times[order], first)
                if len(distinct) and arrays:
                    groups.append((key, distinct, latest))
                elif len(distinct):
                    groups.append((key, distinct.tolist(), latest.tolist(), [None] + np.diff(latest).tolist()))
                continue
            if not _all_int([n for n in numbers if n is not None]):
                raise TypeError("not an int step")
            ends: Dict[int, Any] = {}
            for n, e in zip(numbers, att.steps):
                if n is not None:
                    ends[n] = max(ends[n], e["t"]) if n in ends else e["t"]
            if ends:
                steps_in_order = sorted(ends)
                latest = [ends[n] for n in steps_in_order]
                groups.append((key, steps_in_order, latest,
                               [None] + [b - a for a, b in zip(latest, latest[1:])]))
        if arrays:
            return groups
        last_rank: Dict[int, int] = {}
        for i, (_, steps_in_order, _, _) in enumerate(groups):
            last_rank.update(dict.fromkeys(steps_in_order, i))
        return groups, last_rank

    def _step_spans_all(self) -> List[StepSpan]:
        ends: Dict[Tuple[int, int, int], float] = {}
        for e, _, key in self._of("step"):
            if key is not None and e.get("step") is not None:
                k = (int(key[0]), int(key[1]), int(e["step"]))
                ends[k] = max(ends[k], e["t"]) if k in ends else e["t"]
        order = {k: i for i, k in enumerate(sorted({k[:2] for k in ends}))}
        last_rank: Dict[int, int] = {}
        for k in ends:
            last_rank[k[2]] = max(last_rank.get(k[2], -1), order[k[:2]])
        out: List[StepSpan] = []
        prev: Optional[Tuple[Tuple[int, int], float]] = None
        for k in sorted(ends):
            begin = prev[1] if prev is not None and prev[0] == k[:2] else None
            out.append(StepSpan(k[0], k[1], k[2], begin, ends[k], None if begin is None else ends[k] - begin,
                                order[k[:2]] < last_rank[k[2]]))
            prev = (k[:2], ends[k])
        return out

    def lost_work(self) -> Dict[str, Any]:
        """Steps computed and thrown away (computed again by a later attempt), and
        their seconds. Work of a step cut off by the failure is not a step and is
        not counted; it is part of the recovery time instead."""
        lost, lost_s, _ = self._span_totals()
        return {"lost_steps": lost, "lost_step_s": round(float(lost_s), 6)}

    def ettr(self) -> Dict[str, Any]:
        """Effective training time ratio: productive step time over wall time.

        Meta's ETTR (Kokolis et al., "Revisiting Reliability in Large-Scale Machine
        Learning Research Clusters", HPCA 2025, arXiv:2410.21680) is productive
        runtime over the wall-clock time available to the job, where productive
        runtime leaves out retraining from the last checkpoint and initialization
        after restarts. Google's ML Productivity Goodput (Google Cloud blog,
        "Introducing ML Productivity Goodput", April 2024; the ml-goodput-measurement
        library) is the product of scheduling, runtime and program goodput; its
        runtime goodput is the same ratio, time making preserved forward progress
        over time allocated, with start-up and disruption recovery as badput.

        Here productive time is the `seconds` of the steps not lost (step_spans),
        and wall time is `wall_time`.
        """
        productive = round(float(self._span_totals()[2]), 6)
        wall = self._wall_time()
        return {"productive_s": productive, "wall_time_s": wall,
                "ettr": round(productive / wall, 6) if wall else None}

    def _wall_time(self) -> Optional[float]:
        """`wall_time(self.events)`, from the run_start and run_end events the model indexed."""
        events = self.events
        starts = [events[i]["t"] for i in self._kinds.get("run_start", ())] or [e["t"] for e in events]
        ends = [events[i]["t"] for i in self._kinds.get("run_end", ())] or [e["t"] for e in events]
        return span(min(starts), max(ends)) if starts else None

    def budget_use(self, failure_config: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """Failures charged per budget class against the configured limit.

        Ray counts failures per controller, i.e. per fit(): `left` is the limit
        less the retries of the fit that used the most (None when unlimited, -1,
        or not configured); `exhausted` when a failure of the class was raised.
        """
        config = failure_config or {}
        failures = [(e, fit) for e, fit, _ in self._of("failure")]
        out = {}
        torchrun = any(e.get("budget") == TORCHRUN_BUDGET for e, _ in failures)
        for cls in (*BUDGETS, NOT_RETRYABLE, *((TORCHRUN_BUDGET,) if torchrun else ())):
            limit_key = LIMIT_FIELD.get(cls, "max_failures" if cls == TORCHRUN_BUDGET else None)
            mine = [(e, fit) for e, fit in failures if e.get("budget") == cls]
            # a torchrun agent counts its own failures: the most retries of one agent use the budget
            retries = Counter((fit, e.get("agent")) if cls == TORCHRUN_BUDGET else fit
                              for e, fit in mine if e.get("decision") == "RETRY")
            limit = config.get(limit_key) if limit_key else None
            out[cls] = {
                "limit": limit,
                "charged": len(mine),
                "retries": sum(retries.values()),
                "left": limit - max(retries.values(), default=0) if limit is not None and limit >= 0 else None,
                "exhausted": any(e.get("decision") == "RAISE" for e, _ in mine),
            }
        return out

    def run_metrics(self, failure_config: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The metrics of one run, as one JSON-able dict (summary.json's
        `run_metrics`). `failure_config` supplies the limits; the first
        run_start's does when it is None. Lists hold one value per recovery
        that has it; the means ignore recoveries without a value."""
        if not failure_config:
            failure_config = self.failure_config()
        recoveries = self.recoveries()
        values = {c: [float(v) for r in recoveries if (v := getattr(r, c)) is not None]
                  for c in (*PARTS, "recovery_s")}
        return {
            "fits": len({fit for _, fit, _ in self._of("run_start")}),
            "attempts": len({key for _, _, key in self._of("attempt_start")}),
            "failures": len(self._of("failure")),
            "faults_injected": len(self._of("fault_injected")),
            "last_step": self._last_recorded_step(),
            "detection_s": values["detection_s"],
            "recovery_s": values["recovery_s"],
            "mean_recovery_s": _mean(values["recovery_s"]),
            "max_recovery_s": max(values["recovery_s"], default=None),
            "recovery_parts_mean_s": {p: _mean(values[p]) for p in PARTS},
            **self.lost_work(),
            **self.ettr(),
            "budgets": self.budget_use(failure_config),
        }


    def _last_recorded_step(self) -> int:
        """The highest step recorded (0 for none), of the steps that have one."""
        steps = self._step_values()
        if isinstance(steps, tuple):
            values, stored, _ = steps
            values = [s for s in values if s is not None]
            if _all_int(values):
                return max(max(values, default=0), int(stored.max()) if len(stored) else 0)
        else:
            steps = [s for s in steps if s is not None]
            if _all_int(steps):
                return max(steps, default=0)
        return max((int(e["step"]) for e, _, _ in self._of("step") if e.get("step") is not None), default=0)


def _stored_step_values(events: Events, positions) -> Tuple[List[Any], np.ndarray, bool]:
    """(`step` of the steps kept as dicts, `step` of the stored steps whose layout has
    it, whether all stored steps have it) for the steps at `positions`."""
    positions = np.asarray(positions)
    slots = events.slots[positions]
    rows = slots < 0
    dicts = events.dicts
    values = [dicts[s].get("step") for s in slots[~rows].tolist()]
    del slots
    part, row = events.split(positions[rows])   # (int8, int32: a day of soak has 10^7 steps)
    found, complete = [], True
    for p, store in enumerate(events.stores):
        mine = row[part == p]
        if not len(mine):
            continue
        has = store.has("step", "i")[store.cols["ctx"][mine]]
        complete = complete and bool(has.all())
        if "step:i" in store.cols:
            found.append(store.cols["step:i"][mine[has]])
    return values, np.concatenate(found) if found else np.zeros(0, dtype=np.int64), complete


_SPANS_BY_ATTEMPT = History._step_spans_by_attempt


class _Steps:
    """The step events of attempts, by time, and the first one after a moment
    that an attempt matching a test made: what a scan of them in order of time
    finds, by a binary search per attempt."""

    def __init__(self, steps: List[Tuple[Key, Event]]):
        """`steps` in seq order; in order of time (a stable sort) they are `ordered()`."""
        self._seq_order = steps
        ts = [e["t"] for _, e in steps]
        self.fast = set(map(type, ts)) <= {int, float} and all(t == t for t in ts)   # numbers, no NaN
        self._by_t: Optional[List[Tuple[Key, Event]]] = None
        if not self.fast:   # the order of time now: it raises here if the times do not compare
            self.ordered()
        #: key -> its steps' (t, position in seq order), ascending
        self.by_key: Dict[Key, Tuple[List[float], List[int]]] = {}
        if self.fast:
            for pos, ((k, _), t) in enumerate(zip(steps, ts)):
                mine = self.by_key.get(k)
                if mine is None:
                    mine = self.by_key[k] = ([], [])
                mine[0].append(t)
                mine[1].append(pos)
            for k, (kts, where) in self.by_key.items():
                if kts != sorted(kts):   # a stable sort by time, ties in seq order
                    order = sorted(range(len(kts)), key=kts.__getitem__)
                    self.by_key[k] = ([kts[i] for i in order], [where[i] for i in order])

    def ordered(self) -> List[Tuple[Key, Event]]:
        """The steps in order of time (ties in seq order)."""
        if self._by_t is None:
            self._by_t = sorted(self._seq_order, key=lambda ke: ke[1]["t"])
        return self._by_t

    def first_after(self, since: float, test) -> Tuple[Optional[Key], Optional[Event]]:
        """(key, event) of the first step with t > since whose attempt passes `test`."""
        if not self.fast or type(since) not in (int, float) or since != since:
            return next(((k, e) for k, e in self.ordered() if e["t"] > since and test(k)), (None, None))
        firsts = []
        for k, (ts, where) in self.by_key.items():
            i = bisect.bisect_right(ts, since)
            if i < len(ts):
                firsts.append((ts[i], where[i]))
        for _, pos in sorted(firsts):   # attempts in the order a scan meets them; `test` once each
            k, e = self._seq_order[pos]
            if test(k):
                return k, e
        return None, None


class _AttemptSteps(_Steps):
    """_Steps read from the model's attempts (their step lists and time
    columns), for a history whose seqs are ints and whose step times are
    numbers: the same answers, without a list of all the steps in one order."""

    @staticmethod
    def of(h: History) -> _Steps:
        if h.int_seqs:
            by_key: Dict[Key, Tuple[List[float], List[Event]]] = {}
            for key, att in h.attempts.items():
                if not att.steps:
                    continue
                stored = att.steps.array("t") if isinstance(att.steps, EventsAt) else None
                if stored is not None and stored.dtype.kind == "f" and not np.isnan(stored).any():
                    if (stored[1:] >= stored[:-1]).all():   # as a list of floats would be: sorted, no NaN
                        by_key[key] = (stored, att.steps)
                        continue
                ts = h.column(att, "t")
                if not set(map(type, ts)) <= {int, float} or not all(map(eq, ts, ts)):   # numbers, no NaN
                    break
                if ts == sorted(ts):
                    by_key[key] = (ts, att.steps)
                else:   # a stable sort by time, ties in seq order
                    order = sorted(range(len(ts)), key=ts.__getitem__)
                    by_key[key] = ([ts[i] for i in order], [att.steps[i] for i in order])
            else:
                return _AttemptSteps(h, by_key)
        return _Steps(_step_list(h))

    def __init__(self, h: History, by_key: Dict[Key, Tuple[List[float], List[Event]]]):
        self.fast = True
        self._h = h
        self._by_t = None
        self.by_key = by_key

    def ordered(self) -> List[Tuple[Key, Event]]:
        if self._by_t is None:
            self._by_t = sorted(_step_list(self._h), key=lambda ke: ke[1]["t"])
        return self._by_t

    def first_after(self, since: float, test) -> Tuple[Optional[Key], Optional[Event]]:
        scan = lambda: next(((k, e) for k, e in self.ordered() if e["t"] > since and test(k)), (None, None))  # noqa: E731
        if type(since) not in (int, float) or since != since:
            return scan()
        firsts = []
        for k, (ts, events) in self.by_key.items():
            # (a time column: numpy's search; a stored event's seq from its column, the dict made for one only)
            i = int(np.searchsorted(ts, since, side="right")) if isinstance(ts, np.ndarray) else \
                bisect.bisect_right(ts, since)
            if i < len(ts):   # ties in time: the first in seq order (seqs are ints)
                seq = events.seq_at(i) if isinstance(events, EventsAt) else events[i].get("seq", 0)
                firsts.append((ts[i], seq, k, events, i))
        firsts.sort(key=lambda c: c[:2])
        if any(a[:2] == b[:2] for a, b in zip(firsts, firsts[1:])):   # one seq twice: the order of the events decides
            return scan()
        for _, _, k, events, i in firsts:   # attempts in the order a scan meets them; `test` once each
            if test(k):
                return k, events[i]
        return None, None


def _step_list(h: History) -> List[Tuple[Key, Event]]:
    """(attempt key, event) of the steps of attempts, in seq order."""
    events, placed = h.events, h.placed
    return [(placed[i][1], events[i]) for i in h._kinds.get("step", ()) if placed[i][1] is not None]


def _mean(values: List[float]) -> Optional[float]:
    return round(sum(values) / len(values), 6) if values else None


def as_history(events: Union[History, Iterable[dict]]) -> History:
    """`events` as a History (built once, shared by whoever reads it)."""
    return events if isinstance(events, History) else History(events)
