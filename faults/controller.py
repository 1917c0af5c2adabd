"""`kill_controller`: the Ray Train controller actor dies.

No failure budget covers this: fit() raises ActorDiedError, and the workers die
with their owner. With `resume: true` the runner then calls fit() again with the
same run name and storage, as an operator would, and Ray Train restores from
the checkpoint snapshot on storage.

Landing: this run's controller pid died. The pid hit (recorded at injection)
must be the one this fit's controller recorded its events from (`pid`, or the
emitter's name in older histories), no event of that pid may come after the
kill, and that fit() must end ActorDiedError within the window (120 s: Ray
sees an actor's process exit at once, fit() raises when the driver next waits
on it) whose message, where it names a pid, names this one. Any other fit end
is no landing: a controller that lived on, or another actor's death.
"""

from __future__ import annotations

import re
import signal
from typing import Any, Dict, List, Literal, Optional

from ftharness.faults.base import (CERTAIN, LANDED, MISSED, PENDING, FailureClaim, Fault, FaultContext, FaultSpecBase,
                                   FaultView, Landing, _num, _seq)
from ftharness.errors import FaultSkipped
from ftharness.faults.capabilities import RAY
from ftharness.history.records import read_events


def controller_pid_of(e: Dict[str, Any]) -> Optional[int]:
    """The pid a controller event came from: its `pid`, or its emitter's name (controller-PID-xxxx)."""
    if e.get("source") != "controller":
        return None
    if isinstance(e.get("pid"), int):
        return e["pid"]
    m = re.fullmatch(r"controller-(\d+)-[0-9a-f]+", str(e.get("emitter") or ""))
    return int(m.group(1)) if m else None


def own_controller_pid(events: List[Dict[str, Any]]) -> Optional[int]:
    """The pid of the controller of the run's current fit, as its recorder stated it.

    A shared cluster can hold other runs' controllers (a test's earlier run still
    shutting down); only this run's own controller is a valid target.
    """
    for e in reversed(events):
        if e.get("source") == "controller" and e.get("pid") is not None:
            return e["pid"]
        if e.get("kind") == "run_start":
            return None  # a new fit whose controller has not spoken yet
    return None


class KillControllerSpec(FaultSpecBase):
    """The Train controller actor dies; `resume: true` calls fit() again with the same run name
    and storage, as an operator would."""

    kind: Literal["kill_controller"]
    resume: Optional[bool] = None


class KillController(Fault):
    """SIGKILLs this run's Train controller; with resume, fit() is called again."""

    kind = "kill_controller"
    Spec = KillControllerSpec
    refused_on = {"torchrun": "is Ray-only (torchrun has no Train controller)"}
    ends_fit = True
    needs = frozenset({RAY})
    runs_in = "node_agent"
    budget = None  # no budget covers it: fit() raises ActorDiedError
    causes = "controller_fatal"
    explore_args = {"resume": (True, None)}
    explore_rank = 9

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """Resumed, fit() runs again from the checkpoint: no failure the policy charges; else the
        run ends as a controller's fatal failure."""
        return FailureClaim(None if spec.resume else cls.causes, CERTAIN)

    window_s = 120.0

    def landing(self, view: FaultView) -> Landing:
        pid = view.hit.get("pid")
        what = f"SIGKILL of controller pid {pid} at seq {view.seq}"
        if not view.hit:
            return Landing(MISSED, f"{what}, but nothing was recorded as hit (empty target_hit)")
        if not isinstance(pid, int):
            return Landing(MISSED, f"{what}, but target_hit records no controller pid")
        before = [e for e in view.events if _seq(e) < view.seq]
        start = next((e for e in reversed(before) if e.get("kind") == "run_start"), None)
        fit_events = before[before.index(start):] if start is not None else before
        own = next((p for p in (controller_pid_of(e) for e in reversed(fit_events)) if p is not None), None)
        if own is None:
            return Landing(MISSED, f"{what}, but this fit's controller recorded no pid before the kill")
        if own != pid:
            return Landing(MISSED, f"{what}, but this run's controller is pid {own}")
        end = view.fit_end(view.seq)
        stop = _seq(end) if end is not None else float("inf")
        alive = next((e for e in view.events if view.seq < _seq(e) < stop and controller_pid_of(e) == pid
                      and _num(e.get("t")) > view.t_done), None)
        if alive is not None:
            return Landing(MISSED, f"{what}, but pid {pid} recorded {alive.get('kind')} after it (seq {alive.get('seq')})")
        if end is None:
            return Landing(PENDING, f"{what}; the fit() has not returned")
        if end.get("outcome") != "failed" or end.get("error_type") != "ActorDiedError":
            return Landing(MISSED, f"{what}, but fit {end.get('fit_index')} ended {end.get('outcome')} "
                                   f"({end.get('error_type') or 'no error'})")
        named = re.findall(r"(?m)^\s*pid: (\d+)\s*$", str(end.get("error") or ""))   # Ray's dead-actor context
        if named and str(pid) not in named:
            return Landing(MISSED, f"{what}, but fit {end.get('fit_index')}'s ActorDiedError names pid "
                                   f"{named[0]}: another actor died")
        late = _num(end.get("t")) - view.t_done
        window = self.window_of(view)
        if late > window:
            return Landing(MISSED, f"{what}, but fit {end.get('fit_index')} raised ActorDiedError {late:.1f} s "
                                   f"later, outside the kill_controller window of {window:.0f} s")
        return Landing(LANDED, f"{what}; fit {end.get('fit_index')} raised ActorDiedError (seq {end.get('seq')})"
                               f"{' naming pid ' + str(pid) if named else ''}")

    @property
    def wants_resume(self) -> bool:
        return bool(self.spec.resume)

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        pid = own_controller_pid(read_events(ctx.history_path))
        if pid is None:
            raise FaultSkipped("this run's Train controller has recorded nothing yet")
        live = [c for c in ctx.ops.list_actors(ctx.ops.TRAIN_CONTROLLER_CLASS) if c["pid"] == pid]
        if not live:
            raise FaultSkipped(f"this run's Train controller (pid {pid}) is not alive")
        c = live[0]
        if not ctx.agents.signal(c["node_id"], c["pid"], signal.SIGKILL):
            raise FaultSkipped(f"controller pid {c['pid']} was already gone")
        return {"actor_id": c["actor_id"], "node_id": c["node_id"], "pid": c["pid"], "how": "SIGKILL"}
