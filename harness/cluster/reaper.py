"""Kills an embedded cluster's processes when the harness process dies.

Started by `EmbeddedCluster` in its own session, it reads pids from stdin, one
line per node, plus `dir PATH`, `netns NAME` and `link NAME` lines for what
to remove. "done" means the harness shut the cluster down itself. End of
input without "done" means the harness died (SIGKILL, OOM, crash): every
process received, and every descendant of them (Ray workers and agents are
raylet children), gets SIGKILL. Descendants are sampled every half second while
the harness lives, because once a raylet dies its children are re-parented and
can no longer be found by walking the tree. Each process is remembered with its
start time, so a recycled pid is never killed.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import sys
import time
from typing import Dict, List, Optional, Set, Tuple

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
            for line in lines:
                if line.strip() == "done":
                    return
                if line.startswith("dir "):
                    dirs.append(line[4:].strip())
                    continue
                if line.startswith(("netns ", "link ")):
                    network.append(tuple(line.split(None, 1)))
                    continue
                roots.update(int(p) for p in line.split() if p.isdigit())
        known |= identify(descendants(roots))
    known |= identify(descendants({p for p, _ in known}))
    kill_all(known)
    for _ in range(3):  # processes that were starting while we killed may still write
        known |= identify(descendants({p for p, _ in known}))
        kill_all(known)
        for d in dirs:
            shutil.rmtree(d, ignore_errors=True)
        time.sleep(0.5)
    if network:
        from ftharness.harness.cluster.netns import remove_leftovers

        for kind, name in reversed(network):   # namespaces and veths before their bridge
            remove_leftovers(kind, name.strip())


if __name__ == "__main__":
    main()
