"""`corrupt_checkpoint`: damage a checkpoint, as bad disks and half-finished
uploads do, only inside the run's own storage.

`which`: `latest` / `oldest` registered checkpoint, `index N` (0-based in
registration order, negative from the end), or `in_flight`: the files a rank
has written locally and not yet reported (trigger on `checkpoint_written`, which
holds the writer until the damage is done).
`how`: `bitflip` (flip one byte in the middle of the largest file), `truncate`
(cut it to half), `delete_file`, `delete_dir`, or `snapshot` (truncate the run's
`checkpoint_manager_snapshot.json`, which a resumed fit() reads).

`latest` and `oldest` choose among the registered checkpoints that still exist
when the fault fires (retention deletes old ones); with none left the fault is
skipped. It lands when the damage is read, on the checkpoint the scenario
named: `latest` must be the last one registered before the fault (retention
never deletes the latest), `oldest` and `index N` one registered before it.
Windows: the rest of the run for a checkpoint (any later restart may restore
it, which is the point); the next fit() only for the snapshot (a fit reads it
once, at its start); the writer's own attempt for in-flight files. Evidence:
a later `worker_start` restoring it; a resumed fit() whose controller refused
the damaged snapshot (`CheckpointManagerInitializationError`, or an error
naming the snapshot: Ray Train records no read of an intact one); for a deleted
folder, also a resumed fit() refused because it is gone (an error naming it, or
raised in Ray's check of the snapshot's folders); the writing rank's report (or
error) in the attempt recorded at the damage.

The storage is any pyarrow filesystem (local disk, a shared mount, S3): the
damage is done through it (an object is read, changed and written back), and
the evidence names the path on it, the filesystem, and the sha256 of the file
before and after. In-flight files are a worker's local disk.
"""

from __future__ import annotations

import hashlib
import os
import posixpath
import time
from typing import Any, Dict, List, Literal, Optional, Tuple

import pyarrow.fs as pafs
from pydantic import field_validator

from ftharness.faults.base import LANDED, MISSED, PENDING, Fault, FaultContext, FaultSpecBase, FaultView, Landing, _seq
from ftharness.errors import FaultSkipped
from ftharness.history.records import is_marker, read_events

SNAPSHOT = "checkpoint_manager_snapshot.json"
#: what a fit() that read a damaged snapshot records: Ray Train's CheckpointManager refuses it
SNAPSHOT_READ = ("CheckpointManagerInitializationError", SNAPSHOT)
#: Ray Train's check, as a resumed fit() loads the snapshot, that its checkpoint folders exist (2.51-2.60)
MISSING_CHECK = "_assert_checkpoints_exist"


REGISTRATION_WAIT_S = 10.0


def registered_checkpoints(history_path: str) -> List[str]:
    return [e["path"] for e in read_events(history_path) if e.get("kind") == "checkpoint_registered"]


def settled_registrations(history_path: str, wait_s: float = REGISTRATION_WAIT_S) -> List[str]:
    """Registered checkpoint paths once the last reported checkpoint is among them.

    The controller registers a report only when every rank has made it, a moment
    after the workers go on. A fault that fires in that moment and damages the
    "latest" registered checkpoint would hit one the restart no longer restores;
    so wait (bounded) until the last checkpoint any rank reported is registered.
    While a trigger's gate holds a rank, no newer report can complete."""
    deadline = time.time() + wait_s
    while True:
        events = read_events(history_path)
        registered = [e for e in events if e.get("kind") == "checkpoint_registered"]
        reported = [e.get("checkpoint") for e in events if e.get("kind") == "report" and e.get("checkpoint")]
        if not reported or reported[-1] in {e.get("checkpoint") for e in registered} or time.time() > deadline:
            return [e["path"] for e in registered]
        time.sleep(0.05)


def _local(fs: pafs.FileSystem) -> bool:
    return fs.type_name == "local"


def is_dir(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type == pafs.FileType.Directory


def is_file(fs: pafs.FileSystem, path: str) -> bool:
    return fs.get_file_info(path).type == pafs.FileType.File


def largest_file(directory: str, fs: pafs.FileSystem = None) -> str:
    fs = fs or pafs.LocalFileSystem()
    files = [i for i in fs.get_file_info(pafs.FileSelector(directory, recursive=True, allow_not_found=True))
             if i.type == pafs.FileType.File and not is_marker(i.base_name)]
    if not files:
        raise FaultSkipped(f"{directory} holds no file to damage")
    return max(files, key=lambda i: i.size).path


def inside(path: str, root: str, fs: pafs.FileSystem = None) -> bool:
    if fs is None or _local(fs):
        path, root = os.path.realpath(path), os.path.realpath(root)
        return os.path.commonpath([path, root]) == root
    path, root = posixpath.normpath("/" + path), posixpath.normpath("/" + root)
    return path == root or path.startswith(root.rstrip("/") + "/")


class CorruptCheckpointSpec(FaultSpecBase):
    """Damage a checkpoint in the run's own storage: `which` one, and `how`."""

    kind: Literal["corrupt_checkpoint"]
    which: str = "latest"
    how: Literal["bitflip", "truncate", "delete_file", "delete_dir", "snapshot"] = "bitflip"

    @field_validator("which")
    @classmethod
    def _which(cls, v: str) -> str:
        if v in ("latest", "oldest", "in_flight"):
            return v
        if v.startswith("index ") and v[6:].strip().lstrip("-").isdigit():
            return v
        raise ValueError(f"must be latest, oldest, in_flight or 'index N' (got {v!r})")


class CorruptCheckpoint(Fault):
    """Corrupts a retained checkpoint on storage (bit flip, truncation, deleted file or folder)."""

    kind = "corrupt_checkpoint"
    damages_checkpoint = True
    Spec = CorruptCheckpointSpec
    budget = None
    runtimes = ("ray_train", "torchrun")
    causes = None           # restored silently or refused: no failure of its own
    explore_args = {"which": ("latest", "oldest", "in_flight"),
                    "how": ("bitflip", "truncate", "delete_file", "delete_dir", "snapshot")}
    explore_rank = 6

    @classmethod
    def lands_after_restart(cls, spec: Any) -> bool:
        """A damaged checkpoint shows only when a restart restores it (a damaged snapshot: at once)."""
        return spec.how != "snapshot"
    #: `how` values a torchrun run cannot have, and why
    TORCHRUN_REFUSED_HOW = {
        "snapshot": "damages Ray Train's checkpoint_manager_snapshot.json, which the torchrun layout does not have",
        "delete_dir": "is never read under torchrun: the folder listing is the registry, so the restore falls "
                      "back to the checkpoint before",
    }

    @classmethod
    def runtime_problem(cls, spec, runtime: str, index: int) -> Optional[str]:
        if runtime == "torchrun" and spec.how in cls.TORCHRUN_REFUSED_HOW:
            return (f"faults[{index}].how: {spec.how} {cls.TORCHRUN_REFUSED_HOW[spec.how]}; under workload.runtime "
                    f"torchrun allowed: bitflip, truncate, delete_file")
        return None

    def landing(self, view: FaultView) -> Landing:
        hit = view.hit
        what = f"{hit.get('how')} of {hit.get('checkpoint') or hit.get('path')} at seq {view.seq}"
        if not hit:
            return Landing(MISSED, f"{what}, but nothing was recorded as hit (empty target_hit)")
        later = [e for e in view.events if _seq(e) > view.seq]
        if hit.get("how") == "snapshot":
            return self._snapshot_landing(view, what, later)
        if hit.get("in_flight"):
            aid = view.victim_attempt
            if aid is None or hit.get("rank") is None:
                return Landing(MISSED, f"{what}, but target_hit records no writer (rank and attempt_id)")
            rep = next((e for e in later if e.get("kind") in ("report", "worker_error")
                        and e.get("rank") == hit.get("rank") and e.get("attempt_id") == aid), None)
            if rep is None:
                return Landing(PENDING, f"{what}; rank {hit.get('rank')} has not reported the damaged files")
            how = (f"reported as {rep.get('checkpoint')}" if rep.get("kind") == "report"
                   else f"failed: {rep.get('error_type')}")
            return Landing(LANDED, f"{what}; rank {rep.get('rank')} {how} (seq {rep.get('seq')})")
        name = hit.get("checkpoint")
        if not name:
            return Landing(MISSED, f"{what}, but target_hit names no checkpoint")
        wrong = self._not_the_named_checkpoint(view, name)
        if wrong:
            return Landing(MISSED, f"{what}, but {wrong}")
        restores = [e for e in later if e.get("kind") == "worker_start" and e.get("restored_checkpoint") == name]
        if not restores:
            refused = _refused_at_resume(later, name) if hit.get("how") == "delete_dir" else None
            if refused is not None:
                return Landing(LANDED, f"{what}; {refused}")
            return Landing(PENDING, f"{what}; no restart restored it")
        r = restores[0]
        intact = {True: "files intact", False: "digest mismatch", None: "digest not checked"}.get(
            r.get("restored_intact"), "digest not checked")
        return Landing(LANDED, f"{what}; rank {r.get('rank')} restored it at seq {r.get('seq')} ({intact})")

    def _not_the_named_checkpoint(self, view: FaultView, name: str) -> Optional[str]:
        """Why `name` is not the registered checkpoint `which` names (None: it is)."""
        registered = [posixpath.basename(str(e.get("path") or e.get("checkpoint") or "").rstrip("/"))
                      for e in view.events if e.get("kind") == "checkpoint_registered" and _seq(e) < view.seq]
        which = self.spec.which
        if name not in registered:
            return f"{name} was not registered before the fault"
        if which == "latest" and registered[-1] != name:
            return f"{name} was not the latest registered checkpoint ({registered[-1]} was)"
        return None

    def _snapshot_landing(self, view: FaultView, what: str, later) -> Landing:
        fit = next((e for e in later if e.get("kind") == "run_start"), None)
        if fit is None:
            return Landing(PENDING, f"{what}; no later fit() read the snapshot")
        end = next((e for e in later if e.get("kind") == "run_end" and _seq(e) > _seq(fit)), None)
        if end is None:
            return Landing(PENDING, f"{what}; fit {fit.get('fit_index')} started and has not ended")
        text = f"{end.get('error_type') or ''} {end.get('error') or ''}"
        if any(mark in text for mark in SNAPSHOT_READ):
            return Landing(LANDED, f"{what}; fit {fit.get('fit_index')} read it and ended {end.get('outcome')} "
                                   f"({end.get('error_type')}: the damaged snapshot was refused)")
        return Landing(MISSED, f"{what}, but fit {fit.get('fit_index')} recorded no read of the damaged snapshot "
                               f"(it ended {end.get('outcome')}, {end.get('error_type') or 'no error'}; a read "
                               f"shows as {SNAPSHOT_READ[0]} or an error naming {SNAPSHOT})")

    def _target_dir(self, ctx: FaultContext) -> Tuple[pafs.FileSystem, str]:
        """(filesystem, checkpoint folder) the fault damages."""
        which = self.spec.which
        if which == "in_flight":
            path = ctx.event.get("local_path")
            if not path or not os.path.isdir(path):
                raise FaultSkipped("in_flight needs a checkpoint_written trigger whose files still exist")
            return pafs.LocalFileSystem(), path
        fs, run_dir = storage_of(ctx)
        registered = settled_registrations(ctx.history_path)
        # retention deletes old ones: keep those still there (one listing of the run's folder)
        there = {i.base_name for i in fs.get_file_info(pafs.FileSelector(run_dir, allow_not_found=True))
                 if i.type == pafs.FileType.Directory}
        paths = [p for p in registered if posixpath.basename(p.rstrip("/")) in there]
        if not paths:
            raise FaultSkipped("no registered checkpoint exists yet" if not registered else
                               f"none of the {len(registered)} registered checkpoints is still retained")
        if which == "latest":
            path = paths[-1]
        elif which == "oldest":
            path = paths[0]
        else:
            n = int(which.split()[1])
            if not -len(paths) <= n < len(paths):
                raise FaultSkipped(f"{which}: only {len(paths)} registered checkpoints are retained")
            path = paths[n]
        if not inside(path, run_dir, fs):
            raise FaultSkipped(f"{path} is outside the run's storage {run_dir}")
        return fs, path

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        how = self.spec.how
        if how == "snapshot":
            fs, run_dir = storage_of(ctx)
            path = posixpath.join(run_dir, SNAPSHOT)
            if not is_file(fs, path):
                raise FaultSkipped("the run has no checkpoint snapshot yet")
            return {"path": path, "how": how, "filesystem": fs.type_name, **truncate(path, fs)}
        fs, directory = self._target_dir(ctx)
        if not is_dir(fs, directory):
            raise FaultSkipped(f"{directory} is already gone (retention deleted it?)")
        where = {"checkpoint": posixpath.basename(directory.rstrip("/")), "filesystem": fs.type_name}
        if self.spec.which == "in_flight":
            where.update(in_flight=True, rank=ctx.event.get("rank"), step=ctx.event.get("step"),
                         attempt_id=ctx.event.get("attempt_id"))
        if how == "delete_dir":
            fs.delete_dir(directory)
            return {"path": directory, "how": how, **where}
        path = largest_file(directory, fs)
        detail = {"bitflip": bitflip, "truncate": truncate, "delete_file": delete_file}[how](path, fs)
        return {"path": path, "how": how, **where, **detail}


def _refused_at_resume(later: List[Dict[str, Any]], name: str) -> Optional[str]:
    """How a resumed fit() refused the run because the deleted folder `name` is gone (None: none did).

    From 2.54 the controller checks, as it loads the snapshot, that every checkpoint it names
    exists (`_assert_checkpoints_exist`), and its error names the missing one; evidence is that
    error naming `name`, or naming that check (2.54-2.55 fail inside it, before the name is put
    in the message)."""
    for fit in (e for e in later if e.get("kind") == "run_start"):
        end = next((e for e in later if e.get("kind") == "run_end" and _seq(e) > _seq(fit)), None)
        if end is None or end.get("outcome") != "failed":
            continue
        text = str(end.get("error") or "")
        if name in text or MISSING_CHECK in text:
            what = "naming the deleted folder" if name in text else f"in Ray's check of its folders ({MISSING_CHECK})"
            return (f"fit {fit.get('fit_index')} was refused at resume: it ended failed ({end.get('error_type')}) "
                    f"{what}, seq {end.get('seq')}")
    return None


def storage_of(ctx: FaultContext) -> Tuple[pafs.FileSystem, str]:
    """(filesystem, the run's folder on it); a storage URI that cannot be opened skips the fault."""
    try:
        return ctx.storage()
    except Exception as e:  # noqa: BLE001 - credentials, an unknown scheme, ...
        raise FaultSkipped(f"the run's storage {ctx.storage_dir} cannot be opened ({type(e).__name__}: {e})") from None


def _read(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


def _write(fs: pafs.FileSystem, path: str, data: bytes) -> None:
    with fs.open_output_stream(path) as f:
        f.write(data)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def bitflip(path: str, fs: pafs.FileSystem = None) -> Dict[str, Any]:
    """Flip every bit of the middle byte of `path` (read, change, write back: an object
    store has no in-place write)."""
    fs = fs or pafs.LocalFileSystem()
    data = bytearray(_read(fs, path))
    if not data:
        raise FaultSkipped(f"{path} is empty")
    before = _sha(data)
    offset = len(data) // 2
    data[offset] ^= 0xFF
    _write(fs, path, bytes(data))
    return {"offset": offset, "size": len(data), "sha256_before": before, "sha256_after": _sha(data)}


def truncate(path: str, fs: pafs.FileSystem = None) -> Dict[str, Any]:
    fs = fs or pafs.LocalFileSystem()
    data = _read(fs, path)
    cut = data[: len(data) // 2]
    _write(fs, path, cut)
    return {"size": len(data), "new_size": len(cut), "sha256_before": _sha(data), "sha256_after": _sha(cut)}


def delete_file(path: str, fs: pafs.FileSystem = None) -> Dict[str, Any]:
    fs = fs or pafs.LocalFileSystem()
    before = _sha(_read(fs, path))
    fs.delete_file(path)
    return {"sha256_before": before}
