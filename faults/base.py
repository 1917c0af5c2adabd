"""The fault contract (Jepsen's nemesis shape): `inject` then maybe `heal`,
and `landing`: whether it took effect.

A fault resolves its target when its trigger fires (ranks move between
attempts, nodes die), acts through Ray (GCS, node agents, the cluster handle),
and returns what it actually hit. The injector records that in the history.

Doing a fault is not the same as testing with it: a kill that hits a worker of
an attempt that already ended, a preempted node that dies after training
finished, a checkpoint damaged that nobody reads again test nothing. Each kind
says in `landing(view)`, a pure function over the history, what evidence shows
that it took effect; `judge_landing` applies it. A fault without that evidence
makes the run INCONCLUSIVE (docs/verdicts.md), never PASS.

Attribution (`Fault.attribute`, the shared rule): a fault lands only through a
failure of the attempt it hit (the victim's `attempt_id` and `pid`, recorded at
injection), within the kind's `window_s` after the fault (recorded at injection
as `window_s`; the class default for older histories), on the target the
scenario named (rank, node, checkpoint, controller pid, compared with
`target_asked`). An empty `target_hit` is no live target. Anything else did
not land, with the reason; each kind adds the positive evidence of its own.

Each kind also owns its spec: a pydantic model (`Spec`) with `kind:
Literal[...]`, the trigger `at`, a `target` where the kind needs one, and its
own arguments with their defaults. The scenario language (ftharness.scenarios.schema)
takes the union of those models from the registry in faults/__init__.py.

The spec models are `specs.py`'s, what a fault may use when it acts is `context.py`'s, and the
landing and a fault's view of the history are `landing.py`'s; this module keeps the `Fault` base
and the judging of a landing, and re-exports their names: plugins import all of them from here
(docs/plugins.md).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Dict, FrozenSet, List, Mapping, NamedTuple, Optional, Sequence, Tuple

from pydantic import BaseModel

from ftharness.errors import FaultSkipped
from ftharness.faults.capabilities import NODE_INDEX
from ftharness.faults.context import (FaultContext, Member, Record, Schedule, WorkerSide, join_storage, node_id_of,
                                      resolve_storage)
from ftharness.faults.landing import (DEFAULT_HEALTH_CHECK_S, LANDED, MISSED, PENDING, TOL_BEFORE_S, EventIndex,
                                      FaultView, Landing, _num, _seq, _short, describe_failure,
                                      with_error_before_failure)
from ftharness.faults.specs import TARGET_KEYS, TRIGGER_EVENTS, At, FaultSpecBase, Strict, Target, TargetedSpec
from ftharness.faults.targets import TargetError, resolve_node, same_ip, selector_of, target_of

#: every name this module held before its split: plugins, the kinds and the layers above import them from here
__all__ = ["TRIGGER_EVENTS", "FAILURE_CLASSES", "CERTAIN", "MAYBE", "UNKNOWN", "_Undeclared", "UNDECLARED",
           "FailureClaim", "Strict", "At", "TARGET_KEYS", "Target", "FaultSpecBase", "TargetedSpec", "Schedule",
           "Record", "Member", "WorkerSide", "FaultContext", "resolve_storage", "join_storage", "LANDED", "PENDING",
           "MISSED", "TOL_BEFORE_S", "DEFAULT_HEALTH_CHECK_S", "_num", "_seq", "_short", "Landing", "EventIndex",
           "FaultView", "with_error_before_failure", "GRACEFUL_IS_RAY_ONLY", "describe_failure", "Fault", "node_id_of",
           "spec_record", "_shown", "_hit_text", "judge_landing", "_judge"]


#: the failure classes a kind may declare it causes (ftharness.scenarios.policy_model.CLASSES: a
#: test holds the two equal; faults/ sits below the scenarios and cannot import them)
FAILURE_CLASSES = ("worker_group", "preemption", "preemption_death", "controller", "controller_fatal")
#: how sure a kind is of the failure it declares: it causes it whenever it lands; it may or may not
#: (a transient error, a stall shorter than the health check); nothing is known (a kind that declares
#: nothing: every oracle treats it as unknown, never as "no failure")
CERTAIN, MAYBE, UNKNOWN = "certain", "maybe", "unknown"


class _Undeclared:
    """The value of `Fault.causes` for a kind that declares nothing (a plugin's)."""

    def __repr__(self) -> str:
        return "UNDECLARED"


#: `Fault.causes` of a kind that says nothing about the failure it causes
UNDECLARED: Any = _Undeclared()


class FailureClaim(NamedTuple):
    """What one fault causes, as its kind declares it: the failure class
    (ftharness.scenarios.policy_model's; None: no failure of its own) and how sure that is
    (CERTAIN, MAYBE, UNKNOWN)."""

    failure: Optional[str]
    certainty: str

    @property
    def known(self) -> bool:
        return self.certainty != UNKNOWN


#: `graceful: true` (kill_worker, kill_node): Ray's own stop, which a torchrun run has no door to
GRACEFUL_IS_RAY_ONLY = {"graceful": ("ray.kill / a raylet's SIGTERM", "is a SIGKILL")}


class Fault(ABC):
    """One fault of a scenario. Subclasses set `kind` and `Spec` (the spec
    model, whose `kind` literal is the same) and implement `inject` and
    `landing`. They receive and keep their validated spec model (`spec`: read
    its arguments as attributes); `target` is its target as the history records
    it (`target_asked`). A spec read back from a history (a dict) is validated
    into the model here, or, where it no longer validates, built as recorded."""

    kind = ""
    Spec: type = FaultSpecBase

    # -- what the kind declares about itself: the schema, the injector, the worker's
    # instrumentation, the Chaos Toolkit actions and the capability check read these from the
    # registry (faults/__init__.py), so nothing outside faults/ names a kind
    #: the runtimes (`workload.runtime`) it can run under
    runtimes: Tuple[str, ...] = ("ray_train",)
    #: why it cannot run under a runtime not in `runtimes` ("is Ray-only (...)"), by runtime
    refused_on: Dict[str, str] = {}
    #: the Ray clusters it runs on: "embedded" (ftharness starts it), "existing" (cluster.address)
    cluster_kinds: Tuple[str, ...] = ("embedded", "existing")
    #: where its action runs: "driver" (the injector, on the driver's main thread), "node_agent"
    #: (an agent process on the victim's node, asked by the injector), or "worker" (the train
    #: function itself, from the plan `worker_plan` makes; the injector fires none of these)
    runs_in: str = "driver"
    #: the cluster capabilities it needs whatever its arguments (faults/capabilities.py)
    needs: FrozenSet[str] = frozenset()
    #: its arguments that only Ray Train honours: name -> (what Ray does with it, what the kind
    #: is under another runtime instead); set there, the fault is refused (`runtime_problem`)
    ray_only_args: Dict[str, Tuple[str, str]] = {}
    #: its `duration_s` ends with `heal` on the injector's timeline (False: the kind ends it itself)
    heals_after_duration = True
    #: the run's storage must go through the chaos filesystem (faults/storage.py) from the start
    wraps_storage = False
    #: whether fit() is to run again after it (a killed controller, as an operator would)
    wants_resume = False
    #: the failure it causes ends fit() itself (ActorDiedError), outside every budget: a restart
    #: without a failure decision (the verdict's `Facts.restarts`, budget_accounting's
    #: "the controller died")
    ends_fit = False
    #: the distribution that registered it (an entry point of `ftharness.faults`); None: built in
    plugin: Optional[str] = None
    #: the failure it causes is only seen after Ray Train's worker health-check timeout
    waits_for_health_check = False
    #: seconds after its last action that a fault may still take effect
    settle_s = 30.0
    #: budget of the failure it causes (None: no claim)
    budget: Optional[str] = "worker_group"
    # -- what the oracles ask of it: explore's expectation, the simulator, the matrix, soak, the
    # verdict and the properties read these through the registry (faults/__init__.py: `failure_of`)
    #: the failure class it causes when it lands (FAILURE_CLASSES; None: no failure of its own);
    #: UNDECLARED (a plugin's kind that says nothing): every oracle treats its failure as unknown.
    #: A kind whose class depends on its arguments overrides `failure_claim`
    causes: Optional[str] = UNDECLARED
    #: whether it causes `causes` whenever it lands (False: it may or may not)
    causes_surely = True
    #: explore: the values drawn for each of its arguments (the first is what shrinking goes to;
    #: None: the argument left out). A required argument without values is refused at registration
    explore_args: Mapping[str, Sequence[Any]] = {}
    #: explore: where it sits in the shrinking order (smaller: simpler, drawn first)
    explore_rank = 100
    #: it fires only at a step the worker counts (or at its restore): a wall-clock time or a
    #: driver's event (a checkpoint registered, an attempt started) never reaches it
    step_only = False
    #: soak: the arguments of the faults a soak draws of it (beyond kind, target and trigger);
    #: None: a soak never draws it
    soak_args: Optional[Mapping[str, Any]] = None
    #: soak: its weight in the default mix (0: drawn only where `--mix` names it)
    soak_weight = 0
    #: the node it hits is gone for good unless its spec sets `replace` (a killed or reclaimed node)
    loses_node = False
    # -- what the causal model may take as given (history/kind_facts.py; Declared.kinds)
    #: the pid it hits is SIGKILLed
    kills_process = False
    #: it drains its node for preemption with a deadline (`target_hit.deadline_ms`)
    drains_node = False
    #: it cuts its target off for a while (paused, partitioned, hung, degraded): late events are no contradiction
    cuts_off = False
    #: it damages files of a registered checkpoint
    damages_checkpoint = False
    #: the simulator: the kind whose measured recovery time stands for its own where the
    #: calibration has none (None: the simulator's general fallback)
    recovers_like: Optional[str] = None
    #: seconds after the fault within which the failure it causes must come. A killed worker
    #: fails the controller's next health poll (Ray Train polls about every second) or a
    #: peer's collective at once; a TorchElastic agent sees its child exit within its monitor
    #: interval (5 s at most). 60 s leaves room for a loaded machine; a later failure is
    #: something else's.
    window_s = 60.0

    def __init__(self, index: int, spec: Any):
        self.index = index
        self.spec: Any = spec if isinstance(spec, FaultSpecBase) else self.model_of(spec)
        self.target: Dict[str, Any] = target_of(self.spec)

    @classmethod
    def model_of(cls, spec: Mapping[str, Any]) -> FaultSpecBase:
        """The spec model of a dict of this kind (a history's record of it): validated, or where
        it no longer validates (an older or damaged record), built as recorded, with the model's
        defaults."""
        try:
            return cls.Spec.model_validate(dict(spec))
        except ValueError:
            return cls.Spec.model_construct(**dict(spec))

    # -- what the oracles ask of one fault (each takes the spec model)
    @classmethod
    def echoes(cls, spec) -> Dict[str, Any]:
        """The `target_hit` fields the injector records that must equal what the scenario asked
        (field -> the value asked): the causal model's fault-spec rule holds the record to them."""
        return {}

    @classmethod
    def failure_claim(cls, spec: Any) -> FailureClaim:
        """The failure this fault (a spec model) causes and how sure that is: by default `causes`
        and `causes_surely`; UNKNOWN for a kind that declares nothing."""
        if cls.causes is UNDECLARED:
            return FailureClaim(None, UNKNOWN)
        return FailureClaim(cls.causes, CERTAIN if cls.causes_surely else MAYBE)

    @classmethod
    def lands_after_restart(cls, spec: Any) -> bool:
        """Whether this fault (a spec model) lands only through a restart after it (what it
        damaged is read by the next attempt: a corrupted checkpoint restored)."""
        return False

    @classmethod
    def decision_delay_s(cls, spec: Any, notice_s: float) -> float:
        """Seconds of training between the fault and its failure decision, for the simulator
        (`notice_s`: the calibration's drain notice, where the spec sets none)."""
        return 0.0

    @classmethod
    def explore_draft(cls, draft: Dict[str, Any], restore_comes: Optional[bool]) -> Dict[str, Any]:
        """Explore's draft of one fault (a dict, before it is a spec) fitted to its trigger:
        `restore_comes` says whether a restore follows it (None: not known yet)."""
        return draft

    # -- the kind's rules, asked through the registry (each returns "field: reason" or None)
    @classmethod
    def needs_for(cls, spec: Any) -> FrozenSet[str]:
        """The capabilities this fault needs with these arguments (a spec model)."""
        return frozenset(cls.needs)

    @classmethod
    def runtime_problem(cls, spec: Any, runtime: str, index: int) -> Optional[str]:
        """Why this fault (a spec model) cannot run under `runtime`, beyond the kind itself
        (an argument that means nothing there), as `faults[i].field: reason`; None if it can.
        By default: a `ray_only_args` argument set under a runtime other than Ray Train."""
        if runtime == "ray_train":
            return None
        for name, (ray_does, instead) in cls.ray_only_args.items():
            if getattr(spec, name, None):
                return f"faults[{index}].{name}: Ray-only ({ray_does}); under {runtime} {cls.kind} {instead}"
        return None

    @classmethod
    def scenario_problem(cls, spec: Any, scenario: Any, index: int) -> Optional[str]:
        """The kind's cross-field rules: why this fault (a spec model) does not fit the rest of
        `scenario` (a validated Scenario but for its faults), as `field: reason`; None if it does."""
        return None

    @classmethod
    def cpu_problem(cls, spec: Any, why_cpu: str, index: int) -> Optional[str]:
        """Why this fault cannot run on a scenario that trains on CPU (`why_cpu` names the field)."""
        return None

    @classmethod
    def release_problem(cls, spec: Any, ray_version: str, minor: Tuple[int, int], index: int) -> Optional[str]:
        """Why this fault cannot run on Ray `ray_version` (`minor`: (2, 60)); None if it can."""
        return None

    @classmethod
    def worker_plan(cls, spec: Any, scenario: Any) -> Dict[str, Any]:
        """For a kind that `runs_in` the worker: what its plan carries beyond the common fields
        (fault, kind, where, rank, step, nth, target_asked, how, duration_s)."""
        return {}

    @classmethod
    def act_in_worker(cls, plan: Mapping[str, Any], worker: "WorkerSide", where: str, step: Optional[int]) -> None:
        """For a kind that `runs_in` the worker: do it now, in the train function of the target
        rank (`fault_injected` is recorded already). Raise to fail the attempt; return to go on."""
        raise NotImplementedError(f"{cls.kind} does not run in the worker")

    @classmethod
    def hit_in_worker(cls, plan: Mapping[str, Any], worker: "WorkerSide") -> Dict[str, Any]:
        """What `fault_injected` records as hit beyond rank, pid, node, where and step."""
        return {}

    @abstractmethod
    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        """Do the fault now; return the target hit (node_id, pid, rank, path, ...). A kind that
        `runs_in` the worker raises FaultSkipped here (the worker did it)."""

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        """Undo what can be undone (a resumed process, a returned node); None if nothing to do."""
        return None

    # -- attribution: what the injector records, what the landing rules read
    def window(self, health_check_timeout_s: float = DEFAULT_HEALTH_CHECK_S) -> float:
        """The kind's window (see `window_s`), recorded at injection: a fault that waits
        for a health check gets that timeout on top."""
        return self.window_s + (health_check_timeout_s if self.waits_for_health_check else 0.0)

    def window_of(self, view: "FaultView") -> float:
        """The kind's own window (its class default, with the release's health-check timeout where the
        kind waits for one); a window recorded at injection may narrow it, never widen it: a bound
        never comes from the run it judges."""
        declared = self.window()
        recorded = view.recorded_window()
        return min(recorded, declared) if recorded is not None else declared

    def attribution(self, ctx: FaultContext, hit: Dict[str, Any]) -> Dict[str, Any]:
        """`hit` with what its landing will be judged by: the victim's attempt id (the
        running group's, where `inject` did not name one), and for a node target the
        node's index, IP and labels as the cluster knew them when it was hit."""
        hit = dict(hit)
        if not hit.get("attempt_id"):
            aids = {m.get("attempt_id") for m in ctx.members if m.get("attempt_id")}
            if len(aids) == 1:
                hit["attempt_id"] = aids.pop()
        node_id = hit.get("node_id")
        t = self.target
        if node_id and (t.get("node") is not None or t.get("ip") is not None or t.get("label") is not None):
            try:
                if t.get("node") is not None and ctx.can(NODE_INDEX):
                    hit.setdefault("node_index", ctx.cluster.node_index(node_id))
                node = next((n for n in ctx.cluster.nodes() if n.node_id == node_id), None)
            except Exception:  # noqa: BLE001 - the node list is evidence, not a precondition
                node = None
            if node is not None and t.get("ip") is not None:
                hit.setdefault("ip", node.ip)
            if node is not None and t.get("label") is not None:
                hit.setdefault("labels", dict(node.labels or {}))
        return hit

    def struck(self, view: FaultView) -> Tuple[Optional[str], Optional[str]]:
        """(the victim's attempt id, why the hit was no worker of a running attempt on the
        scenario's target): a worker fault's victim is the pid recorded at injection, which
        must be a worker of the recorded attempt (derived from the pid in older histories
        that recorded none), of the rank recorded and asked for, and that attempt must not
        have shut down before the fault."""
        hit = view.hit
        if not hit:
            return None, "nothing was recorded as hit (empty target_hit)"
        pid = hit.get("pid")
        if pid is None:
            return None, "target_hit records no pid of the victim"
        aid = view.victim_attempt or view.live_attempt_of(pid, view.seq)
        if aid is None:
            return None, f"pid {pid} belonged to no running attempt when it was hit"
        group = view.group_of(aid, view.seq)
        if group is None:
            return aid, f"attempt {_short(aid)} had started no worker group before the fault"
        worker = next((w for w in group.get("workers") or [] if w.get("pid") == pid), None)
        if worker is None:
            return aid, f"pid {pid} was no worker of attempt {_short(aid)}"
        if view.shut_before_fault(aid) is not None:
            return aid, f"pid {pid} belonged to no running attempt when it was hit ({_short(aid)} had shut down)"
        if hit.get("rank") is not None and worker.get("rank") != hit.get("rank"):
            return aid, f"pid {pid} was rank {worker.get('rank')} of attempt {_short(aid)}, not rank {hit.get('rank')}"
        if hit.get("node_id") is not None and worker.get("node_id") != hit.get("node_id"):
            return aid, f"pid {pid} ran on node {_short(worker.get('node_id'))}, not {_short(hit.get('node_id'))}"
        return aid, self.target_mismatch(view, [worker.get("rank")], worker.get("node_id"))

    def struck_node(self, view: "FaultView") -> Tuple[Optional[str], Optional[str]]:
        """The victim attempt is the one recorded at injection (older histories: the one
        running then); the node must have hosted ranks of it, those recorded, and the
        scenario's target among them."""
        hit = view.hit
        if not hit:
            return None, "nothing was recorded as hit (empty target_hit)"
        node_id = hit.get("node_id")
        if not node_id:
            return None, "target_hit records no node"
        aid = view.victim_attempt or view.running_attempt(view.seq)
        group = view.group_of(aid, view.seq) if aid is not None else None
        if group is None or view.shut_before_fault(aid) is not None:
            return aid, f"node {str(node_id)[:8]} hosted no rank of the running attempt"
        ranks = sorted(w.get("rank") for w in group.get("workers") or [] if w.get("node_id") == node_id)
        if not ranks:
            return aid, f"node {str(node_id)[:8]} hosted no rank of the running attempt"
        recorded = hit.get("ranks")
        if isinstance(recorded, list) and sorted(recorded, key=str) != sorted(ranks, key=str):
            return aid, (f"target_hit says node {str(node_id)[:8]} hosted ranks {recorded}, attempt "
                         f"{_short(aid)} placed ranks {ranks} there")
        return aid, self.target_mismatch(view, ranks, node_id)

    def target_mismatch(self, view: FaultView, ranks: List[Any], node_id: Any) -> Optional[str]:
        """Why what was hit (these ranks, on this node) is not the target the scenario named."""
        t = self.target
        asked = (view.injected or {}).get("target_asked")
        if isinstance(asked, dict) and asked and t and asked != t:
            return f"the injector recorded target {asked}, the scenario names {t}"
        hit = view.hit
        if t.get("rank") is not None and t["rank"] not in ranks:
            return f"it hit rank(s) {ranks}, the scenario targets rank {t['rank']}"
        if t.get("node") is not None:
            if hit.get("node_index") is None:
                return f"target_hit records no node_index to compare with target node {t['node']}"
            if hit["node_index"] != t["node"]:
                return f"it hit node {hit['node_index']}, the scenario targets node {t['node']}"
        if t.get("node_id") is not None and not str(node_id or "").lower().startswith(str(t["node_id"]).lower()):
            return f"it hit node {_short(node_id)}, the scenario targets node_id {t['node_id']}"
        if t.get("ip") is not None:
            if hit.get("ip") is None:
                return f"target_hit records no ip to compare with target ip {t['ip']}"
            if not same_ip(hit["ip"], t["ip"]):
                return f"it hit ip {hit['ip']}, the scenario targets ip {t['ip']}"
        if t.get("label") is not None:
            labels = hit.get("labels")
            if not isinstance(labels, dict):
                return f"target_hit records no labels to compare with target label {t['label']}"
            if any(str(labels.get(k)) != str(v) for k, v in t["label"].items()):
                return f"it hit a node labelled {labels}, the scenario targets label {t['label']}"
        return None

    def landing(self, view: FaultView) -> Landing:
        """Did the fault take effect? Default, for faults that must fail the job: it hit
        the named worker of a running attempt, and that attempt failed within the window."""
        return self.failure_landing(view, self.hit_live(view))

    def hit_live(self, view: FaultView) -> Optional[str]:
        """Why the hit target was no part of the running job on the named target, or None if it was."""
        return self.struck(view)[1]

    def failure_landing(self, view: FaultView, not_live: Optional[str], budget: Optional[str] = None) -> Landing:
        what = f"{self.kind} hit {_hit_text(view.hit)} at seq {view.seq}"
        if not_live:
            return Landing(MISSED, f"{what}, but {not_live}")
        aid = self.struck(view)[0]
        f, why, pending = self.failure_of(view, aid)
        if f is None:
            return Landing(PENDING if pending else MISSED, f"{what}; {why}")
        budget = budget if budget is not None else self.budget
        return Landing(LANDED, f"{what}; then {describe_failure(f)} of attempt {_short(aid)}", budget, f.get("seq"))

    def failure_of(self, view: FaultView, aid: Any, window: Optional[float] = None):
        """(the victim attempt's first failure within the window, else None; why not;
        whether one may still come)."""
        window = self.window_of(view) if window is None else window
        after = view.failures_since_fault()
        mine = [f for f in after if f.get("attempt_id") == aid]
        if mine:
            f = mine[0]
            t, done = f.get("t"), view.t_done
            if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (t, done)):
                return None, (f"the first failure of attempt {_short(aid)} (seq {f.get('seq')}) or the fault has "
                              f"no recorded time: whether it came within the {self.kind} window is unknown"), False
            late = t - done
            if late < -TOL_BEFORE_S:
                return None, (f"the first failure of attempt {_short(aid)} ({describe_failure(f)}) came "
                              f"{-late:.1f} s before the fault was done: it was not the fault's"), False
            if late > window:
                return None, (f"the first failure of attempt {_short(aid)} ({describe_failure(f)}) came "
                              f"{late:.1f} s after the fault, outside the {self.kind} window of {window:.0f} s"), False
            return f, "", False
        others = sorted({_short(f.get("attempt_id")) for f in after})
        elsewhere = f" (failure seq {after[0].get('seq')} belongs to attempt {others[0]})" if others else ""
        shut = view.shutdown_of(aid, view.seq, _seq(view.fit_end(view.seq) or {}) or float("inf"))
        if shut is not None:
            return None, f"no failure decision followed: attempt {_short(aid)} shut down (seq {shut.get('seq')}) " \
                         f"without one{elsewhere}", False
        if view.fit_end(view.seq) is not None:
            return None, f"no failure decision followed for attempt {_short(aid)}{elsewhere}", False
        return None, f"no failure decision followed for attempt {_short(aid)} yet{elsewhere}", True

    @property
    def duration_s(self) -> Optional[float]:
        return getattr(self.spec, "duration_s", None)

    # -- target resolution shared by the worker and node faults
    def victim(self, ctx: FaultContext) -> Dict[str, Any]:
        """The worker the target names, resolved now: {rank, node_id, pid, actor_id}."""
        if not ctx.members:
            raise FaultSkipped("no worker group is running")
        t = self.target
        if t.get("rank") is not None:
            return ctx.member(int(t["rank"]))
        if t.get("node") is not None or selector_of(t) is not None:
            node_id = self.victim_node(ctx)
            on_node = [m for m in ctx.members if m["node_id"] == node_id]
            if not on_node:
                named = f"node {t['node']}" if t.get("node") is not None else f"node {node_id[:8]}"
                raise FaultSkipped(f"{named} hosts no worker of the current group")
            return sorted(on_node, key=lambda m: m["rank"])[0]
        return ctx.rng.choice(sorted(ctx.members, key=lambda m: m["rank"]))

    def victim_node(self, ctx: FaultContext) -> str:
        """The node the target names: by index, by node id, IP or label, or the node hosting a rank."""
        if self.target.get("node") is not None:
            return node_id_of(ctx, int(self.target["node"]))
        if selector_of(self.target) is not None:
            try:
                return resolve_node(self.target, ctx.cluster.nodes(), where=f"faults[{self.index}].target").node_id
            except TargetError as e:
                raise FaultSkipped(str(e)) from None
        return self.victim(ctx)["node_id"]


def spec_record(value: Any) -> Any:
    """A spec model (or a part of one: its trigger) as the history records it: its dump without
    absent (None) arguments. The one place a spec becomes a dict; anything else passes as is."""
    return value.model_dump(mode="json", exclude_none=True) if isinstance(value, BaseModel) else value


_shown = spec_record


def _hit_text(hit: Dict[str, Any]) -> str:
    parts = []
    for key in ("rank", "pid", "node_id", "checkpoint", "path", "how"):
        if hit.get(key) is not None:
            v = str(hit[key])
            parts.append(f"{key} {v[:8] if key == 'node_id' else v}")
    return ", ".join(parts) or "its target"


def judge_landing(fault: Fault, events: List[Dict[str, Any]], final: bool = True,
                  shared: Optional[EventIndex] = None) -> Landing:
    """The landing of one fault over `events`. With `final` (the run is over),
    a fault still pending did not land. `shared`: an EventIndex of `events`
    for judging many faults."""
    try:
        return _judge(fault, events, final, shared)
    except Exception as e:  # noqa: BLE001 - malformed evidence proves nothing
        return Landing(MISSED, f"its evidence could not be read ({type(e).__name__}: {str(e)[:120]})")


def _judge(fault: Fault, events: List[Dict[str, Any]], final: bool, shared: Optional[EventIndex] = None) -> Landing:
    view = FaultView(fault.index, events, shared)
    if view.skipped is not None and view.injected is None:
        return Landing(MISSED, f"skipped: {view.skipped.get('reason')}")
    if view.injected is None:
        return Landing(MISSED if final else PENDING, f"never fired (trigger {_shown(getattr(fault.spec, 'at', None))})")
    landing = fault.landing(view)
    if final and landing.status == PENDING:
        return Landing(MISSED, landing.evidence + " before the run ended")
    return landing
