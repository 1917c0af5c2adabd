"""Where a torchrun run keeps its checkpoints: the layout Ray Train uses.

`<storage_path>/<run name>/checkpoint_<YYYY-mm-dd_HH-MM-SS.ffffff>/` holding the
job's files and each reporting rank's marker (`.ftharness-rank<R>.json`: the
lineage step and the sha256 of every file, as ftharness.harness.job.instrument writes
them under Ray). A checkpoint is committed by a rename: rank 0 copies the files
into `<run>/.staging/checkpoint_<time>/`, syncs them, and renames it into place,
so a restore never sees a half-written checkpoint. That rename is the torchrun
counterpart of Ray Train's registration: from then on a restart restores it.
Restores take the newest committed directory (names sort by time). Retention
(`workload.num_to_keep`) deletes the oldest committed ones after a commit.

Every operation goes through a pyarrow filesystem (`fs`, local disk by default),
so that a `storage_errors` fault can put ftharness.faults.storage's chaos filesystem in
its way, as the Ray runner does with Ray Train's `storage_filesystem`: listing
(`list`), reading (`read`), writing (`write`, `mkdir`), the commit rename
(`move`) and retention (`delete`). The storage is local disk under torchrun, so
files are synced with os calls after pyarrow wrote them.
"""

from __future__ import annotations

import datetime
import json
import os
from typing import Any, Dict, List, Optional

import pyarrow.fs as pafs

from ftharness.history.records import is_marker

PREFIX = "checkpoint_"
STAGING = ".staging"    # <run>/.staging/checkpoint_<time>/: written there, renamed into <run>/ to commit


def local_fs(fs: Optional[pafs.FileSystem] = None) -> pafs.FileSystem:
    return fs if fs is not None else pafs.LocalFileSystem()


def new_name() -> str:
    """A checkpoint directory name as Ray Train makes them (sorts by time)."""
    return PREFIX + datetime.datetime.now().strftime("%Y-%m-%d_%H-%M-%S.%f")


def committed(run_dir: str, fs: Optional[pafs.FileSystem] = None) -> List[str]:
    """Names of the committed checkpoints, oldest first."""
    infos = local_fs(fs).get_file_info(pafs.FileSelector(run_dir, allow_not_found=True))
    return sorted(i.base_name for i in infos if i.type == pafs.FileType.Directory and i.base_name.startswith(PREFIX))


def latest(run_dir: str, fs: Optional[pafs.FileSystem] = None) -> Optional[str]:
    """The newest committed checkpoint's name, or None."""
    names = committed(run_dir, fs)
    return names[-1] if names else None


def _fsync(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def commit(run_dir: str, source_dir: str, fs: Optional[pafs.FileSystem] = None) -> str:
    """Copy `source_dir` (local) into the run's storage as a new checkpoint, atomically; its name.
    A failed write leaves its staging folder behind, never a committed checkpoint."""
    fs = local_fs(fs)
    name = new_name()
    staging = os.path.join(run_dir, STAGING, name)
    fs.create_dir(staging, recursive=True)
    written = []
    for root, _, files in os.walk(source_dir):
        for f in sorted(files):
            rel = os.path.relpath(os.path.join(root, f), source_dir)
            dest = os.path.join(staging, rel)
            if os.path.dirname(rel):
                fs.create_dir(os.path.dirname(dest), recursive=True)
            with open(os.path.join(root, f), "rb") as src, fs.open_output_stream(dest) as out:
                out.write(src.read())
            written.append(dest)
    for path in written + [staging]:
        _fsync(path)
    fs.move(staging, os.path.join(run_dir, name))
    _fsync(run_dir)
    return name


def prune(run_dir: str, keep: Optional[int], fs: Optional[pafs.FileSystem] = None) -> List[str]:
    """Delete the oldest committed checkpoints beyond `keep`; the names deleted."""
    if not keep:
        return []
    fs = local_fs(fs)
    doomed = committed(run_dir, fs)[:-keep]
    for name in doomed:
        fs.delete_dir(os.path.join(run_dir, name))
    return doomed


def read_file(path: str, fs: Optional[pafs.FileSystem] = None) -> bytes:
    with local_fs(fs).open_input_stream(path) as f:
        return f.read()


def read_markers(directory: str, fs: Optional[pafs.FileSystem] = None) -> List[Dict[str, Any]]:
    """The ftharness markers of a checkpoint directory (one per rank that reported it)."""
    fs = local_fs(fs)
    out = []
    try:
        infos = fs.get_file_info(pafs.FileSelector(directory, allow_not_found=True))
    except OSError:
        return out
    for info in sorted(infos, key=lambda i: i.base_name):
        if info.type == pafs.FileType.File and is_marker(info.base_name):
            try:
                out.append(json.loads(read_file(info.path, fs)))
            except (OSError, ValueError):
                continue
    return out
