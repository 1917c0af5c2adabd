"""Where a torchrun run keeps its checkpoints: the layout Ray Train uses.

`<storage_path>/<run name>/checkpoint_<YYYY-mm-dd_HH-MM-SS.ffffff>/` holding the
job's files and each reporting rank's marker (`.ftharness-rank<R>.json`: the
lineage step and the sha256 of every file, as harness.job.instrument writes
them under Ray). A checkpoint is committed by a rename: rank 0 copies the files
into a hidden staging directory, syncs them, and renames it into place, so a
restore never sees a half-written checkpoint. That rename is the torchrun
counterpart of Ray Train's registration: from then on a restart restores it.
Restores take the newest committed directory (names sort by time). Retention
(`workload.num_to_keep`) deletes the oldest committed ones after a commit.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
from typing import Any, Dict, List, Optional

from harness.history.records import is_marker

PREFIX = "checkpoint_"
STAGING = ".staging-"


def new_name() -> str:
    """A checkpoint directory name as Ray Train makes them (sorts by time)."""
    return PREFIX + datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f")


def committed(run_dir: str) -> List[str]:
    """Names of the committed checkpoints, oldest first."""
    try:
        names = os.listdir(run_dir)
    except FileNotFoundError:
        return []
    return sorted(n for n in names if n.startswith(PREFIX) and os.path.isdir(os.path.join(run_dir, n)))


def latest(run_dir: str) -> Optional[str]:
    """The newest committed checkpoint's name, or None."""
    names = committed(run_dir)
    return names[-1] if names else None


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(run_dir: str, source_dir: str) -> str:
    """Copy `source_dir` into the run's storage as a new checkpoint, atomically; its name."""
    os.makedirs(run_dir, exist_ok=True)
    name = new_name()
    staging = os.path.join(run_dir, STAGING + name)
    shutil.copytree(source_dir, staging)
    for root, _, files in os.walk(staging):
        for f in files:
            _fsync(os.path.join(root, f))
    _fsync(staging)
    os.rename(staging, os.path.join(run_dir, name))
    _fsync(run_dir)
    return name


def prune(run_dir: str, keep: Optional[int]) -> List[str]:
    """Delete the oldest committed checkpoints beyond `keep`; the names deleted."""
    if not keep:
        return []
    doomed = committed(run_dir)[:-keep]
    for name in doomed:
        shutil.rmtree(os.path.join(run_dir, name), ignore_errors=True)
    return doomed


def read_markers(directory: str) -> List[Dict[str, Any]]:
    """The ftharness markers of a checkpoint directory (one per rank that reported it)."""
    out = []
    try:
        names = sorted(os.listdir(directory))
    except OSError:
        return out
    for n in names:
        if is_marker(n):
            try:
                with open(os.path.join(directory, n)) as f:
                    out.append(json.load(f))
            except (OSError, ValueError):
                continue
    return out
