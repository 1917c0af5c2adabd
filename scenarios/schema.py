"""The scenario file contract (design.md) and its validation.

`load_scenario(path)` returns a validated `Scenario` or raises `ScenarioError`
whose message is one line naming the field and what is allowed. Nothing is
started before a scenario validates.
"""

from __future__ import annotations

import os
import re
from typing import Annotated, Any, Dict, List, Literal, Optional, Tuple, Union

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from ftharness.faults import FAULT_KINDS, REGISTRY, FaultSpec, cpu_refusal, kinds_on
from ftharness.faults.base import Strict as _Strict
from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.scenarios.properties import PROPERTIES



def ray_client_refusal(address: Optional[str]) -> Optional[str]:
    """Why a Ray Client address (ray://) cannot be used, from any source (cluster.address,
    --address, RAY_ADDRESS); None for any other address."""
    if not address or not address.strip().lower().startswith("ray://"):
        return None
    return ("Ray Client (ray://) runs the driver remotely, but the history and fault agents need a driver "
            "on the cluster: run ftharness on the head (--address auto or HOST:6379) or submit it there "
            "(ftharness run --submit http://HEAD:8265)")


def address_form_problem(address: str) -> Optional[str]:
    """Why `address` is not a GCS address ftharness can connect to ('auto' or HOST:PORT with a
    port 1-65535); None when it is one (whether anybody listens is the cluster probe's to say)."""
    a = address.strip()
    if a == "auto":
        return None
    host, _, port = a.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in a) \
            or not all(c.isalnum() or c in ".-_[]:" for c in host):
        return "expected 'auto' or 'HOST:PORT' (the GCS address, port 1-65535)"
    return None


MAX_FILE_BYTES = 256 * 1024  # a scenario is a page of YAML, not a data file (100 faults are ~10 KiB)
MAX_DEPTH = 32              # nesting deeper than this is no scenario
MAX_NODES = 20_000          # values in one file (keys, items, scalars)
MAX_ITEMS = 1_000           # entries of one list or mapping
MAX_SCALAR = 10_000         # characters of one value
MAX_NUMBER_CHARS = 40       # digits of one number: 10**40 is no count of anything
MAX_ERRORS = 10             # errors `validate` lists per file


class ClusterSpec(_Strict):
    """The cluster a run uses: an embedded one on this host, or an existing one by `address`."""

    nodes: int = Field(3, ge=1, le=64)
    cpus_per_node: int = Field(1, ge=1, le=256)
    gpus_per_node: int = Field(0, ge=0, le=16)
    profile: Literal["fast", "ray_defaults"] = "fast"
    address: Optional[str] = Field(None, max_length=300)
    #: where checkpoints go: `local` (the results folder, or workload.storage_path) or `s3`
    #: (a real S3 endpoint on loopback that the run starts, with a bucket of its own)
    storage: Literal["local", "s3"] = "local"
    #: `shared`: every node in the host's network namespace; `namespaces`: each worker node a
    #: host of its own (network namespace, own IP on a bridge), so network faults are real
    network: Literal["shared", "namespaces"] = "shared"

    @field_validator("address")
    @classmethod
    def _not_ray_client(cls, v: Optional[str]) -> Optional[str]:
        if v is None:
            return v
        why = ray_client_refusal(v) or address_form_problem(v)
        if why:
            raise ValueError(f"address: {v[:80] if v.strip() else repr(v)}: {why}")
        return v


class WorkloadSpec(_Strict):
    """What trains, and how: the reference workload or your train function, on Ray Train or TorchElastic."""

    kind: Literal["reference", "entrypoint"] = "reference"
    entrypoint: Optional[str] = Field(None, max_length=200)
    train_loop_config: Dict[str, Any] = Field(default_factory=dict)
    #: which Ray Train trainer runs the entrypoint (Lightning and Transformers jobs run in `torch`)
    trainer: Literal["torch", "xgboost", "lightgbm"] = "torch"
    #: 'module:function' returning {name: ray.data.Dataset}, called where fit() runs: the trainer's `datasets=`
    datasets: Optional[str] = Field(None, max_length=200)
    #: 'module:function' returning a ray.train.DataConfig, called where fit() runs: the trainer's
    #: `dataset_config=` (which datasets are split, Ray Data execution options)
    dataset_config: Optional[str] = Field(None, max_length=200)
    #: the job's code root, a folder beside the scenario file: its modules are imported from it and
    #: all of it ships to the workers (and with `run --submit`), less virtualenvs, .git, caches and
    #: results; without it the modules and packages of the scenario's folder that the job imports ship
    working_dir: Optional[str] = Field(None, min_length=1, max_length=200)
    #: the column of the datasets that holds each row's id: rows read through get_dataset_shard are
    #: then recorded and shard_reassignment judges the job
    row_id: Optional[str] = Field(None, min_length=1, max_length=200)
    num_workers: Union[int, Tuple[int, int]] = 2
    steps: int = Field(30, ge=1, le=1_000_000)
    batch_size: int = Field(32, ge=1, le=1_000_000)
    epochs: int = Field(1, ge=1, le=10_000)
    rows_per_epoch: Optional[int] = Field(None, ge=1, le=10**12)
    checkpoint_every: int = Field(1, ge=1, le=1_000_000)
    model: Literal["small", "medium", "large"] = "small"
    data: Literal["resumable", "ray_data"] = "resumable"
    use_gpu: Union[bool, Literal["auto"]] = "auto"
    num_to_keep: Optional[int] = Field(None, ge=1, le=10_000)
    cpus_per_worker: int = Field(1, ge=1, le=256)
    step_delay_s: float = Field(0.0, ge=0, le=3600)
    jit_checkpoint: bool = False
    storage_path: Optional[str] = Field(None, min_length=1, max_length=1024)
    #: the local storage_path (or the results folder) is a mount every node of the cluster shares
    #: (NFS and the like): on an existing cluster whose nodes are on several hosts, a local path is
    #: refused without it (ftharness.harness.run.guard.check_shared_storage)
    storage_shared: bool = False
    #: train for this long, then stop at a step every rank agrees on (`steps` is then a cap);
    #: the epoch length is `rows_per_epoch`, by default 100 steps' rows
    duration_s: Optional[float] = Field(None, gt=0, le=7 * 24 * 3600)
    #: what runs the workload: Ray Train V2 (`ray_train`) or TorchElastic (`torchrun`: one
    #: `python -m torch.distributed.run` agent per node, no Ray; see harness/torchrun)
    runtime: Literal["ray_train", "torchrun"] = "ray_train"
    #: the torch process group's timeout: a collective waiting longer on a peer raises. torchrun:
    #: default 120 s (TorchElastic has no worker health check, so a stopped worker is noticed only
    #: when the other ranks' collective times out); ray_train with trainer torch: Ray's default
    #: (30 min) unless given, which is what ends a stall Ray cannot see (partition_node cut_from workers)
    collective_timeout_s: Optional[float] = Field(None, gt=0, le=24 * 3600)

    @field_validator("num_workers", mode="before")
    @classmethod
    def _pair(cls, v):
        if isinstance(v, list) and len(v) == 2:  # YAML gives [min, max] as a list
            return tuple(v)
        if isinstance(v, list):
            raise ValueError("must be an integer or [min, max]")
        return v

    @field_validator("num_workers")
    @classmethod
    def _workers(cls, v):
        if isinstance(v, tuple):
            lo, hi = v
            if not (1 <= lo <= hi):
                raise ValueError("[min, max] needs 1 <= min <= max")
        elif v < 1:
            raise ValueError("must be >= 1")
        if max(v if isinstance(v, tuple) else (v,)) > 4096:
            raise ValueError("at most 4096 workers")
        return v

    @model_validator(mode="after")
    def _entrypoint(self):
        if self.entrypoint and self.kind == "reference":
            self.kind = "entrypoint"
        if self.kind == "entrypoint":
            if not self.entrypoint or ":" not in self.entrypoint:
                raise ValueError("entrypoint: must be 'module:function'")
            if self.duration_s is not None:
                raise ValueError("duration_s: only the reference workload can stop on a deadline")
            if self.datasets is not None and ":" not in self.datasets:
                raise ValueError("datasets: must be 'module:function'")
            if self.dataset_config is not None and ":" not in self.dataset_config:
                raise ValueError("dataset_config: must be 'module:function' (returning a ray.train.DataConfig)")
            if self.dataset_config is not None and self.datasets is None:
                raise ValueError("dataset_config: configures the trainer's datasets; give workload.datasets too")
            if self.row_id is not None and self.datasets is None:
                raise ValueError("row_id: names a column of the datasets; give workload.datasets too")
        elif (self.trainer != "torch" or self.datasets is not None or self.dataset_config is not None
              or self.row_id is not None):
            raise ValueError("trainer, datasets, dataset_config, row_id: only for an entrypoint workload "
                             "(the reference workload is a torch job with its own rows)")
        if self.storage_shared and self.storage_path and "://" in self.storage_path \
                and not self.storage_path.lower().startswith("file://"):
            raise ValueError("storage_shared: declares a local storage_path a shared mount; "
                             f"{self.storage_path[:80]} is a URI, shared already")
        if self.duration_s is not None and self.rows_per_epoch is None:
            self.rows_per_epoch = 100 * self.batch_size
        return self

    @property
    def min_workers(self) -> int:
        return self.num_workers[0] if isinstance(self.num_workers, tuple) else self.num_workers


#: Ray Train's own FailureConfig defaults (the same on every release that has the field,
#: releases.py; tests/test_release_defaults.py checks them against the installed release)
_RAY_FC = releases.newest().failure_config


class FailureConfigSpec(_Strict):
    """Ray Train's failure budgets (FailureConfig) and preemption handling. A field the scenario
    leaves out is Ray's own default, as a plain FailureConfig() gets it: the run passes Ray only
    the fields the scenario sets (`model_fields_set`) and records what was used (run_start)."""

    max_failures: int = Field(_RAY_FC["max_failures"], ge=-1, le=1_000_000)
    max_preemption_failures: int = Field(_RAY_FC["max_preemption_failures"], ge=-1, le=1_000_000)
    controller_failure_limit: int = Field(_RAY_FC["controller_failure_limit"], ge=-1, le=1_000_000)
    preemption_grace_s: float = Field(_RAY_FC["preemption_grace_s"], ge=0, le=24 * 3600)
    relax_collectives_on_preemption: bool = _RAY_FC["relax_collectives_on_preemption"]

    def given(self) -> Dict[str, Any]:
        """The fields the scenario sets, and their values (what is passed to Ray's FailureConfig)."""
        return {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}


class PinnedViolation(_Strict):
    """A known gap of Ray: `property` is expected to FAIL, and only for `reason`
    (a case-insensitive substring every violation of it must contain)."""

    property: Literal[PROPERTIES]  # type: ignore[valid-type]
    reason: str = Field(..., min_length=3, max_length=300)


class ExpectSpec(_Strict):
    """What the run must show for a PASS: outcome, properties that hold, pinned violations, bounds."""

    outcome: Literal["succeeded", "failed"] = "succeeded"
    #: properties that must hold; None: every property that applies to the workload
    properties: Optional[List[Literal[PROPERTIES]]] = Field(None, max_length=64)  # type: ignore[valid-type]
    #: properties pinned to FAIL for a stated reason (known Ray gaps), so the suite notices when they close
    violations: List[PinnedViolation] = Field(default_factory=list, max_length=64)
    error_type: Optional[str] = Field(None, max_length=200)
    recovery_bound_s: Optional[float] = Field(None, gt=0, le=7 * 24 * 3600)
    #: most steps one restart may redo (bounded_lost_work); None: the largest gap between
    #: reported checkpoints plus the registration lag
    max_lost_steps: Optional[int] = Field(None, ge=0, le=1_000_000)
    #: metrics the job reports that never decrease over the kept lineage (monotonic_counters)
    monotonic: Optional[List[Annotated[str, Field(min_length=1, max_length=200)]]] = Field(None, max_length=64)

    @field_validator("violations", mode="before")
    @classmethod
    def _pins(cls, v):
        for item in v if isinstance(v, list) else []:
            if isinstance(item, str):
                raise ValueError(f"violations: {item!r} needs a reason: {{property: {item}, reason: '...'}}")
        return v

    @model_validator(mode="after")
    def _no_contradiction(self):
        both = sorted({p.property for p in self.violations} & set(self.properties or []))
        if both:
            raise ValueError(f"violations: {', '.join(both)} is both expected to hold (properties) "
                             f"and pinned to fail (violations)")
        if self.properties is not None:
            if not self.properties:
                raise ValueError("properties: [] expects nothing, so any run would PASS; name at least one "
                                 "property, or leave the key out for every property that applies")
            judged = set(self.properties) | {p.property for p in self.violations}
            for key, prop in (("monotonic", "monotonic_counters"), ("recovery_bound_s", "recovers"),
                              ("max_lost_steps", "bounded_lost_work")):
                if getattr(self, key) is not None and prop not in judged:
                    raise ValueError(f"{key}: declared, but properties leaves out {prop}, which judges it; "
                                     f"add {prop} to properties or drop {key}")
        return self


#: fault kinds a `workload.runtime: torchrun` run can inject (local processes and files, no Ray)
TORCHRUN_FAULTS = kinds_on("torchrun")
#: every other kind, and why a torchrun run cannot have it (each kind's `refused_on`)
TORCHRUN_REFUSED = {k: REGISTRY[k].refused_on.get("torchrun", "acts through Ray")
                    for k in FAULT_KINDS if k not in TORCHRUN_FAULTS}
#: the collective timeout of a torchrun run when the scenario gives none (seconds)
TORCHRUN_COLLECTIVE_TIMEOUT_S = 120.0


def torchrun_problem(sc: "Scenario") -> Optional[str]:
    """Why a `workload.runtime: torchrun` scenario cannot run, as `field: reason`, or None."""
    c, w, fc = sc.cluster, sc.workload, sc.failure_config
    allowed = f"under workload.runtime torchrun allowed: {', '.join(TORCHRUN_FAULTS)}"
    for i, f in enumerate(sc.faults):
        if f.kind not in TORCHRUN_FAULTS:
            return f"faults[{i}].kind: {f.kind} {TORCHRUN_REFUSED.get(f.kind, 'acts through Ray')}; {allowed}"
        problem = REGISTRY[f.kind].runtime_problem(f, "torchrun", i)
        if problem:
            return problem
    if c.address is not None:
        return ("cluster.address: torchrun starts its own agents on this machine and uses no Ray cluster; "
                "drop cluster.address (or use workload.runtime: ray_train)")
    if c.storage != "local":
        return "cluster.storage: s3 is Ray-only; torchrun workers write checkpoints to a local path"
    if w.storage_path is not None and "://" in w.storage_path:
        return f"workload.storage_path: torchrun workers write checkpoints to a local path, not {w.storage_path}"
    if w.kind != "reference":
        return "workload.entrypoint: a Ray Train train function needs Ray; under torchrun only the reference workload runs"
    if w.data != "resumable":
        return "workload.data: ray_data needs Ray Data; under torchrun allowed: resumable"
    if w.jit_checkpoint:
        return "workload.jit_checkpoint: it waits for Ray's preemption notice; torchrun has none"
    if w.use_gpu is True and not c.gpus_per_node:
        return "workload.use_gpu: true needs cluster.gpus_per_node >= 1 (one GPU per torchrun worker)"
    if c.gpus_per_node > 1:
        return ("cluster.gpus_per_node: torchrun runs one worker per node (--nproc-per-node 1), so one GPU "
                "per node; allowed: 0 or 1")
    if w.cpus_per_worker != c.cpus_per_node:
        return (f"workload.cpus_per_worker: torchrun runs one worker per node (--nproc-per-node 1), so it must "
                f"equal cluster.cpus_per_node ({c.cpus_per_node})")
    if w.min_workers > c.nodes:
        return (f"workload.num_workers: {w.min_workers} workers need {w.min_workers} nodes under torchrun "
                f"(one worker per node); cluster.nodes is {c.nodes}")
    if fc.max_failures < 0:
        return "failure_config.max_failures: torchrun's --max-restarts is a finite count; allowed: 0 or more"
    for name in ("max_preemption_failures", "controller_failure_limit"):
        if name in fc.model_fields_set and getattr(fc, name):
            return (f"failure_config.{name}: a Ray Train budget; torchrun counts every failure against "
                    f"max_failures (--max-restarts)")
    if fc.preemption_grace_s or fc.relax_collectives_on_preemption:
        return "failure_config: preemption settings are Ray-only; torchrun has no preemption notice"
    return None


class Scenario(_Strict):
    """An ftharness scenario: the cluster, the training workload, Ray Train's failure
    budgets, the faults to inject and what the run must show (`expect`)."""

    name: str = Field(..., min_length=1, max_length=100, pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = Field("", max_length=2000)
    cluster: ClusterSpec = Field(default_factory=ClusterSpec)
    workload: WorkloadSpec = Field(default_factory=WorkloadSpec)
    failure_config: FailureConfigSpec = Field(default_factory=FailureConfigSpec)
    #: each fault's spec model is chosen by its `kind` (faults/__init__.py: KINDS)
    faults: List[FaultSpec] = Field(default_factory=list, max_length=100)
    expect: ExpectSpec = Field(default_factory=ExpectSpec)
    timeout_s: float = Field(600, gt=0, le=7 * 24 * 3600)
    #: hold the end of training until every fault has landed or can no longer land;
    #: false models a job that may outrun its faults (they then make the run INCONCLUSIVE)
    landing_hold: bool = True
    #: folder of the scenario file; entrypoint modules are looked up there first
    base_dir: SkipJsonSchema[Optional[str]] = Field(None, exclude=True)

    @field_validator("name")
    @classmethod
    def _one_folder(cls, v: str) -> str:
        if v in (".", ".."):
            raise ValueError(f"{v!r} names no folder of its own (the results folder is named after it); "
                             f"allowed: letters, digits, '_', '-' and '.'")
        return v

    @model_validator(mode="after")
    def _fits(self):
        c, w = self.cluster, self.workload
        if w.runtime == "torchrun":
            problem = torchrun_problem(self)
            if problem:
                raise ValueError(problem)
        if w.collective_timeout_s is not None and w.runtime != "torchrun" and w.trainer != "torch":
            raise ValueError(f"workload.collective_timeout_s: the torch process group's timeout; trainer "
                             f"{w.trainer} has none (allowed with trainer: torch or runtime: torchrun)")
        if c.address is None and w.runtime == "ray_train":
            per_node = c.cpus_per_node // w.cpus_per_worker
            capacity = per_node * c.nodes
            if w.min_workers > capacity:
                raise ValueError(
                    f"workload.num_workers: {w.min_workers} workers of {w.cpus_per_worker} CPU "
                    f"do not fit on {c.nodes} nodes x {c.cpus_per_node} CPUs (at most {capacity})")
            if w.use_gpu is True and c.gpus_per_node == 0:
                raise ValueError("workload.use_gpu: true needs cluster.gpus_per_node >= 1")
            if w.use_gpu is not False and c.gpus_per_node and w.min_workers > c.gpus_per_node * c.nodes:
                raise ValueError(
                    f"workload.num_workers: {w.min_workers} workers of one GPU each do not fit on {c.nodes} "
                    f"nodes x {c.gpus_per_node} GPUs (at most {c.gpus_per_node * c.nodes})")
        why_cpu = ("workload.use_gpu: false" if w.use_gpu is False else
                   "cluster.gpus_per_node: 0" if c.address is None and not c.gpus_per_node else None)
        refused = cpu_refusal(self.faults, why_cpu) if why_cpu else None
        if refused:
            raise ValueError(refused)
        for i, f in enumerate(self.faults):   # each kind's own cross-field rules (faults/*.py)
            problem = REGISTRY[f.kind].scenario_problem(f, self, i)
            if problem:
                raise ValueError(problem)
            if c.address is not None and "existing" not in REGISTRY[f.kind].cluster_kinds:
                raise ValueError(f"faults[{i}].kind: {f.kind} runs only on a cluster ftharness starts; "
                                 f"drop cluster.address or the fault")
        max_workers = w.num_workers[1] if isinstance(w.num_workers, tuple) else w.num_workers
        for i, f in enumerate(self.faults):
            t, at = getattr(f, "target", None), f.at
            if t is not None and t.rank is not None and t.rank >= max_workers:
                raise ValueError(f"faults[{i}].target.rank: {t.rank} does not exist "
                                 f"(ranks 0..{max_workers - 1})")
            if t is not None and t.node is not None and c.address is None and t.node >= c.nodes:
                raise ValueError(f"faults[{i}].target.node: {t.node} does not exist "
                                 f"(worker nodes 0..{c.nodes - 1})")
            if at.rank is not None and at.rank >= max_workers:
                raise ValueError(f"faults[{i}].at.rank: {at.rank} does not exist (ranks 0..{max_workers - 1})")
            if at.step is not None and w.kind == "reference" and at.step > w.steps:
                raise ValueError(f"faults[{i}].at.step: {at.step} is never reached (workload.steps is {w.steps})")
            if at.time_s is not None and at.time_s >= self.timeout_s:
                raise ValueError(f"faults[{i}].at.time_s: {at.time_s} is past timeout_s ({self.timeout_s})")
        if c.network == "namespaces" and w.runtime == "torchrun":
            raise ValueError("cluster.network: namespaces builds Ray nodes in namespaces; workload.runtime "
                             "torchrun runs its own agents on this host (allowed: shared)")
        if c.network == "namespaces" and c.address is not None:
            raise ValueError("cluster.network: namespaces builds the embedded cluster's hosts; "
                             "it cannot be used with cluster.address")
        if c.storage == "s3" and (c.address is not None or w.storage_path is not None):
            raise ValueError("cluster.storage: s3 starts an S3 endpoint for an embedded cluster; with "
                             "cluster.address or workload.storage_path, give storage_path: s3://... instead")
        if w.working_dir is not None:
            why = working_dir_problem(w.working_dir, self.base_dir)
            if why:
                raise ValueError(why)
        return self


def working_dir_problem(working_dir: str, base_dir: Optional[str]) -> Optional[str]:
    """Why `workload.working_dir` leaves the scenario's folder (it is uploaded to the cluster
    by --submit): an absolute path, a `..` part, or (with the folder known) a path or a
    symlink that resolves outside it; None when it stays inside."""
    from ftharness.inputs import InputRefused, confined

    parts = working_dir.replace("\\", "/").split("/")
    if os.path.isabs(working_dir) or ".." in parts or "\x00" in working_dir:
        return (f"workload.working_dir: {working_dir[:80]!r} leaves the scenario's folder; allowed: a folder "
                f"inside it, written relative to it (no '..', not absolute)")
    if base_dir:
        try:
            confined(base_dir, working_dir, "workload.working_dir")
        except InputRefused as e:
            return str(e)
    return None


#: labels pydantic puts in a location for the member of a plain union (num_workers, use_gpu)
_UNION_LABEL = re.compile(r"(int|bool|float|str|tuple\[.*\]|literal\[.*\]|function-.*)")


def _loc(loc: Tuple[Any, ...], key_last: bool = False) -> str:
    """`faults[0].target.rank` from pydantic's ('faults', 0, 'kill_worker', 'target', 'rank').
    `key_last`: the last part is a key of the file (an unknown one), kept even when it is
    named like a union label (`int: 1`)."""
    loc = list(loc)
    if loc[:1] == ["faults"] and len(loc) > 2:
        del loc[2]  # the discriminated union's tag: the fault kind
    parts = []
    for i, p in enumerate(loc):
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif (key_last and i == len(loc) - 1) or not _UNION_LABEL.fullmatch(str(p)):
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def _model_at(loc: Tuple[Any, ...]):
    """The model whose keys are allowed at `loc` (pydantic's raw location of an unknown key)."""
    from pydantic import BaseModel
    from typing import get_args

    from ftharness.faults import REGISTRY

    model, parts = Scenario, list(loc[:-1])
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(part, int):
            i += 1
            continue
        if model is Scenario and part == "faults":
            # ('faults', 0, 'kill_worker', ...): the tag picks the fault's spec
            tag = parts[i + 2] if len(parts) > i + 2 else None
            if tag not in REGISTRY:
                return None
            model, i = REGISTRY[tag].Spec, i + 3
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return None
        stack, found = [field.annotation], None
        while stack and found is None:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                found = t
            else:
                stack.extend(get_args(t))
        if found is None:
            return None
        model, i = found, i + 1
    return model


def _unknown_key(err: Dict[str, Any], loc: str) -> str:
    """`loc: unknown key; did you mean X? allowed: a, b, c`."""
    import difflib

    model = _model_at(tuple(err.get("loc", ())))
    fault = model is not None and model.__module__.startswith("ftharness.faults")   # its kind is the tag
    allowed = [n for n in getattr(model, "model_fields", {}) if n != "base_dir" and not (fault and n == "kind")]
    if not allowed:
        return f"{loc}: unknown key"
    key = str(err["loc"][-1])
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{loc}: unknown key{hint} allowed: {', '.join(allowed)}"


def _format_one(err: Dict[str, Any]) -> str:
    kind = err.get("type")
    loc = _loc(err.get("loc", ()), key_last=kind == "extra_forbidden")
    if kind in ("union_tag_invalid", "union_tag_not_found"):  # the fault kind picks the spec model
        got = repr(err["input"].get("kind")) if isinstance(err.get("input"), dict) else ""
        got = got if len(got) <= 40 else got[:37] + "..."
        what = f"unknown fault kind {got}" if kind == "union_tag_invalid" else "a fault needs a kind"
        return f"{loc}.kind: {what}; allowed: {', '.join(FAULT_KINDS)}"
    if kind == "extra_forbidden":
        return _unknown_key(err, loc)
    msg = err.get("msg", "invalid").replace("Value error, ", "")
    if kind == "literal_error":
        msg = msg.replace("Input should be", "must be one of")
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        msg = "must be a mapping"
    got = err.get("input")
    shown = repr(got) if not isinstance(got, (dict, list)) else ""
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    tail = f" (got {shown})" if shown and kind not in ("missing", "value_error") else ""
    head, sep, rest = msg.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.\[\]]*", head):  # a validator named the field itself
        if loc.split(".")[-1] == head:
            loc = ".".join(loc.split(".")[:-1])
        loc, msg = (f"{loc}.{head}" if loc else head), rest
    return f"{loc}: {msg}{tail}" if loc else f"{msg}{tail}"


def validation_problems(e: ValidationError, limit: int = MAX_ERRORS) -> List[str]:
    """Every error (up to `limit`), each as `field.path: what is wrong (got value)`."""
    out: List[str] = []
    members: Dict[str, int] = {}   # field -> its line, for the members of one union (int | tuple)
    for err in e.errors(include_url=False):
        line = _format_one(err)
        raw = err.get("loc", ())
        if raw and err.get("type") != "extra_forbidden" and _UNION_LABEL.fullmatch(str(raw[-1])):
            field = line.partition(": ")[0]
            if field in members:   # one line per field: "a valid integer or a valid tuple"
                out[members[field]] = _either(out[members[field]], line)
                continue
            members[field] = len(out)
        if line not in out:
            out.append(line)
        if len(out) >= limit:
            break
    return out


def _either(first: str, other: str) -> str:
    """Two union members' lines for one field as one: `f: A or B (got x)`."""
    tail = re.search(r" \(got .*\)$", other)
    tail = tail.group(0) if tail else ""
    head = first[: -len(tail)] if tail and first.endswith(tail) else first
    more = other.partition(": ")[2]
    more = more[: -len(tail)] if tail and more.endswith(tail) else more
    return f"{head} or {more.replace('Input should be ', '')}{tail}"


def format_validation_error(e: ValidationError) -> str:
    """The first error, as `field.path: what is wrong (got value)`."""
    return validation_problems(e, 1)[0]


def scenario_error(first: str, problems: Optional[List[str]] = None, total: Optional[int] = None) -> ScenarioError:
    """A ScenarioError whose message is the first problem (one line); `problems` holds all
    of them (up to MAX_ERRORS) for `validate`, `total` how many there were."""
    err = ScenarioError(first)
    err.problems = problems or [first]
    err.total = total if total is not None else len(err.problems)
    return err


MAX_MESSAGE = 300


def one_line(text: str, limit: int = MAX_MESSAGE) -> str:
    """A message for the terminal: one line, at most `limit` characters."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


#: the published schema's identity, for editors (yaml-language-server: $schema=...) and catalogs
SCHEMA_ID = "https://raw.githubusercontent.com/ftharness/ftharness/main/scenarios/scenario.schema.json"
_FIELD = re.compile(r"^\s+(\w+)\s*:")


def field_docs(model: type) -> Dict[str, str]:
    """field -> its documentation: the `#:` comment lines just above the field
    in the model's source (and its bases'), or its Field(description=...)."""
    import inspect

    docs: Dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not hasattr(cls, "model_fields") or cls.__module__.startswith("pydantic"):
            continue
        try:
            lines = inspect.getsource(cls).splitlines()
        except (OSError, TypeError):
            continue
        comment: List[str] = []
        for line in lines[1:]:
            stripped = line.strip()
            if stripped.startswith("#:"):
                comment.append(stripped[2:].strip())
                continue
            m = _FIELD.match(line)
            if m and comment and m.group(1) in cls.model_fields:
                docs[m.group(1)] = " ".join(comment)
            comment = []
    for name, f in model.model_fields.items():
        if f.description:
            docs[name] = f.description
    return docs


def _models() -> Dict[str, type]:
    """Every model of the scenario schema, by its JSON Schema title."""
    seen: Dict[str, type] = {}
    stack = [Scenario]
    while stack:
        m = stack.pop()
        if m.__name__ in seen:
            continue
        seen[m.__name__] = m
        for f in m.model_fields.values():
            for t in _inner_types(f.annotation):
                if isinstance(t, type) and hasattr(t, "model_fields"):
                    stack.append(t)
    return seen


def _inner_types(annotation: Any) -> List[Any]:
    from typing import get_args

    out, stack = [], [annotation]
    while stack:
        t = stack.pop()
        out.append(t)
        stack.extend(get_args(t))
    return out


def scenario_json_schema() -> Dict[str, Any]:
    """The JSON Schema of a scenario file (`ftharness schema`; scenarios/scenario.schema.json),
    with an `$id` and each field's documentation as its `description` (editors show it)."""
    schema = {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
              **Scenario.model_json_schema()}
    models = _models()
    for title, d in [("Scenario", schema), *schema.get("$defs", {}).items()]:
        model = models.get(d.get("title", title)) or models.get(title)
        if model is None:
            continue
        docs = field_docs(model)
        for name, prop in (d.get("properties") or {}).items():
            text = docs.get(name) or FIELD_DOCS.get(f"{model.__name__}.{name}") or FIELD_DOCS.get(f"*.{name}")
            if text and "description" not in prop:
                prop["description"] = text
    return schema


def _depth(data: Any, limit: int) -> int:
    """Nesting depth of plain data, giving up past `limit` (iterative: no recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


def release_problem(sc: Scenario, ray_version: Optional[str]) -> Optional[str]:
    """Why `sc` cannot run on Ray `ray_version` (one line naming the field and the
    release), or None. A field the release lacks is refused, never dropped silently:
    its FailureConfig would reject it, or the behaviour it asks for does not exist there."""
    if sc.workload.runtime == "torchrun" or not ray_version:
        return None
    rel = releases.release(ray_version)
    if rel is None:
        return (f"Ray {ray_version}: not supported (ftharness supports Ray {releases.RANGE_TEXT}, "
                f"Train V2; tested: {', '.join(releases.SUPPORTED)})")
    for name in sorted(sc.failure_config.model_fields_set):
        if name not in rel.failure_config:
            since = releases.field_needs(name)
            return (f"failure_config.{name}: Ray {ray_version} has no such setting"
                    f"{f' (it arrived in {since.name})' if since else ''}; allowed on {rel.name}: "
                    f"{', '.join(sorted(rel.failure_config))}")
    if isinstance(sc.workload.num_workers, tuple) and not rel.elastic:
        return (f"workload.num_workers: [min, max] (elastic training) needs Ray {releases.field_release('elastic')} "
                f"or later; Ray {ray_version} takes a single number")
    if sc.workload.jit_checkpoint and not rel.preemption_watcher:
        return (f"workload.jit_checkpoint: waits for Ray's preemption notice, which Ray {ray_version} does not "
                f"give (from {releases.field_release('preemption_watcher')})")
    for i, f in enumerate(sc.faults):
        problem = REGISTRY[f.kind].release_problem(f, ray_version, rel.minor, i)
        if problem:
            return problem
    return None


def require_release(sc: Scenario, ray_version: Optional[str] = None) -> Scenario:
    """`sc`, or a one-line ScenarioError when it cannot run on `ray_version` (default: the installed Ray)."""
    problem = release_problem(sc, ray_version or releases.installed())
    if problem:
        raise ScenarioError(one_line(f"{sc.name}: {problem}"))
    return sc


def adapt_to_release(data: Dict[str, Any], ray_version: str) -> Tuple[Dict[str, Any], List[str]]:
    """A scenario's data with the failure_config fields Ray `ray_version` lacks removed, and one
    note per removal: the matrix runs a scenario on older releases this way, so that what the
    release does without the setting (e.g. a preemption charged to max_failures) is seen."""
    rel = releases.release(ray_version)
    fc = dict(data.get("failure_config") or {})
    notes = []
    if rel is not None and data.get("workload", {}).get("runtime", "ray_train") != "torchrun":
        for name in sorted(fc):
            if name not in rel.failure_config:
                notes.append(f"failure_config.{name} left out: Ray {ray_version} has no such setting")
                fc.pop(name)
    return ({**data, "failure_config": fc} if notes else data), notes


def parse_scenario(data: Any, source: str = "scenario", base_dir: Optional[str] = None) -> Scenario:
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: must be a mapping with at least 'name'")
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ScenarioError(f"{source}: nested more than {MAX_DEPTH} levels deep")
    if "base_dir" in data:   # set from the file's folder; a file that gives one would be overruled silently
        raise ScenarioError(f"{source}: base_dir: unknown key (the scenario's folder, set by ftharness)")
    try:
        sc = Scenario.model_validate({**data, "base_dir": base_dir})
    except ValidationError as e:
        problems = [one_line(f"{source}: {p}") for p in validation_problems(e)]
        raise scenario_error(problems[0], problems, len(problems) if len(problems) < MAX_ERRORS else e.error_count()) from None
    except (RecursionError, TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as e:
        raise ScenarioError(one_line(f"{source}: cannot be read as a scenario ({type(e).__name__})")) from None
    return sc


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when present: 10x faster, depth-capped


def _refuse(node, what: str):
    raise yaml.constructor.ConstructorError(None, None, what, getattr(node, "start_mark", None))


class _ScenarioLoader(_BaseLoader):
    """A safe loader for scenario files, bounded and strict:

    - no aliases (*name): they buy a scenario nothing and let a few hundred bytes expand
      into gigabytes (the 'billion laughs');
    - at most MAX_NODES values, MAX_ITEMS per list or mapping, MAX_SCALAR characters per
      value and MAX_DEPTH levels, checked on the composed nodes before any value is built;
    - a key given twice is refused (YAML would keep the last one silently), and so is a
      merge key (`<<: {...}`), which lets a key be given twice unseen;
    - YAML 1.2 numbers (`1e3`, `.5e3`) are numbers, as the published schema and editors take
      them (YAML 1.1 would read them as strings);
    - numbers of more than MAX_NUMBER_CHARS characters are refused before conversion
      (sexagesimal `1:1:1...` and 4,000-digit integers cost minutes of CPU);
    - dates and times stay strings (`name: 2024-13-01` is a name, not a bad date);
    - a converter's own failure (`!!int abc`, `!!float x`, `!!binary ?`) is this value's error."""

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            self._check_nodes(node)
        return node

    @staticmethod
    def _check_nodes(root) -> None:
        seen, count, stack = set(), 0, [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if id(node) in seen:
                _refuse(node, "aliases (*name) are not allowed in scenarios")
            seen.add(id(node))
            count += 1
            if count > MAX_NODES:
                _refuse(node, f"more than {MAX_NODES} values; a scenario is a page, not a data file")
            if depth > MAX_DEPTH:
                _refuse(node, f"nested more than {MAX_DEPTH} levels deep")
            if isinstance(node, yaml.ScalarNode):
                if len(node.value) > MAX_SCALAR:
                    _refuse(node, f"a value of {len(node.value)} characters (at most {MAX_SCALAR})")
                continue
            items = node.value
            if len(items) > MAX_ITEMS:
                _refuse(node, f"{len(items)} entries in one list or mapping (at most {MAX_ITEMS})")
            if isinstance(node, yaml.MappingNode):
                for k, v in items:
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in items)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception as e:  # noqa: BLE001 - PyYAML's converters raise ValueError, KeyError, ...
            _refuse(node, f"{node.tag.rsplit(':', 1)[-1]} value {node.value[:40]!r} cannot be read "
                          f"({type(e).__name__})" if isinstance(node, yaml.ScalarNode)
                    else f"value cannot be read ({type(e).__name__})")

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:merge":
                    _refuse(key_node, "merge keys (<<) are not allowed in scenarios; write the keys out")
                if isinstance(key_node, yaml.ScalarNode):
                    k = (key_node.tag, key_node.value)
                    if k in keys:
                        _refuse(key_node, f"key {key_node.value[:60]!r} given twice (YAML would keep the last one)")
                    keys.add(k)
                elif not isinstance(key_node, yaml.ScalarNode):
                    _refuse(key_node, "a key must be a plain value, not a list or mapping")
        return super().construct_mapping(node, deep)

    def _short_number(self, node):
        if len(str(node.value)) > MAX_NUMBER_CHARS:
            _refuse(node, f"a number of {len(node.value)} characters (at most {MAX_NUMBER_CHARS})")

    def construct_yaml_int(self, node):
        self._short_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        self._short_number(node)
        return super().construct_yaml_float(node)

    def construct_yaml_timestamp(self, node):
        return self.construct_scalar(node)


_ScenarioLoader.add_constructor("tag:yaml.org,2002:int", _ScenarioLoader.construct_yaml_int)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:float", _ScenarioLoader.construct_yaml_float)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:timestamp", _ScenarioLoader.construct_yaml_timestamp)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:map", _BaseLoader.construct_yaml_map)
_ScenarioLoader.add_implicit_resolver(   # YAML 1.2 exponents without a dot or a sign: 1e3, 6E2
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))

_NoAliasLoader = _ScenarioLoader   # the name older callers import


def load_yaml_text(raw: bytes, source: str) -> Any:
    """YAML bytes to data, or a one-line ScenarioError (size, encoding, syntax, depth, limits)."""
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(one_line(f"{source}: more than {MAX_FILE_BYTES} bytes, more than a scenario may hold"))
    if b"\x00" in raw:
        raise ScenarioError(one_line(f"{source}: a binary file, not YAML"))
    separators = raw.count(b",") + raw.count(b"\n")
    if separators > MAX_NODES:   # before parsing: composing that many values alone costs seconds
        raise ScenarioError(one_line(f"{source}: {separators} lines and commas: more than {MAX_NODES} values; "
                                     f"a scenario is a page, not a data file"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(one_line(f"{source}: not UTF-8 text (byte {e.start})")) from None
    try:
        return yaml.load(text, Loader=_ScenarioLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = str(getattr(e, "problem", None) or e)
        if "nesting depth" in problem:   # libyaml's own cap
            problem = f"nested more than {MAX_DEPTH} levels deep"
        raise ScenarioError(one_line(f"{source}:{where} not valid YAML ({problem})")) from None
    except RecursionError:
        raise ScenarioError(one_line(f"{source}: nested more than {MAX_DEPTH} levels deep")) from None
    except Exception as e:  # noqa: BLE001 - whatever else PyYAML raises is still this file's fault
        raise ScenarioError(one_line(f"{source}: cannot be read as YAML ({type(e).__name__})")) from None


def load_scenario(path: str) -> Scenario:
    """A validated Scenario from a YAML file, read through the one bounded reader
    (ftharness.inputs.read_bounded: a regular file, not under /proc, /sys or /dev, never
    waited on, at most MAX_FILE_BYTES of it)."""
    return read_scenario_file(path)[1]


def read_scenario_file(path: str) -> Tuple[Dict[str, Any], Scenario]:
    """(the file's data, its validated Scenario), read as load_scenario reads it: for a
    caller that rewrites the data (a matrix cell, a bisect probe: one per release)."""
    from ftharness.inputs import read_bounded

    shown = _shown_path(path)
    if not isinstance(path, str) or not path or not os.path.lexists(path):
        raise ScenarioError(one_line(f"{shown}: no such scenario file"))
    raw = read_bounded(path, MAX_FILE_BYTES, shown, "more than a scenario may hold")
    data = load_yaml_text(raw, shown)
    return data, parse_scenario(data, source=_shown_path(os.path.basename(path)),
                                base_dir=os.path.dirname(os.path.abspath(path)))


def _shown_path(path: Any, limit: int = 120) -> str:
    """A path as an error line shows it: control characters escaped, long ones cut in the middle."""
    from ftharness.safety import printable, redact

    text = printable(redact(str(path)), keep_newlines=False)
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 2):]


def default_scenario_path() -> str:
    return os.path.join(os.path.dirname(__file__), "catalog", "default.yaml")


#: What each field means where its model has no `#:` comment or Field(description=...)
#: on it: the JSON Schema's `description` (scenario_json_schema), which editors show on
#: hover and in completion. Keys are "Model.field"; "*.field" applies to every model
#: (the fault kinds share kind, at and target).
FIELD_DOCS = {
    "Scenario.name": "The scenario's name (letters, digits, _ . -; at most 100, not '.' or '..'): its results folder and suite entry are named after it.",
    "Scenario.description": "What the scenario does and why, in a sentence or two (shown in `ftharness list catalog`).",
    "Scenario.cluster": "The cluster the run uses: an embedded one (nodes, CPUs, GPUs, detection profile, network) or an existing one (address).",
    "Scenario.workload": "What trains: the reference workload (exact accumulators) or your own train function (entrypoint), and on which runtime.",
    "Scenario.failure_config": "Ray Train's failure budgets (FailureConfig), and how preemptions are treated.",
    "Scenario.faults": "The faults to inject, each with its `kind`, when it fires (`at`) and, for most kinds, its `target`.",
    "Scenario.expect": "What the run must show: its outcome, the properties that must hold, pinned known violations, bounds.",
    "Scenario.timeout_s": "Seconds the whole run may take before it is stopped and judged (default 600).",
    "At.step": "Fire when training reaches this step (1-based; with `rank`, when that rank reports it).",
    "At.rank": "With `step`: only that rank's step fires the fault.",
    "At.time_s": "Fire this many seconds after training started.",
    "At.event": "Fire on a history event (e.g. checkpoint_registered, worker_start): its `nth` occurrence.",
    "At.nth": "Which occurrence of the step or event fires the fault (default 1, the first).",
    "At.hold": "Hold the emitting worker until the fault is done (default true); false lets it run on.",
    "ClusterSpec.nodes": "Worker nodes of the embedded cluster (the head is extra and runs no training), 1 to 64.",
    "ClusterSpec.cpus_per_node": "CPUs each worker node offers Ray (1 to 256).",
    "ClusterSpec.gpus_per_node": "GPUs each worker node offers Ray (0 to 16).",
    "ClusterSpec.profile": "Detection settings: `fast` (a dead node is declared in seconds) or `ray_defaults` (what a stock cluster does).",
    "ClusterSpec.address": "Run on an existing cluster: `auto` or the GCS HOST:PORT (not ray://). Faults there need --allow-destructive.",
    "*.kind": "The fault kind (`ftharness list faults` lists them with their arguments).",
    "*.at": "When the fault fires: exactly one of step, time_s or event.",
    "*.target": "What the fault hits: exactly one of rank, node, node_id, ip, label or random.",
    "CorruptCheckpointSpec.which": "Which checkpoint to damage: `latest` (default), or a registered checkpoint's name.",
    "CorruptCheckpointSpec.how": "How to damage it: bitflip (default), truncate, delete_file, delete_dir, or snapshot (restore an older copy).",
    "CrashWorkerSpec.where": "Where in the train function the target rank raises ChaosCrash (default before_step).",
    "ExpectSpec.outcome": "How fit() must end: succeeded (default) or failed.",
    "ExpectSpec.error_type": "With outcome failed: the error type fit() must raise (e.g. TrainingFailedError).",
    "ExpectSpec.recovery_bound_s": "Most seconds a recovery may take, from the fault to the next first step (recovers).",
    "FailureConfigSpec.max_failures": "Ray Train's FailureConfig.max_failures: worker-group failures retried (-1 unlimited; left out: Ray's default, 0).",
    "FailureConfigSpec.max_preemption_failures": "Failures caused by preempted nodes retried separately (-1 unlimited; left out: Ray's default, -1; Ray 2.58+).",
    "FailureConfigSpec.controller_failure_limit": "Controller failures tolerated (-1 unlimited; left out: Ray's default, -1).",
    "FailureConfigSpec.preemption_grace_s": "Seconds a drained node's workers get to checkpoint before the node goes (default 0).",
    "FailureConfigSpec.relax_collectives_on_preemption": "Relax the collective timeouts while a preemption is handled (default false).",
    "HangWorkerSpec.duration_s": "Seconds the worker stays stopped (SIGSTOP) before SIGCONT; default: until the run ends.",
    "KillControllerSpec.resume": "Call fit() again with the same run name and storage after the controller died, as an operator would.",
    "KillNodeSpec.replace": "Start a new worker node after the kill (default false).",
    "KillNodeSpec.replace_after_s": "Seconds after the kill the replacement node starts (with replace: true).",
    "KillNodeSpec.graceful": "SIGTERM the node's processes first instead of SIGKILL (default false).",
    "KillWorkerSpec.graceful": "Ask Ray to kill the worker actor instead of SIGKILLing its process (default false).",
    "NetworkDegradeSpec.loss_pct": "Percent of packets the target node's link drops (0 < loss_pct < 100).",
    "NetworkDegradeSpec.rate_mbit": "Cap the target node's link at this many Mbit/s.",
    "NetworkDegradeSpec.latency_ms": "Delay each packet this many milliseconds (where tc netem exists).",
    "NetworkDegradeSpec.direction": "Degrade what comes `in`, goes `out`, or `both` (default).",
    "NetworkDegradeSpec.duration_s": "Seconds the link stays degraded (default 20).",
    "PartitionNodeSpec.duration_s": "Seconds the node stays cut off or stopped (default 10).",
    "PinnedViolation.property": "The property pinned to FAIL (a known gap of Ray, for example).",
    "PinnedViolation.reason": "Why it fails: text each of its violations must contain (3 to 300 characters).",
    "PreemptNodeSpec.replace": "Start a new worker node after the preempted one died (default false).",
    "PreemptNodeSpec.replace_after_s": "Seconds after the node died the replacement starts (with replace: true).",
    "PreemptNodeSpec.notice_s": "Seconds of notice the drain gives before its deadline (default 3).",
    "PreemptNodeSpec.kill_offset_s": "Seconds after the deadline the node dies (negative: before it).",
    "StarveResourcesSpec.duration_s": "Seconds every worker CPU stays taken; default: until the run ends.",
    "StorageErrorsSpec.duration_s": "Seconds the storage errors last; default: until the run ends.",
    "StorageErrorsSpec.ops": "Storage operations that fail: write (default), read, delete, list, mkdir, move.",
    "StorageErrorsSpec.path_glob": "Only paths matching this glob fail (default: every path of the run's storage).",
    "StorageErrorsSpec.error_rate": "Share of matching operations that fail, 0 to 1 (default 1.0).",
    "StorageErrorsSpec.latency_s": "Seconds each matching operation waits first.",
    "StorageErrorsSpec.partial": "A failing write leaves a torn file behind (default false).",
    "Target.rank": "A worker rank of the current worker group (0-based).",
    "Target.node": "A worker node by its harness index (0-based, head excluded).",
    "Target.node_id": "A node by Ray's node id (8 to 56 hex digits of it).",
    "Target.ip": "A node by the raylet's IP address.",
    "Target.label": "A node by Ray node labels ({key: value}, all matching; e.g. ftharness.io/node).",
    "Target.random": "true: a random rank, drawn when the fault fires.",
    "WorkloadSpec.kind": "`reference` (ftharness's own workload, exact expected state) or `entrypoint` (your train function).",
    "WorkloadSpec.entrypoint": "With kind entrypoint: 'module:function', the train function (train_loop_per_worker).",
    "WorkloadSpec.train_loop_config": "The train_loop_config passed to the train function.",
    "WorkloadSpec.num_workers": "Workers (ranks) of the worker group; [min, max] for an elastic group.",
    "WorkloadSpec.steps": "Steps the reference workload trains (1 to 1,000,000; default 30); a cap with duration_s.",
    "WorkloadSpec.batch_size": "Rows per step per worker of the reference workload (default 32).",
    "WorkloadSpec.epochs": "Epochs of the reference workload (default 1).",
    "WorkloadSpec.rows_per_epoch": "Rows in one epoch of the reference data (default: what `steps` needs).",
    "WorkloadSpec.checkpoint_every": "Steps between checkpoints of the reference workload (default 1).",
    "WorkloadSpec.model": "Size of the reference model: small (default), medium, large.",
    "WorkloadSpec.data": "How the reference workload reads data: `resumable` (default) or `ray_data` (Ray Data shards).",
    "WorkloadSpec.use_gpu": "Train on GPUs: true, false or auto (default: when the cluster has them).",
    "WorkloadSpec.num_to_keep": "Checkpoints Ray Train keeps (CheckpointConfig.num_to_keep; default all).",
    "WorkloadSpec.cpus_per_worker": "CPUs each worker reserves (default 1).",
    "WorkloadSpec.step_delay_s": "Seconds each reference step sleeps, to make a run last (default 0).",
    "WorkloadSpec.jit_checkpoint": "Checkpoint just in time when a preemption notice arrives (default false).",
    "WorkloadSpec.storage_path": "Where Ray Train stores checkpoints (default: the results folder's storage/).",
}


def scenario_data(sc: Scenario) -> Dict[str, Any]:
    """`sc` as plain data holding only what its file set (and what validators derived), to edit
    and parse again. A full dump would mark every default as set: a FailureConfig field the
    scenario leaves to Ray would then be passed to Ray, and refused on a release that lacks it
    (max_preemption_failures before 2.58: every matrix cell and bisect probe there)."""
    return sc.model_dump(mode="json", exclude_unset=True, exclude_none=True, exclude={"base_dir"})
