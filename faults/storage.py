"""`storage_errors`: the checkpoint storage misbehaves.

Runs whose scenario has this fault get `RunConfig(storage_filesystem=...)` set
to a pyarrow filesystem (`ChaosFileSystemHandler`) over the real local one. It
consults a small control file in the storage root, so every process of the run
(controller and workers, on any node that sees the storage) switches behaviour
at the same moment. While the fault is active, operations of the chosen kinds
on paths matching `path_glob` fail with an I/O error at `error_rate` and/or
wait `latency_s` first. Heal removes the control file.
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import time
from typing import Any, Dict, Optional

import pyarrow.fs as pafs

from faults.base import Fault, FaultContext

CONTROL_FILE = ".ftharness-storage-chaos.json"


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

    def _chaos(self, op: str, path: str) -> None:
        c = self._control()
        if not c or op not in c.get("ops", []) or path.endswith(CONTROL_FILE):
            return
        if c.get("path_glob") and not fnmatch.fnmatch(path, c["path_glob"]):
            return
        if c.get("latency_s"):
            time.sleep(float(c["latency_s"]))
        if random.random() < float(c.get("error_rate") or 0.0):
            raise OSError(f"ftharness storage_errors: injected {op} error on {path}")

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
        self._chaos("write", dest)
        self.fs.copy_file(src, dest)

    def open_input_stream(self, path):
        self._chaos("read", path)
        return self.fs.open_input_stream(path)

    def open_input_file(self, path):
        self._chaos("read", path)
        return self.fs.open_input_file(path)

    def open_output_stream(self, path, metadata):
        self._chaos("write", path)
        return self.fs.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path, metadata):
        self._chaos("write", path)
        return self.fs.open_append_stream(path, metadata=metadata)


def chaos_filesystem(storage_root: str) -> pafs.PyFileSystem:
    return pafs.PyFileSystem(ChaosFileSystemHandler(storage_root))


class StorageErrors(Fault):
    kind = "storage_errors"

    def control_path(self, ctx: FaultContext) -> str:
        return os.path.join(os.path.dirname(ctx.storage_dir), CONTROL_FILE)

    def inject(self, ctx: FaultContext) -> Dict[str, Any]:
        control = {"ops": self.spec.get("ops") or ["write"], "path_glob": self.spec.get("path_glob"),
                   "error_rate": self.spec.get("error_rate", 1.0), "latency_s": self.spec.get("latency_s", 0.0)}
        path = self.control_path(ctx)
        os.makedirs(os.path.dirname(path), exist_ok=True)  # the run may not have written anything yet
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(control, f)
        os.replace(tmp, path)
        return {"path": path, **control}

    def heal(self, ctx: FaultContext) -> Optional[Dict[str, Any]]:
        try:
            os.remove(self.control_path(ctx))
        except FileNotFoundError:
            pass
        return {"how": "control file removed"}
