"""What a fault may do to a cluster: the capabilities a cluster handle declares, and the
protocols that name the methods each capability brings.

A cluster handle (harness/cluster/handles.py's EmbeddedCluster and ExistingCluster, the
torchrun Launcher in harness/torchrun/launcher.py) says in `capabilities` what it can do;
a fault kind says in `needs` (or `needs_for(spec)`) what it must have. A scenario whose
faults need what its cluster lacks is refused in one line before anything starts
(`capability_problem`), and a fault asks `ctx.can(...)` instead of probing the handle for
a method. Faults never import the cluster layer: these protocols are the whole interface.
"""

from __future__ import annotations

from typing import Any, Dict, FrozenSet, Iterable, List, Mapping, Optional, Protocol, Sequence, runtime_checkable

#: the handle lists its nodes (`nodes()`) and names the head (`head_node_id()`): every handle
NODES = "nodes"
#: the scenario's worker nodes by index: `node_id(i)`, `node_index(node_id)`, `worker_node_indices()`
NODE_INDEX = "node_index"
#: ftharness stops a node itself: `remove_node(index, graceful)`
REMOVE_NODE = "remove_node"
#: ftharness adds a node (a replacement): `add_node()`
ADD_NODE = "add_node"
#: the harness pauses and resumes a node's processes itself: `pause_node(index)`, `resume_node(procs)`
PAUSE_NODE = "pause_node"
#: each node is a network namespace host ftharness built: `net` (harness/cluster/netns.py's Network)
NODE_NETWORK = "node_network"
#: the nodes are Ray nodes: node agents (Ray actors) and Ray's GCS (ctx.ops) reach them
RAY = "ray"

#: every capability, with what it means in a refusal
CAPABILITIES: Dict[str, str] = {
    NODES: "lists its nodes",
    NODE_INDEX: "numbers the scenario's worker nodes",
    REMOVE_NODE: "stops a node itself",
    ADD_NODE: "adds nodes (ftharness started the cluster)",
    PAUSE_NODE: "pauses a node's processes from the harness",
    NODE_NETWORK: "owns each node's network (cluster.network: namespaces)",
    RAY: "runs Ray nodes (node agents, the GCS)",
}


@runtime_checkable
class NodeRecord(Protocol):
    """One node as a handle lists it (harness/cluster/handles.py's NodeInfo)."""

    node_id: str
    alive: bool
    is_head: bool
    ip: Optional[str]
    labels: Dict[str, str]


class ClusterHandle(Protocol):
    """What every cluster handle offers a fault."""

    #: what this handle can do (the constants above)
    capabilities: FrozenSet[str]
    #: what it is, in a refusal ("an existing cluster (cluster.address)")
    kind: str

    def nodes(self) -> Sequence[NodeRecord]: ...

    def head_node_id(self) -> str: ...


class IndexedNodes(ClusterHandle, Protocol):
    """NODE_INDEX: the scenario numbers worker nodes 0..N-1 (head excluded)."""

    def node_id(self, index: int) -> str: ...

    def node_index(self, node_id: str) -> Optional[int]: ...

    def worker_node_indices(self) -> List[int]: ...


class NodeRemoval(IndexedNodes, Protocol):
    """REMOVE_NODE."""

    def remove_node(self, index: int, graceful: bool = False) -> None: ...


class NodeAddition(ClusterHandle, Protocol):
    """ADD_NODE."""

    def add_node(self) -> int: ...


class NodePause(IndexedNodes, Protocol):
    """PAUSE_NODE: the processes are the harness's own children (torchrun agents and workers)."""

    def pause_node(self, index: int) -> List[Any]: ...

    def resume_node(self, procs: List[Any]) -> List[int]: ...


class NodeNetwork(IndexedNodes, Protocol):
    """NODE_NETWORK: `net` is the namespaces' Network (hosts by node index, drop and shape rules)."""

    net: Any


class NodeAgents(Protocol):
    """The node agents a fault signals processes through (harness/cluster/agents.py's Agents,
    the torchrun runtime's ProcessAgents)."""

    def signal(self, node_id: str, pid: int, sig: int) -> bool: ...


def capability_problem(specs: Iterable[Any], caps: Iterable[str], cluster_name: str,
                       registry: Mapping[str, Any]) -> Optional[str]:
    """`faults[i].kind: ...` for the first fault whose kind needs a capability the cluster
    lacks, or None. `specs`: fault spec models; `registry`: kind -> Fault class."""
    caps = frozenset(caps)
    for i, spec in enumerate(specs):
        cls = registry.get(spec.kind)
        if cls is None:
            continue
        missing = sorted(set(cls.needs_for(spec)) - caps)
        if missing:
            what = "; ".join(f"{m} ({CAPABILITIES.get(m, 'a capability of its own')})" for m in missing)
            return (f"faults[{i}].kind: {spec.kind} needs a cluster that offers {what}, which "
                    f"{cluster_name} does not (it offers {', '.join(sorted(caps)) or 'none'})")
    return None
