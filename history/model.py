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

Outages and recoveries (what they are, when each starts and ends) are
`model_recoveries.py`'s; what a run cost (step spans, lost work, ETTR, budgets) is
`model_metrics.py`'s; the pieces (Attempt, Fit, Outage, Recovery, StepSpan) and the
failure budgets are `model_parts.py`'s and `model_budgets.py`'s. `History` is built here
from all of them, and this module re-exports their names.

Times are differences of the emitters' `t` (wall clocks). Order among the
events of one source follows `seq`; across sources only `t` is meaningful.
"""

from __future__ import annotations

import bisect
from operator import itemgetter
from typing import Any, Dict, Iterable, List, Optional, Tuple, Union

import numpy as np

from ftharness.history.columns import Events, EventsAt, non_steps
from ftharness.history.filing import file_columnar
from ftharness.history.model_budgets import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, TORCHRUN_BUDGET, charged
from ftharness.history.model_metrics import RunMetrics
from ftharness.history.model_parts import (DISRUPTED, PARTS, Attempt, Event, Fit, Key, Recovery, StepSpan, _all_int,
                                           _seq, span, wall_time)
from ftharness.history.model_recoveries import Recoveries, _Steps

#: what other modules import from here: History and its parts, some kept from before the split
__all__ = ["History", "as_history", "Attempt", "Event", "Fit", "Key", "Recovery", "StepSpan", "BUDGETS", "LIMIT_FIELD",
           "NOT_RETRYABLE", "TORCHRUN_BUDGET", "charged", "DISRUPTED", "PARTS", "span", "wall_time", "_Steps",
           "_all_int", "_seq"]


def _ascending(events: Events) -> bool:
    """Whether the events' seqs (0 when missing) are ints that ascend: `_in_order` keeps them as they are."""
    seqs = events.seqs(missing=0)
    return seqs is not None and bool((seqs[1:] >= seqs[:-1]).all())


# ---------------------------------------------------------------------- history
class History(Recoveries, RunMetrics):
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


def as_history(events: Union[History, Iterable[dict]]) -> History:
    """`events` as a History (built once, shared by whoever reads it)."""
    return events if isinstance(events, History) else History(events)
