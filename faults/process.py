"""Faults on one training worker process: kill it, or hang it.

`kill_worker` SIGKILLs the worker actor's process through the agent on its node
(a hard crash: OOM killer, segfault); with `graceful: true` it asks Ray to kill
the actor instead (`ray.kill` through the GCS). `hang_worker` SIGSTOPs the
process: it stops answering Ray Train's health-check polls, which is the path
the controller's `RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S` exists for; heal
sends SIGCONT. A hang inside user code would not trip that check (training runs
in a thread; polls are answered by the actor's main thread). `crash_worker`
raises inside the train function: the worker does it itself (harness.job.instrument,
from the plan the injector hands out), so only its landing is judged here.

Each lands when it hit a worker of the running attempt and a failure decision
followed; Ray charges all three to `max_failures`.
"""

from __future__ import annotations

import signal
from typing import Any, Dict, Optional

from faults.base import Fault, FaultContext
from harness.errors import FaultSkipped


class KillWorker(Fault):
    kind = "kill_worker"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        v = self.victim(ctx)
        if self.spec.get("graceful"):
            ctx.ops.kill_actor_by_id(v["actor_id"], no_restart=True)
            how = "ray.kill"
        else:
            if not ctx.agents.signal(v["node_id"], v["pid"], signal.SIGKILL):
                raise FaultSkipped(f"rank {v['rank']} (pid {v['pid']}) was already gone")
            how = "SIGKILL"
        return {**v, "how": how}


class CrashWorker(Fault):
    kind = "crash_worker"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        raise FaultSkipped("crash_worker is done by the worker itself (harness.job.instrument)")


class HangWorker(Fault):
    kind = "hang_worker"
    waits_for_health_check = True

    def __init__(self, index, spec):
        super().__init__(index, spec)
        self._stopped: Optional[Dict[str, Any]] = None

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        v = self.victim(ctx)
        if not ctx.agents.signal(v["node_id"], v["pid"], signal.SIGSTOP):
            raise FaultSkipped(f"rank {v['rank']} (pid {v['pid']}) was already gone")
        self._stopped = v
        return {**v, "how": "SIGSTOP"}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        if self._stopped is None:
            return None
        v, self._stopped = self._stopped, None
        try:
            resumed = ctx.agents.signal(v["node_id"], v["pid"], signal.SIGCONT)
        except Exception:  # the process or its node is gone: nothing left to resume
            resumed = False
        return {**v, "how": "SIGCONT", "resumed": resumed}
