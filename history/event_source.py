"""What every emitter of a run's history shares, whatever carries its events to the book.

An emitter is one process in one role: its id (`emitter`) and the number of each of its
events (`eseq`, 1, 2, 3 ...) are how the reader sees a lost event (a gap in an emitter's
numbers) and how a journaled event that also reached the book is dropped at the merge. The
Ray emitter (ftharness.harness.cluster.history_service.Emitter), the torchrun worker's and
agent's (ftharness.harness.torchrun.client.TcpEmitter) and the harness's own under torchrun
(ftharness.harness.torchrun.collector.LocalEmitter) build and number their events here, so
the three write the same fields.

Standard library only: torchrun workers and agents import it before torch is up.
"""

from __future__ import annotations

import itertools
import os
import time
import uuid
from typing import Any, Dict, Optional


class EventSource:
    """An emitter's identity, the fields of its events and their numbering.

    Not thread-safe on its own: an emitter numbers its events under its own lock, in the
    order it hands them over."""

    def __init__(self, run_name: str, source: str, base: Optional[Dict[str, Any]] = None,
                 name: Optional[str] = None):
        self.run_name = run_name
        self.source = source
        self.base = dict(base or {})
        self.id = f"{name or source}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._numbers = itertools.count(1)

    def event(self, kind: str, **fields: Any) -> Dict[str, Any]:
        """An event of this emitter, not numbered yet: its clock, kind, source and run, the
        emitter's base fields, then `fields`."""
        e = {"t": time.time(), "kind": kind, "source": self.source, "run": self.run_name}
        e.update(self.base)
        e.update(fields)
        return e

    def number(self, e: Dict[str, Any]) -> Dict[str, Any]:
        """`e` with this emitter's id and its next number (call it in hand-over order)."""
        e["emitter"], e["eseq"] = self.id, next(self._numbers)
        return e
