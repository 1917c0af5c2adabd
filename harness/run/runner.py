"""Runs one scenario on a cluster and writes its results folder.

Flow: validate (before anything starts) -> cluster -> history actor -> `fit()`
in a task on the driver's node (so the Train controller lives there, away from
faults, while this main thread stays free to add and remove nodes) -> checks ->
`summary.json`.

Results folder: `history.jsonl`, `summary.json`, `scenario.yaml` (as run),
`storage/` (Ray Train's storage: checkpoints and the checkpoint snapshot).
"""

from __future__ import annotations

import os
import time
from typing import Any, Callable, Dict, List, Optional, Protocol, Type

import ray

from ftharness.history import records, spool
from ftharness.harness.cluster import history_service as store   # the history service and its emitters
from ftharness.harness.cluster.handles import open_cluster
from ftharness.harness.run import leftovers
from ftharness.harness.run.fit_task import _fit_task
from ftharness.harness.run.guard import check_capabilities
from ftharness.harness.run.injector import Injector, crash_plans
from ftharness.harness.run.shared import (RunOptions, new_run_name, storage_location, summarize, versions,  # noqa: F401
                                          workload_config, write_scenario, write_summary)
from ftharness.faults import REGISTRY
from ftharness.harness.run.functions import resolve_dataset_config_fn, resolve_datasets_fn, resolve_train_fn
from ftharness.harness.run.preflight import preflight  # noqa: F401 - RayTrain.run's, and its old home
from ftharness.harness.run.runtime import DECLARED, Run, Runtime, declared_of, drive
from ftharness.harness.run.ray_settings import effective_failure_config, recorded_settings, settings_used
from ftharness.faults.base import join_storage
from ftharness.faults.capabilities import ADD_NODE
from ftharness.faults.gpu import detector_env
from ftharness.scenarios.reference_data import WorkloadConfig
from ftharness.scenarios.schema import Scenario, one_line
from ftharness.errors import ScenarioError
from ftharness.safety import REDACTED, path_component_problem, redact

_write_scenario = write_scenario   # (its old name)
TICK_S = 0.05  # how often the injector looks for fired triggers
HISTORY_START_TIMEOUT_S = 120.0  # the history actor of a run must be up within this (a busy cluster)


def _ship_code(scenario: Scenario, node_id: str, functions: list) -> Optional[Dict[str, Any]]:
    """The runtime environment that ships the job's modules to the workers, once a worker
    with it imported the job (ftharness.harness.run.usercode); None for the reference workload."""
    from ftharness.harness.run.usercode import check_importable, runtime_env

    if scenario.workload.kind == "reference":
        return None
    env = runtime_env(scenario)
    check_importable(functions, env, node_id, scenario)
    return env


def _fit_result(ref, scenario: Scenario) -> Dict[str, Any]:
    """fit()'s outcome; a job the fit task cannot unpickle (a module of it that did not ship)
    is refused in one line naming the module (usercode.import_refusal), not an internal error."""
    from ftharness.harness.run.usercode import import_refusal

    try:
        return ray.get(ref)
    except (ray.exceptions.RayError, ImportError) as e:
        why = import_refusal(e, scenario)
        if why:
            raise ScenarioError(why) from None
        raise


def resolve_use_gpu(scenario: Scenario) -> bool:
    """Whether the workers take GPUs (`use_gpu: auto`: when the cluster has one), refused in one
    line where they cannot train on them (a CPU build of torch) or a GPU fault has no GPU."""
    from ftharness.faults import cpu_refusal
    from ftharness.harness.job.device import CudaInfo, gpu_refusal, wants_gpu

    gpus = ray.cluster_resources().get("GPU", 0)
    use = wants_gpu(scenario.workload.use_gpu, gpus)
    why = gpu_refusal(use, gpus, CudaInfo.build())
    if why is None and not use:
        why = cpu_refusal(scenario.faults, f"the cluster offers {gpus:g} GPUs, workload.use_gpu: "
                                           f"{scenario.workload.use_gpu}")
    if why:
        raise ScenarioError(f"{scenario.name}: {why}")
    return use


def rp_failure_config(fc: Dict[str, Any]) -> Dict[str, Any]:
    from ftharness.harness.cluster import ray_private as rp

    return rp.failure_config_kwargs(fc)


#: _system_config keys Ray adds when a node starts (object spilling), not set by a profile
RAY_ADDED_SYSTEM_CONFIG = ("automatic_object_spilling_enabled", "object_spilling_config",
                           "is_external_storage_type_fs")


def ray_defaults() -> Dict[str, Any]:
    """The installed release's own defaults (harness/cluster/ray_private.py: release_defaults)."""
    from ftharness.harness.cluster import ray_private as rp

    return rp.release_defaults()


# ------------------------------------------------------------------------ runner
class RunDriver(Protocol):
    """What drives faults a scenario does not list, as the run goes (a soak's fault process,
    harness/run/soak.py)."""

    def tick(self, runner: "ScenarioRunner", progress: Dict[str, Any]) -> str: ...

    def summary(self) -> Dict[str, Any]: ...


class ScenarioRunner:
    """Drives one scenario on an open cluster; the caller owns the cluster."""

    def __init__(self, scenario: Scenario, cluster, options: RunOptions, driver: Optional["RunDriver"] = None):
        if not declared_of(scenario).uses_ray_cluster:
            raise ScenarioError(f"workload.runtime: {scenario.workload.runtime} runs without a Ray cluster; run it "
                                f"with `ftharness run` or `ftharness suite` (ftharness.harness.run.torchrun_runner)")
        self.scenario = scenario
        #: injects faults the scenario does not list, as the run goes (a soak's fault process):
        #: `driver.tick(runner, progress)` on every progress poll
        self.driver = driver
        self.code_env: Optional[Dict[str, Any]] = None   # the runtime env that ships the user's code
        self.cluster = cluster
        self.options = options
        self.out_dir = os.path.abspath(options.out_dir)
        self.resume_of = _read_summary(options.resume) if options.resume else None
        if self.resume_of and scenario.cluster.storage == "s3":
            raise ScenarioError("--resume: a run on cluster.storage: s3 cannot be resumed "
                                "(its S3 endpoint stopped with it)")
        self.run_name = self.resume_of["run_name"] if self.resume_of else new_run_name(scenario.name)
        self.storage_path = (
            _resumed_storage(self.resume_of["storage_path"], scenario, options.resume) if self.resume_of
            else storage_location(scenario.workload.storage_path or os.path.join(self.out_dir, "storage"))
        )
        self.s3 = None                     # the S3 endpoint of cluster.storage: s3, once started
        self.storage_filesystem = None     # what Ray Train gets as storage_filesystem (with storage_path)
        self.history_path = os.path.join(self.out_dir, records.HISTORY_FILE)
        self.history: Optional[store.BookHandle] = None   # this run's book (harness/cluster/history_service.py)
        self._own_service = None   # the history service, where the cluster handle keeps none
        self.injector = None
        self.emitter: Optional[store.Emitter] = None
        self.fit_index = 0
        self.t0 = time.time()

    # -- public
    def run(self) -> Dict[str, Any]:
        """Start, run every fit() to its end, close; returns the summary."""
        return drive(self)

    def wait(self) -> Dict[str, Any]:
        """The first fit(), and every one after it until the run is over; the last one's outcome."""
        return self.finish_fits(self.submit())

    def start(self) -> None:
        """Results folder, history actor and armed injector; no training yet."""
        self.check_cluster()
        os.makedirs(self.out_dir, exist_ok=True)
        if self.scenario.cluster.storage == "s3":
            self._start_s3()
        journal = spool.create(self.run_name)
        self.cluster.adopt_dir(journal)
        try:
            self._start()
        except BaseException:
            spool.remove(self.run_name)
            if self.s3 is not None:
                self.s3.close()
            raise

    def check_cluster(self) -> None:
        """What only the cluster in hand can tell, refused with one line before anything starts:
        node targets (id, IP, label) that name no live worker node, several, or the head; and
        a local storage_path on an existing cluster whose nodes are on several hosts."""
        from ftharness.faults.targets import TargetError, check_node_targets, selector_of, target_of
        from ftharness.harness.cluster.handles import ExistingCluster
        from ftharness.harness.run.guard import check_handle, check_shared_storage

        specs = self.scenario.faults
        existing = isinstance(self.cluster, ExistingCluster)
        check_handle(self.scenario, self.cluster, self.options.allow_destructive,
                     has_faults=bool(self.scenario.faults) or self.driver is not None)
        if not existing and not any(selector_of(target_of(f)) for f in specs):
            return
        nodes = self.cluster.nodes()
        try:
            check_node_targets(specs, nodes)
        except TargetError as e:
            raise ScenarioError(f"{self.scenario.name}: {e}") from None
        if existing and self.scenario.cluster.storage != "s3":
            check_shared_storage(self.scenario, nodes, storage_path=self.storage_path)

    def storage_for_ray(self):
        """(storage_path, storage_filesystem) for Ray Train's RunConfig. With a storage_errors
        fault, the run's real filesystem (local disk, a URI's, the S3 endpoint's) wrapped in
        the chaos filesystem, and storage_path a path on it."""
        if not any(REGISTRY[f.kind].wraps_storage for f in self.scenario.faults):
            return self.storage_path, self.storage_filesystem
        from ftharness.faults.base import resolve_storage
        from ftharness.faults.storage import chaos_filesystem

        try:
            fs, root = resolve_storage(self.storage_path, self.storage_filesystem)
        except Exception as e:  # noqa: BLE001 - credentials, an unknown scheme, ...
            raise ScenarioError(one_line(f"workload.storage_path: {self.storage_path} cannot be opened for "
                                         f"storage_errors ({type(e).__name__}: {e})", 300)) from None
        return root, chaos_filesystem(root, fs)

    def _start(self) -> None:
        self.ray_storage = self.storage_for_ray()
        self.train_fn = resolve_train_fn(self.scenario)
        self.datasets_fn = resolve_datasets_fn(self.scenario)
        self.dataset_config_fn = resolve_dataset_config_fn(self.scenario)
        self.use_gpu = resolve_use_gpu(self.scenario)
        self.code_env = _ship_code(self.scenario, self.cluster.head_node_id(),
                                   [self.train_fn, self.datasets_fn, self.dataset_config_fn])
        write_scenario(self.scenario, os.path.join(self.out_dir, "scenario.yaml"))
        self.history = store.open_book(self._history_service(), self.history_path, self.run_name)
        self.emitter = store.Emitter(self.history, "harness")
        health = float({**self.cluster.train_env(), **self.scenario.cluster.train_env_text()}
                       .get("RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S", 600))
        self.injector = Injector(self.scenario, self.cluster, self.history, self.run_name,
                                 join_storage(self.storage_path, self.run_name), self.history_path,
                                 health_check_timeout_s=health, storage_fs=self.storage_filesystem,
                                 agents=self.cluster.node_agents)
        self.injector.arm()
        self.t0 = time.time()
        # One deadline for the whole run: a second fit() (after a controller kill) keeps it.
        duration = self.scenario.workload.duration_s
        self.stop_at = None if duration is None else self.t0 + duration

    def submit(self):
        """Start one fit() of the run in a task on the head; returns its ref."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        self.fit_index += 1
        spec = self._fit_spec(self.train_fn, self.use_gpu)
        recorded = self.emitter.hand_over(
            "run_start", scenario=self.scenario.name, run_name=self.run_name,
            storage_path=self.storage_path, resume_of=(self.options.resume if self.resume_of else None),
            workload=spec["train_loop_config"], failure_config=spec["failure_config"],
            ray_settings=recorded_settings(self.ray_settings(spec)),
            num_workers=spec["num_workers"], fit_index=self.fit_index, ray_version=ray.__version__, runtime="ray_train",
            health_check_timeout_s=float(spec["train_env"].get("RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S", 600)),
            soak=({k: v for k, v in self.driver.summary().items() if k in ("seed", "duration_s", "mtbf_s", "planned")}
                  if self.driver is not None else None),
        )
        ref = _fit_task.options(
            scheduling_strategy=NodeAffinitySchedulingStrategy(self.cluster.head_node_id(), soft=False),
            **({"runtime_env": self.code_env} if self.code_env else {}),
        ).remote(spec, [recorded])
        try:   # the history actor starts (first fit) while fit() starts the Train controller
            ray.get(recorded, timeout=HISTORY_START_TIMEOUT_S)
        except BaseException:
            ray.cancel(ref, force=True)
            raise
        return ref

    def finish_fits(self, ref) -> Dict[str, Any]:
        """Drive the injector until fit() returns; after a controller kill with
        `resume`, fit() again with the same name and storage, as an operator would."""
        while True:
            outcome = self._wait(ref)
            # what the verdict needs besides the events, so `ftharness check` judges from the history alone
            self.emitter.emit("run_end", fit_index=self.fit_index, fault_specs=list(self.injector.specs), **outcome)
            if outcome["outcome"] != "failed" or not self.injector.resume_requested:
                if self._samples_leftovers():
                    self.emitter.emit("train_leftovers", fit_index=self.fit_index, **leftovers.sample())
                return outcome
            self.injector.resume_requested = False
            ref = self.submit()

    def _samples_leftovers(self) -> bool:
        """Whether to record what the run left alive (harness/run/leftovers.py): only where the
        scenario judges no_leftovers, on a cluster ftharness started (every Train actor is ours)."""
        e = self.scenario.expect
        judged = set(e.properties or []) | {v.property for v in e.violations}
        return "no_leftovers" in judged and ADD_NODE in self.cluster.capabilities

    def close(self) -> None:
        """Heal what is still broken, flush the history, stop the S3 endpoint."""
        try:
            self.injector.finish()
        finally:
            try:
                self._merge_spooled()
                ray.get(self.history.close.remote())
                if self._own_service is not None:
                    ray.kill(self._own_service)
            finally:
                if self.s3 is not None:
                    self.s3.close()

    def _history_service(self):
        """The cluster's history service (one process for all its runs); a cluster handle
        without one (a stand-in) gets a service of this run's own, ended at close."""
        return self.cluster.history_service()

    def _merge_spooled(self) -> None:
        """Events journaled on nodes the history could not hear (ftharness.history.spool)."""
        try:
            events = spool.collect(self.run_name)
            if events:
                ray.get(self.history.merge_spooled.remote(events), timeout=60)
        finally:
            spool.remove(self.run_name)

    def _start_s3(self) -> None:
        """A real S3 endpoint on loopback; the run's checkpoints go to its bucket."""
        from ftharness.harness.cluster.s3 import BUCKET, S3Endpoint

        self.s3 = S3Endpoint().start()
        self.cluster.adopt([self.s3.proc.pid])   # killed with the cluster if the harness dies
        self.storage_filesystem = self.s3.filesystem()
        self.storage_path = BUCKET     # a path on storage_filesystem, as Ray Train takes it

    # -- internals
    def _fit_spec(self, train_fn: Callable, use_gpu: bool) -> Dict[str, Any]:
        sc, w = self.scenario, self.scenario.workload
        cfg = workload_config(sc, use_gpu, getattr(self, "stop_at", None))
        ray_storage = getattr(self, "ray_storage", None) or (self.storage_path, self.storage_filesystem)
        return {
            "train_fn": train_fn,
            "trainer": w.trainer,
            "row_id": w.row_id,
            "datasets_fn": getattr(self, "datasets_fn", None),
            "dataset_config_fn": getattr(self, "dataset_config_fn", None),
            "dataset_config_ref": w.dataset_config,
            "explicit_steps": w.kind == "reference",
            "train_loop_config": cfg,
            "run_name": self.run_name,
            "history": self.history,
            "storage_path": ray_storage[0],
            "storage_filesystem": ray_storage[1],
            "num_workers": w.num_workers,
            "use_gpu": use_gpu,
            "cpus_per_worker": w.cpus_per_worker,
            "collective_timeout_s": w.collective_timeout_s,
            "num_to_keep": w.num_to_keep,
            # what FailureConfig is given: the fields the scenario sets (one this release lacks was
            # refused at validation); the one in force, with the release's own defaults for the
            # rest, is recorded in run_start and budgets are judged by it
            "failure_config_given": rp_failure_config(sc.failure_config.given()),
            "failure_config": effective_failure_config(sc.failure_config.given(), ray_defaults()),
            "data": w.data if w.kind == "reference" else "resumable",
            "rows": WorkloadConfig(**cfg).rows if w.kind == "reference" else 0,
            # the profile's, the scenario's own over them (cluster.train_env), a fault's detector last
            "train_env": {**self.cluster.train_env(), **sc.cluster.train_env_text(), **detector_env(self.scenario.faults)},
            "crash_plans": crash_plans(sc),
            "storage_chaos": any(REGISTRY[f.kind].wraps_storage for f in sc.faults),
            "hold_s": sc.timeout_s if ((sc.faults or self.driver) and sc.landing_hold) else None,
        }

    def _wait(self, ref) -> Dict[str, Any]:
        from ftharness.harness.run.progress import Progress

        deadline = time.time() + self.scenario.timeout_s
        self.injector.start()
        # progress is read for the terminal, a soak's fault process and the landing hold; a run
        # with none of them (a fault-free run in a benchmark or a test) does not poll the history
        watched = self.options.progress or self.driver is not None or bool(self.scenario.faults)
        last_progress = 0.0
        with Progress(self.scenario, enabled=self.options.progress) as progress:
            while True:
                ready, _ = ray.wait([ref], timeout=TICK_S)
                if ready:
                    return _fit_result(ref, self.scenario)
                polled = self.injector.tick()
                if watched and time.time() - last_progress > 0.5:
                    last_progress = time.time()
                    try:   # the tick's answer when it asked the history; else one call for it
                        now = polled if polled is not None else ray.get(self.history.progress.remote(), timeout=5)
                    except ray.exceptions.GetTimeoutError:
                        now = None
                    if now is not None:
                        if self.driver is not None:
                            now["note"] = self.driver.tick(self, now)
                        progress.update(now)
                        self.injector.resolve_hold(now)
                if time.time() > deadline:
                    ray.cancel(ref, force=True)
                    return {"outcome": "failed", "error_type": "ScenarioTimeout",
                            "error": f"fit() did not return within timeout_s={self.scenario.timeout_s}"}

    def ray_settings(self, spec: Dict[str, Any]) -> List[Dict[str, Any]]:
        """Every Ray setting this fit() uses and where its value came from (ray_settings.py)."""
        profile = self.cluster.profile_in_force()
        from ftharness.harness.cluster.handles import PROFILES, EmbeddedCluster

        # an existing cluster keeps the Ray Core settings it was started with
        core = PROFILES.get(profile, {}).get("system_config") if isinstance(self.cluster, EmbeddedCluster) else None
        # Ray's node start writes its spilling settings into the _system_config dict it is given
        # (handles.py passes PROFILES' own dict): those are the session's, not the profile's
        core = {k: v for k, v in (core or {}).items() if k not in RAY_ADDED_SYSTEM_CONFIG} or None
        return settings_used(self.scenario, ray_defaults(), spec["train_env"], profile,
                             storage_path=spec["storage_path"], use_gpu=spec["use_gpu"], system_config=core,
                             node_env=self.cluster.node_env())

    def summarize(self, outcome: Dict[str, Any], wall: float, use_gpu: Optional[bool] = None) -> Dict[str, Any]:
        use_gpu = self.use_gpu if use_gpu is None else use_gpu
        summary = summarize(self.scenario, self.history_path, outcome, self.injector.specs, {
            "run_name": self.run_name,
            "wall_time_s": round(wall, 3),
            "storage_path": (f"s3://{self.storage_path} (endpoint http://{self.s3.endpoint}, stopped)"
                             if self.s3 is not None else self.storage_path),
            "resume_of": self.options.resume if self.resume_of else None,
            "results_dir": self.out_dir,
            "versions": versions(),
        }, settings={
            "profile": self.cluster.profile_in_force(),
            "address": self.options.address or "embedded",
            "address_source": self.options.address_source,
            "head_node_id": self.cluster.head_node_id(),
            "train_env": {**self.cluster.train_env(), **self.scenario.cluster.train_env_text()},
            "use_gpu": use_gpu,
            "cluster_start_s": round(self.cluster.start_time_s or 0.0, 3),
        })
        write_summary(self.out_dir, summary)
        return summary


def _resumed_storage(recorded: str, scenario: Scenario, results_dir: Optional[str] = None) -> str:
    """The storage of the run resumed, confined: the results folder's own storage (`RESULTS/storage`,
    also after the folder was moved), or exactly the storage the scenario given now declares
    (workload.storage_path, which also supplies credentials summary.json had redacted). Any other
    path or bucket a handed summary.json names is refused: it would aim the resumed run's
    checkpoint writes, restores and the corruption faults' deletions there."""
    given = scenario.workload.storage_path
    if given and redact(storage_location(given)) == recorded:
        return storage_location(given)
    if REDACTED in recorded:
        raise ScenarioError(f"--resume: the run's storage_path {recorded} had credentials, which ftharness does not "
                            f"keep; give the same workload.storage_path (with them) in the scenario")
    if results_dir is not None and "://" not in recorded:
        own = os.path.join(os.path.abspath(results_dir), "storage")
        from ftharness.inputs import inside

        if os.path.lexists(own) and not inside(own, results_dir):   # its own storage/ linked elsewhere
            raise ScenarioError(one_line(f"--resume {results_dir}: its storage/ is a symlink out of the folder (to "
                                         f"{os.path.realpath(own)[:100]}); allowed: the folder's own storage"))
        if os.path.realpath(recorded) == os.path.realpath(own) or \
                os.path.basename(os.path.normpath(recorded)) == "storage" and os.path.isdir(own):
            return os.path.realpath(own)
    raise ScenarioError(one_line(
        f"--resume {results_dir}: summary.json storage_path {recorded[:100]} is neither the folder's own storage "
        f"nor the scenario's workload.storage_path; to resume there, declare workload.storage_path: "
        f"{recorded[:100]} in the scenario"))


def _read_summary(results_dir: str) -> Dict[str, Any]:
    """summary.json of the folder `--resume` names, through the bounded reader (a regular file
    of at most 64 MiB, never a FIFO or a file under /proc, /sys or /dev)."""
    from ftharness.inputs import InputRefused, read_input

    path = os.path.join(results_dir, "summary.json")
    try:   # the one reader, kind summary: bounded in size, nesting and values, a JSON object
        s = read_input(path, "summary", f"--resume {results_dir}: summary.json")
    except InputRefused as e:
        raise ScenarioError(one_line(str(e))) from None
    if not s.get("run_name") or not s.get("storage_path"):
        raise ScenarioError(f"--resume {results_dir}: summary.json lacks run_name/storage_path")
    why = path_component_problem(s["run_name"])   # it names the spool folder and Ray Train's run folder
    if why:
        raise ScenarioError(f"--resume {results_dir}: summary.json run_name: {why}")
    if not isinstance(s["storage_path"], str):
        raise ScenarioError(f"--resume {results_dir}: summary.json storage_path: must be a string")
    return s


def check_resume(results_dir: str, scenario: Scenario) -> str:
    """The storage `--resume results_dir` resumes on, or a one-line ScenarioError (summary.json
    unreadable, damaged, or naming storage the folder does not own): before anything starts."""
    return _resumed_storage(_read_summary(results_dir)["storage_path"], scenario, results_dir)


class RayTrain(Runtime):
    """Ray Train V2: fit() in a task on the head of a Ray cluster (embedded, or at an address)."""

    declared = DECLARED["ray_train"]

    def check_resume(self, results_dir: str, scenario: Scenario) -> None:
        check_resume(results_dir, scenario)

    def cluster(self, scenario: Scenario, address: Optional[str]):
        return open_cluster(scenario.cluster, address)

    def runner(self, scenario: Scenario, cluster, options: RunOptions) -> Run:
        return ScenarioRunner(scenario, cluster, options)

    def run_on(self, scenario: Scenario, cluster, options: RunOptions) -> Dict[str, Any]:
        return self.runner(scenario, cluster, options).run()

    def run(self, scenario: Scenario, options: RunOptions) -> Dict[str, Any]:
        if options.resume:   # refuse before anything starts: the summary, and where its storage is
            self.check_resume(options.resume, scenario)
        preflight(scenario)
        handle = self.cluster(scenario, options.address)
        check_capabilities(scenario, handle)   # before the cluster starts
        with handle as cluster:
            return self.run_on(scenario, cluster, options)


def runtimes() -> Dict[str, Type[Runtime]]:
    """Every runtime, by the `workload.runtime` that names it (harness/run/runtime.py)."""
    from ftharness.harness.run.torchrun_runner import Torchrun

    return {r.declared.name: r for r in (RayTrain, Torchrun)}


def runtime_of(scenario: Scenario) -> Runtime:
    """The scenario's runtime, chosen once for its run."""
    return runtimes()[scenario.workload.runtime]()


def run_scenario(scenario: Scenario, options: RunOptions) -> Dict[str, Any]:
    """Open the cluster, run the scenario, close the cluster; returns the summary. The runtime
    decides which cluster (a `workload.runtime: torchrun` scenario starts no Ray cluster)."""
    return runtime_of(scenario).run(scenario, options)


def exit_code(summary: Dict[str, Any]) -> int:
    from ftharness.scenarios.verdict import exit_code as of_verdict

    return of_verdict(summary.get("verdict"))

