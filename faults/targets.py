"""Node targets by node id, IP or label: which node of a cluster a fault means.

`target: {node_id: HEX}` (a prefix of at least 8 hex digits, if it names one
node), `{ip: A.B.C.D}` (the raylet's address, Ray's `NodeManagerAddress`) or
`{label: {key: value, ...}}` (Ray node labels; every pair must match) name one
live worker node. Resolution is a pure function over the cluster's node records
(ftharness.harness.cluster.handles.NodeInfo, or anything with `node_id`, `alive`,
`is_head`, `ip` and `labels`), so it is the same at validation time (the
runner checks every fault against the cluster it just connected to) and at
injection (where a node that died or changed since is a skipped fault with the
same reason). A target that matches no live node, more than one, or the head is
refused with one line naming the field (`faults[2].target.ip`) and what exists.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence

from ftharness.errors import FtharnessError

#: the target keys that name a node by what Ray knows of it (besides the scenario's `node` index)
NODE_SELECTORS = ("node_id", "ip", "label")
#: how many existing nodes or values an error names
SHOWN = 6


class TargetError(FtharnessError, ValueError):
    """A node target that names no node, several, or the head; one line naming the field."""


def selector_of(target: Mapping[str, Any]) -> Optional[str]:
    """The node selector a target uses (node_id, ip or label), or None."""
    for key in NODE_SELECTORS:
        if target.get(key) is not None:
            return key
    return None


def same_ip(a: Any, b: Any) -> bool:
    try:
        return ipaddress.ip_address(str(a)) == ipaddress.ip_address(str(b))
    except ValueError:
        return str(a) == str(b)


def _matches(key: str, want: Any, node: Any) -> bool:
    if key == "node_id":
        return str(node.node_id or "").lower().startswith(str(want).lower())
    if key == "ip":
        return node.ip is not None and same_ip(node.ip, want)
    labels = getattr(node, "labels", None) or {}
    return all(k in labels and str(labels[k]) == str(v) for k, v in dict(want).items())


def _name(node: Any) -> str:
    head = " (head)" if node.is_head else ""
    return f"{str(node.node_id)[:8]}{head}"


def _listing(items: Sequence[str], none: str = "none") -> str:
    if not items:
        return none
    shown = ", ".join(items[:SHOWN])
    return shown if len(items) <= SHOWN else f"{shown} and {len(items) - SHOWN} more"


def _what_exists(key: str, want: Any, live: List[Any]) -> str:
    """The live nodes as the selector sees them: ids, IPs, or the label values there are."""
    if key == "node_id":
        return f"live nodes: {_listing([_name(n) for n in live])}"
    if key == "ip":
        ips: Dict[str, List[Any]] = {}
        for n in live:
            ips.setdefault(str(n.ip), []).append(n)
        return "live node IPs: " + _listing([f"{ip}{' (head)' if any(n.is_head for n in ns) else ''}"
                                              + (f" x{len(ns)}" if len(ns) > 1 else "")
                                              for ip, ns in sorted(ips.items())])
    parts = []
    for k in dict(want):
        values = sorted({str((n.labels or {})[k]) for n in live if k in (n.labels or {})})
        parts.append(f"{k}: {_listing(values, 'on no live node')}")
    return "live label values: " + "; ".join(parts)


def _shown(key: str, want: Any) -> str:
    if key == "label":
        return "{" + ", ".join(f"{k}: {v}" for k, v in dict(want).items()) + "}"
    return str(want)


def resolve_node(target: Mapping[str, Any], nodes: Iterable[Any], where: str = "target") -> Any:
    """The one live worker node `target` names (by node_id, ip or label); TargetError otherwise.
    `where` is the target's field in the scenario (`faults[0].target`)."""
    key = selector_of(target)
    if key is None:
        raise TargetError(f"{where}: names no node (give node_id, ip or label)")
    want = target[key]
    field = f"{where}.{key}"
    nodes = list(nodes)
    live = [n for n in nodes if n.alive]
    hits = [n for n in live if _matches(key, want, n)]
    if not hits:
        dead = [n for n in nodes if not n.alive and _matches(key, want, n)]
        gone = f" (it matches dead node {_name(dead[0])})" if dead else ""
        raise TargetError(f"{field}: {_shown(key, want)} matches no live node{gone}; "
                          f"{_what_exists(key, want, live)}")
    if len(hits) > 1:
        raise TargetError(f"{field}: {_shown(key, want)} matches {len(hits)} live nodes "
                          f"({_listing([_name(n) for n in hits])}); a fault needs exactly one")
    if hits[0].is_head:
        raise TargetError(f"{field}: {_shown(key, want)} is the head node ({_name(hits[0])}), which hosts "
                          f"the harness and the Train controller; no fault targets it")
    return hits[0]


def target_of(spec: Any) -> Dict[str, Any]:
    """The target of one fault (a spec model, or a dump read back from a history) as its keys
    that are set ({} where it has none): the form the history records as `target_asked`."""
    t = spec.get("target") if isinstance(spec, Mapping) else getattr(spec, "target", None)
    if hasattr(t, "model_dump"):
        return t.model_dump(mode="json", exclude_none=True)
    return dict(t) if isinstance(t, Mapping) else {}


def check_node_targets(faults: Sequence[Any], nodes: Iterable[Any]) -> None:
    """Every node target of `faults` (spec models) names exactly one live worker node of
    `nodes`; the first that does not raises TargetError naming its field."""
    nodes = list(nodes)
    for i, spec in enumerate(faults):
        target = target_of(spec)
        if selector_of(target) is not None:
            resolve_node(target, nodes, where=f"faults[{i}].target")
