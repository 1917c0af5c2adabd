"""Faults on a whole node: it dies, it is preempted with notice, it is cut off.

- `kill_node`: hardware failure, no notice. Embedded: every process of the node
  is SIGKILLed (SIGTERM first with `graceful`); elsewhere the node's agent kills
  its raylet tree. Ray charges the dead workers to `max_failures`.
- `preempt_node`: a spot reclaim. The node is drained with reason PREEMPTION and
  a deadline `notice_s` ahead (what a cloud's autoscaler does), then dies at the
  deadline plus `kill_offset_s`. Ray charges it to `max_preemption_failures`
  only if the GCS detects the death at or after the deadline; a kill detected
  before it is an ordinary failure (docs/known-bugs.md: bad-reclaim-charged-to-max-failures), and a
  kill shortly before it may be detected either side.
- `partition_node`: the raylet and all its processes are SIGSTOPped for
  `duration_s`: no heartbeats, no answers, as behind a network partition. GCS
  declares the node dead; when the partition heals, the raylet learns it was
  declared dead and exits, as a partitioned node does on a real cluster.
  `mode: network` on namespace hosts drops the node's packets instead, and
  its processes run on (faults/network.py).

`replace: true` starts a new node `replace_after_s` after the old one died
(capacity returns); otherwise the cluster stays smaller.

Landing: the node hosted ranks of the attempt running when it was hit (the
attempt id recorded at injection; ranks as its worker group placed them), the
scenario's target is among them, and that attempt failed within the kind's
window. A preemption needs the node's own drain deadline in the evidence
(`deadline_ms`, recorded at the drain): without it nothing says when the node
was due, so the fault is not attributed (and never charged to the preemption
budget by default). It is charged to the preemption budget when the node died
at or after its deadline (or the controller waited the deadline out), to
`max_failures` when it died before and the failure was decided before the
deadline too; died before it and decided after it, either (the detection, which
Ray reads the deadline at, lies between); a notice counts only from a rank on the
drained node, with that node's deadline; a preempted node that dies after the
run ended did not land.
"""

from __future__ import annotations

import time
from typing import Any, Dict, FrozenSet, Literal, Optional, Tuple

from pydantic import Field

from ftharness.history.causal import fault_time
from ftharness.faults.base import (CERTAIN, DEFAULT_HEALTH_CHECK_S, GRACEFUL_IS_RAY_ONLY, LANDED, MAYBE, MISSED, PENDING,
                                   FailureClaim, Fault, FaultContext, FaultView, Landing, TargetedSpec, _num, _short,
                                   describe_failure, with_error_before_failure)
from ftharness.errors import FaultSkipped
from ftharness.faults.capabilities import ADD_NODE, NODE_INDEX, NODE_NETWORK, PAUSE_NODE, RAY, REMOVE_NODE
from ftharness.history.columns import non_steps


class KillNodeSpec(TargetedSpec):
    """The target node dies without notice (`graceful`: SIGTERM first); `replace: true` starts
    a new node `replace_after_s` later."""

    kind: Literal["kill_node"]
    replace: Optional[bool] = None
    replace_after_s: Optional[float] = Field(None, ge=0)
    graceful: Optional[bool] = None


class PreemptNodeSpec(TargetedSpec):
    """Spot preemption: the target node is drained with a deadline `notice_s` ahead and dies at
    the deadline plus `kill_offset_s`; `replace: true` starts a new node `replace_after_s` later."""

    kind: Literal["preempt_node"]
    replace: Optional[bool] = None
    replace_after_s: Optional[float] = Field(None, ge=0)
    notice_s: float = Field(3.0, gt=0)
    kill_offset_s: Optional[float] = None


class PartitionNodeSpec(TargetedSpec):
    """The target node's raylet and all its processes are stopped for `duration_s` (default 10)."""

    kind: Literal["partition_node"]
    duration_s: Optional[float] = Field(None, gt=0)
    #: `pause`: SIGSTOP the node; `network`: drop its packets (needs cluster.network: namespaces)
    mode: Optional[Literal["pause", "network"]] = None
    #: with mode network: drop what comes `in`, goes `out`, or `both` (default)
    direction: Optional[Literal["both", "in", "out"]] = None
    #: with mode network, who the node is cut from: `all` (default); `head` (GCS, controller,
    #: history: Ray declares the node dead while it still reaches the other workers); or
    #: `workers` (the other worker nodes: Ray sees a healthy node, only the collectives stall)
    cut_from: Optional[Literal["all", "head", "workers"]] = None


def _same_deadline(a: Any, b: Any) -> bool:
    """A notice's deadline is the drained node's (to the second; absent: not that node's)."""
    try:
        return abs(float(a) - float(b)) <= 1000.0
    except (TypeError, ValueError):
        return False


def _index_of(ctx: FaultContext, node_id: str) -> Optional[int]:
    return ctx.cluster.node_index(node_id) if ctx.can(NODE_INDEX) else None


def _head_guard(ctx: FaultContext, node_id: str) -> None:
    if node_id == ctx.cluster.head_node_id():
        raise FaultSkipped("target resolves to the head node, which hosts the harness and the controller")


def kill_node_now(ctx: FaultContext, node_id: str, graceful: bool = False) -> str:
    """Stop a node's processes; returns how."""
    index = _index_of(ctx, node_id) if ctx.can(REMOVE_NODE) else None
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
    if not ctx.can(ADD_NODE):
        raise FaultSkipped("replace: an existing cluster's nodes cannot be added by ftharness")
    ctx.schedule(delay_s, lambda: {"node_index": ctx.cluster.add_node(), "how": "add_node"},
                 f"replacement node for fault {fault.index}")


class NodeFault(Fault):
    """A fault on a whole node: it lands only if the node hosted ranks of the running attempt.

    Window: a dead node's workers fail their collectives at once, and GCS declares the
    node dead within its health check (about 30 s); 120 s leaves room for a loaded machine."""

    window_s = 120.0

    def struck(self, view: FaultView) -> Tuple[Optional[str], Optional[str]]:
        return self.struck_node(view)


class KillNode(NodeFault):
    """Kills a worker node without notice (SIGKILL its raylet and processes)."""

    kind = "kill_node"
    Spec = KillNodeSpec
    runtimes = ("ray_train", "torchrun")
    ray_only_args = GRACEFUL_IS_RAY_ONLY
    loses_node = True
    causes = "worker_group"
    explore_args = {"replace": (True,), "graceful": (None, True)}
    explore_rank = 2
    soak_args = {"replace": True}
    soak_weight = 1
    recovers_like = "kill_worker"

    @classmethod
    def needs_for(cls, spec) -> FrozenSet[str]:
        """`replace: true` adds a node: only a cluster ftharness started can."""
        return frozenset(cls.needs) | ({ADD_NODE} if spec.replace else set())

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        how = kill_node_now(ctx, node_id, graceful=bool(self.spec.graceful))
        if self.spec.replace:
            replace_later(ctx, self, float(self.spec.replace_after_s or 0.0))
        return {"node_id": node_id, "ranks": ranks, "how": how}


class PreemptNode(NodeFault):
    """Drains a node for preemption with notice, then kills it at the deadline."""

    kind = "preempt_node"
    drains_node = True
    # the kill is scheduled notice_s + kill_offset_s after the drain (inject)
    echoes = classmethod(lambda cls, spec: {"kill_in_s": float(spec.notice_s or 3.0) + float(spec.kill_offset_s or 0.0)})
    Spec = PreemptNodeSpec
    refused_on = {"torchrun": "is Ray-only (a drain through Ray's GCS; TorchElastic gets no notice)"}
    needs = frozenset({RAY})
    loses_node = True
    causes = "preemption"
    explore_args = {"replace": (True,), "notice_s": (3.0, 2.0), "kill_offset_s": (None, -1.5)}
    explore_rank = 3
    soak_args = {"replace": True}
    soak_weight = 2
    recovers_like = "kill_node"

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """A preemption; a node reclaimed before its deadline (`kill_offset_s` below 0) dies as
        an ordinary worker-group failure (the one place this rule is written)."""
        return FailureClaim("worker_group" if (spec.kill_offset_s or 0) < 0 else cls.causes, CERTAIN)

    @classmethod
    def decision_delay_s(cls, spec: Any, notice_s: float) -> float:
        """Training goes on through the notice (the spec's, else `notice_s`), less an early reclaim."""
        notice = spec.notice_s if "notice_s" in spec.model_fields_set else notice_s
        return float(notice) + min(float(spec.kill_offset_s or 0), 0.0)

    @classmethod
    def needs_for(cls, spec) -> FrozenSet[str]:
        """`replace: true` adds a node: only a cluster ftharness started can."""
        return frozenset(cls.needs) | ({ADD_NODE} if spec.replace else set())

    def window(self, health_check_timeout_s: float = 0.0) -> float:
        """Drain to death: the notice, the kill offset, then a node fault's window."""
        return float(self.spec.notice_s or 3.0) + max(0.0, float(self.spec.kill_offset_s or 0.0)) \
            + self.window_s

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        what = f"drain of node {str(hit.get('node_id'))[:8]} at seq {view.seq}"
        aid, not_live = self.struck(view)
        if not_live:
            return Landing(MISSED, f"{what}, but {not_live}")
        deadline_ms = hit.get("deadline_ms")
        if not isinstance(deadline_ms, (int, float)) or isinstance(deadline_ms, bool) or deadline_ms <= 0:
            return Landing(MISSED, f"{what}, but the drain recorded no deadline (deadline_ms): nothing says "
                                   f"when the node was due, so no failure is attributed to the preemption")
        node_id = hit.get("node_id")
        kill = next((a for a in view.actions if "dies" in str(a.get("action"))
                     and (a.get("detail") or {}).get("node_id") == node_id), None)
        f, why, pending = self.failure_of(view, aid)
        if f is not None:
            killed_at = fault_time(kill) if kill is not None else None
            if kill is not None and kill.get("seq", 0) < f.get("seq", 0) and killed_at is not None:
                # from the kill's own time and the drain's deadline, never a derived field
                late_ms = killed_at * 1000 - float(deadline_ms)
                when = f"the node died {late_ms / 1000:+.1f} s from its deadline"
            else:
                late_ms = float(f.get("t") or 0) * 1000 - float(deadline_ms)
                when = f"the failure came {late_ms / 1000:+.1f} s from the deadline, before the node died"
            budget: Optional[str] = "preemption" if late_ms >= 0 else "worker_group"
            decided_late = _num(f.get("t")) * 1000 >= float(deadline_ms)
            if budget == "worker_group" and decided_late and kill is not None:
                # the GCS reads the deadline when it detects the death (docs/known-bugs.md, Ray Core's InferDeathInfo):
                # detected after it, an early death is preempted; the decision says no more
                budget = None
                when += (f", the failure decided {(_num(f.get('t')) * 1000 - float(deadline_ms)) / 1000:+.1f} s "
                         f"from it (either budget: Ray reads the deadline when it detects the death)")
            return Landing(LANDED, f"{what}; {when}; then {describe_failure(f)} of attempt {_short(aid)}",
                           budget, f.get("seq"))
        end = view.fit_end(view.seq)
        notices = [e for e in non_steps(view.events) if e.get("kind") == "preemption_notice" and e.get("seq", 0) > view.seq
                   and (end is None or e.get("seq", 0) < end.get("seq", 0))]
        notice = next((e for e in notices if e.get("node_id") == node_id and e.get("attempt_id") == aid
                       and _same_deadline(e.get("deadline_ms"), deadline_ms)), None)
        if notice is not None and end is not None:
            return Landing(LANDED, f"{what}; rank {notice.get('rank')} on the drained node took the notice "
                                   f"(seq {notice.get('seq')}) and the run ended {end.get('outcome')}", None)
        if end is not None and (kill is None or end.get("seq", 0) < kill.get("seq", 0)):
            other = (f"; the notice at seq {notices[0].get('seq')} came from rank {notices[0].get('rank')} "
                     f"on node {str(notices[0].get('node_id'))[:8]}, not the drained node's with its deadline"
                     if notices and notice is None else "")
            return Landing(MISSED, f"{what}, but the run ended (seq {end.get('seq')}) before the node died{other}")
        return Landing(PENDING if pending else MISSED, f"{what}; {why}")

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        notice = float(self.spec.notice_s or 3.0)
        offset = float(self.spec.kill_offset_s or 0.0)
        deadline_ms = int((time.time() + notice) * 1000)
        ctx.ops.drain_node_for_preemption(ctx.ops.gcs_address(), node_id, deadline_ms, "ftharness: spot preemption")
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)

        def kill() -> Dict[str, Any]:
            how = kill_node_now(ctx, node_id, graceful=False)
            late_ms = time.time() * 1000 - deadline_ms
            if self.spec.replace:
                replace_later(ctx, self, float(self.spec.replace_after_s or 0.0))
            return {"node_id": node_id, "how": how, "ms_after_deadline": round(late_ms, 1)}

        def kill_once() -> Dict[str, Any]:
            self._pending_kill = None
            return kill()

        self._pending_kill = kill
        ctx.schedule(max(0.0, notice + offset), kill_once, f"preempted node dies (fault {self.index})")
        return {"node_id": node_id, "ranks": ranks, "how": "drain(PREEMPTION)", "deadline_ms": deadline_ms,
                "kill_in_s": notice + offset}

    _pending_kill = None

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        """A drained node can never be undrained: if the run ended before its
        reclaim, reclaim it now, so the cluster is whole for the next run."""
        kill, self._pending_kill = self._pending_kill, None
        if kill is None:
            return None
        try:
            return {"how": "reclaimed after the run", **kill()}
        except Exception as e:  # noqa: BLE001 - the node may be gone already
            return {"how": "reclaim after the run failed", "error": f"{type(e).__name__}: {e}"}


class PartitionNode(NodeFault):
    """Freezes a node's processes (SIGSTOP) for a while: a pause partition; or, with
    `mode: network` on namespace hosts, drops its packets while it runs on
    (faults/network.py).

    On Ray the node's agent stops its raylet tree and a detached timer resumes it
    (once GCS declares the node dead, no call reaches the agent). Under torchrun
    (a cluster with `pause_node`: ftharness.harness.torchrun.launcher) the harness stops the
    node's elastic agent and its workers itself and resumes them `duration_s`
    later, or when the run ends first."""

    kind = "partition_node"
    cuts_off = True
    echoes = classmethod(lambda cls, spec: {} if spec.duration_s is None else {"duration_s": spec.duration_s})
    Spec = PartitionNodeSpec
    settle_s = 60.0  # GCS must first miss the node's heartbeats
    _healer = None
    runtimes = ("ray_train", "torchrun")
    runs_in = "node_agent"
    heals_after_duration = False   # the node's own timer (or the harness's) resumes it
    causes = "worker_group"
    explore_args = {"duration_s": (None, 4.0)}
    explore_rank = 5
    soak_args = {"duration_s": 8.0}
    recovers_like = "kill_node"

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """A partition with a `duration_s` may heal before anyone notices."""
        return FailureClaim(cls.causes, MAYBE if spec.duration_s else CERTAIN)

    @classmethod
    def needs_for(cls, spec) -> FrozenSet[str]:
        """`mode: network` drops the node's packets: its network must be ftharness's."""
        return frozenset({NODE_NETWORK}) if spec.mode == "network" else frozenset()

    @classmethod
    def scenario_problem(cls, spec, scenario, index: int) -> Optional[str]:
        wire = spec.mode == "network"
        if wire and scenario.cluster.network != "namespaces":
            return (f"faults[{index}].mode: {spec.mode} acts on a node's own network, "
                    f"which needs cluster.network: namespaces")
        for opt in ("direction", "cut_from"):
            if getattr(spec, opt) is not None and not wire:
                return f"faults[{index}].{opt}: only with mode: network"
        return None

    def __init__(self, index, spec):
        super().__init__(index, spec)
        self._paused: Optional[tuple] = None   # torchrun: (node_id, processes stopped)

    def window(self, health_check_timeout_s: float = DEFAULT_HEALTH_CHECK_S) -> float:
        """The partition lasts `duration_s`; then GCS must miss the node's heartbeats (under
        torchrun: the peers' collective timeout, which the injector hands in as the health
        check), then a node fault's window."""
        return float(self.duration_s or 10.0) + self.window_s + health_check_timeout_s

    def landing(self, view: FaultView) -> Landing:
        landing = super().landing(view)
        return with_error_before_failure(landing, view)

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        node_id = self.victim_node(ctx)
        _head_guard(ctx, node_id)
        duration = float(self.duration_s or 10.0)
        ranks = sorted(m["rank"] for m in ctx.members if m["node_id"] == node_id)
        if self.spec.mode == "network":
            from ftharness.faults.network import isolate

            return isolate(self, ctx, node_id, ranks, self.spec.direction or "both", duration,
                           self.spec.cut_from or "all")
        if ctx.can(PAUSE_NODE):
            return self._pause_processes(ctx, node_id, ranks, duration)
        import ray

        pids = ray.get(ctx.agents.on(node_id).pause_node.remote(duration), timeout=30)
        ctx.agents.forget(node_id)  # paused with the node; it resumes on its own timer
        ctx.schedule(duration, lambda: {"node_id": node_id, "how": "SIGCONT (node timer)"},
                     f"partition heals (fault {self.index})", kind="fault_healed")
        return {"node_id": node_id, "ranks": ranks, "how": "SIGSTOP node", "paused_pids": len(pids),
                "duration_s": duration}

    def _pause_processes(self, ctx: FaultContext, node_id: str, ranks, duration: float) -> Dict[str, Any]:
        """torchrun: the harness stops the agent and its workers, and resumes them itself."""
        index = _index_of(ctx, node_id)
        if index is None:
            raise FaultSkipped(f"node {str(node_id)[:8]} is not one of the run's nodes")
        procs = ctx.cluster.pause_node(index)
        self._paused = (node_id, procs)
        ctx.schedule(duration, lambda: self._resume(ctx, "after duration_s"),
                     f"partition heals (fault {self.index})", kind="fault_healed")
        return {"node_id": node_id, "ranks": ranks, "how": "SIGSTOP agent and workers",
                "paused_pids": [pid for pid, _ in procs], "duration_s": duration}

    def _resume(self, ctx: FaultContext, when: str) -> Dict[str, Any]:
        if self._paused is None:
            return {"how": "already resumed"}
        node_id, procs = self._paused
        self._paused = None
        resumed = ctx.cluster.resume_node(procs)
        return {"node_id": node_id, "how": f"SIGCONT {when}", "resumed_pids": resumed,
                "gone_pids": sorted({pid for pid, _ in procs} - set(resumed))}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        """Ray: the node's own timer resumes it (nothing to do). torchrun: a run that ended
        inside the partition resumes the node's processes now. A network partition is lifted."""
        healer, self._healer = self._healer, None
        if healer is not None:   # a network partition still in force when the run ends
            return {"how": "nft table deleted at teardown", "removed": healer()}
        if self._paused is None:
            return None
        return self._resume(ctx, "at the end of the run")
