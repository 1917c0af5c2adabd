"""What one run shares whatever its runtime (Ray Train: runner.py; torchrun: torchrun_runner.py):
its options, its name, where its storage is, the versions it ran with, the scenario and the
summary it writes into its results folder.

The summary is made here once (`summarize`: the verdict over the history, the GPU facts, the
fields every summary has) and written here once (`write_summary`), always with credentials
redacted, so the two runtimes cannot drift apart in what a results folder holds. Neither
runner imports the other for these.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, List, Optional

import yaml

from ftharness.history import records
from ftharness.reports.gpu import gpu_summary
from ftharness.safety import redact
from ftharness.scenarios.reference_data import WorkloadConfig
from ftharness.scenarios.schema import Scenario

if TYPE_CHECKING:
    from ftharness.scenarios.run_summary import RunSummary


@dataclass
class RunOptions:
    out_dir: str
    address: Optional[str] = None
    resume: Optional[str] = None           # a previous results folder to resume
    progress: bool = True
    allow_destructive: bool = False        # faults on a cluster ftharness did not start
    address_source: Optional[str] = None   # --address, cluster.address or RAY_ADDRESS (ftharness.harness.run.guard)


def new_run_name(scenario_name: str) -> str:
    """Unique per run, so two runs never resume each other by accident."""
    return f"{scenario_name}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(3)}"


def storage_location(path: str) -> str:
    """A local path made absolute; a URI (s3://, gs://, ...) as given, for Ray Train's pyarrow."""
    return path if "://" in path else os.path.abspath(path)


def workload_config(scenario: Scenario, use_gpu: bool, stop_at: Optional[float] = None) -> Dict[str, Any]:
    w = scenario.workload
    if w.kind != "reference":
        return dict(w.train_loop_config)
    return WorkloadConfig(
        steps=w.steps, batch_size=w.batch_size, epochs=w.epochs, rows_per_epoch=w.rows_per_epoch,
        checkpoint_every=w.checkpoint_every, model=w.model, data=w.data, use_gpu=use_gpu,
        step_delay_s=w.step_delay_s, jit_checkpoint=w.jit_checkpoint, stop_at=stop_at,
    ).to_dict()


def versions() -> Dict[str, str]:
    import ray
    import torch

    return {"ray": ray.__version__, "torch": torch.__version__, "python": sys.version.split()[0],
            "ftharness": _own_version()}


def _own_version() -> str:
    """The package's own version (a matrix environment runs ftharness's code without its metadata)."""
    import ftharness

    return ftharness.__version__


def write_scenario(scenario: Scenario, path: str) -> None:
    """The scenario as run (scenario.yaml), credentials redacted: URL credentials, and the value of
    every key named like a secret anywhere in it, train_loop_config included (redact_secrets)."""
    from ftharness.safety import redact_secrets

    data = redact_secrets(scenario.model_dump(mode="json", exclude_none=True, exclude={"base_dir"}))
    with open(path, "w") as f:
        yaml.safe_dump(data, f, sort_keys=False)


def summarize(scenario: Scenario, history_path: str, outcome: Dict[str, Any], fault_specs: Optional[List[dict]],
              fields: Dict[str, Any], settings: Dict[str, Any]) -> "RunSummary":
    """The run's summary: the verdict over its history (ftharness.scenarios.verdict), the GPU
    facts, then `fields` (run_name, wall_time_s, storage_path, ... : what the runtime knows)
    and its `settings`. Not yet written: see `write_summary`."""
    from ftharness.scenarios.verdict import evaluate

    read = records.read_history(history_path)
    summary = evaluate(scenario, read.events, outcome, read.problems, fault_specs=fault_specs)
    summary["gpu"] = gpu_summary(read.events)
    used = next((e.get("ray_settings") for e in read.events if e.get("kind") == "run_start"), None)
    if isinstance(used, list):   # the defaults used, and where ftharness chose otherwise (Ray Train runs)
        from ftharness.harness.run.ray_settings import differs, read_settings

        summary["ray_settings"] = read_settings(used)
        summary["differs_from_ray"] = differs(summary["ray_settings"])
    summary.update(fields)
    summary["settings"] = settings
    return summary


def write_summary(out_dir: str, summary: Dict[str, Any]) -> None:
    """summary.json, credentials in URLs redacted (the returned summary keeps them)."""
    with open(os.path.join(out_dir, "summary.json"), "w") as f:
        json.dump(redact(summary), f, indent=2, default=str)
