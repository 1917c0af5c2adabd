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

import json
import os
import shutil
import stat
import tempfile
from typing import Any, Dict, List

from ftharness.errors import ScenarioError

#: a spooled line longer than this is not one of ours (an event is a few hundred bytes)
MAX_LINE = 1 << 20
#: most events taken from one run's spool
MAX_EVENTS = 1_000_000


class SpoolError(ScenarioError):
    """The spool folder exists and is not one this user made privately: refused, never reused."""


def spool_dir(run_name: str) -> str:
    return os.path.join(tempfile.gettempdir(), f"ftharness-spool-{run_name}")


def _ours(path: str) -> bool:
    """A real folder (not a symlink) of this user, private (mode 0700)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and stat.S_IMODE(st.st_mode) == 0o700


def create(run_name: str) -> str:
    """Make the run's spool folder fresh, mode 0700. A leftover of this user's own crashed run
    (a private folder of ours) is emptied first; anything else there (another user's folder, a
    symlink, a file, a folder others can write) is refused: a local user could otherwise feed
    events into the run's history."""
    path = spool_dir(run_name)
    if os.path.lexists(path):
        if not _ours(path):
            raise SpoolError(f"{path}: exists and is not a private folder of this user; remove it or "
                             f"check who made it")
        shutil.rmtree(path)
    os.mkdir(path, 0o700)
    os.chmod(path, 0o700)   # whatever the umask
    return path


def write(run_name: str, emitter_id: str, event: Dict[str, Any]) -> bool:
    """Append one event to this emitter's journal; False if there is none (the run is
    over, or this node is not the harness's) or writing failed."""
    folder = spool_dir(run_name)
    if not _ours(folder) or os.sep in emitter_id or emitter_id in (".", ".."):
        return False
    try:
        fd = os.open(os.path.join(folder, f"{emitter_id}.jsonl"),
                     os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "a") as f:
            f.write(json.dumps(event, default=str) + "\n")
            f.flush()
            os.fsync(f.fileno())
        return True
    except OSError:
        return False


def collect(run_name: str) -> List[Dict[str, Any]]:
    """Every spooled event of the run, in each emitter's order (a torn or overlong line is
    skipped; only regular files of a private folder of ours are read)."""
    out: List[Dict[str, Any]] = []
    folder = spool_dir(run_name)
    if not _ours(folder):
        return out
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not name.endswith(".jsonl"):
            continue
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                continue
            while len(out) < MAX_EVENTS:
                line = f.readline(MAX_LINE + 1)
                if not line:
                    break
                if len(line) > MAX_LINE:
                    while line and not line.endswith(b"\n"):   # skip the rest of an overlong line
                        line = f.readline(MAX_LINE)
                    continue
                try:
                    event = json.loads(line)
                except (ValueError, RecursionError):
                    continue
                if isinstance(event, dict):
                    out.append(event)
    return out


def remove(run_name: str) -> None:
    path = spool_dir(run_name)
    if _ours(path):
        shutil.rmtree(path, ignore_errors=True)
