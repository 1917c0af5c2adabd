"""What of a user's code reaches the workers, and how.

A user's train module imports its neighbours (`from model import Net`, a package of
the folder); the workers have none of them unless they are shipped. The code root is
`workload.working_dir` when declared (a folder beside the scenario: all of it ships,
as a Ray user's `runtime_env={"working_dir": ...}` would), else the scenario's folder,
of which only the top-level modules and packages the job imports (and those its
module:function fields name) ship: a `settings.py` with a secret beside it stays here.
Both `run` (a runtime environment's working_dir, on the embedded cluster and on an
existing one) and `run --submit` (the job's working dir) ship the same units.

Never shipped: virtualenvs, `.git`, caches, results folders; at most MAX_CODE_BYTES.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import sys
import tempfile
from typing import List, Optional

from ftharness.errors import ScenarioError

#: folder and file names never shipped (a user's `.gitignore`-style expectations)
EXCLUDED = (".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "__pycache__", "*.pyc", ".pytest_cache",
            ".hypothesis", ".mypy_cache", ".ruff_cache", ".tox", ".nox", "node_modules", "*.egg-info",
            "results", "build", "dist", ".ipynb_checkpoints")
#: what one run ships at most (Ray's own bound on a package is 512 MiB; code is far less)
MAX_CODE_BYTES = 64 * 1024 * 1024
FIELDS = ("entrypoint", "datasets", "dataset_config")


def code_root(scenario) -> Optional[str]:
    """The folder the job's modules are imported from: workload.working_dir (resolved beside
    the scenario) or the scenario's folder; None for a scenario without a folder."""
    base = getattr(scenario, "base_dir", None)
    declared = scenario.workload.working_dir
    if not declared:
        return base
    from ftharness.inputs import confined

    root = confined(base or os.getcwd(), declared, "workload.working_dir")   # symlinks resolved: inside the folder
    if not os.path.isdir(root):
        raise ScenarioError(f"workload.working_dir: {declared}: no such folder beside the scenario")
    return root


def excluded(name: str, path: str) -> bool:
    """A name never shipped, or a results folder (it holds a run's history or summary)."""
    if any(fnmatch.fnmatch(name, pattern) for pattern in EXCLUDED):
        return True
    return os.path.isdir(path) and any(os.path.exists(os.path.join(path, f)) for f in ("history.jsonl", "summary.json"))


def _unit(root: str, top: str) -> Optional[str]:
    """`top.py` or the package folder `top/` under root, if there."""
    for candidate in (os.path.join(root, f"{top}.py"), os.path.join(root, top)):
        if os.path.isfile(candidate) or os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def named_units(scenario, root: str) -> List[str]:
    """The top-level module or package each module:function field names."""
    found = []
    for field in FIELDS:
        ref = getattr(scenario.workload, field, None)
        if ref:
            hit = _unit(root, ref.partition(":")[0].split(".")[0])
            if hit and hit not in found:
                found.append(hit)
    return found


def imported_units(root: str) -> List[str]:
    """The top-level modules and packages of `root` that this process has imported (the job's
    modules import their neighbours when resolve_function imports them)."""
    prefix = os.path.abspath(root) + os.sep
    found = set()
    for module in list(sys.modules.values()):
        origin = os.path.abspath(getattr(module, "__file__", None) or "")
        if origin.startswith(prefix):
            top = os.path.relpath(origin, root).split(os.sep)[0]
            top = top[:-3] if top.endswith(".py") else top
            hit = _unit(root, top)
            if hit:
                found.add(hit)
    return sorted(found)


def units(scenario) -> List[str]:
    """The files and folders of the code root that ship: all of a declared working_dir (less
    EXCLUDED), else the named and imported modules and packages of the scenario's folder."""
    root = code_root(scenario)
    if not root:
        return []
    if scenario.workload.working_dir:
        found = [os.path.join(root, n) for n in sorted(os.listdir(root)) if not excluded(n, os.path.join(root, n))]
    else:
        found = sorted(set(named_units(scenario, root)) | set(imported_units(root)))
    for path in found:   # an upload follows symlinks: none may lead out of the scenario's folder
        links_out(path, getattr(scenario, "base_dir", None) or root)
    return found


def links_out(path: str, base: str) -> None:
    """Refuse a shipped file or folder that is, or holds, a symlink to anything outside the
    scenario's folder (the upload would follow it and ship, say, ~/.aws to every node)."""
    from ftharness.inputs import inside, links_leaving

    out = [path] if not inside(path, base) else links_leaving(path) if os.path.isdir(path) else []
    if out:
        raise ScenarioError(f"workload: {out[0][:120]} is a symlink out of the scenario's folder"
                            f"{f' (and {len(out) - 1} more)' if len(out) > 1 else ''}; only code inside it ships")


def _size(path: str) -> int:
    if not os.path.isdir(path):
        return os.path.getsize(path)
    total = 0
    for folder, dirs, files in os.walk(path):
        dirs[:] = [d for d in dirs if not excluded(d, os.path.join(folder, d))]
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files
                     if not excluded(f, os.path.join(folder, f)) and os.path.isfile(os.path.join(folder, f)))
    return total


def check_size(paths: List[str], limit: int = MAX_CODE_BYTES) -> int:
    """The bytes that ship; ScenarioError naming the largest entry when over `limit`."""
    sizes = {p: _size(p) for p in paths}
    total = sum(sizes.values())
    if total > limit:
        big = max(sizes, key=sizes.get)
        raise ScenarioError(f"workload: the code to ship to the workers is {total / 2**20:.0f} MiB (at most "
                            f"{limit // 2**20} MiB); {os.path.basename(big)} alone is {sizes[big] / 2**20:.0f} MiB: "
                            f"keep data out of the code root or set workload.working_dir to a folder of code")
    return total


def stage(paths: List[str], dest: str) -> None:
    """Copy the units into `dest` (links followed, EXCLUDED left out)."""
    def ignore(folder, names):
        return [n for n in names if excluded(n, os.path.join(folder, n))]

    for path in paths:
        target = os.path.join(dest, os.path.basename(path))
        if os.path.isdir(path):
            shutil.copytree(path, target, ignore=ignore)
        else:
            shutil.copy(path, target)


def runtime_env(scenario) -> Optional[dict]:
    """The runtime environment that ships the job's code to every worker of a run
    ({"working_dir": a package in the cluster's GCS}), None when there is nothing to ship
    (the reference workload, a scenario without a folder). Call after the job's functions
    were imported (resolve_function), with a Ray connection open."""
    if scenario.workload.kind == "reference" or not scenario.workload.entrypoint:
        return None
    shipped = units(scenario)
    if not shipped:
        return None
    check_size(shipped)
    from ftharness.harness.cluster import ray_private as rp

    with tempfile.TemporaryDirectory(prefix="ftharness-code-") as tmp:
        staged = os.path.join(tmp, "code")
        os.mkdir(staged)
        stage(shipped, staged)
        return {"working_dir": rp.upload_working_dir(staged, scratch_dir=tmp)}


def import_refusal(error: BaseException, scenario) -> Optional[str]:
    """One line for a job a worker cannot import (a module of it that did not ship, or that
    only this host's sys.path finds), None for any other error."""
    import re

    text = str(error)
    found = re.search(r"No module named '([^']+)'", text)
    if found is None and not isinstance(error, ImportError):
        return None
    module = found.group(1) if found else "a module of the job"
    root = code_root(scenario) or "the scenario's folder"
    return (f"workload.entrypoint: the workers cannot import {module!r} (No module named {module!r}): what ships "
            f"is the modules and packages of {root} the job imports (or all of workload.working_dir); "
            f"put {module} there or install it on every node")


def check_importable(functions: List, env: Optional[dict], node_id: str, scenario) -> None:
    """Unpickle the job's functions in a worker with the run's runtime environment, on the
    node fit() runs on, before anything of the run starts: ScenarioError (import_refusal)
    when a module is missing there. The fit task then reuses that worker process."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        ray.get(_unpickle.options(runtime_env=env or {},
                                  scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
                .remote([f for f in functions if f is not None]), timeout=300)
    except Exception as e:  # noqa: BLE001 - only an import failure is the job's; others go on
        why = import_refusal(e, scenario)
        if why:
            raise ScenarioError(why) from None
        raise


def _remote_unpickle():
    import ray

    @ray.remote(num_cpus=0, max_retries=0)
    def unpickle(functions):
        return len(functions)

    return unpickle


class _Lazy:
    """The remote function, defined when first used (no Ray import for `validate`)."""

    def __init__(self):
        self.fn = None

    def options(self, **kw):
        if self.fn is None:
            self.fn = _remote_unpickle()
        return self.fn.options(**kw)


_unpickle = _Lazy()
