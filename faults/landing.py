"""Whether a fault took effect, read from the history: a landing, and one fault's view of the events.

The fault layer's side of the judgement (faults/base.py re-exports every name): `Landing` (landed,
pending or missed, with its evidence), `EventIndex` (the events every view reads, grouped once) and
`FaultView` (one fault's events, the attempts and failures around it), which each kind's
`landing(view)` reads. Pure, over the event dicts of the history.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from ftharness.history.causal import fault_time
from ftharness.history.columns import non_steps


LANDED, PENDING, MISSED = "landed", "pending", "missed"
#: seconds a failure may seem to come before the fault that caused it (two processes' clocks)
TOL_BEFORE_S = 2.0
#: Ray Train's RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S default: a hang's window where none was recorded
DEFAULT_HEALTH_CHECK_S = 600.0


def _num(v: Any, default: float = 0.0) -> float:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else default


def _seq(e: Dict[str, Any]) -> int:
    v = e.get("seq")
    return v if isinstance(v, int) and not isinstance(v, bool) else 0


def _short(v: Any) -> str:
    """An attempt or node id as messages show it."""
    return str(v)[:12] if v is not None else "none"


@dataclass
class Landing:
    """Whether a fault took effect, and the events that show it."""

    status: str                        # landed | pending (could still) | missed
    evidence: str
    budget: Optional[str] = None       # where Ray must charge the failure it caused (None: no claim)
    failure_seq: Optional[int] = None  # that failure


class EventIndex:
    """The events that fault views read, grouped in one pass (by `fault` and by
    `kind`, each group in the order of `events`), so that the views of all the
    faults of a run share it instead of each scanning the history."""

    KINDS = ("run_start", "run_end", "failure", "attempt_start", "worker_group_started", "worker_group_shutdown")

    def __init__(self, events: List[Dict[str, Any]]):
        self.events = events
        self.by_fault: Dict[Any, List[Dict[str, Any]]] = {}
        self.by_kind: Dict[str, List[Dict[str, Any]]] = {k: [] for k in self.KINDS}
        for e in non_steps(events):   # (stored steps have no fault)
            fault, kind = e.get("fault"), e.get("kind")
            if fault is not None:
                try:
                    self.by_fault.setdefault(fault, []).append(e)
                except TypeError:   # unhashable: equal to no fault index
                    pass
            if type(kind) is str and kind in self.by_kind:
                self.by_kind[kind].append(e)

    def of_fault(self, index: int) -> List[Dict[str, Any]]:
        return self.by_fault.get(index, [])


class FaultView:
    """One fault's events within a history (pure; what `landing` reads).
    `shared`: an EventIndex of `events`, built once for many views."""

    def __init__(self, index: int, events: List[Dict[str, Any]], shared: Optional[EventIndex] = None):
        self.index = index
        self.events = events
        self._ix = shared if shared is not None else EventIndex(events)
        mine = self._ix.of_fault(index)
        self.injected = next((e for e in mine if e.get("kind") == "fault_injected"), None)
        self.skipped = next((e for e in mine if e.get("kind") == "fault_skipped"), None)
        self.actions = [e for e in mine if e.get("kind") == "fault_action"]
        self.healed = [e for e in mine if e.get("kind") == "fault_healed"]

    @property
    def hit(self) -> Dict[str, Any]:
        hit = (self.injected or {}).get("target_hit")
        return hit if isinstance(hit, dict) else {}

    @property
    def t_done(self) -> float:
        """When the fault was done, as the causal model reads it: `t_done` where it agrees with the
        event's own time, else that time (ftharness.history.causal.fault_time)."""
        e = self.injected or {}
        done = fault_time(e)
        return done if done is not None else _num(e.get("t_done"), _num(e.get("t")))

    def recorded_window(self) -> Optional[float]:
        """The window the injector recorded for this fault (None: an older history)."""
        w = (self.injected or {}).get("window_s")
        return float(w) if isinstance(w, (int, float)) and not isinstance(w, bool) and w > 0 else None

    @property
    def victim_attempt(self) -> Optional[str]:
        """The attempt id recorded at injection: in `target_hit` (injector), or on the
        event itself (a crash_worker, recorded by the worker)."""
        aid = self.hit.get("attempt_id") or (self.injected or {}).get("attempt_id")
        return aid if isinstance(aid, str) and aid else None

    def group_of(self, attempt_id: Any, before_seq: int) -> Optional[Dict[str, Any]]:
        """The worker_group_started of `attempt_id` before `before_seq` (the last one)."""
        started = [e for e in self._ix.by_kind["worker_group_started"]
                   if e.get("attempt_id") == attempt_id and _seq(e) < before_seq]
        return started[-1] if started else None

    def attempts_started(self, after_seq: int, before_seq: float) -> List[Dict[str, Any]]:
        """The attempt_start events between the two seqs (the controller began scheduling them)."""
        return [e for e in self._ix.by_kind["attempt_start"] if after_seq < _seq(e) < before_seq]

    def group_started_after(self, attempt_id: Any, after_seq: int) -> Optional[Dict[str, Any]]:
        """The first worker_group_started of `attempt_id` after `after_seq`."""
        return next((e for e in self._ix.by_kind["worker_group_started"]
                     if e.get("attempt_id") == attempt_id and _seq(e) > after_seq), None)

    def shutdown_of(self, attempt_id: Any, after_seq: int, before_seq: float = float("inf")):
        """The worker_group_shutdown of `attempt_id` between the two seqs, if any."""
        return next((e for e in self._ix.by_kind["worker_group_shutdown"]
                     if e.get("attempt_id") == attempt_id and after_seq < _seq(e) < before_seq), None)

    def running_attempt(self, before_seq: int) -> Optional[str]:
        """The attempt whose worker group ran at `before_seq` (started, not shut down)."""
        started = [e for e in self._ix.by_kind["worker_group_started"] if _seq(e) < before_seq]
        if not started:
            return None
        aid = started[-1].get("attempt_id")
        return None if self.shutdown_of(aid, 0, before_seq) is not None else aid

    @property
    def seq(self) -> int:
        return int((self.injected or {}).get("seq") or 0)

    def fit_end(self, after_seq: int) -> Optional[Dict[str, Any]]:
        """The run_end of the fit() running at `after_seq`."""
        return next((e for e in self._ix.by_kind["run_end"] if e.get("seq", 0) > after_seq), None)

    def failures_after(self, after_seq: int) -> List[Dict[str, Any]]:
        """Failure decisions after `after_seq`, up to the end of that fit()."""
        end = self.fit_end(after_seq)
        stop = end.get("seq", 0) if end else float("inf")
        return [e for e in self._ix.by_kind["failure"] if after_seq < e.get("seq", 0) < stop]

    def before_fault(self, e: Dict[str, Any]) -> bool:
        """Whether `e` happened before this fault was done. The history appends in arrival order,
        so a controller's event may arrive before the injector's record of the fault that caused
        it (a loaded injector writes late): an event that arrived before that record is before the
        fault unless its own clock reads at or after the fault's; one that arrived later is after."""
        if _seq(e) > self.seq:
            return False
        t, done = e.get("t"), self.t_done
        if isinstance(t, (int, float)) and not isinstance(t, bool) and isinstance(done, (int, float)) and done:
            return t < done
        return True

    def failures_since_fault(self) -> List[Dict[str, Any]]:
        """Failure decisions of this fault's fit() that did not happen before it: after its record,
        or recorded earlier with a clock at or after the fault (see `before_fault`), in arrival order."""
        starts = [_seq(e) for e in self._ix.by_kind["run_start"] if _seq(e) < self.seq]
        first = starts[-1] if starts else 0
        early = [e for e in self._ix.by_kind["failure"] if first < _seq(e) < self.seq and not self.before_fault(e)]
        return early + self.failures_after(self.seq)

    def shut_before_fault(self, attempt_id: Any) -> Optional[Dict[str, Any]]:
        """The worker_group_shutdown of `attempt_id` that happened before this fault (`before_fault`)."""
        return next((e for e in self._ix.by_kind["worker_group_shutdown"]
                     if e.get("attempt_id") == attempt_id and _seq(e) < self.seq and self.before_fault(e)), None)

    def live_attempt_of(self, pid: Any, before_seq: int) -> Optional[str]:
        """The attempt id whose worker group held `pid` and had not shut down at `before_seq`."""
        started = [e for e in self._ix.by_kind["worker_group_started"]
                   if e.get("seq", 0) < before_seq and any(w.get("pid") == pid for w in e.get("workers") or [])]
        if not started:
            return None
        aid = started[-1].get("attempt_id")
        ended = any(e.get("attempt_id") == aid and e.get("seq", 0) < before_seq
                    for e in self._ix.by_kind["worker_group_shutdown"])
        return None if ended else aid

    def ranks_on(self, node_id: Any, before_seq: int) -> List[int]:
        """Ranks of the attempt running at `before_seq` that sat on `node_id`."""
        started = [e for e in self._ix.by_kind["worker_group_started"] if e.get("seq", 0) < before_seq]
        if not started:
            return []
        aid = started[-1].get("attempt_id")
        if any(e.get("attempt_id") == aid and e.get("seq", 0) < before_seq
               for e in self._ix.by_kind["worker_group_shutdown"]):
            return []
        return sorted(w.get("rank") for w in started[-1].get("workers") or [] if w.get("node_id") == node_id)


def with_error_before_failure(landing: Landing, view: FaultView) -> Landing:
    """A landed stall (a hung worker, a paused node) with what ended it appended: the first
    worker error between the fault and the failure decision. Under torchrun, where nothing
    health-checks workers, that is another rank's collective timing out; under Ray there is
    usually none (the controller's health check ends the stall)."""
    if landing.status != LANDED or landing.failure_seq is None:
        return landing
    err = next((e for e in non_steps(view.events) if e.get("kind") == "worker_error"
                and view.seq < (e.get("seq") or 0) < landing.failure_seq), None)
    if err is None:
        return landing
    after = float(err.get("t") or 0) - float((view.injected or {}).get("t_done") or err.get("t") or 0)
    text = " ".join(str(err.get("error") or "").split())[:160]
    return Landing(landing.status, f"{landing.evidence}; what ended it: rank {err.get('rank')} raised "
                                   f"{err.get('error_type')} {after:.1f} s after the fault ({text})",
                   landing.budget, landing.failure_seq)


def describe_failure(f: Dict[str, Any]) -> str:
    return (f"failure seq {f.get('seq')} ({f.get('error_type')}, charged to {f.get('budget')}, "
            f"{f.get('decision')})")
