"""Kills an embedded cluster's processes when the harness process dies.

Started by `EmbeddedCluster` in its own session, it reads messages from stdin,
one JSON object a line (`message()` writes them: a name with a newline or a
space cannot split or forge one): `{"pids": [...]}` per node, `{"dir": PATH}`,
`{"netns": NAME}` and `{"link": NAME}` for what to remove, `{"done": true}`
when the harness shut the cluster down itself. A folder is removed only if it
is one ftharness makes in the temp dir (`fth-*`, `ftharness-spool-*`), a
malformed line is ignored. End of
input without "done" means the harness died (SIGKILL, OOM, crash): every
process received, and every descendant of them (Ray workers and agents are
raylet children), gets SIGKILL. Descendants are sampled every half second while
the harness lives, because once a raylet dies its children are re-parented and
can no longer be found by walking the tree. Each process is remembered with its
start time, so a recycled pid is never killed.
"""

from __future__ import annotations

import json
import os
import select
import tempfile
import shutil
import signal
import sys
import time
from typing import Dict, List, Optional, Set, Tuple

from ftharness.errors import STOP_REQUESTED

Proc = Tuple[int, str]  # (pid, start time in clock ticks)


def _stat(pid: int) -> Optional[List[str]]:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _children_map() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = _stat(int(entry))
            if st:
                kids.setdefault(int(st[1]), []).append(int(entry))
    return kids


def descendants(roots: Set[int]) -> Set[int]:
    """The roots and all their living descendants."""
    kids = _children_map()
    seen: Set[int] = set()
    stack = list(roots)
    while stack:
        p = stack.pop()
        if p not in seen:
            seen.add(p)
            stack.extend(kids.get(p, []))
    return seen


def identify(pids: Set[int]) -> Set[Proc]:
    out = set()
    for p in pids:
        st = _stat(p)
        if st:
            out.add((p, st[19]))
    return out


def alive(procs: Set[Proc]) -> Set[Proc]:
    """Those still running (same pid and start time, not a zombie)."""
    out = set()
    for pid, start in procs:
        st = _stat(pid)
        if st and st[19] == start and st[0] != "Z":
            out.add((pid, start))
    return out


def kill_all(procs: Set[Proc]) -> None:
    for pid, start in procs:
        st = _stat(pid)
        if pid == os.getpid() or st is None or st[19] != start:
            continue
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


#: the folders a reaper may remove: ftharness's own, directly in the temp dir
OWN_DIR_PREFIXES = ("fth-", "ftharness-spool-")
MAX_LINE = 1 << 16


def message(**fields) -> str:
    """One line of the reaper's input (pids, dir, netns, link or done)."""
    return json.dumps(fields, separators=(",", ":")) + "\n"


def own_dir(path: object) -> bool:
    """A folder ftharness made in the temp dir (never a symlink, never anything above it)."""
    if not isinstance(path, str) or not os.path.isabs(path) or "\n" in path:
        return False
    parent, name = os.path.split(os.path.normpath(path))
    return (parent in (tempfile.gettempdir(), "/tmp") and name.startswith(OWN_DIR_PREFIXES)
            and name not in OWN_DIR_PREFIXES and not os.path.islink(path))


def parse(line: str) -> Optional[Tuple[str, object]]:
    """(what, value) of one message, or None for anything the harness would not write."""
    if len(line) > MAX_LINE:
        return None
    try:
        msg = json.loads(line)
    except (ValueError, RecursionError):
        return None
    if not isinstance(msg, dict) or len(msg) != 1:
        return None
    (key, value), = msg.items()
    if key == "done" and value is True:
        return key, value
    if key == "pids" and isinstance(value, list) and all(type(p) is int and 0 < p < 1 << 22 for p in value):
        return key, value
    if key == "dir" and own_dir(value):
        return key, value
    if key in ("netns", "link") and isinstance(value, str) and value.startswith("fth") and value.isprintable() \
            and " " not in value and len(value) <= 64:
        return key, value
    return None


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the harness, which cleans up
    roots: Set[int] = set()
    dirs: List[str] = []
    network: List[Tuple[str, str]] = []   # ("netns" | "link", name), in creation order
    known: Set[Proc] = set()
    buf = ""
    while True:
        ready, _, _ = select.select([sys.stdin], [], [], 0.5)
        if ready:
            chunk = os.read(sys.stdin.fileno(), 65536).decode()
            if not chunk:
                break  # the harness died without saying "done"
            buf += chunk
            *lines, buf = buf.split("\n")
            if len(buf) > MAX_LINE:
                buf = ""   # not a message of ours
            for line in lines:
                parsed = parse(line)
                if parsed is None:
                    continue
                what, value = parsed
                if what == "done":
                    return
                if what == "dir":
                    dirs.append(value)
                elif what in ("netns", "link"):
                    network.append((what, value))
                else:
                    roots.update(value)
        known |= identify(descendants(roots))
    known |= identify(descendants({p for p, _ in known}))
    kill_all(known)
    for _ in range(3):  # processes that were starting while we killed may still write
        known |= identify(descendants({p for p, _ in known}))
        kill_all(known)
        for d in dirs:
            if own_dir(d):
                shutil.rmtree(d, ignore_errors=True)
        time.sleep(0.5)
    if network:
        from ftharness.harness.cluster.netns import remove_leftovers

        for kind, name in reversed(network):   # namespaces and veths before their bridge
            remove_leftovers(kind, name.strip())


if __name__ == "__main__":
    main()


class SigtermAsInterrupt:
    """What a cluster ftharness started does while it is open (the embedded cluster, the torchrun
    launcher): SIGTERM becomes a KeyboardInterrupt, so that its close runs as on Ctrl-C, and
    STOP_REQUESTED is set for the loops whose callees turn the interrupt into another error.
    Off the main thread no handler can be set: atexit and the death signals still hold."""

    _old_sigterm = None

    def _install_sigterm(self) -> None:
        def on_term(signum, frame):
            STOP_REQUESTED.set()
            raise KeyboardInterrupt(f"signal {signum}")

        try:
            self._old_sigterm = signal.signal(signal.SIGTERM, on_term)
        except ValueError:  # not the main thread
            self._old_sigterm = None

    def _restore_sigterm(self) -> None:
        if self._old_sigterm is not None:
            try:
                signal.signal(signal.SIGTERM, self._old_sigterm)
            except ValueError:
                pass
            self._old_sigterm = None
