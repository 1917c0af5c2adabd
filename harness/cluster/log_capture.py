"""A quiet terminal while a cluster is open, and its logs kept, bounded, in the results folder.

A part of the cluster handles (harness/cluster/handles.py re-exports the names others import): Ray's
own driver-side lines are taken out of stdout and stderr into a driver log (shown too with
`--verbose`), and `LogCapture.copy_to` keeps that log and Ray's session logs, cut to their last
bytes, under RESULTS/logs where `keep_logs` said.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from typing import Any, Dict, List, Optional


# ------------------------------------------------------------ quiet terminal, kept logs
#: a line Ray's driver prints on its own behalf: "(raylet) A worker died ...",
#: "(pid=123) ...", "(RayTrainWorker pid=123, ip=...) ..." (with or without colour)
RAY_LINE = re.compile(r"^(\x1b\[[0-9;]*m)*\((raylet|autoscaler|pid=\d+|[\w.:-]+ pid=\d+)[^)]*\)")
#: what `keep_logs` copies into a results folder: each file's last bytes, and the whole at most
LOG_FILE_BYTES, LOG_TOTAL_BYTES = 2 * 1024 * 1024, 32 * 1024 * 1024
LOGS_DIR, DRIVER_LOG = "logs", "ftharness-driver.log"
_LOG_DEST: Dict[str, Any] = {"dir": None}


def verbose() -> bool:
    """`--verbose` (FTHARNESS_VERBOSE=1): Ray's and the workers' logs live on the terminal too."""
    return os.environ.get("FTHARNESS_VERBOSE", "") not in ("", "0")


def keep_logs(results_dir: Optional[str]) -> None:
    """Where the next cluster's logs go when it is torn down (RESULTS/logs);
    None: nowhere. The CLI sets it before a run or a suite starts."""
    _LOG_DEST["dir"] = results_dir


class _Filtered:
    """sys.stdout or sys.stderr with Ray's own lines taken out into a log file
    (and, with --verbose, still shown): ftharness's progress and verdict stay
    alone on the terminal.

    A message of Ray's may span lines: a node marked dead comes with the tail of its
    raylet.out, only the first line prefixed "(raylet)". Ray prints each message in one
    write, so once a write shows a Ray line, the rest of that write is Ray's too (a real
    exploration's terminal held 400 lines of a dead raylet's state dumps)."""

    def __init__(self, stream, sink, lock):
        self._stream, self._sink, self._lock, self._partial = stream, sink, lock, ""
        self._partial_ray = False    # the unfinished line belongs to a Ray message
        self._last_ray = False       # the last line written was Ray's

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        ray = False
        for i, line in enumerate(lines):
            # a blank line right after Ray's message is its end (print's own "\n", written apart): not
            # a blank line on the terminal after every node Ray saw die
            tail = i == 0 and not line and self._last_ray
            ray = ray or bool(RAY_LINE.match(line))
            self._emit(line, ray or tail or (i == 0 and self._partial_ray))
        if lines:
            self._partial_ray = ray and bool(self._partial)
        return len(text)

    def _emit(self, line: str, ray: bool) -> None:
        self._last_ray = ray
        if ray:
            with self._lock:
                self._sink.write(line + "\n")
                self._sink.flush()
            if not verbose():
                return
        self._stream.write(line + "\n")

    def flush(self) -> None:
        if self._partial and not (self._partial_ray or RAY_LINE.match(self._partial)):
            self._stream.write(self._partial)
            self._partial = ""
        self._stream.flush()

    def __getattr__(self, name):
        return getattr(self._stream, name)


class LogCapture:
    """While a cluster is open: Ray's driver-side lines (error messages Ray
    prints for workers it saw die, its Python logger's warnings) go to
    DRIVER_LOG in the cluster's temp dir instead of the terminal; `copy_to`
    then keeps them and Ray's own log files, bounded, in a results folder."""

    def __init__(self, temp_dir: str):
        self.temp_dir = temp_dir
        self.path = os.path.join(temp_dir, DRIVER_LOG)
        self._sink = open(self.path, "a", buffering=1)
        self._lock = threading.Lock()
        self._streams = (sys.stdout, sys.stderr)
        sys.stdout = _Filtered(sys.stdout, self._sink, self._lock)
        sys.stderr = _Filtered(sys.stderr, self._sink, self._lock)
        self._logger = logging.getLogger("ray")
        self._handlers = list(self._logger.handlers)
        self._file_handler = logging.StreamHandler(self._sink)
        self._file_handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        if not verbose():
            for h in self._handlers:
                self._logger.removeHandler(h)
        self._logger.addHandler(self._file_handler)

    def close(self) -> None:
        for stream in (sys.stdout, sys.stderr):
            if isinstance(stream, _Filtered):
                stream.flush()
        if isinstance(sys.stdout, _Filtered):
            sys.stdout = self._streams[0]
        if isinstance(sys.stderr, _Filtered):
            sys.stderr = self._streams[1]
        self._logger.removeHandler(self._file_handler)
        for h in self._handlers:
            if h not in self._logger.handlers:
                self._logger.addHandler(h)
        self._sink.close()

    def copy_to(self, results_dir: str) -> List[str]:
        """RESULTS/logs/: the driver log and every file of Ray's session logs
        folders (each node's), each cut to its last LOG_FILE_BYTES, in all at
        most LOG_TOTAL_BYTES (the newest first); returns the files written."""
        found = [self.path] if os.path.isfile(self.path) else []
        for root, _, files in os.walk(self.temp_dir):
            if os.path.basename(root) == "logs" and "session_" in root and "session_latest" not in root:
                found += [os.path.join(root, f) for f in files]
        found = [f for f in found if os.path.isfile(f)]
        found.sort(key=lambda f: (f != self.path, -os.path.getmtime(f)))
        dest, left, written = os.path.join(results_dir, LOGS_DIR), LOG_TOTAL_BYTES, []
        for src in found:
            if left <= 0:
                break
            rel = os.path.relpath(src, self.temp_dir)
            rel = rel.replace(os.sep + "logs" + os.sep, os.sep).replace("session_", "")
            target = os.path.join(dest, rel if src != self.path else DRIVER_LOG)
            n = 1
            while src == self.path and os.path.exists(target):   # a suite's next cluster: its own driver log
                n += 1
                target = os.path.join(dest, DRIVER_LOG.replace(".log", f"-{n}.log"))
            try:
                size = os.path.getsize(src)
                take = min(size, LOG_FILE_BYTES, left)
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(src, "rb") as fin, open(target, "wb") as fout:
                    if take < size:
                        fin.seek(size - take)
                        fout.write(f"[ftharness: the last {take} of {size} bytes]\n".encode())
                    fout.write(fin.read(take))
            except OSError:
                continue
            left -= take
            written.append(target)
        return written


def _end_capture(capture: Optional[LogCapture]) -> None:
    """Keep the logs where keep_logs() said, then stop capturing; never raises."""
    if capture is None:
        return
    try:
        if _LOG_DEST["dir"]:
            capture.copy_to(_LOG_DEST["dir"])
    except OSError:
        pass
    finally:
        capture.close()


class NativeStderr:
    """For a `with` block: what Ray's C++ core writes to file descriptor 2 (its gcs_client
    warnings while ray.init connects; sys.stderr's filter never sees them) goes to the
    capture's driver log instead of the terminal. `text` is the block's own part of it
    (at most MAX_NATIVE_BYTES), read back for the one line a failed connection gets."""

    MAX_NATIVE_BYTES = 64 * 1024

    def __init__(self, capture: Optional[LogCapture]):
        self.capture, self.text, self._saved, self._start = capture, "", None, 0

    def __enter__(self) -> "NativeStderr":
        if self.capture is None or verbose():
            return self
        sys.stderr.flush()
        self.capture._sink.flush()
        self._start = os.fstat(self.capture._sink.fileno()).st_size
        self._saved = os.dup(2)
        os.dup2(self.capture._sink.fileno(), 2)
        return self

    def __exit__(self, *exc) -> None:
        if self._saved is None:
            return
        try:
            sys.stderr.flush()
        finally:
            os.dup2(self._saved, 2)
            os.close(self._saved)
            self._saved = None
        self.text = self._read_back()

    def _read_back(self) -> str:
        """The block's part of the driver log this capture writes itself, bounded."""
        with open(self.capture.path, "rb") as f:
            f.seek(self._start)
            return f.read(self.MAX_NATIVE_BYTES).decode("utf-8", "replace")
