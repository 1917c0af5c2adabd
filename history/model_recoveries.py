"""A history's outages and recoveries: the controller off its healthy path, and each fault's (or
unclaimed failure's) path back to training, measured in parts.

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

A part of the history model: `Recoveries` is a base of `History` (history/model.py), whose
events, placements and attempts it reads. Pure.
"""

from __future__ import annotations

import bisect
from operator import eq
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np

from ftharness.history.columns import EventsAt
from ftharness.history.model_parts import Attempt, Event, Key, Outage, Recovery, _t, disrupts, first_time, span

#: steps of a recovering attempt read to find each rank's first one (its ranks step together: a few suffice)
RANK_SCAN_LIMIT = 10_000


def _by_t(events: Iterable[Event]) -> List[Event]:
    return sorted(events, key=lambda e: e["t"])


def _last_within(events: List[Event], since: float, until: float) -> Optional[Event]:
    hits = [e for e in events if since < e["t"] <= until]
    return hits[-1] if hits else None


def _first_from(events: List[Event], t: Optional[float]) -> Optional[Event]:
    return next((e for e in events if t is not None and e["t"] >= t), None)


class Recoveries:
    """The outages and recoveries of a `History` (a base of it: the methods read its model)."""

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
    def of(h: Any) -> _Steps:
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

    def __init__(self, h: Any, by_key: Dict[Key, Tuple[List[float], List[Event]]]):
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


def _step_list(h: Any) -> List[Tuple[Key, Event]]:
    """(attempt key, event) of the steps of attempts of `h` (a History), in seq order."""
    events, placed = h.events, h.placed
    return [(placed[i][1], events[i]) for i in h._kinds.get("step", ()) if placed[i][1] is not None]

