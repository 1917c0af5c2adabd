"""No orphans: every process of a torchrun run dies with its parent.

The launcher's teardown kills each agent's whole tree, on every way out of the
harness it can see (return, exception, Ctrl-C, SIGTERM, atexit). For the way it
cannot see (the harness SIGKILLed), each agent and each worker asks Linux to
SIGKILL it when its parent dies (PR_SET_PDEATHSIG): harness -> agents ->
workers, as a dead machine takes its processes with it.
"""

from __future__ import annotations

import os
import signal
from typing import Optional

PR_SET_PDEATHSIG = 1


def die_with_parent(expected_parent: Optional[int]) -> bool:
    """Arm the death signal; exit now if the parent already died. False where
    the kernel has no such call (not Linux): teardown then relies on the launcher."""
    try:
        import ctypes

        if ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL)) != 0:
            return False
    except Exception:  # noqa: BLE001
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(1)   # the parent died before the death signal was armed
    return True
