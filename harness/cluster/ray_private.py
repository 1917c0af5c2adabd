"""The one module that touches Ray's private and internal APIs.

Everything ftharness needs from Ray beyond its public API is wrapped here, so a
Ray upgrade is one file's work: GCS actor and node tables, node drains, the Train
controller/worker callback bases, the worker's TrainFnUtils (to observe
`report`/`get_checkpoint` of any train function), and Ray Train's own failure
classification. The releases' behaviour behind each wrapper is in docs/ray-releases.md
and docs/ray-seen.md.

Every supported release (2.51 to 2.60, ftharness.releases) imports this
module: what a release lacks is detected by feature (an import that fails, an
attribute that is absent), never by comparing version numbers, and each
wrapper then answers as that release's own code would (no preemption class
before 2.58: a preempted worker's death is a worker-group failure there).
"""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, List, Optional

import ray
import ray._private.state as _state
from ray.train.v2._internal.execution import callback as _callback

#: the controller's callback interfaces, re-exported (the recorder implements them: harness/job/recorder.py)
ControllerCallback, ReportCallback, WorkerGroupCallback = (
    _callback.ControllerCallback, _callback.ReportCallback, _callback.WorkerGroupCallback)

try:  # 2.58+: Ray's own preemption classification (a separate budget)
    from ray.train.v2._internal.execution.failure_handling.default import (
        _is_preemption_failure,
    )
except ImportError:  # 2.51-2.57: no preemption class; every worker death is a worker-group failure
    _is_preemption_failure = None

try:  # 2.58+
    from ray.train.v2._internal.execution.worker_group.poll import _is_preempted_actor
except ImportError:
    def _is_preempted_actor(error) -> bool:
        """What 2.58's poll._is_preempted_actor answers, for releases without it: the
        actor died because its node was drained for preemption (Ray Core's own flag)."""
        inner = getattr(error, "health_check_failure", error)
        return isinstance(inner, ray.exceptions.RayActorError) and bool(getattr(inner, "preempted", False))

TRAIN_WORKER_CLASS = "RayTrainWorker"
TRAIN_CONTROLLER_CLASS = "TrainController"


# --------------------------------------------------------------------- GCS tables
def list_actors(class_suffix: Optional[str] = None, alive_only: bool = True) -> List[Dict[str, Any]]:
    """Actors from the GCS actor table (works without the dashboard / State API).

    Each row: actor_id, class_name, state, pid, node_id, name.
    """
    rows = []
    for actor_id, a in _state.actors().items():
        if alive_only and a.get("State") != "ALIVE":
            continue
        cls = a.get("ActorClassName") or ""
        if class_suffix and not cls.endswith(class_suffix):
            continue
        rows.append(
            {
                "actor_id": actor_id,
                "class_name": cls,
                "state": a.get("State"),
                "pid": a.get("Pid"),
                "node_id": (a.get("Address") or {}).get("NodeID"),
                "name": a.get("Name") or "",
            }
        )
    return rows


def train_worker_actors() -> List[Dict[str, Any]]:
    return list_actors(TRAIN_WORKER_CLASS)


#: the actors one Ray Train V2 fit() creates (2.51-2.60); none outlives a finished fit() by design
TRAIN_RUN_CLASSES = (TRAIN_CONTROLLER_CLASS, TRAIN_WORKER_CLASS, "SynchronizationActor", "DatasetManager",
                     "PreemptionWatcher", "PlacementGroupCleaner")


def train_run_actors() -> List[Dict[str, Any]]:
    """Alive actors of Ray Train runs (TRAIN_RUN_CLASSES), of any run."""
    return [a for a in list_actors() if a["class_name"].rsplit(".", 1)[-1] in TRAIN_RUN_CLASSES]


def live_placement_groups() -> List[Dict[str, Any]]:
    """Placement groups not yet removed: {id, name, state, bundles}."""
    rows = []
    for pg_id, info in (ray.util.placement_group_table() or {}).items():
        if info.get("state") != "REMOVED":
            rows.append({"id": pg_id, "name": info.get("name") or "", "state": info.get("state"),
                         "bundles": len(info.get("bundles") or {})})
    return rows


def remove_placement_group_by_id(pg_id_hex: str) -> None:
    from ray.util.placement_group import PlacementGroup

    ray.util.remove_placement_group(PlacementGroup(ray.PlacementGroupID(bytes.fromhex(pg_id_hex))))


def draining_nodes() -> Dict[str, int]:
    """{node_id_hex: deadline_ms} for every node being drained (any reason)."""
    return dict(_state.state.get_draining_nodes())


def drain_node_for_preemption(gcs_address: str, node_id: str, deadline_ms: int, reason: str) -> None:
    """Drain a node with reason PREEMPTION and a deadline, as a cloud spot reclaim does."""
    from ray.core.generated import autoscaler_pb2

    gcs = ray._raylet.GcsClient(address=gcs_address)
    ok, msg = gcs.drain_node(
        node_id,
        autoscaler_pb2.DrainNodeReason.Value("DRAIN_NODE_REASON_PREEMPTION"),
        reason,
        int(deadline_ms),
    )
    if not ok:
        raise RuntimeError(f"drain of node {node_id} rejected: {msg}")


def available_cpus_per_node() -> Dict[str, float]:
    """{node_id_hex: free CPUs} from the GCS resource view."""
    return {nid: float(res.get("CPU", 0.0)) for nid, res in _state.available_resources_per_node().items()}


def total_cpus_per_node() -> Dict[str, float]:
    """{node_id_hex: CPUs} of every live node."""
    return {n["NodeID"]: float(n.get("Resources", {}).get("CPU", 0.0)) for n in ray.nodes() if n.get("Alive")}


def gcs_address() -> str:
    """The GCS address of the cluster this process is connected to."""
    return ray._private.worker.global_worker.gcs_client.address


def kill_actor_by_id(actor_id_hex: str, no_restart: bool = True, timeout_s: float = 10.0) -> None:
    """ray.kill of an actor this process holds no handle to (a Train worker: the controller
    owns it): the GCS's KillActorViaGcs, which `ray.kill` itself sends. The core worker's
    `kill_actor` needs a handle in this process (ActorHandleNotFoundError otherwise), and its
    `get_actor_handle` aborts the process for an unknown id, so neither is used. The generated
    stub and the request are the same in every release 2.51-2.60."""
    import grpc
    from ray.core.generated import gcs_service_pb2, gcs_service_pb2_grpc

    request = gcs_service_pb2.KillActorViaGcsRequest(actor_id=bytes.fromhex(actor_id_hex), force_kill=True,
                                                     no_restart=no_restart)
    with grpc.insecure_channel(gcs_address()) as channel:
        reply = gcs_service_pb2_grpc.ActorInfoGcsServiceStub(channel).KillActorViaGcs(request, timeout=timeout_s)
    if reply.status.code != 0:
        raise RuntimeError(f"KillActorViaGcs: {reply.status.message or reply.status.code}")


# ------------------------------------------------------------ embedded cluster nodes
def node_process_pids(node) -> Dict[str, List[int]]:
    """{process type: [pid]} of a `ray._private.node.Node` started in this process."""
    out: Dict[str, List[int]] = {}
    for ptype, infos in getattr(node, "all_processes", {}).items():
        pids = [i.process.pid for i in infos if getattr(i, "process", None) is not None]
        if pids:
            out[ptype] = pids
    return out


def raylet_pid(node) -> Optional[int]:
    pids = node_process_pids(node).get("raylet")
    return pids[0] if pids else None


# ------------------------------------------------------------ Train controller side
def classify_failure(error: BaseException) -> str:
    """The budget the installed release's DefaultFailurePolicy charges a TrainingFailedError to.

    Mirrors make_decision: controller errors first, then (2.58+) preemption
    (PreemptionError, or any worker death with `.preempted`), then the worker
    group budget. Before 2.58 there is no preemption class.
    """
    from ray.train.v2.api.exceptions import ControllerError, WorkerGroupError

    if isinstance(error, ControllerError):
        return "controller"
    if _is_preemption_failure is not None and _is_preemption_failure(error):
        return "preemption"
    if isinstance(error, WorkerGroupError):
        return "worker_group"
    return "unknown"


def preempted_ranks(error: BaseException) -> List[int]:
    """Ranks of a WorkerGroupError whose actor died of a node preemption (on every
    release: Ray Core marks the death, whichever budget Train then charges)."""
    failures = getattr(error, "worker_failures", None) or {}
    return sorted(int(r) for r, e in failures.items() if _is_preempted_actor(e))


def state_name(state) -> str:
    return state._state_type.state_name


def state_error(state) -> Optional[BaseException]:
    """The TrainingFailedError a controller state carries, if any."""
    err = getattr(state, "training_failed_error", None)
    if err is None:
        nxt = getattr(state, "next_state", None)
        err = getattr(nxt, "training_failed_error", None)
    return err


def worker_group_members(worker_group) -> List[Dict[str, Any]]:
    rows = []
    for w in worker_group.get_workers():
        rows.append(
            {
                "rank": w.distributed_context.world_rank,
                "node_id": w.metadata.node_id,
                "pid": w.metadata.pid,
                "actor_id": w.actor._actor_id.hex(),
            }
        )
    return rows


def worker_group_errors(worker_group) -> Dict[int, str]:
    status = worker_group.get_latest_poll_status()
    if status is None:
        return {}
    return {int(k): repr(v)[:300] for k, v in status.errors.items()}


# ---------------------------------------------------------------- Train worker side
def train_fn_utils():
    """The per-worker TrainFnUtils behind ray.train.report / get_checkpoint."""
    from ray.train.v2._internal.execution.train_fn_utils import get_train_fn_utils

    return get_train_fn_utils()


def wrap_train_fn_utils(
    before_report: Callable[[Dict[str, Any], Any], None],
    after_report: Callable[[Dict[str, Any], Any], None],
    on_dataset_shard: Optional[Callable[[Any, Optional[str]], Any]] = None,
) -> Callable[[], None]:
    """Observe every `ray.train.report` of this worker, however it is imported,
    and (with `on_dataset_shard`) replace each `get_dataset_shard` iterator by
    what `on_dataset_shard(iterator, dataset name)` returns for it.

    Wraps the methods on the worker's TrainFnUtils instance; returns an undo.
    """
    utils = train_fn_utils()
    original = utils.report
    original_shard = utils.get_dataset_shard

    def report(metrics, checkpoint=None, *args, **kwargs):
        before_report(metrics, checkpoint)
        out = original(metrics, checkpoint, *args, **kwargs)
        after_report(metrics, checkpoint)
        return out

    def get_dataset_shard(*args, **kwargs):
        # ray.train.get_dataset_shard(name) calls this with a DatasetShardMetadata
        info = args[0] if args else kwargs.get("dataset_info")
        return on_dataset_shard(original_shard(*args, **kwargs), getattr(info, "dataset_name", None))

    utils.report = report
    if on_dataset_shard is not None:
        utils.get_dataset_shard = get_dataset_shard

    def undo():
        utils.report = original
        utils.get_dataset_shard = original_shard

    return undo


def datasets_to_split(dataset_config: Any) -> Optional[List[str]]:
    """The names of the datasets a `ray.train.DataConfig` splits among the workers (each
    worker reads its own rows); None for all of them (the default, and without a config)."""
    names = getattr(dataset_config, "_datasets_to_split", "all") if dataset_config is not None else "all"
    return list(names) if isinstance(names, (list, tuple)) else None


def preemption_notice() -> Optional[Dict[str, Any]]:
    """This worker's preemption notice, read locally (no collective), or None."""
    from ray.train.v2._internal.execution.context import get_train_context

    ctx = getattr(get_train_context(), "preemption_context", None)   # absent before 2.57
    if ctx is None:
        return None
    # 2.57: a locked holder read with get(); 2.58+: a plain preemption_info attribute
    info = ctx.get() if callable(getattr(ctx, "get", None)) else getattr(ctx, "preemption_info", None)
    if info is None:
        return None
    return {"deadline_ms": getattr(info, "deadline_ms", None), "ranks": getattr(info, "preempted_ranks", None)}


def failure_config_kwargs(fc: Dict[str, Any]) -> Dict[str, Any]:
    """The keys of `fc` the installed release's ray.train.FailureConfig accepts
    (max_preemption_failures arrived in 2.58, the preemption grace settings in 2.60)."""
    import dataclasses
    import inspect

    from ray.train import FailureConfig

    try:
        names = {f.name for f in dataclasses.fields(FailureConfig)}
    except TypeError:
        names = set(inspect.signature(FailureConfig).parameters)
    return {k: v for k, v in fc.items() if k in names}


def failure_config_defaults() -> Dict[str, Any]:
    """The installed release's FailureConfig fields and their defaults (fail_fast, deprecated, left out)."""
    import dataclasses

    from ray.train import FailureConfig

    return {f.name: f.default for f in dataclasses.fields(FailureConfig)
            if f.name != "fail_fast" and f.default is not dataclasses.MISSING}


def release_defaults() -> Dict[str, Any]:
    """The installed release's own default of every setting ftharness passes or leaves to Ray,
    by the dotted names of releases.Release.defaults(), read from its classes and constants."""
    import dataclasses

    from ray.train import CheckpointConfig, RunConfig, ScalingConfig
    from ray.train import constants as train_constants
    from ray.train.torch import TorchConfig
    from ray.train.v2._internal import constants as c

    def fields(cls, prefix, names):
        got = {f.name: f.default for f in dataclasses.fields(cls)}
        return {f"{prefix}.{n}": got[n] for n in names if n in got}

    out = {f"failure_config.{k}": v for k, v in failure_config_defaults().items()}
    out.update(fields(ScalingConfig, "scaling_config", ("num_workers", "use_gpu", "resources_per_worker",
                                                         "placement_strategy", "elastic_resize_monitor_interval_s")))
    out.update(fields(RunConfig, "run_config", ("storage_path",)))
    out.update(fields(CheckpointConfig, "checkpoint_config", ("num_to_keep", "checkpoint_score_attribute",
                                                              "checkpoint_score_order")))
    out.update(fields(TorchConfig, "torch_config", ("timeout_s",)))
    out["env.RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] = c.DEFAULT_WORKER_GROUP_START_TIMEOUT_S
    out["env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S"] = train_constants.DEFAULT_TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S
    out["env.RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"] = c.DEFAULT_HEALTH_CHECK_INTERVAL_S
    out["env.RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"] = c.DEFAULT_WORKER_HEALTH_CHECK_TIMEOUT_S
    if hasattr(c, "DEFAULT_PREEMPTION_POLL_INTERVAL_S"):    # the preemption watcher: 2.57+
        out["env.RAY_TRAIN_PREEMPTION_POLL_INTERVAL_S"] = c.DEFAULT_PREEMPTION_POLL_INTERVAL_S
    if hasattr(c, "COLLECTIVE_TIMEOUT_S_ENV_VAR"):          # 2.52+; 2.51: the report barrier's
        out[f"env.{c.COLLECTIVE_TIMEOUT_S_ENV_VAR}"] = c.DEFAULT_COLLECTIVE_TIMEOUT_S
    else:
        out[f"env.{c.REPORT_BARRIER_TIMEOUT_S_ENV_VAR}"] = c.DEFAULT_REPORT_BARRIER_TIMEOUT_S
    return out


def ray_version() -> str:
    return ray.__version__


def retryable_controller_errors() -> tuple:
    """Names of the controller errors the installed release's default policy retries."""
    try:
        from ray.train.v2._internal.execution.failure_handling.default import RETRYABLE_CONTROLLER_ERRORS

        return tuple(sorted(c.__name__ for c in RETRYABLE_CONTROLLER_ERRORS))
    except ImportError:
        return ("WorkerGroupStartupFailedError", "WorkerGroupStartupTimeoutError")


def now_ms() -> float:
    return time.time() * 1000.0


def upload_working_dir(folder: str, scratch_dir: str) -> str:
    """Packs `folder` into the connected cluster's GCS, as ray.init(runtime_env={"working_dir":
    folder}) would; returns the package's URI (gcs://_ray_pkg_<hash>.zip). A task's runtime_env
    takes only such a URI, not a local folder, and the tasks and actors it starts (the Train
    controller, the workers) inherit it."""
    import inspect

    from ray._private.runtime_env.working_dir import upload_working_dir_if_needed

    # `include_gitignore` arrived in 2.53 (ray/_private/runtime_env/working_dir.py); 2.51 and 2.52
    # take no such keyword, and pack the folder as it is
    extra = ({"include_gitignore": False}
             if "include_gitignore" in inspect.signature(upload_working_dir_if_needed).parameters else {})
    env = upload_working_dir_if_needed({"working_dir": folder}, scratch_dir=scratch_dir, **extra)
    return env["working_dir"]
