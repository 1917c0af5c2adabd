"""Kills an embedded cluster's processes when the harness process dies.

Started by `EmbeddedCluster` in its own session, it reads pids from stdin, one
line per node. "done" means the harness shut the cluster down itself. End of
input without "done" means the harness died (SIGKILL, OOM, crash): every pid
received, and every descendant of them (Ray workers are raylet children), gets
SIGKILL. Ray's own reaper covers the same case only for its process group.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from typing import Dict, List, Set


def _children_map() -> Dict[int, List[int]]:
    kids: Dict[int, List[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            ppid = int(stat.rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def descendants(roots: Set[int]) -> Set[int]:
    kids = _children_map()
    seen: Set[int] = set()
    stack = list(roots)
    while stack:
        p = stack.pop()
        if p in seen:
            continue
        seen.add(p)
        stack.extend(kids.get(p, []))
    return seen


def kill_all(pids: Set[int]) -> None:
    targets = descendants(pids)
    targets.discard(os.getpid())
    for p in targets:
        try:
            os.kill(p, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C goes to the harness, which cleans up
    pids: Set[int] = set()
    for line in sys.stdin:
        line = line.strip()
        if line == "done":
            return
        pids.update(int(p) for p in line.split() if p.isdigit())
    # The harness died without saying "done".
    kill_all(pids)
    time.sleep(0.5)
    kill_all(pids)  # workers spawned while we were killing


if __name__ == "__main__":
    main()
