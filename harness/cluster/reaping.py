"""Teardown of what an embedded cluster started, even when this process dies first.

A part of the cluster handles: `_Reaper` runs the `ftharness.harness.cluster.reaper` child, which
holds a pipe to us and kills the cluster's processes (and removes its folders, namespaces and links)
if this process dies without closing it; `_wait_gone` lets Ray's workers end after their raylet;
`_remove_dir` removes a folder Ray may write into again as it exits.
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import sys
import time
from typing import List

from ftharness.harness.cluster.reaper import alive, kill_all, message as reaper_message


class _Reaper:
    """A child that kills our cluster's processes if this process dies first."""

    def __init__(self):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "ftharness.harness.cluster.reaper", str(os.getpid())],
            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True, text=True,
        )

    def watch(self, pids: List[int]) -> None:
        self._send(reaper_message(pids=[int(p) for p in pids]))

    def remove_dir_on_crash(self, path: str) -> None:
        self._send(reaper_message(dir=path))

    def remove_on_crash(self, kind: str, name: str) -> None:
        """A network namespace ("netns") or a link ("link") to delete if the harness dies."""
        self._send(reaper_message(**{kind: name}))

    def _send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line)
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def release(self) -> None:
        try:
            self.proc.stdin.write(reaper_message(done=True))
            self.proc.stdin.close()
        except (BrokenPipeError, ValueError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def _wait_gone(procs, timeout_s: float = 5.0) -> None:
    """Ray workers die after their raylet, on their own; wait, then SIGKILL stragglers,
    so none of them writes into the temp dir after it is removed."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and alive(procs):
        time.sleep(0.1)
    kill_all(procs)


_REMOVED_DIRS: List[str] = []


def _remove_dir(path: str) -> None:
    """rmtree, again if a Ray process that was still exiting wrote into it, and
    once more when this process exits (Ray's driver-side shutdown can recreate
    an empty session folder a moment later)."""
    for _ in range(4):
        shutil.rmtree(path, ignore_errors=True)
        time.sleep(0.25)
        if not os.path.exists(path):
            break
    if not _REMOVED_DIRS:
        atexit.register(lambda: [shutil.rmtree(d, ignore_errors=True) for d in _REMOVED_DIRS])
    _REMOVED_DIRS.append(path)
