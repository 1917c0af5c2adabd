"""The published JSON Schema of a scenario file (`ftharness schema`,
scenarios/scenario.schema.json): pydantic's schema of Scenario with an `$id` and each
field's documentation (its `#:` comment, Field(description=...) or FIELD_DOCS) as the
`description` editors show on hover."""

from __future__ import annotations

import functools
import re
from typing import Any, Dict, List

from ftharness.scenarios.language.scenario import Scenario


#: the published schema's identity, for editors (yaml-language-server: $schema=...) and catalogs
SCHEMA_ID = "https://raw.githubusercontent.com/ftharness/ftharness/main/scenarios/scenario.schema.json"
_FIELD = re.compile(r"^\s+(\w+)\s*:")


def field_docs(model: type) -> Dict[str, str]:
    """field -> its documentation: the `#:` comment lines just above the field
    in the model's source (and its bases'), or its Field(description=...). Read once per
    model: `inspect.getsource` parses the whole module each time (1.3 s a schema, 64 classes)."""
    return dict(_field_docs(model))


@functools.lru_cache(maxsize=None)
def _field_docs(model: type) -> Dict[str, str]:
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
    "ExpectSpec.error_type": ("With outcome failed: the error type fit() must raise (e.g. TrainingFailedError), or, "
                              "when the Train controller died in its constructor (ActorDiedError), the type its "
                              "constructor raised (e.g. CheckpointManagerInitializationError)."),
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
    "StorageErrorsSpec.duration_s": "Seconds the storage errors last, counted from the first one returned to the job; default: until the run ends.",
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
