"""The fit task: what runs in a Ray task on the head for each fit() of a run (harness/run/runner.py
submits it). It builds the user's trainer with ftharness's controller callback and instrumented
train function, runs fit(), and returns the outcome as plain data. Ray reuses the task's process
for the next run of a suite, so the task leaves nothing of its run in that process.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from typing import Any, Dict, Optional

import ray

__all__ = ["trainer_class", "sigint_handler_restored", "_fit_task", "_torch_config"]


def trainer_class(name: str):
    """The Ray Train V2 trainer of `workload.trainer`."""
    if name == "xgboost":
        from ray.train.xgboost import XGBoostTrainer

        return XGBoostTrainer
    if name == "lightgbm":
        from ray.train.lightgbm import LightGBMTrainer

        return LightGBMTrainer
    from ray.train.torch import TorchTrainer

    return TorchTrainer


def _torch_config(spec: Dict[str, Any]) -> Dict[str, Any]:
    """`torch_config=` of a TorchTrainer: NCCL named on GPU workers (gloo, Ray's CPU default,
    otherwise), and workload.collective_timeout_s where given: a collective that waits that long on a peer
    raises, where Ray's default waits 30 minutes."""
    if spec.get("trainer", "torch") != "torch":
        return {}
    from ray.train.torch import TorchConfig

    from ftharness.harness.job.device import backend_for

    timeout = spec.get("collective_timeout_s")
    named = {"backend": backend_for("cuda")} if spec.get("use_gpu") else {}   # gloo is Ray's CPU default
    if timeout is None:
        return {"torch_config": TorchConfig(**named)} if named else {}
    return {"torch_config": TorchConfig(**named, timeout_s=max(1, int(round(timeout))))}


@contextlib.contextmanager
def sigint_handler_restored():
    """This process's SIGINT handler as it was before fit(). fit() installs its own, a closure
    over the Train controller's handle (DataParallelTrainer._register_sigint_handler, Ray 2.51-
    2.60), and leaves it installed: the fit task's process is pooled, so the finished run's
    controller and dataset manager stayed alive until that process exited or the next fit()
    replaced the handler, and a suite's heal waited for them (5 s between every two runs)."""
    main = threading.current_thread() is threading.main_thread()
    before = signal.getsignal(signal.SIGINT) if main else None
    try:
        yield
    finally:
        if main and before is not None:
            signal.signal(signal.SIGINT, before)


@ray.remote(num_cpus=0, max_retries=0)
def _fit_task(spec: Dict[str, Any], recorded: Optional[list] = None) -> Dict[str, Any]:
    """Builds the TorchTrainer and runs fit(); returns the outcome as plain data.

    `recorded` holds the ref of the run_start hand-over (in a list, so Ray does not wait for it
    before the task starts): fit() starts while the history actor does, and the controller
    callback's first event waits for it (every worker event comes after that one), so nothing
    of this fit() is recorded before run_start. The run's Ray Train settings are set in this
    process's environment for the fit and taken out after it: Ray reuses the process for the
    next run's fit task, which must not inherit a setting its scenario does not make."""
    saved = dict(os.environ)
    os.environ.update(spec["train_env"])
    try:
        return _fit(spec, recorded)
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _fit(spec: Dict[str, Any], recorded: Optional[list]) -> Dict[str, Any]:
    import ray.train
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig

    from ftharness.harness.cluster import ray_private as rp
    from ftharness.harness.job.instrument import instrument
    from ftharness.harness.job.recorder import ControllerRecorder

    fc = spec["failure_config"]
    datasets = None
    if spec["data"] == "ray_data":
        datasets = {"train": ray.data.range(spec["rows"])}
    if spec.get("datasets_fn") is not None:
        datasets = spec["datasets_fn"]()
    dataset_config = None
    if spec.get("dataset_config_fn") is not None:
        dataset_config = spec["dataset_config_fn"]()
        if not isinstance(dataset_config, ray.train.DataConfig):
            return {"outcome": "failed", "error_type": "TypeError",
                    "error": f"workload.dataset_config: {spec['dataset_config_ref']} returned "
                             f"{type(dataset_config).__name__}, not a ray.train.DataConfig"}
    trainer = trainer_class(spec.get("trainer", "torch"))(
        instrument(spec["train_fn"], spec["history"], explicit_steps=spec["explicit_steps"],
                   crash_plans=spec["crash_plans"], hold_s=spec["hold_s"], row_id=spec.get("row_id"),
                   row_datasets=rp.datasets_to_split(dataset_config)),
        train_loop_config=spec["train_loop_config"],
        scaling_config=ScalingConfig(
            num_workers=spec["num_workers"], use_gpu=spec["use_gpu"],
            resources_per_worker={"CPU": spec["cpus_per_worker"], **({"GPU": 1} if spec["use_gpu"] else {})},
        ),
        run_config=RunConfig(
            name=spec["run_name"],
            storage_path=spec["storage_path"],
            storage_filesystem=spec.get("storage_filesystem"),
            # only what the scenario sets: every other field is the release's own default
            failure_config=FailureConfig(**spec.get("failure_config_given", fc)),
            checkpoint_config=CheckpointConfig(num_to_keep=spec["num_to_keep"]),
            callbacks=[ControllerRecorder(spec["history"], fc, recorded)],
        ),
        datasets=datasets,
        dataset_config=dataset_config,
        **_torch_config(spec),
    )
    try:
        with sigint_handler_restored():
            result = trainer.fit()
    except Exception as e:  # fit() raises the run's error; that is an outcome, not a crash
        from ftharness.harness.run.fit_errors import constructor_error, error_text

        text = error_text(e)
        return {"outcome": "failed", "error_type": type(e).__name__, "error": text,
                "error_cause": constructor_error(text)}
    return {
        "outcome": "succeeded", "error_type": None, "error": None,
        "metrics": {k: v for k, v in (result.metrics or {}).items() if isinstance(v, (int, float, str, bool))},
        "checkpoint": result.checkpoint.path if result.checkpoint else None,
        "return_value": getattr(result, "return_value", None),   # Result.return_value: 2.56+
    }
