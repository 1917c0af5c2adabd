"""The fault contract (Jepsen's nemesis shape): `inject` then maybe `heal`.

A fault resolves its target when its trigger fires (ranks move between
attempts, nodes die), acts through Ray (GCS, node agents, the cluster handle),
and returns what it actually hit. The injector records that in the history.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


class FaultSkipped(Exception):
    """The fault could not be done (its target is gone); recorded, not raised."""


@dataclass
class FaultContext:
    """What a fault may use; built by the injector for each injection."""

    cluster: Any                       # EmbeddedCluster or ExistingCluster
    agents: Any                        # harness.agents.Agents
    members: List[Dict[str, Any]]      # current worker group: rank, node_id, pid, actor_id
    storage_dir: str                   # <storage_path>/<run name>: the run's own storage
    history_path: str
    event: Dict[str, Any] = field(default_factory=dict)  # the event that fired the trigger
    rng: random.Random = field(default_factory=random.Random)
    schedule: Any = None               # callable(delay_s, fn, label): run fn later on the main thread

    def member(self, rank: int) -> Dict[str, Any]:
        for m in self.members:
            if m["rank"] == rank:
                return m
        raise FaultSkipped(f"rank {rank} is not in the current worker group "
                           f"(ranks {sorted(m['rank'] for m in self.members)})")


class Fault:
    """One fault of a scenario. Subclasses set `kind` and implement `inject`."""

    kind = ""
    needs_main_thread = False

    def __init__(self, index: int, spec: Dict[str, Any]):
        self.index = index
        self.spec = spec
        self.target = spec.get("target") or {}

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        """Do the fault now; return the target hit (node_id, pid, rank, path, ...)."""
        raise NotImplementedError

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        """Undo what can be undone (a resumed process, a returned node); None if nothing to do."""
        return None

    @property
    def duration_s(self) -> Optional[float]:
        return self.spec.get("duration_s")

    # -- target resolution shared by the worker and node faults
    def victim(self, ctx: FaultContext) -> Dict[str, Any]:
        """The worker the target names, resolved now: {rank, node_id, pid, actor_id}."""
        if not ctx.members:
            raise FaultSkipped("no worker group is running")
        t = self.target
        if t.get("rank") is not None:
            return ctx.member(int(t["rank"]))
        if t.get("node") is not None:
            node_id = node_id_of(ctx, int(t["node"]))
            on_node = [m for m in ctx.members if m["node_id"] == node_id]
            if not on_node:
                raise FaultSkipped(f"node {t['node']} hosts no worker of the current group")
            return sorted(on_node, key=lambda m: m["rank"])[0]
        return ctx.rng.choice(sorted(ctx.members, key=lambda m: m["rank"]))

    def victim_node(self, ctx: FaultContext) -> str:
        """The node the target names: by index, or the node hosting a rank."""
        if self.target.get("node") is not None:
            return node_id_of(ctx, int(self.target["node"]))
        return self.victim(ctx)["node_id"]


def node_id_of(ctx: FaultContext, index: int) -> str:
    """Node id of the scenario's worker node `index` (0-based, head excluded)."""
    cluster = ctx.cluster
    if hasattr(cluster, "node_id") and index in cluster.worker_node_indices():
        return cluster.node_id(index)
    nodes = [n for n in cluster.nodes() if not n.is_head and n.alive]
    if hasattr(cluster, "worker_node_indices"):
        raise FaultSkipped(f"node {index} is not a live worker node "
                           f"(nodes {cluster.worker_node_indices()})")
    if index >= len(nodes):
        raise FaultSkipped(f"node {index} does not exist ({len(nodes)} live worker nodes)")
    return nodes[index].node_id
