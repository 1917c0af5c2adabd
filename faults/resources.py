"""`starve_resources`: take the cluster's free capacity so a worker group cannot
be scheduled.

While active, "hog" actors (1 CPU each, pinned per node) take every CPU that
is free, re-checked every 0.25 s, so CPUs freed by dying workers are taken too.
The next worker group's placement group then cannot be placed, and Ray Train
raises WorkerGroupStartupTimeoutError after RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S,
a retryable controller error charged to `controller_failure_limit`. Heal kills
the hogs and capacity returns.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import ray

from faults.base import Fault, FaultContext
from harness import ray_private as rp

PERIOD_S = 0.25


@ray.remote(num_cpus=1, max_restarts=0)
class Hog:
    def ping(self) -> bool:
        return True


class StarveResources(Fault):
    kind = "starve_resources"

    def __init__(self, index, spec):
        super().__init__(index, spec)
        self._hogs: List[Any] = []
        self._on = False

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        self._on = True
        taken = self._grab(ctx)
        self._keep_grabbing(ctx)
        return {"cpus_taken": taken, "how": "hog actors on every free CPU"}

    def _grab(self, ctx: FaultContext) -> int:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        head = ctx.cluster.head_node_id()
        taken = 0
        for node_id, free in rp.available_cpus_per_node().items():
            if node_id == head:
                continue
            for _ in range(int(free)):
                self._hogs.append(Hog.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                    node_id, soft=False)).remote())
                taken += 1
        return taken

    def _keep_grabbing(self, ctx: FaultContext) -> None:
        def again() -> Dict[str, Any]:
            if self._on:
                self._grab(ctx)
                self._keep_grabbing(ctx)
            return {}

        ctx.schedule(PERIOD_S, again, "starve: take freed CPUs", kind="none")

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        self._on = False
        hogs, self._hogs = self._hogs, []
        for h in hogs:
            ray.kill(h)
        return {"hogs_killed": len(hogs)}
