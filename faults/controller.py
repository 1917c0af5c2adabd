"""`kill_controller`: the Ray Train controller actor dies.

No failure budget covers this: fit() raises ActorDiedError, and the workers die
with their owner. With `resume: true` the runner then calls fit() again with the
same run name and storage, as an operator would, and Ray Train restores from
the checkpoint snapshot on storage.
"""

from __future__ import annotations

import signal
from typing import Any, Dict, List, Literal, Optional

from ftharness.faults.base import LANDED, MISSED, PENDING, Fault, FaultContext, FaultSpecBase, FaultView, Landing
from ftharness.errors import FaultSkipped
from ftharness.history.records import read_events


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
    budget = None  # no budget covers it: fit() raises ActorDiedError

    def landing(self, view: FaultView) -> Landing:
        what = f"SIGKILL of controller pid {view.hit.get('pid')} at seq {view.seq}"
        end = view.fit_end(view.seq)
        if end is None:
            return Landing(PENDING, f"{what}; the fit() has not returned")
        if end.get("outcome") == "failed" and end.get("error_type") == "ActorDiedError":
            return Landing(LANDED, f"{what}; fit {end.get('fit_index')} raised ActorDiedError (seq {end.get('seq')})")
        return Landing(MISSED, f"{what}, but fit {end.get('fit_index')} ended {end.get('outcome')} "
                               f"({end.get('error_type') or 'no error'})")

    @property
    def wants_resume(self) -> bool:
        return bool(self.spec.get("resume"))

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
