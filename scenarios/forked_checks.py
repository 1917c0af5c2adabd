"""A long history's checks in two processes: the costliest one in a forked child.

Judging a day of soak is mostly the checks, one after the other on one core,
and the machine has more than one. The checks are pure functions of the
history and the context, so `start` forks a child that runs some of them (on
the same model, shared copy-on-write) while the parent runs the others; the
child sends back its results (pickled CheckResults) through a pipe and exits.
The results are the same either way: anything unusual (the fork is refused, the
child fails, dies or sends what cannot be read) and the parent runs those
checks itself.

It is used only where it is safe and worth it (as ftharness.history.split):
a history of at least `FORK_FROM` events, `os.fork`, two CPUs or more, and no
other thread in the process (a fork copies one thread; a lock another one held
would stay held in the child). FTHARNESS_CHECK_SPLIT=0 turns it off.
"""

from __future__ import annotations

import os
import pickle
import resource
import signal
import threading
from typing import Callable, Dict, List, Optional

from ftharness.scenarios import reference_data

#: histories this long or longer are judged in two processes (below: one, the fork costs more)
FORK_FROM = 1_000_000
#: the checks the child runs: on a long history about as long as all the others together (and
#: the only readers of the epochs' permutations after final_state: the parent lets them go)
CHILD_CHECKS = ("shard_reassignment",)
#: the child's peak RSS and its private memory at the end, in MB, of the last fork (for benchmarks)
last_child_mb: Optional[Dict[str, float]] = None


def can_fork(n_events: int) -> bool:
    if n_events < FORK_FROM or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2:
        return False
    return threading.active_count() == 1 and os.environ.get("FTHARNESS_CHECK_SPLIT", "1") != "0"


class Pending:
    """The child's results, once it sends them (`result()`: None if it did not)."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    def result(self) -> Optional[dict]:
        global last_child_mb
        data, done = b"", False
        try:
            with os.fdopen(self.fd, "rb", closefd=True) as f:
                self.fd = -1
                data = f.read()
            done = True
        finally:
            status = self._reap(kill=not done)
        if status != 0 or not data:
            return None
        try:
            got = pickle.loads(data)
        except Exception:  # noqa: BLE001 - what cannot be read is not a result: the parent judges
            return None
        if not isinstance(got, dict) or not isinstance(got.get("results"), dict):
            return None
        last_child_mb = got.get("memory")
        return got["results"]

    def cancel(self) -> None:
        """Stop the child (an error or Ctrl-C in the parent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        self._reap(kill=True)

    def _reap(self, kill: bool) -> Optional[int]:
        if self.pid <= 0:
            return None
        pid, self.pid = self.pid, 0
        try:
            if kill:
                os.kill(pid, signal.SIGKILL)
            return os.waitpid(pid, 0)[1]
        except OSError:
            return None


def start(run: Callable[[], dict]) -> Optional[Pending]:
    """Fork a child that sends `run()` (a dict of picklable results); None where it cannot."""
    try:
        r, w = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(r)
        os.close(w)
        return None
    if pid == 0:   # the child: run, send, exit without running any cleanup
        code = 1
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            results = run()
            payload = pickle.dumps({"results": results, "memory": _memory_mb()}, protocol=pickle.HIGHEST_PROTOCOL)
            with os.fdopen(w, "wb", closefd=True) as f:
                f.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    # the epochs' permutations: only the child's check reads them from here on (final_state, which
    # drew them, ran before); a parent that judges it after all, the child failing, draws them again
    reference_data.forget_permutations()
    return Pending(pid, r)


def _memory_mb() -> Dict[str, float]:
    """This process's peak RSS, and its private memory now (pages not shared with the parent)."""
    private = 0.0
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith(("Private_Clean:", "Private_Dirty:")):
                    private += int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        private = float("nan")
    return {"peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "private": private}


def split_names(names: List[str], n_events: int) -> List[str]:
    """The checks of `names` a child runs for a history of `n_events` (none where it does not fork)."""
    if not can_fork(n_events):
        return []
    mine = [n for n in names if n in CHILD_CHECKS]
    return mine if len(mine) < len(names) else []   # (all in the child: nothing runs beside it)
