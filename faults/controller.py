"""`kill_controller`: the Ray Train controller actor dies.

No failure budget covers this: fit() raises ActorDiedError, and the workers die
with their owner. With `resume: true` the runner then calls fit() again with the
same run name and storage, as an operator would, and Ray Train restores from
the checkpoint snapshot on storage.
"""

from __future__ import annotations

import signal
from typing import Any, Dict

from faults.base import Fault, FaultContext, FaultSkipped
from harness import ray_private as rp


class KillController(Fault):
    kind = "kill_controller"

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
