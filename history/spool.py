"""A node-local journal for events the history actor could not take.

A worker cut off from the head (a network partition) keeps running: that is
the split-brain case `no_zombie_writes` judges, and exactly then its events
cannot reach the history actor. `Emitter` writes such events here, on the
emitting process's own disk, one JSON line each; the runner hands them to the
history when the run ends (`HistoryBook.merge_spooled`), marked `spooled`,
with their own clock `t`, and removes the folder. An event that did reach the
actor as well is dropped by its (`emitter`, `eseq`) at the merge.

The runner makes the folder in this host's temp dir before the run and removes
it after; an emitter writes only while it exists, so a zombie that outlives the
run leaves nothing behind. On the embedded cluster (one filesystem) that covers
every node; on a multi-host cluster only the harness's own node, and the other
nodes' lost events stay visible as `eseq` gaps.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import tempfile
from typing import Any, Dict, List


def spool_dir(run_name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"ftharness-spool-{run_name}")


def create(run_name: str) -> str:
    os.makedirs(spool_dir(run_name), exist_ok=True)
    return spool_dir(run_name)


def write(run_name: str, emitter_id: str, event: Dict[str, Any]) -> bool:
    """Append one event to this emitter's journal; False if there is none (the run is
    over, or this node is not the harness's) or writing failed."""
    if not os.path.isdir(spool_dir(run_name)):
        return False
    try:
        with open(os.path.join(spool_dir(run_name), f"{emitter_id}.jsonl"), "a") as f:
            f.write(json.dumps(event, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        return False


def collect(run_name: str) -> List[Dict[str, Any]]:
    """Every spooled event of the run, in each emitter's order (a torn last line is skipped)."""
    out: List[Dict[str, Any]] = []
    for path in sorted(glob.glob(os.path.join(spool_dir(run_name), "*.jsonl"))):
        with open(path) as f:
            for line in f:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    continue
    return out


def remove(run_name: str) -> None:
    shutil.rmtree(spool_dir(run_name), ignore_errors=True)
