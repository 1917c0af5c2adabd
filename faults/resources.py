"""`starve_resources`: take the cluster's capacity so a worker group cannot be
scheduled.

While active, "hog" actors (1 CPU each, pinned per node) ask for every CPU of
every worker node, not only the free ones. Hogs for CPUs the job holds now wait
in the raylets' queues; when a failure frees those CPUs, the raylet hands them
to the queued hogs at once, before the next worker group's placement group can
ask for them: the starvation wins by construction, not by polling. Nodes that
join later get their hogs on the next check (every 0.25 s). The next worker
group then cannot be placed, and Ray Train raises WorkerGroupStartupTimeoutError
after RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S, a retryable controller error
charged to `controller_failure_limit`. Heal kills the hogs.

It lands when a worker-group start failed while its hogs were held: after the
fault, before its heal (`fault_healed`, which counts the hogs it killed) and
within `duration_s` where one is set, with hogs queued at injection
(`cpus_requested`). A start that failed after the heal, or with no hog ever
queued, is something else's doing. Where the release's start timeout outlasts
the starvation (60 s from 2.54), the start waits instead of failing: it lands
when hogs held CPUs at the heal (they answered a ping: `hogs_running`), and an
attempt began scheduling at least MIN_WAIT_S before the heal and its worker
group started only after it (`_waited_out`); nothing is charged.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, List, Literal, Optional

from pydantic import Field

from ftharness.faults.base import (LANDED, MISSED, PENDING, Fault, FaultContext, FaultSpecBase, FaultView, Landing,
                                   _num, _seq, describe_failure)
from ftharness.faults.capabilities import RAY

PERIOD_S = 0.25
#: how long heal asks the hogs whether they run (a running one answers in milliseconds)
RUNNING_WAIT_S = 1.0
#: the least time a start must have waited while the hogs held the CPUs to count as starved
MIN_WAIT_S = 5.0
STARTUP_ERRORS = ("WorkerGroupStartupTimeoutError", "WorkerGroupStartupFailedError")


def _hog_class():
    import ray

    @ray.remote(num_cpus=1, max_restarts=0)
    class Hog:
        def ping(self) -> bool:
            return True

    return Hog


class StarveResourcesSpec(FaultSpecBase):
    """Every CPU of every worker node is taken, for `duration_s` (default: until the run ends)."""

    kind: Literal["starve_resources"]
    duration_s: Optional[float] = Field(None, gt=0)


class StarveResources(Fault):
    """Takes every CPU of the worker nodes with hog actors, so restarts cannot schedule."""

    kind = "starve_resources"
    Spec = StarveResourcesSpec
    refused_on = {"torchrun": "is Ray-only (hog actors hold Ray resources)"}
    needs = frozenset({RAY})
    budget = "controller"
    causes = "controller"     # only a restart while starved fails to schedule
    causes_surely = False
    # shorter than the fast profile's 20 s start timeout (the restart waits) and longer (it fails)
    explore_args = {"duration_s": (8.0, 30.0)}
    explore_rank = 8

    @classmethod
    def lands_after_restart(cls, spec: Any) -> bool:
        """Only a worker group scheduled while starved shows starved resources."""
        return True

    def __init__(self, index, spec):
        super().__init__(index, spec)
        self._hogs: Dict[str, List[Any]] = {}
        self._on = False
        # heal and the periodic re-grab run on different threads: a grab that raced the heal
        # queued hogs nobody killed, which starved the rest of the run (seen on a real run)
        self._lock = threading.Lock()

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        self._on = True
        queued = self._grab(ctx)
        self._keep_grabbing(ctx)
        return {"cpus_requested": queued, "how": "a hog actor queued for every CPU of every worker node"}

    def _grab(self, ctx: FaultContext) -> int:
        """Queue hogs until every worker node has one per CPU; returns how many were added
        (none once healed)."""
        with self._lock:
            return self._grab_locked(ctx) if self._on else 0

    def _grab_locked(self, ctx: FaultContext) -> int:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        hog = _hog_class()
        head = ctx.cluster.head_node_id()
        added = 0
        for node_id, total in ctx.ops.total_cpus_per_node().items():
            if node_id == head:
                continue
            mine = self._hogs.setdefault(node_id, [])
            while len(mine) < int(total):
                mine.append(hog.options(scheduling_strategy=NodeAffinitySchedulingStrategy(
                    node_id, soft=False)).remote())
                added += 1
        return added

    def _keep_grabbing(self, ctx: FaultContext) -> None:
        def again() -> Dict[str, Any]:
            if self._on:
                self._grab(ctx)
                self._keep_grabbing(ctx)
            return {}

        ctx.schedule(PERIOD_S, again, "starve: cover new nodes", kind="none")

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        import ray

        with self._lock:
            self._on = False
            hogs = [h for hs in self._hogs.values() for h in hs]
            self._hogs = {}
        # a hog that answers holds its CPU now (a queued one never runs): the landing's evidence
        # that a start still waiting at this moment waited for the hogs
        running, _ = ray.wait([h.ping.remote() for h in hogs], num_returns=len(hogs), timeout=RUNNING_WAIT_S) \
            if hogs else ([], [])
        for h in hogs:
            ray.kill(h)
        return {"hogs_killed": len(hogs), "hogs_running": len(running)}

    def landing(self, view: FaultView) -> Landing:
        what = f"starve_resources from seq {view.seq}"
        if not view.hit:
            return Landing(MISSED, f"{what}, but nothing was recorded as hit (empty target_hit)")
        queued = view.hit.get("cpus_requested")
        if not isinstance(queued, int) or isinstance(queued, bool) or queued <= 0:
            return Landing(MISSED, f"{what}, but no hog was queued (cpus_requested {queued!r})")
        healed = next((e for e in view.healed if _seq(e) > view.seq), None)
        stop = _seq(healed) if healed is not None else float("inf")
        duration = self.duration_s
        starved = [f for f in view.failures_after(view.seq) if f.get("controller_failure") in STARTUP_ERRORS]
        held = [f for f in starved if _seq(f) < stop
                and (duration is None or _num(f.get("t")) - view.t_done <= float(duration) + self.window_s)]
        if held:
            f = held[0]
            return Landing(LANDED, f"{what}; {queued} hog(s) held; a worker group could not start: "
                                   f"{describe_failure(f)} ({f.get('controller_failure')})", self.budget, f.get("seq"))
        if starved:
            return Landing(MISSED, f"{what}, but the worker-group start that failed (seq {starved[0].get('seq')}) "
                                   f"came after the hogs were released (seq {stop if healed else '-'}, "
                                   f"duration_s {duration})")
        waited = _waited_out(view, healed) if healed is not None else None
        if waited is not None:
            return Landing(LANDED, f"{what}; {queued} hog(s) queued; {waited}")
        return Landing(PENDING, f"{what}; no worker-group start failed or waited for the hogs")


def _waited_out(view: FaultView, healed: Dict[str, Any]) -> Optional[str]:
    """How a worker-group start waited for the hogs (None: none did): on a release whose start
    timeout outlasts the starvation (60 s from 2.54) the start does not fail, it waits. Evidence:
    hogs that held CPUs when healed (`hogs_running`: they answered a ping), and an attempt the
    controller began to schedule after the fault and at least MIN_WAIT_S before the heal whose
    worker group started only after it. A history without `hogs_running` cannot show it."""
    detail = healed.get("detail") if isinstance(healed.get("detail"), dict) else {}
    killed, running = detail.get("hogs_killed"), detail.get("hogs_running")
    if not all(isinstance(n, int) and not isinstance(n, bool) and n > 0 for n in (killed, running)):
        return None
    for start in view.attempts_started(view.seq, _seq(healed)):
        waited = _num(healed.get("t")) - _num(start.get("t"))
        group = view.group_started_after(start.get("attempt_id"), _seq(start))
        if group is not None and _seq(group) > _seq(healed) and waited >= MIN_WAIT_S:
            return (f"attempt {str(start.get('attempt_id'))[:12]} began scheduling at seq {start.get('seq')}, "
                    f"waited {waited:.1f} s while {running} hog(s) held CPUs, and its worker group started only "
                    f"after they were killed (seq {healed.get('seq')} -> {group.get('seq')})")
    return None
