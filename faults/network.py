"""Faults on the wire of a namespace host (`cluster: {network: namespaces}`).

- `partition_node` with `mode: network` (faults/node.py) cuts a node off: nftables
  rules in its namespace drop its packets, both ways or one (`direction`), while
  every process on it keeps running. GCS misses its health checks and declares
  it dead; a run restarts elsewhere; the isolated workers run on, which is the
  split-brain case `no_zombie_writes` is for. When the partition heals the raylet
  learns it was declared dead and exits, as on a real cluster.
- `network_degrade`: the node's link loses `loss_pct` percent of its packets
  (nftables `numgen random`) and/or is capped at `rate_mbit` (tc tbf), for
  `duration_s`. `latency_ms` needs tc netem, which not every kernel has; it is
  refused where it is missing.

Landing of a degrade: the node hosted ranks of the running attempt, the rules
were in place, and those ranks then recorded steps through the degraded link
(or the degrade made the attempt fail). Evidence: the rules as installed.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional

from pydantic import Field, model_validator

from ftharness.faults.base import LANDED, MISSED, PENDING, Fault, FaultContext, FaultView, Landing, TargetedSpec, \
    describe_failure
from ftharness.errors import FaultSkipped


class NetworkDegradeSpec(TargetedSpec):
    """The target node's link drops `loss_pct` % of packets and/or is capped at `rate_mbit`
    (and delayed `latency_ms` where tc netem exists) for `duration_s` (default 20)."""

    kind: Literal["network_degrade"]
    loss_pct: Optional[float] = Field(None, gt=0, lt=100)
    rate_mbit: Optional[float] = Field(None, gt=0)
    latency_ms: Optional[float] = Field(None, gt=0)
    direction: Optional[Literal["both", "in", "out"]] = None
    duration_s: Optional[float] = Field(None, gt=0)

    @model_validator(mode="after")
    def _something(self):
        if self.loss_pct is None and self.rate_mbit is None and self.latency_ms is None:
            raise ValueError("network_degrade needs at least one of loss_pct, rate_mbit, latency_ms")
        return self


def network_of(ctx: FaultContext, node_id: str):
    """(network, node index) of a namespace host, or FaultSkipped saying why not."""
    net = getattr(ctx.cluster, "net", None)
    index = ctx.cluster.node_index(node_id) if hasattr(ctx.cluster, "node_index") else None
    if net is None or index is None or index not in net.hosts:
        raise FaultSkipped(f"node {node_id[:8]} is not a namespace host (cluster.network: namespaces)")
    return net, index


def peers_of(net, index: int, cut_from: str) -> Optional[list]:
    """The IPs the node is cut from: None for everyone, the head's, or the other hosts'."""
    if cut_from == "head":
        return [net.head_ip]
    if cut_from == "workers":
        others = sorted(h.ip for i, h in net.hosts.items() if i != index)
        if not others:
            raise FaultSkipped("cut_from workers: the node is the only worker node")
        return others
    return None


def isolate(fault: Fault, ctx: FaultContext, node_id: str, ranks, direction: str, duration: float,
            cut_from: str = "all") -> Dict[str, Any]:
    """partition_node mode network: drop the node's packets (with everyone, the head, or the
    other workers), heal after `duration`."""
    net, index = network_of(ctx, node_id)
    peers = peers_of(net, index, cut_from)
    rules = net.drop(index, direction, peers=peers)
    fault._healer = lambda: net.undrop(index)

    def heal_now() -> Dict[str, Any]:
        fault._healer = None
        return {"node_id": node_id, "how": "nft table deleted", "removed": net.undrop(index)}

    ctx.schedule(duration, heal_now, f"partition heals (fault {fault.index})", kind="fault_healed")
    return {"node_id": node_id, "ranks": ranks, "ip": net.hosts[index].ip, "how": f"nft drop ({direction})",
            "cut_from": cut_from, "peers": peers, "rules": rules, "duration_s": duration}


class NetworkDegrade(Fault):
    """Loss, a bandwidth cap (and latency where netem exists) on one node's link."""

    kind = "network_degrade"
    Spec = NetworkDegradeSpec
    budget = None        # a slower link need not fail anything
    _healer = None

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        if node_id == ctx.cluster.head_node_id():
            raise FaultSkipped("target resolves to the head node, which hosts the harness and the controller")
        net, index = network_of(ctx, node_id)
        duration = float(self.duration_s or 20.0)
        done = []
        if self.spec.get("loss_pct") is not None:
            done.append(net.drop(index, self.spec.get("direction") or "both", float(self.spec["loss_pct"])))
        if self.spec.get("rate_mbit") is not None:
            done.append(net.shape(index, float(self.spec["rate_mbit"])))
        if self.spec.get("latency_ms") is not None:
            done.append(net.delay(index, float(self.spec["latency_ms"])))
        self._healer = lambda: net.heal(index)

        def heal_now() -> Dict[str, Any]:
            self._healer = None
            return {"node_id": node_id, "how": "rules removed", **net.heal(index)}

        ctx.schedule(duration, heal_now, f"degrade ends (fault {self.index})", kind="fault_healed")
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        return {"node_id": node_id, "ranks": ranks, "ip": net.hosts[index].ip, "how": "; ".join(done),
                "duration_s": duration}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        healer, self._healer = self._healer, None
        return {"how": "rules removed at teardown", **healer()} if healer else None

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        what = f"network_degrade of node {str(hit.get('node_id'))[:8]} ({hit.get('how')}) at seq {view.seq}"
        ranks = view.ranks_on(hit.get("node_id"), view.seq)
        if not ranks:
            return Landing(MISSED, f"{what}, but the node hosted no rank of the running attempt")
        healed = next((e.get("seq") for e in view.healed), None)
        stop = healed if healed is not None else float("inf")
        steps = [e for e in view.events if e.get("kind") == "step" and e.get("rank") in ranks
                 and view.seq < e.get("seq", 0) < stop and e.get("node_id") == hit.get("node_id")]
        if steps:
            return Landing(LANDED, f"{what}; ranks {ranks} then made {len(steps)} steps through it "
                                   f"(last at seq {steps[-1].get('seq')})")
        after = [f for f in view.failures_after(view.seq) if f.get("seq", 0) < stop]
        if after:
            return Landing(LANDED, f"{what}; then {describe_failure(after[0])}", None, after[0].get("seq"))
        return Landing(PENDING, f"{what}; no step or failure of ranks {ranks} while it lasted")
