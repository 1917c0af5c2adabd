"""One node of a cluster as a handle lists it, and what the embedded cluster's nodes are started with.

A part of the cluster handles (harness/cluster/handles.py re-exports the names others import):
`NodeInfo` (one `ray.nodes()` record, with its raylet and train worker pids), this host's GPUs and
their slices per node, the environment a raylet starts in, a node's processes, and `ray.nodes()`
read by node id.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ftharness.harness.cluster import ray_private as rp
from ftharness.harness.cluster.ns_node import NamespaceNode


NODE_OBJECT_STORE_BYTES = 80 * 1024 * 1024
#: the Ray node label each embedded worker node carries: its harness index
NODE_LABEL = "ftharness.io/node"


@dataclass
class NodeInfo:
    index: int                    # harness node index (0..N-1 for worker nodes, -1 head)
    node_id: str
    alive: bool
    is_head: bool
    raylet_pid: Optional[int]
    resources: Dict[str, float] = field(default_factory=dict)
    train_worker_pids: List[int] = field(default_factory=list)
    ip: Optional[str] = None      # the raylet's address (Ray's NodeManagerAddress)
    labels: Dict[str, str] = field(default_factory=dict)   # Ray node labels


def node_info(index: int, record: Dict[str, Any], is_head: bool, raylet_pid: Optional[int] = None,
              train_worker_pids: Optional[List[int]] = None, node_id: Optional[str] = None) -> NodeInfo:
    """A NodeInfo from one `ray.nodes()` record (an empty record: a node Ray no longer lists)."""
    return NodeInfo(index, node_id or record["NodeID"], bool(record.get("Alive")), is_head, raylet_pid,
                    dict(record.get("Resources") or {}),
                    sorted(train_worker_pids or []), record.get("NodeManagerAddress") or None,
                    {str(k): str(v) for k, v in (record.get("Labels") or {}).items()})


def host_gpus() -> List[str]:
    """This host's GPUs as CUDA_VISIBLE_DEVICES names them: the driver's own setting, else
    every GPU nvidia-smi lists ([] without one)."""
    given = os.environ.get("CUDA_VISIBLE_DEVICES")
    if given is not None:
        return [g.strip() for g in given.split(",") if g.strip()]
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        out = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=10).stdout
    except Exception:  # noqa: BLE001 - no GPU we can see
        return []
    return [str(i) for i, line in enumerate(l for l in out.splitlines() if l.startswith("GPU "))]


def gpu_slice(physical: List[str], used: List[str], n: int) -> List[str]:
    """`n` (at most len(physical)) distinct GPUs for a new node: those no live node uses first,
    then (more nodes than GPUs) the least used ones, shared."""
    free = [g for g in physical if g not in used]
    ranked = free + sorted((g for g in physical if g in used), key=lambda g: (used.count(g), physical.index(g)))
    return ranked[:n]


class _env:
    """Set environment variables for a `with` block (a raylet started inside inherits them)."""

    def __init__(self, values: Dict[str, str]):
        self.values, self.old = values, {}

    def __enter__(self):
        self.old = {k: os.environ.get(k) for k in self.values}
        os.environ.update(self.values)

    def __exit__(self, *exc):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _node_pids(node) -> List[int]:
    if isinstance(node, NamespaceNode):
        return node.pids()
    return [p for pids in rp.node_process_pids(node).values() for p in pids]


def _raylet_pid(node) -> Optional[int]:
    return node.raylet_pid() if isinstance(node, NamespaceNode) else rp.raylet_pid(node)


def _latest_records(records: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
    """`ray.nodes()` by node id; a live record wins over a dead one of the same id."""
    out: Dict[str, Dict[str, Any]] = {}
    for r in records:
        if r.get("NodeID") and (r["NodeID"] not in out or r.get("Alive")):
            out[r["NodeID"]] = r
    return out
