"""`workload:` of a scenario (WorkloadSpec): what trains and how, with the rules that
involve only its own fields, and `working_dir_problem`, the one rule that keeps the job's
code root inside the scenario's folder (it is uploaded to the cluster)."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

from pydantic import Field, field_validator, model_validator

from ftharness.faults.base import Strict as _Strict


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
    #: data files the job reads at run time, shipped to the workers with its code: paths or globs
    #: (`configs/*.yaml`, `data/**/*.csv`, a folder) relative to the scenario's folder and inside the
    #: code root, landing at the same place relative to the code; resolve them in the job against
    #: `Path(__file__).parent` of a module beside them (the workers run in Ray Train's own run folder)
    files: List[str] = Field(default_factory=list, max_length=100)
    #: names (or name globs: `*.ckpt`, `scratch`) never shipped, besides the default list
    #: (virtualenvs, .git, caches, results, credential files such as .netrc, .ssh, id_rsa, .aws, *.pem)
    ship_exclude: List[str] = Field(default_factory=list, max_length=100)
    #: names of the default list shipped anyway (a package called `build`, a `secrets.py` module)
    ship_include: List[str] = Field(default_factory=list, max_length=100)
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

    @field_validator("files")
    @classmethod
    def _files(cls, v):
        for p in v:
            parts = p.replace("\\", "/").split("/")
            if not p or len(p) > 200 or "\x00" in p:
                raise ValueError(f"{p[:80]!r}: allowed: a path or glob of 1 to 200 characters")
            if os.path.isabs(p) or p.startswith("~") or ".." in parts:
                raise ValueError(f"{p[:80]!r} leaves the scenario's folder; allowed: a path or glob inside it, "
                                 f"written relative to it (no '..', not absolute, at most 200 characters)")
        return v

    @field_validator("ship_exclude", "ship_include")
    @classmethod
    def _names(cls, v):
        for p in v:
            if not p or len(p) > 100 or "/" in p or "\\" in p or "\x00" in p:
                raise ValueError(f"{p[:80]!r}: allowed: a file or folder name or a name glob (no '/', at most 100 characters)")
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
        if self.kind == "reference" and (self.files or self.ship_exclude or self.ship_include):
            raise ValueError("files, ship_exclude, ship_include: only for an entrypoint workload "
                             "(the reference workload ships no code)")
        both = sorted(set(self.ship_exclude) & set(self.ship_include))
        if both:
            raise ValueError(f"ship_include: {both[0]!r} is in ship_exclude too; allowed: one of the two")
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
