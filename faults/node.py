"""Faults on a whole node: it dies, it is preempted with notice, it is cut off.

- `kill_node`: hardware failure, no notice. Embedded: every process of the node
  is SIGKILLed (SIGTERM first with `graceful`); elsewhere the node's agent kills
  its raylet tree. Ray charges the dead workers to `max_failures`.
- `preempt_node`: a spot reclaim. The node is drained with reason PREEMPTION and
  a deadline `notice_s` ahead (what a cloud's autoscaler does), then dies at the
  deadline plus `kill_offset_s`. Ray charges it to `max_preemption_failures`
  only if the node dies at or after the deadline; a kill before it is an
  ordinary failure (ray-train-v2-faults.md section 3.2).
- `partition_node`: the raylet and all its processes are SIGSTOPped for
  `duration_s`: no heartbeats, no answers, as behind a network partition. GCS
  declares the node dead; when the partition heals, the raylet learns it was
  declared dead and exits, as a partitioned node does on a real cluster.

`replace: true` starts a new node `replace_after_s` after the old one died
(capacity returns); otherwise the cluster stays smaller.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

from faults.base import Fault, FaultContext, FaultSkipped
from harness import ray_private as rp


def _index_of(ctx: FaultContext, node_id: str) -> Optional[int]:
    return ctx.cluster.node_index(node_id) if hasattr(ctx.cluster, "node_index") else None


def _head_guard(ctx: FaultContext, node_id: str) -> None:
    if node_id == ctx.cluster.head_node_id():
        raise FaultSkipped("target resolves to the head node, which hosts the harness and the controller")


def kill_node_now(ctx: FaultContext, node_id: str, graceful: bool = False) -> str:
    """Stop a node's processes; returns how."""
    index = _index_of(ctx, node_id)
    if index is not None:
        ctx.cluster.remove_node(index, graceful=graceful)
        return "remove_node(graceful)" if graceful else "remove_node(SIGKILL)"
    agent = ctx.agents.on(node_id)
    ctx.agents.forget(node_id)
    try:
        agent.kill_raylet.remote()
    finally:
        time.sleep(0.5)
    return "agent: SIGKILL raylet tree"


def replace_later(ctx: FaultContext, fault: Fault, delay_s: float) -> None:
    if not hasattr(ctx.cluster, "add_node"):
        raise FaultSkipped("replace: an existing cluster's nodes cannot be added by ftharness")
    ctx.schedule(delay_s, lambda: {"node_index": ctx.cluster.add_node(), "how": "add_node"},
                 f"replacement node for fault {fault.index}")


class KillNode(Fault):
    kind = "kill_node"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        how = kill_node_now(ctx, node_id, graceful=bool(self.spec.get("graceful")))
        if self.spec.get("replace"):
            replace_later(ctx, self, float(self.spec.get("replace_after_s") or 0.0))
        return {"node_id": node_id, "ranks": ranks, "how": how}


class PreemptNode(Fault):
    kind = "preempt_node"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        notice = float(self.spec.get("notice_s") or 3.0)
        offset = float(self.spec.get("kill_offset_s") or 0.0)
        deadline_ms = int((time.time() + notice) * 1000)
        rp.drain_node_for_preemption(rp.gcs_address(), node_id, deadline_ms, "ftharness: spot preemption")
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)

        def kill() -> Dict[str, Any]:
            how = kill_node_now(ctx, node_id, graceful=False)
            late_ms = time.time() * 1000 - deadline_ms
            if self.spec.get("replace"):
                replace_later(ctx, self, float(self.spec.get("replace_after_s") or 0.0))
            return {"node_id": node_id, "how": how, "ms_after_deadline": round(late_ms, 1)}

        ctx.schedule(max(0.0, notice + offset), kill, f"preempted node dies (fault {self.index})")
        return {"node_id": node_id, "ranks": ranks, "how": "drain(PREEMPTION)", "deadline_ms": deadline_ms,
                "kill_in_s": notice + offset}


class PartitionNode(Fault):
    kind = "partition_node"

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        duration = float(self.duration_s or 10.0)
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        import ray

        pids = ray.get(ctx.agents.on(node_id).pause_node.remote(duration), timeout=30)
        ctx.agents.forget(node_id)  # paused with the node; it resumes on its own timer
        ctx.schedule(duration, lambda: {"node_id": node_id, "how": "SIGCONT (node timer)"},
                     f"partition heals (fault {self.index})", kind="fault_healed")
        return {"node_id": node_id, "ranks": ranks, "how": "SIGSTOP node", "paused_pids": len(pids),
                "duration_s": duration}
