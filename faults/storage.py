"""`storage_errors`: the checkpoint storage misbehaves.

Runs whose scenario has this fault get `RunConfig(storage_filesystem=...)` set
to a pyarrow filesystem (`ChaosFileSystemHandler`) over the real local one. It
consults a small control file in the storage root, so every process of the run
(controller and workers, on any node that sees the storage) switches behaviour
at the same moment. While the fault is active, operations of the chosen kinds
on paths matching `path_glob` fail with an I/O error at `error_rate` and/or
wait `latency_s` first; with `partial: true` a failing write leaves half its
bytes behind first (a torn file). Heal removes the control file.

Every error and delay it hands to Ray is appended to a hits file beside the
control file. The fault lands when at least one error (or, for a latency-only
fault, one delay) was actually returned to Ray; the injector records the first
one as it happens.
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import time
from typing import Any, Dict, List, Literal, Optional

import pyarrow as pa
import pyarrow.fs as pafs
from pydantic import Field

from faults.base import LANDED, PENDING, Fault, FaultContext, FaultSpecBase, FaultView, Landing

CONTROL_FILE = ".ftharness-storage-chaos.json"
HITS_FILE = ".ftharness-storage-chaos.hits"
POLL_S = 0.25


class ChaosFileSystemHandler(pafs.FileSystemHandler):
    """A LocalFileSystem that injects errors and latency per the control file."""

    def __init__(self, storage_root: str):
        self.root = storage_root
        self.fs = pafs.LocalFileSystem()
        self._cache: Optional[Dict[str, Any]] = None
        self._cache_t = 0.0

    def __reduce__(self):
        return (ChaosFileSystemHandler, (self.root,))

    # -- chaos
    def _control(self) -> Optional[Dict[str, Any]]:
        now = time.time()
        if now - self._cache_t > 0.1:
            try:
                with open(os.path.join(self.root, CONTROL_FILE)) as f:
                    self._cache = json.load(f)
            except (OSError, ValueError):
                self._cache = None
            self._cache_t = now
        return self._cache

    def _hit(self, op: str, path: str) -> bool:
        """Apply latency; True if this operation is to fail."""
        c = self._control()
        if not c or op not in c.get("ops", []) or path.endswith(CONTROL_FILE):
            return False
        if c.get("path_glob") and not fnmatch.fnmatch(path, c["path_glob"]):
            return False
        if c.get("latency_s"):
            time.sleep(float(c["latency_s"]))
        fail = random.random() < float(c.get("error_rate") or 0.0)
        if fail or c.get("latency_s"):
            self._log_hit(op, path, fail)
        return fail

    def _log_hit(self, op: str, path: str, error: bool) -> None:
        """One line per error or delay handed to Ray: the fault's landing evidence."""
        line = json.dumps({"t": time.time(), "op": op, "path": path[-200:], "error": error, "pid": os.getpid()})
        try:
            fd = os.open(os.path.join(self.root, HITS_FILE), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        except OSError:
            pass

    def _chaos(self, op: str, path: str) -> None:
        if self._hit(op, path):
            raise OSError(f"ftharness storage_errors: injected {op} error on {path}")

    def _open_for_write(self, path, open_real):
        if not self._hit("write", path):
            return open_real()
        if (self._control() or {}).get("partial"):
            return pa.PythonFile(_TornWriter(open_real(), path), mode="w")
        raise OSError(f"ftharness storage_errors: injected write error on {path}")

    # -- the FileSystemHandler interface, each op checked then delegated
    def get_type_name(self):
        return "ftharness-chaos"

    def normalize_path(self, path):
        return self.fs.normalize_path(path)

    def equals(self, other):
        return isinstance(other, ChaosFileSystemHandler) and other.root == self.root

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
        if self._hit("write", dest):
            if (self._control() or {}).get("partial"):
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


def chaos_filesystem(storage_root: str) -> pafs.PyFileSystem:
    return pafs.PyFileSystem(ChaosFileSystemHandler(storage_root))


def read_hits(path: str) -> Dict[str, Any]:
    """Errors and delays handed to Ray so far, from a hits file."""
    hits = []
    try:
        with open(path) as f:
            for line in f:
                try:
                    hits.append(json.loads(line))
                except ValueError:
                    continue
    except OSError:
        pass
    errors = [h for h in hits if h.get("error")]
    first = (errors or hits or [None])[0]
    return {"errors_returned": len(errors), "delays": len(hits) - len(errors), "first": first}


class StorageErrorsSpec(FaultSpecBase):
    """Operations `ops` (default: write) on paths matching `path_glob` fail at `error_rate`
    (default 1.0) and/or wait `latency_s` first, for `duration_s` (default: until the run ends);
    `partial: true` leaves a torn file behind a failing write."""

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
    Spec = StorageErrorsSpec
    budget = None  # Ray charges it by who failed: a worker's upload, or the controller's snapshot

    def control_path(self, ctx: FaultContext) -> str:
        return os.path.join(os.path.dirname(ctx.storage_dir), CONTROL_FILE)

    _on = False

    def hits_path(self, ctx: FaultContext) -> str:
        return os.path.join(os.path.dirname(ctx.storage_dir), HITS_FILE)

    def _watch(self, ctx: FaultContext) -> None:
        """Record the first error (or delay) handed to Ray, as it happens."""
        def poll() -> Dict[str, Any]:
            hits = read_hits(self.hits_path(ctx))
            if hits["errors_returned"] or (hits["delays"] and not self.spec.get("error_rate")):
                ctx.record(f"storage fault {self.index} reached Ray", hits)
            elif self._on:
                ctx.schedule(POLL_S, poll, "storage: watch for hits", kind="none")
            return {}

        ctx.schedule(POLL_S, poll, "storage: watch for hits", kind="none")

    def landing(self, view: FaultView) -> Landing:
        what = f"storage_errors on {view.hit.get('ops')} from seq {view.seq}"
        for e in view.actions + view.healed:
            d = e.get("detail") or {}
            if d.get("errors_returned") or (d.get("delays") and not self.spec.get("error_rate")):
                first = d.get("first") or {}
                return Landing(LANDED, f"{what}; {d.get('errors_returned')} error(s) and {d.get('delays')} "
                                       f"delay(s) returned to Ray, the first on {first.get('op')} of "
                                       f"{first.get('path')} (seq {e.get('seq')})")
        return Landing(PENDING, f"{what}; no operation of Ray's matched, no error was returned")

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        control = {"ops": self.spec.get("ops") or ["write"], "path_glob": self.spec.get("path_glob"),
                   "error_rate": self.spec.get("error_rate", 1.0), "latency_s": self.spec.get("latency_s", 0.0),
                   "partial": bool(self.spec.get("partial"))}
        path = self.control_path(ctx)
        os.makedirs(os.path.dirname(path), exist_ok=True)  # the run may not have written anything yet
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(control, f)
        os.replace(tmp, path)
        self._on = True
        self._watch(ctx)
        return {"path": path, **control}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        self._on = False
        try:
            os.remove(self.control_path(ctx))
        except FileNotFoundError:
            pass
        return {"how": "control file removed", **read_hits(self.hits_path(ctx))}
