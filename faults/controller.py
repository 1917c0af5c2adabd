"""`kill_controller`: the Ray Train controller actor dies.

No failure budget covers this: fit() raises ActorDiedError, and the workers die
with their owner. With `resume: true` the runner then calls fit() again with the
same run name and storage, as an operator would, and Ray Train restores from
the checkpoint snapshot on storage.
"""

from __future__ import annotations

import signal
from typing import Any, Dict

from faults.base import LANDED, MISSED, PENDING, Fault, FaultContext, FaultSkipped, FaultView, Landing
from harness import ray_private as rp


class KillController(Fault):
    kind = "kill_controller"
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
        controllers = rp.list_actors(rp.TRAIN_CONTROLLER_CLASS)
        if not controllers:
            raise FaultSkipped("no live Train controller")
        c = controllers[-1]
        if not ctx.agents.signal(c["node_id"], c["pid"], signal.SIGKILL):
            raise FaultSkipped(f"controller pid {c['pid']} was already gone")
        return {"actor_id": c["actor_id"], "node_id": c["node_id"], "pid": c["pid"], "how": "SIGKILL"}
