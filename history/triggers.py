"""Which history events fire which fault triggers (pure, no Ray).

A `TriggerBook` lives inside the history actor and sees every event as it is
appended, so a trigger fires on the exact event, in history order. Triggers on
worker events (a step, a checkpoint written or reported, a restore) also *gate*:
the emitting worker waits until the injector has done the fault, so "at step 5"
means no rank starts step 6 before the fault lands (unless the trigger says
`hold: false`). Controller events
(checkpoint registered, attempt started) fire without a gate: the controller
must never block. Time triggers are the injector's own business.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set, Tuple

#: trigger event name -> (history kind, predicate on the event, key that counts "nth", gates)
EVENT_TRIGGERS = {
    "checkpoint_written": ("checkpoint_written", lambda e: True,
                           lambda e: (e.get("fit_index"), e.get("attempt_id"), e.get("step")), True),
    "checkpoint_reported": ("report", lambda e: bool(e.get("checkpoint")),
                            lambda e: (e.get("fit_index"), e.get("attempt_id"), e.get("step")), True),
    "checkpoint_registered": ("checkpoint_registered", lambda e: True,
                              lambda e: e.get("checkpoint"), False),
    "attempt_started": ("worker_group_started", lambda e: True,
                        lambda e: (e.get("fit_index"), e.get("attempt_id")), False),
    # a worker group about to start: its placement group is being scheduled (a fault here hits
    # the controller before any worker of the attempt runs)
    "attempt_scheduling": ("attempt_start", lambda e: True,
                           lambda e: (e.get("fit_index"), e.get("attempt_id")), False),
    "restored": ("worker_start", lambda e: bool(e.get("restored_checkpoint")),
                 lambda e: (e.get("fit_index"), e.get("attempt_id")), True),
}


@dataclass
class ArmedTrigger:
    """One fault's event trigger as the history actor watches it."""

    fault: int
    step: Optional[int] = None
    rank: Optional[int] = None
    event: Optional[str] = None
    nth: int = 1
    hold: bool = True
    seen: Set[Any] = field(default_factory=set)
    fired: bool = False

    @classmethod
    def from_spec(cls, fault: int, at: Dict[str, Any]) -> Optional["ArmedTrigger"]:
        if at.get("time_s") is not None:
            return None
        return cls(fault, at.get("step"), at.get("rank"), at.get("event"), int(at.get("nth") or 1),
                   bool(at.get("hold", True)))

    def matches(self, e: Dict[str, Any]) -> Tuple[bool, bool]:
        """(fires now, gates the emitter)."""
        if self.fired:
            return False, False
        if self.step is not None:
            hit = (e.get("kind") == "step" and e.get("step") == self.step
                   and (self.rank is None or e.get("rank") == self.rank))
            return hit, hit and self.hold
        kind, pred, key, gates = EVENT_TRIGGERS[self.event]
        if e.get("kind") != kind or not pred(e):
            return False, False
        self.seen.add(key(e))
        hit = len(self.seen) >= self.nth
        return hit, hit and gates and self.hold


class TriggerBook:
    """Armed triggers, fired ones waiting for the injector, and open gates."""

    def __init__(self):
        self.triggers: List[ArmedTrigger] = []
        self.pending: List[Dict[str, Any]] = []
        self.released: Dict[int, str] = {}

    def arm(self, faults: List[Dict[str, Any]]) -> None:
        for i, f in enumerate(faults):
            t = ArmedTrigger.from_spec(i, f.get("at") or {})
            if t is not None:
                self.triggers.append(t)

    def gating_kinds(self) -> Set[str]:
        """The event kinds an armed trigger can gate on: an emitter must wait for the
        acknowledgement of these (it may carry a gate); any other kind never gates."""
        kinds: Set[str] = set()
        for t in self.triggers:
            if not t.hold:
                continue
            if t.step is not None:
                kinds.add("step")
            elif EVENT_TRIGGERS[t.event][3]:
                kinds.add(EVENT_TRIGGERS[t.event][0])
        return kinds

    def observe(self, event: Dict[str, Any]) -> Optional[int]:
        """Fire the triggers this event meets; returns a fault index to gate on."""
        gate = None
        for t in self.triggers:
            fires, gates = t.matches(event)
            if fires:
                t.fired = True
                self.pending.append({"fault": t.fault, "t_requested": event.get("t"), "seq": event.get("seq"),
                                     "gated": gates, "event": {k: event.get(k) for k in
                                                               ("kind", "rank", "step", "attempt_id", "pid",
                                                                "node_id", "checkpoint", "local_path")}})
                if gates and gate is None:
                    gate = t.fault
        return gate

    def take_pending(self) -> List[Dict[str, Any]]:
        out, self.pending = self.pending, []
        return out
