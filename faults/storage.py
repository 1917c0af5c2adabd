"""`storage_errors`: the checkpoint storage misbehaves.

Runs whose scenario has this fault get `RunConfig(storage_filesystem=...)` set
to a pyarrow filesystem (`ChaosFileSystemHandler`) over the run's real one (a
torchrun run's workers commit, list, read and prune their checkpoints through
the same filesystem: ftharness.harness.torchrun.storage):
local disk, a shared mount, or S3 (any pyarrow FileSystem, with the storage
root as a path on it). It consults a small control file in the storage root,
read through the real filesystem, so every process of the run (controller and
workers, on any node that sees the storage) switches behaviour at the same
moment. While the fault is active, operations of the chosen kinds on paths
matching `path_glob` fail with an I/O error at `error_rate` and/or wait
`latency_s` first; with `partial: true` a failing write leaves half its bytes
behind first (a torn file or object). Heal removes the control file.

Every error and delay a process hands to the job (Ray Train, or the torchrun worker) is counted in a small hits file
of its own, beside the control file (`.ftharness-storage-chaos.hits/<control
id>/<pid>-<token>.json`, rewritten on each hit: object stores cannot append).
The fault lands when at least one error (or, for a latency-only fault, one
delay) was actually returned to the job, counted under this injection's own
control id (`id` in target_hit, hits of other injections are apart), on an
operation the scenario named (`ops`); the injector records the first one as it
happens, and the heal the totals. Window: while the control file is in place,
which is when the chaos filesystem acts: from the injection (every operation
reads the control file, so the job's next one sees it) until `duration_s` after
the first error (or delay) returned to the job, or the run's end. An armed fault
waits for the job's next matching operation however long it takes; one armed
after the job's last checkpoint, which no save can follow, is said so at once.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import random
import secrets
import threading
import time
from typing import Any, Dict, List, Literal, Optional, Tuple

import pyarrow as pa
import pyarrow.fs as pafs
from pydantic import Field

from ftharness.faults.base import LANDED, MISSED, PENDING, Fault, FaultContext, FaultSpecBase, FaultView, Landing
from ftharness.history.columns import non_steps

CONTROL_FILE = ".ftharness-storage-chaos.json"
HITS_DIR = ".ftharness-storage-chaos.hits"
POLL_S = 0.25


def _join(root: str, *parts: str) -> str:
    return posixpath.join(root, *parts) if root else posixpath.join(*parts)


def write_atomic(fs: pafs.FileSystem, path: str, data: bytes, make_parent: bool = True) -> None:
    """Write `data` at `path` on `fs`, readers seeing the old or the new content, never a part
    (an object store's PUT already is; on disk, a temporary file renamed into place)."""
    parent = posixpath.dirname(path)
    if make_parent and parent:
        fs.create_dir(parent, recursive=True)
    if fs.type_name != "local":
        with fs.open_output_stream(path) as f:
            f.write(data)
        return
    tmp = f"{path}.{secrets.token_hex(4)}.tmp"
    with fs.open_output_stream(tmp) as f:
        f.write(data)
    fs.move(tmp, path)


def read_bytes(fs: pafs.FileSystem, path: str) -> bytes:
    with fs.open_input_stream(path) as f:
        return f.read()


class ChaosFileSystemHandler(pafs.FileSystemHandler):
    """A pyarrow filesystem (`inner`, local disk by default) that injects errors
    and latency per the control file under `storage_root` (a path on `inner`)."""

    def __init__(self, storage_root: str, inner: Optional[pafs.FileSystem] = None):
        self.root = storage_root
        self.fs = inner if inner is not None else pafs.LocalFileSystem()
        self.token = secrets.token_hex(4)      # this instance's hits file (one per process and copy)
        self._counts: Dict[str, Dict[str, Any]] = {}
        self._made: set = set()               # hits folders this instance created
        self._lock = threading.Lock()

    def __reduce__(self):
        return (ChaosFileSystemHandler, (self.root, self.fs))

    # -- chaos
    def _control(self) -> Optional[Dict[str, Any]]:
        """The control file as it is now, read for every operation: the first operation after an
        injection sees it. (A 0.1 s cache outlived a whole 10-step torchrun job, so a fault armed at
        its trigger's gate let the job's next writes through and landed only by timing.)"""
        try:
            control = json.loads(read_bytes(self.fs, _join(self.root, CONTROL_FILE)))
        except Exception:  # noqa: BLE001 - no control file (or none readable): no chaos
            return None
        return control if isinstance(control, dict) else None

    def _own(self, path: str) -> bool:
        return path.endswith(CONTROL_FILE) or HITS_DIR in path

    def _hit(self, op: str, path: str) -> Optional[Dict[str, Any]]:
        """Apply latency; the control in force if this operation is to fail, else None."""
        if self._own(path):
            return None
        c = self._control()
        if not c or op not in c.get("ops", []):
            return None
        if c.get("path_glob") and not fnmatch.fnmatch(path, c["path_glob"]):
            return None
        if c.get("latency_s"):
            time.sleep(float(c["latency_s"]))
        fail = random.random() < float(c.get("error_rate") or 0.0)
        if fail or c.get("latency_s"):
            self._log_hit(str(c.get("id") or "0"), op, path, fail)
        return c if fail else None

    def _log_hit(self, control_id: str, op: str, path: str, error: bool) -> None:
        """Count an error or delay handed to Ray in this instance's hits file: the fault's landing evidence."""
        hit = {"t": time.time(), "op": op, "path": path[-200:], "error": error, "pid": os.getpid()}
        with self._lock:
            counts = self._counts.setdefault(control_id, {"errors": 0, "delays": 0, "first": None,
                                                          "first_error": None, "pid": os.getpid()})
            counts["errors" if error else "delays"] += 1
            counts["first"] = counts["first"] or hit
            if error:
                counts["first_error"] = counts["first_error"] or hit
            folder = _join(self.root, HITS_DIR, control_id)
            try:
                if folder not in self._made:
                    self.fs.create_dir(folder, recursive=True)
                    self._made.add(folder)
                write_atomic(self.fs, _join(folder, f"{os.getpid()}-{self.token}.json"), json.dumps(counts).encode(),
                             make_parent=False)
            except Exception:  # noqa: BLE001 - the evidence is lost, the fault still acts
                pass

    def _chaos(self, op: str, path: str) -> None:
        if self._hit(op, path):
            raise OSError(f"ftharness storage_errors: injected {op} error on {path}")

    def _open_for_write(self, path, open_real):
        c = self._hit("write", path)
        if c is None:
            return open_real()
        if c.get("partial"):
            return pa.PythonFile(_TornWriter(open_real(), path), mode="w")
        raise OSError(f"ftharness storage_errors: injected write error on {path}")

    # -- the FileSystemHandler interface, each op checked then delegated
    def get_type_name(self):
        return f"ftharness-chaos+{self.fs.type_name}"

    def normalize_path(self, path):
        return self.fs.normalize_path(path)

    def equals(self, other):
        other = getattr(other, "handler", other)   # pyarrow hands over the other PyFileSystem
        return (isinstance(other, ChaosFileSystemHandler) and other.root == self.root
                and other.fs.equals(self.fs))

    def get_file_info(self, paths):
        for p in paths:
            self._chaos("read", p)
        return self.fs.get_file_info(paths)

    def get_file_info_selector(self, selector):
        self._chaos("list", selector.base_dir)
        return self.fs.get_file_info(selector)

    def create_dir(self, path, recursive):
        self._chaos("mkdir", path)
        self.fs.create_dir(path, recursive=recursive)

    def delete_dir(self, path):
        self._chaos("delete", path)
        self.fs.delete_dir(path)

    def delete_dir_contents(self, path, missing_dir_ok=False):
        self._chaos("delete", path)
        self.fs.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self):
        raise OSError("ftharness: refusing to delete the root")

    def delete_file(self, path):
        self._chaos("delete", path)
        self.fs.delete_file(path)

    def move(self, src, dest):
        self._chaos("move", src)
        self.fs.move(src, dest)

    def copy_file(self, src, dest):
        c = self._hit("write", dest)
        if c is not None:
            if c.get("partial"):
                with self.fs.open_input_stream(src) as f:
                    data = f.read()
                with self.fs.open_output_stream(dest) as out:
                    out.write(data[: len(data) // 2])
            raise OSError(f"ftharness storage_errors: injected write error on {dest}")
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path):
        self._chaos("read", path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path):
        self._chaos("read", path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path, metadata):
        return self._open_for_write(path, lambda: self.fs.open_output_stream(path, metadata=metadata))

    def open_append_stream(self, path, metadata):
        return self._open_for_write(path, lambda: self.fs.open_append_stream(path, metadata=metadata))


class _TornWriter:
    """A write cut off half-way: the first half of the first chunk lands, then
    the write fails, leaving a torn file behind as a crashed upload does."""

    def __init__(self, stream, path: str):
        self.stream, self.path, self.closed = stream, path, False

    def write(self, data) -> int:
        self.stream.write(bytes(data)[: max(1, len(data) // 2)])
        self.stream.close()
        raise OSError(f"ftharness storage_errors: injected partial write on {self.path}")

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True
        if not self.stream.closed:
            self.stream.close()


def chaos_filesystem(storage_root: str, inner: Optional[pafs.FileSystem] = None) -> pafs.PyFileSystem:
    """The run's storage filesystem `inner` (local disk by default), with chaos per the
    control file under `storage_root` (a path on `inner`: the storage_path Ray Train gets)."""
    return pafs.PyFileSystem(ChaosFileSystemHandler(storage_root, inner))


def read_hits(fs: pafs.FileSystem, storage_root: str, control_id: str) -> Dict[str, Any]:
    """Errors and delays handed to Ray so far under one control (one injection), summed
    over the hits files of every process."""
    errors = delays = 0
    firsts: List[Dict[str, Any]] = []
    first_errors: List[Dict[str, Any]] = []
    try:
        infos = fs.get_file_info(pafs.FileSelector(_join(storage_root, HITS_DIR, control_id), allow_not_found=True))
    except Exception:  # noqa: BLE001 - storage unreachable: nothing is known to have been hit
        infos = []
    for info in infos:
        if info.type != pafs.FileType.File or not info.path.endswith(".json"):
            continue
        try:
            c = json.loads(read_bytes(fs, info.path))
        except Exception:  # noqa: BLE001 - a file being replaced, or gone
            continue
        if not isinstance(c, dict):
            continue
        errors += int(c.get("errors") or 0)
        delays += int(c.get("delays") or 0)
        firsts += [c["first"]] if isinstance(c.get("first"), dict) else []
        first_errors += [c["first_error"]] if isinstance(c.get("first_error"), dict) else []
    first = min(first_errors or firsts, key=lambda h: h.get("t") or 0, default=None)
    return {"errors_returned": errors, "delays": delays, "first": first}


def _or(value: Any, default: Any) -> Any:
    """An argument's value, or the kind's default where the spec leaves it out (None)."""
    return default if value is None else value


class StorageErrorsSpec(FaultSpecBase):
    """Operations `ops` (default: write) on paths matching `path_glob` fail at `error_rate`
    (default 1.0) and/or wait `latency_s` first, for `duration_s` from the first one returned to
    the job (default: until the run ends); `partial: true` leaves a torn file behind a failing write."""

    kind: Literal["storage_errors"]
    duration_s: Optional[float] = Field(None, gt=0)
    ops: Optional[List[Literal["write", "read", "delete", "list", "mkdir", "move"]]] = None
    path_glob: Optional[str] = None
    error_rate: Optional[float] = Field(None, ge=0, le=1)
    latency_s: Optional[float] = Field(None, ge=0)
    partial: Optional[bool] = None


class StorageErrors(Fault):
    """Makes checkpoint storage operations fail or stall (error rate, latency, partial writes)."""

    kind = "storage_errors"
    echoes = classmethod(lambda cls, spec: {k: getattr(spec, k) for k in ("path_glob", "error_rate", "latency_s", "partial")
                                            if getattr(spec, k) is not None})
    Spec = StorageErrorsSpec
    runtimes = ("ray_train", "torchrun")
    wraps_storage = True
    budget = None  # Ray charges it by who failed: a worker's upload, or the controller's snapshot
    causes = "worker_group"   # a worker's upload may fail; a healthy system retries it
    causes_surely = False
    explore_args = {"path_glob": (None, "*checkpoint_manager_snapshot.json*", "*/checkpoint_*/*"),
                    "ops": (None, ["read"], ["write", "move"], ["list"]),
                    "duration_s": (3.0, 10.0), "partial": (None, True)}
    explore_rank = 7

    @classmethod
    def lands_after_restart(cls, spec: Any) -> bool:
        """Read errors alone show only when a restart reads the checkpoint storage."""
        return spec.ops == ["read"]

    #: the window opens at the job's first matching operation, not at the injection (`_poll`)
    heals_after_duration = False

    _on = False
    _control_id = "0"
    _reached = False
    _close_at: Optional[float] = None

    @staticmethod
    def storage_of(ctx: FaultContext):
        """(filesystem, root): the run's storage filesystem and the storage root on it,
        where the control and hits files live (the folder above the run's own)."""
        fs, run_dir = ctx.storage()
        return fs, posixpath.dirname(run_dir.rstrip("/"))

    def control_path(self, ctx: FaultContext) -> str:
        return _join(self.storage_of(ctx)[1], CONTROL_FILE)

    def hits(self, ctx: FaultContext) -> Dict[str, Any]:
        fs, root = self.storage_of(ctx)
        return read_hits(fs, root, self._control_id)

    def _reached_job(self, hits: Dict[str, Any]) -> bool:
        """An error (or, for a latency-only fault, a delay) was handed to the job."""
        return bool(hits.get("errors_returned") or (hits.get("delays") and not self.spec.error_rate))

    def _poll(self, ctx: FaultContext) -> Dict[str, Any]:
        """Record the first error (or delay) handed to the job as it happens, and close the window
        `duration_s` after it: until then the fault stays armed, waiting for the job's next matching
        operation (a window counted from the injection closed, on a fast job, before any came)."""
        if not self._on:
            return {}
        hits = self.hits(ctx)
        if not self._reached and self._reached_job(hits):
            self._reached = True
            ctx.record(f"storage fault {self.index} reached the job", hits)
            if self.duration_s:
                self._close_at = time.time() + float(self.duration_s)
        if self._close_at is not None and time.time() >= self._close_at:
            ctx.schedule(0.0, lambda: self._disarm(ctx, f" {self.duration_s} s after the job's first "
                                                         f"matching operation"), f"heal fault {self.index}", kind="fault_healed")
        elif not self._reached or self._close_at is not None:
            ctx.schedule(POLL_S, lambda: self._poll(ctx), "storage: watch for hits", kind="none")
        return {}

    def _disarm(self, ctx: FaultContext, when: str) -> Dict[str, Any]:
        """Remove the control file; what the job was handed, for the heal's record (`when`: text)."""
        if not self._on:
            return {"how": "already healed"}
        self._on = False
        fs, _ = self.storage_of(ctx)
        try:
            fs.delete_file(self.control_path(ctx))
        except FileNotFoundError:
            pass
        return {"how": f"control file removed{when}", **self.hits(ctx)}

    def landing(self, view: FaultView) -> Landing:
        what = f"storage_errors on {view.hit.get('ops')} from seq {view.seq}"
        if not view.hit:
            return Landing(MISSED, f"{what}, but nothing was recorded as hit (empty target_hit)")
        ops = view.hit.get("ops") or []
        wrong = []
        for e in view.actions + view.healed:
            d = e.get("detail") or {}
            if (e.get("seq") or 0) <= view.seq or not (d.get("errors_returned") or
                                                         (d.get("delays") and not self.spec.error_rate)):
                continue
            first = d.get("first") or {}
            if first.get("op") not in ops:
                wrong.append(f"the first hit counted (seq {e.get('seq')}) was on {first.get('op')}, not one of {ops}")
                continue
            return Landing(LANDED, f"{what}; {d.get('errors_returned')} error(s) and {d.get('delays')} "
                                   f"delay(s) returned to the job, the first on {first.get('op')} of "
                                   f"{first.get('path')} (seq {e.get('seq')})")
        if wrong:
            return Landing(MISSED, f"{what}, but {wrong[0]}")
        why, never = after_arming(view, ops)
        return Landing(MISSED if never else PENDING,
                       f"{what}; no operation of the job's matched, no error was returned{why}")

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        self._control_id = f"{self.index}-{secrets.token_hex(3)}"   # this injection's hits, apart from others'
        control = {"id": self._control_id, "ops": self.spec.ops or ["write"],
                   "path_glob": self.spec.path_glob, "error_rate": _or(self.spec.error_rate, 1.0),
                   "latency_s": _or(self.spec.latency_s, 0.0), "partial": bool(self.spec.partial)}
        fs, _ = self.storage_of(ctx)
        path = self.control_path(ctx)
        write_atomic(fs, path, json.dumps(control).encode())  # the run may not have written anything yet
        self._on, self._reached, self._close_at = True, False, None
        ctx.schedule(POLL_S, lambda: self._poll(ctx), "storage: watch for hits", kind="none")
        return {"path": path, "filesystem": fs.type_name, **control}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        """The run ended (or a rollback came) with the window open; None if it had closed."""
        if not self._on:
            return None
        return self._disarm(ctx, "")


#: the operations only a checkpoint's save makes (its upload or commit)
SAVE_OPS = frozenset({"write", "mkdir", "move"})


def after_arming(view: FaultView, ops: List[str]) -> Tuple[str, bool]:
    """Why no operation matched, from the history (pure): (", because ...", whether none can come).
    A fault on the operations of a save is hopeless once armed after the job's last checkpoint
    (the final step's, registered before it): said at once, so the landing hold need not wait."""
    later, last, steps = [], None, None
    for e in non_steps(view.events):
        kind, seq = e.get("kind"), e.get("seq") if isinstance(e.get("seq"), int) else 0
        if kind == "run_start" and seq < view.seq:
            steps = (e.get("workload") or {}).get("steps") if isinstance(e.get("workload"), dict) else None
        elif kind == "checkpoint_registered":
            if seq > view.seq:
                later.append(e)
            else:
                last = e
    if not ops or not set(ops) <= SAVE_OPS:
        return "", False
    if later:
        return (f", though the job registered {len(later)} checkpoint(s) after it was armed (the first at step "
                f"{later[0].get('step')}, seq {later[0].get('seq')}): none of their operations met its ops, "
                f"path_glob and error_rate"), False
    if last is not None and steps is not None and last.get("step") == steps:
        return (f": it was armed after the job registered its last checkpoint (step {steps}, seq "
                f"{last.get('seq')}), so no checkpoint write can follow its trigger"), True
    return ": the job registered no checkpoint after it was armed", False
