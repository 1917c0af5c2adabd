"""The user's functions a scenario names (workload.entrypoint, datasets, dataset_config),
imported from the scenario's code root and marked to travel by value.

Apart from the runner so that `run`'s preflight resolves them without importing Ray Train."""

from __future__ import annotations

import importlib
import os
import sys
from typing import Callable, Optional

from ftharness.errors import ScenarioError
from ftharness.scenarios.schema import Scenario, one_line


def resolve_train_fn(scenario: Scenario) -> Callable:
    """The workload's train_loop_per_worker; user modules are shipped by value."""
    w = scenario.workload
    if w.kind == "reference":
        from ftharness.harness.job.workload import train_loop

        return train_loop
    return resolve_function(scenario, w.entrypoint, "workload.entrypoint")


def resolve_datasets_fn(scenario: Scenario) -> Optional[Callable]:
    """The function that builds the trainer's `datasets=` (workload.datasets), if any."""
    ref = scenario.workload.datasets
    return None if ref is None else resolve_function(scenario, ref, "workload.datasets")


def resolve_dataset_config_fn(scenario: Scenario) -> Optional[Callable]:
    """The function that builds the trainer's `dataset_config=` (workload.dataset_config), if any."""
    ref = scenario.workload.dataset_config
    return None if ref is None else resolve_function(scenario, ref, "workload.dataset_config")


def resolve_function(scenario: Scenario, ref: str, field: str) -> Callable:
    """'module:function', looked up in the scenario's folder first; shipped by value."""
    module_name, _, fn_name = ref.partition(":")
    if not module_name or module_name.startswith(".") or not fn_name:
        raise ScenarioError(f"{field}: {ref!r} must be 'module:function' (an absolute module name)")
    from ftharness.harness.run.usercode import code_root

    root = code_root(scenario)   # workload.working_dir, else the scenario's folder
    added = False
    if root and root not in sys.path:
        sys.path.insert(0, root)
        added = True
    _forget_other_folders(module_name, root)
    try:
        module = importlib.import_module(module_name)
    except (Exception, SystemExit) as e:   # noqa: BLE001 - the user's module: any failure is the field's
        why = f"{type(e).__name__}: {e}" if not isinstance(e, ImportError) else str(e)
        raise ScenarioError(one_line(f"{field}: cannot import {module_name!r} ({why})")) from None
    finally:
        if added:
            sys.path.remove(root)
    fn = getattr(module, fn_name, None)
    if not callable(fn):
        raise ScenarioError(f"{field}: {module_name!r} has no function {fn_name!r}")
    from ray import cloudpickle

    # Workers may not see the scenario folder (another machine): the function goes by value, the
    # modules it imports go in the run's runtime environment (ftharness.harness.run.usercode).
    if root and os.path.abspath(getattr(module, "__file__", "") or "").startswith(root):
        cloudpickle.register_pickle_by_value(module)
    return fn


def _forget_other_folders(module_name: str, base_dir: Optional[str]) -> None:
    """Drop an imported module of this name that came from another scenario's folder, so a
    second scenario (`validate a/s.yaml b/s.yaml`, a suite) imports its own `job.py`."""
    if not base_dir:
        return
    top = module_name.split(".")[0]
    here = os.path.join(base_dir, top)
    if not (os.path.exists(here + ".py") or os.path.isdir(here)):
        return
    for name in [n for n in sys.modules if n == top or n.startswith(top + ".")]:
        origin = os.path.abspath(getattr(sys.modules[name], "__file__", "") or "")
        if not origin.startswith(os.path.abspath(base_dir) + os.sep):
            del sys.modules[name]
