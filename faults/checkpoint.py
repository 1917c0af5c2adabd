"""`corrupt_checkpoint`: damage a checkpoint, as bad disks and half-finished
uploads do, only inside the run's own storage.

`which`: `latest` / `oldest` registered checkpoint, `index N` (0-based in
registration order, negative from the end), or `in_flight`: the files a rank
has written locally and not yet reported (trigger on `checkpoint_written`, which
holds the writer until the damage is done).
`how`: `bitflip` (flip one byte in the middle of the largest file), `truncate`
(cut it to half), `delete_file`, `delete_dir`, or `snapshot` (truncate the run's
`checkpoint_manager_snapshot.json`, which a resumed fit() reads).
"""

from __future__ import annotations

import os
import shutil
from typing import Any, Dict, List

from faults.base import Fault, FaultContext, FaultSkipped
from harness.history import read_events
from harness.instrument import MARKER

SNAPSHOT = "checkpoint_manager_snapshot.json"


def registered_checkpoints(history_path: str) -> List[str]:
    return [e["path"] for e in read_events(history_path) if e.get("kind") == "checkpoint_registered"]


def largest_file(directory: str) -> str:
    files = [os.path.join(r, f) for r, _, fs in os.walk(directory) for f in fs if f != MARKER]
    if not files:
        raise FaultSkipped(f"{directory} holds no file to damage")
    return max(files, key=os.path.getsize)


def inside(path: str, root: str) -> bool:
    path, root = os.path.realpath(path), os.path.realpath(root)
    return os.path.commonpath([path, root]) == root


class CorruptCheckpoint(Fault):
    kind = "corrupt_checkpoint"

    def _target_dir(self, ctx: FaultContext) -> str:
        which = self.spec.get("which", "latest")
        if which == "in_flight":
            path = ctx.event.get("local_path")
            if not path or not os.path.isdir(path):
                raise FaultSkipped("in_flight needs a checkpoint_written trigger whose files still exist")
            return path
        paths = registered_checkpoints(ctx.history_path)
        if not paths:
            raise FaultSkipped("no checkpoint registered yet")
        if which == "latest":
            path = paths[-1]
        elif which == "oldest":
            path = paths[0]
        else:
            n = int(which.split()[1])
            if not -len(paths) <= n < len(paths):
                raise FaultSkipped(f"{which}: only {len(paths)} checkpoints registered")
            path = paths[n]
        if not inside(path, ctx.storage_dir):
            raise FaultSkipped(f"{path} is outside the run's storage {ctx.storage_dir}")
        return path

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        how = self.spec.get("how", "bitflip")
        if how == "snapshot":
            path = os.path.join(ctx.storage_dir, SNAPSHOT)
            if not os.path.isfile(path):
                raise FaultSkipped("the run has no checkpoint snapshot yet")
            return {"path": path, "how": how, **truncate(path)}
        directory = self._target_dir(ctx)
        if not os.path.exists(directory):
            raise FaultSkipped(f"{directory} is already gone (retention deleted it?)")
        if how == "delete_dir":
            shutil.rmtree(directory)
            return {"path": directory, "how": how, "checkpoint": os.path.basename(directory)}
        path = largest_file(directory)
        detail = {"bitflip": bitflip, "truncate": truncate, "delete_file": delete_file}[how](path)
        return {"path": path, "how": how, "checkpoint": os.path.basename(directory), **detail}


def bitflip(path: str) -> Dict[str, Any]:
    size = os.path.getsize(path)
    if size == 0:
        raise FaultSkipped(f"{path} is empty")
    offset = size // 2
    with open(path, "r+b") as f:
        f.seek(offset)
        byte = f.read(1)[0]
        f.seek(offset)
        f.write(bytes([byte ^ 0xFF]))
    return {"offset": offset, "size": size}


def truncate(path: str) -> Dict[str, Any]:
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size // 2)
    return {"size": size, "new_size": size // 2}


def delete_file(path: str) -> Dict[str, Any]:
    os.remove(path)
    return {}
