"""What a `workload.runtime: torchrun` scenario may hold (`torchrun_problem`): TorchElastic
runs one agent per node on this host with no Ray, so the fault kinds, cluster, storage and
failure budget fields that need Ray are refused here, each in one line naming the field."""

from __future__ import annotations

from typing import Any, Optional

from ftharness.faults import FAULT_KINDS, REGISTRY, kinds_on


#: fault kinds a `workload.runtime: torchrun` run can inject (local processes and files, no Ray)
TORCHRUN_FAULTS = kinds_on("torchrun")
#: every other kind, and why a torchrun run cannot have it (each kind's `refused_on`)
TORCHRUN_REFUSED = {k: REGISTRY[k].refused_on.get("torchrun", "acts through Ray")
                    for k in FAULT_KINDS if k not in TORCHRUN_FAULTS}
#: the collective timeout of a torchrun run when the scenario gives none (seconds)
TORCHRUN_COLLECTIVE_TIMEOUT_S = 120.0


def torchrun_problem(sc: Any) -> Optional[str]:
    """Why a `workload.runtime: torchrun` scenario cannot run, as `field: reason`, or None.
    (`sc` is a Scenario, spec/scenario.py, whose cross-field check calls this: named, not
    imported, so the two modules form no cycle.)"""
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
