"""The Scenario model: its parts (cluster, workload, failure_config, faults, expect) and the
cross-field checks that need more than one part (capacity, GPUs, targets that exist, each
fault kind's own rules, torchrun and network limits). The parts validate themselves in
their own modules; this is where they are checked against each other."""

from __future__ import annotations

from typing import List, Optional

from pydantic import Field, field_validator, model_validator
from pydantic.json_schema import SkipJsonSchema

from ftharness.faults import REGISTRY, FaultSpec, cpu_refusal
from ftharness.faults.base import Strict as _Strict
from ftharness.scenarios.language.cluster import ClusterSpec
from ftharness.scenarios.language.expect import ExpectSpec
from ftharness.scenarios.language.failure_config import FailureConfigSpec
from ftharness.scenarios.language.torchrun_rules import torchrun_problem
from ftharness.scenarios.language.workload import WorkloadSpec, working_dir_problem


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
