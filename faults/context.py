"""What a fault may use when it acts: the injection context, the injector's callbacks, the run's storage.

The fault layer's side of an injection (faults/base.py re-exports every name): `FaultContext` (the
cluster handle and its capabilities, the node agents, the current worker group, the run's storage),
the protocols of what the injector and the worker hand a fault, and the helpers that find a node or
a storage path. A fault acts on the cluster only through these, so faults/ never imports the
cluster layer.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol, TypedDict

from ftharness.errors import FaultSkipped
from ftharness.faults.capabilities import NODE_INDEX, ClusterHandle, NodeAgents


class Schedule(Protocol):
    """Run `fn` `delay_s` from now on the injector's main thread; `kind` is the event its
    result is recorded as ("none": not recorded)."""

    def __call__(self, delay_s: float, fn: Callable[[], Dict[str, Any]], label: str,
                 kind: str = "fault_action") -> None: ...


class Record(Protocol):
    """Record a `fault_action` now."""

    def __call__(self, label: str, detail: Dict[str, Any]) -> None: ...


class Member(TypedDict, total=False):
    """One worker of the current group, as the history book lists it."""

    rank: int
    node_id: str
    pid: int
    actor_id: str
    attempt_id: str


class WorkerSide(Protocol):
    """What a fault that `runs_in` the worker may use there (harness/job/instrument.py's
    WorkerRecorder; the torchrun worker's side): the rank, its device, and the two actions
    a train function cannot do by raising alone."""

    rank: int
    device: Any

    def raise_cuda_error(self, how: str) -> None: ...

    def stall(self, duration_s: Optional[float]) -> None: ...


@dataclass
class FaultContext:
    """What a fault may use; built by the injector for each injection. It acts on the
    cluster only through `cluster` (a ClusterHandle: ask `can(capability)` before using
    what a capability brings), `agents`, and `ops`."""

    cluster: ClusterHandle             # EmbeddedCluster, ExistingCluster or the torchrun Launcher
    agents: Optional[NodeAgents]       # harness/cluster/agents.py's Agents (torchrun: ProcessAgents)
    members: List[Member]              # current worker group: rank, node_id, pid, actor_id
    storage_dir: str                   # <storage_path>/<run name>: the run's own storage (on storage_fs)
    history_path: str
    event: Dict[str, Any] = field(default_factory=dict)  # the event that fired the trigger
    rng: random.Random = field(default_factory=random.Random)
    schedule: Optional[Schedule] = None   # run fn later on the main thread
    record: Optional[Record] = None       # record a fault_action now
    ops: Any = None                    # Ray operations (the module ftharness.harness.cluster.ray_private),
                                       # handed in so that faults never import the cluster layer
    storage_fs: Any = None             # the pyarrow filesystem storage_dir is a path on (None: local disk)

    def can(self, capability: str) -> bool:
        """Whether the cluster offers `capability` (faults/capabilities.py)."""
        return capability in self.cluster.capabilities

    def storage(self):
        """(filesystem, path): the run's own storage folder as a path on its pyarrow filesystem."""
        return resolve_storage(self.storage_dir, self.storage_fs)

    def member(self, rank: int) -> Dict[str, Any]:
        for m in self.members:
            if m["rank"] == rank:
                return m
        raise FaultSkipped(f"rank {rank} is not in the current worker group "
                           f"(ranks {sorted(m['rank'] for m in self.members)})")


def resolve_storage(path: str, fs: Any = None):
    """(pyarrow filesystem, path on it) for a storage path: on `fs` when given, else a URI
    (s3://, gs://, ...) resolved as Ray Train resolves it, else a path on local disk."""
    import pyarrow.fs as pafs

    if fs is not None:
        return fs, path
    if "://" in path:
        return pafs.FileSystem.from_uri(path)
    return pafs.LocalFileSystem(), path


def join_storage(path: str, name: str) -> str:
    """`name` under a storage path: a local path, or a URI whose query string (S3 options such
    as `?endpoint_override=...`) stays at the end."""
    if "://" not in path:
        return os.path.join(path, name)
    from urllib.parse import urlsplit, urlunsplit

    u = urlsplit(path)
    return urlunsplit(u._replace(path=u.path.rstrip("/") + "/" + name))


def node_id_of(ctx: FaultContext, index: int) -> str:
    """Node id of the scenario's worker node `index` (0-based, head excluded)."""
    cluster = ctx.cluster
    if ctx.can(NODE_INDEX):
        if index in cluster.worker_node_indices():
            return cluster.node_id(index)
        raise FaultSkipped(f"node {index} is not a live worker node "
                           f"(nodes {cluster.worker_node_indices()})")
    nodes = [n for n in cluster.nodes() if not n.is_head and n.alive]
    if index >= len(nodes):
        raise FaultSkipped(f"node {index} does not exist ({len(nodes)} live worker nodes)")
    return nodes[index].node_id
