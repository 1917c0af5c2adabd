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

Landing of a degrade: the node hosted ranks of the attempt running when it was
hit (the scenario's target among them), the link was degraded, and those ranks
then recorded steps through it (or that attempt failed within `duration_s` and
a node fault's window). That the link was degraded is positive evidence read
from the kernel when the degrade ends, before its rules go (`fault_healed`
detail `counters`): packets counted by the nftables drop rule, or the tc
shaper's overlimits/drops (a capped rate that throttled), or packets through
netem (a delay). Rules installed but no packet counted, or no counters in the
history (an older one), is no landing.
"""

from __future__ import annotations

from typing import Any, Dict, Literal, Optional

from pydantic import Field, model_validator

from ftharness.faults.base import (LANDED, MISSED, PENDING, Fault, FaultContext, FaultView, Landing, TargetedSpec,
                                   _seq, _short, describe_failure)
from ftharness.errors import FaultSkipped
from ftharness.faults.capabilities import NODE_NETWORK


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
    net = ctx.cluster.net if ctx.can(NODE_NETWORK) else None
    index = ctx.cluster.node_index(node_id) if net is not None else None
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
        counters = read_counters(net, index)
        return {"node_id": node_id, "how": "nft table deleted", "counters": counters, "removed": net.undrop(index)}

    ctx.schedule(duration, heal_now, f"partition heals (fault {fault.index})", kind="fault_healed")
    return {"node_id": node_id, "ranks": ranks, "ip": net.hosts[index].ip, "how": f"nft drop ({direction})",
            "cut_from": cut_from, "peers": peers, "rules": rules, "duration_s": duration}


class NetworkDegrade(Fault):
    """Loss, a bandwidth cap (and latency where netem exists) on one node's link."""

    kind = "network_degrade"
    cuts_off = True
    echoes = classmethod(lambda cls, spec: {} if spec.duration_s is None else {"duration_s": spec.duration_s})
    Spec = NetworkDegradeSpec
    refused_on = {"torchrun": "is Ray-only (it needs cluster.network: namespaces, whose hosts are Ray nodes)"}
    needs = frozenset({NODE_NETWORK})

    @classmethod
    def scenario_problem(cls, spec, scenario, index: int) -> Optional[str]:
        if scenario.cluster.network != "namespaces":
            return (f"faults[{index}].kind: {cls.kind} acts on a node's own network, "
                    f"which needs cluster.network: namespaces")
        return None
    budget = None        # a slower link need not fail anything
    causes = None
    explore_args = {"loss_pct": (30.0, 90.0), "duration_s": (5.0,)}
    explore_rank = 10
    window_s = 120.0     # a node fault's (faults/node.py), after `duration_s`
    _healer = None

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        if node_id == ctx.cluster.head_node_id():
            raise FaultSkipped("target resolves to the head node, which hosts the harness and the controller")
        net, index = network_of(ctx, node_id)
        duration = float(self.duration_s or 20.0)
        done = []
        if self.spec.loss_pct is not None:
            done.append(net.drop(index, self.spec.direction or "both", float(self.spec.loss_pct)))
        if self.spec.rate_mbit is not None:
            done.append(net.shape(index, float(self.spec.rate_mbit)))
        if self.spec.latency_ms is not None:
            done.append(net.delay(index, float(self.spec.latency_ms)))
        self._healer = lambda: {"counters": read_counters(net, index), **net.heal(index)}

        def heal_now() -> Dict[str, Any]:
            self._healer = None
            counters = read_counters(net, index)
            return {"node_id": node_id, "how": "rules removed", "counters": counters, **net.heal(index)}

        ctx.schedule(duration, heal_now, f"degrade ends (fault {self.index})", kind="fault_healed")
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        return {"node_id": node_id, "ranks": ranks, "ip": net.hosts[index].ip, "how": "; ".join(done),
                "duration_s": duration}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        healer, self._healer = self._healer, None
        return {"how": "rules removed at teardown", **healer()} if healer else None

    def window(self, health_check_timeout_s: float = 0.0) -> float:
        """While it lasts (`duration_s`), and a node fault's window for a failure it caused."""
        return float(self.duration_s or 20.0) + self.window_s

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        what = f"network_degrade of node {str(hit.get('node_id'))[:8]} ({hit.get('how')}) at seq {view.seq}"
        aid, not_live = self.struck_node(view)
        if not_live:
            return Landing(MISSED, f"{what}, but {not_live}")
        healed = next((e for e in view.healed if _seq(e) > view.seq), None)
        if healed is None:
            return Landing(PENDING, f"{what}; the degrade has not ended (its counters are read when it does)")
        counters = (healed.get("detail") or {}).get("counters")
        if not isinstance(counters, dict) or not counters:
            return Landing(MISSED, f"{what}, but no packet counter was recorded when it ended (no nft or tc "
                                   f"counters in fault_healed): nothing shows the link was degraded")
        degraded = degraded_by(counters)
        if not degraded:
            return Landing(MISSED, f"{what}, but the counters show no packet dropped, throttled or delayed "
                                   f"({counters})")
        ranks = view.ranks_on(hit.get("node_id"), view.seq)
        stop = _seq(healed)
        steps = [e for e in view.events if e.get("kind") == "step" and e.get("rank") in ranks
                 and e.get("attempt_id") == aid and view.seq < _seq(e) < stop
                 and e.get("node_id") == hit.get("node_id")]
        if steps:
            return Landing(LANDED, f"{what}; {degraded}; ranks {ranks} then made {len(steps)} steps through it "
                                   f"(last at seq {steps[-1].get('seq')})")
        f, why, _ = self.failure_of(view, aid)
        if f is not None and _seq(f) < stop:
            return Landing(LANDED, f"{what}; {degraded}; then {describe_failure(f)}", None, f.get("seq"))
        return Landing(MISSED, f"{what}; {degraded}, but no step or failure of ranks {ranks} of attempt "
                               f"{_short(aid)} while it lasted")


def read_counters(net, index: int) -> Dict[str, Any]:
    """The node's nft/tc counters now ({} where they cannot be read: evidence, never a failure)."""
    try:
        return net.counters(index)
    except Exception:  # noqa: BLE001
        return {}


def degraded_by(counters: Dict[str, Any]) -> str:
    """What the counters show was done to the link ("" for nothing)."""
    parts = []
    if int(counters.get("dropped_packets") or 0) > 0:
        parts.append(f"{counters['dropped_packets']} packets dropped by the nft rule")
    for q in counters.get("qdiscs") or []:
        if not isinstance(q, dict):
            continue
        if q.get("kind") == "tbf" and (int(q.get("overlimits") or 0) > 0 or int(q.get("dropped") or 0) > 0):
            parts.append(f"tbf throttled {q.get('overlimits')} and dropped {q.get('dropped')} packets")
        if q.get("kind") == "netem" and int(q.get("packets") or 0) > 0:
            parts.append(f"netem delayed {q.get('packets')} packets")
    return "; ".join(parts)
