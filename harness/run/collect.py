"""Which scenarios a suite, `validate FOLDER` or `list` means: the files of folders, the
built-in catalog, and what this host or release cannot run (left out with a line each).

Kept apart from the suite's runner so that the commands which only read scenarios import
neither Ray Train nor the cluster code (`list` 4.4 s -> 1.4 s a call)."""

from __future__ import annotations

import glob
import os
import sys
from typing import Any, Dict, List, Optional

from ftharness import releases, scenarios
from ftharness.errors import ScenarioError
from ftharness.harness.run.guard import Target, check_route
from ftharness.scenarios.schema import Scenario, load_scenario, one_line, release_problem, require_release


def catalog_dir() -> str:
    return os.path.join(os.path.dirname(os.path.abspath(scenarios.__file__)), "catalog")


def collect_files(paths: List[str]) -> List[str]:
    """Scenario files of `paths` (files, or folders of *.yaml); the built-in catalog when empty."""
    files: List[str] = []
    for p in paths or [catalog_dir()]:
        files.extend(sorted(glob.glob(os.path.join(p, "*.yaml"))) if os.path.isdir(p) else [p])
    if not files:
        raise ScenarioError(f"{', '.join(paths)}: no scenario files (*.yaml)")
    for f in files:   # a FIFO or a device is the bounded reader's to refuse, with its own line
        if not os.path.lexists(f) or os.path.isdir(f):
            raise ScenarioError(f"{f}: no such scenario file")
    return files


#: files of a folder that may be Chaos Toolkit experiments (it reads both)
EXPERIMENT_SUFFIXES = (".yaml", ".yml", ".json")


def looks_like_experiment(data: Any) -> bool:
    """A Chaos Toolkit experiment, not a scenario: the keys only an experiment has
    (ftharness.harness.frontends.experiments checks one; a suite leaves it out)."""
    if not isinstance(data, dict) or "name" in data or "workload" in data:
        return False
    return "method" in data or ("title" in data and ("controls" in data or "steady-state-hypothesis" in data))


def read_experiment(path: str) -> Any:
    """The file's data, read as a scenario is (bounded; YAML, which JSON is a subset of); None
    when it cannot be read (the scenario reader then says why, in its own words)."""
    from ftharness.inputs import read_bounded
    from ftharness.scenarios.schema import load_yaml_text
    from ftharness.scenarios.language.yaml_reader import MAX_FILE_BYTES

    try:
        return load_yaml_text(read_bounded(path, MAX_FILE_BYTES, path, "more than a scenario may hold"), path)
    except (ScenarioError, OSError):
        return None


def is_experiment_file(path: str) -> bool:
    return os.path.isfile(path) and path.endswith(EXPERIMENT_SUFFIXES) and looks_like_experiment(read_experiment(path))


def host_skip(s: Scenario, path: str) -> Optional[Dict[str, str]]:
    """{scenario, file, reason} when this host lacks what `s` needs (root and nftables for
    cluster.network: namespaces: ftharness.harness.cluster.netns.refusal), else None."""
    from ftharness.harness.cluster import netns

    why = netns.refusal(s)
    return None if why is None else {"scenario": s.name, "file": os.path.abspath(path),
                                     "reason": one_line(f"{why} (this host; run it as root where nftables is)", 280)}


def collect(paths: List[str], gpus: Optional[int] = None, notes: Optional[List[str]] = None,
            skipped: Optional[List[Dict[str, str]]] = None) -> List[Scenario]:
    """The scenarios of files and folders. A folder's GPU scenarios (cluster.gpus_per_node >= 1,
    the catalog's gpu-*.yaml) are skipped, with a line on stderr, on a host without a GPU
    (`gpus`: how many this host has; None: ask nvidia-smi); a file named alone is kept. With
    `notes`, the lines about what was left out go there instead (printed once the suite starts).
    With `skipped`, a folder's scenarios this host cannot run (host_skip: a non-root CI runner and
    network namespaces) go there, with the reason, instead of refusing the whole suite."""
    say = notes.append if notes is not None else (lambda line: print(line, file=sys.stderr))
    files = collect_files(paths)
    listed = {f for p in (paths or [catalog_dir()]) if os.path.isdir(p)
              for f in glob.glob(os.path.join(p, "*.yaml"))}
    scenarios = []
    for f in files:
        if f in listed:
            if is_experiment_file(f):   # beside the scenarios: `chaos run` runs it, `validate` checks it
                say(f"left out {f}: a Chaos Toolkit experiment (run it with `chaos run {f}`)")
                continue
        s = load_scenario(f)
        if f in listed and s.cluster.gpus_per_node and s.cluster.address is None:
            if gpus is None:
                from ftharness.harness.cluster.handles import host_gpus

                gpus = len(host_gpus())
            if gpus < 1:
                say(f"skipped {s.name}: needs a GPU (cluster.gpus_per_node: {s.cluster.gpus_per_node}); "
                    f"this host has none (scripts/gpu-check.sh runs it where there is one)")
                continue
        skip = host_skip(s, f) if skipped is not None and f in listed else None
        if skip is not None:
            skipped.append(skip)
            continue
        scenarios.append(s)
    if paths:   # the user's own files: one that cannot run on this release is refused
        scenarios = [require_release(s) for s in scenarios]
    else:       # the built-in catalog: what this release cannot run is left out, each said in a line
        runnable = []
        for s in scenarios:
            problem = release_problem(s, releases.installed())
            if problem:
                say(f"suite: {s.name} left out on this release: {one_line(problem, 240)}")
            else:
                runnable.append(s)
        scenarios = runnable
    names = [s.name for s in scenarios]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ScenarioError(f"name: {', '.join(sorted(dup))} used by more than one scenario")
    return scenarios


def targets(scenarios: List[Scenario], address: Optional[str] = None,
            allow_destructive: bool = False) -> List[Target]:
    """Each scenario's cluster, decided by the guard before anything starts (one line otherwise)."""
    return [check_route(s, allow_destructive, address=address) for s in scenarios]
