"""Live progress of a running scenario: step, attempt, recoveries, elapsed.

On a terminal it is one refreshing line (rich); elsewhere (CI logs) a plain
line whenever the attempt or failure count changes, and every 10 s.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Dict


class Progress:
    def __init__(self, scenario, enabled: bool = True):
        w = scenario.workload
        self.total = w.steps if w.kind == "reference" and w.duration_s is None else None
        self.name = scenario.name
        self.enabled = enabled
        self.tty = sys.stderr.isatty()
        self.t0 = time.time()
        self._live = None
        self._last: Dict[str, Any] = {}
        self._last_print = 0.0

    def __enter__(self) -> "Progress":
        if self.enabled and self.tty:
            from rich.console import Console
            from rich.live import Live

            self._live = Live("", console=Console(stderr=True), refresh_per_second=4, transient=True)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        if self._live is not None:
            self._live.__exit__(*exc)
        if self.enabled and self._last:   # the run is over: nobody is held any more (the last poll may say so)
            print(self.line({**self._last, "held": 0}), file=sys.stderr)

    def line(self, p: Dict[str, Any]) -> str:
        step = f"{p.get('step', 0)}/{self.total}" if self.total else str(p.get("step", 0))
        held = f"  {p['held']} held until faults land" if p.get("held") else ""
        note = f"  {p['note']}" if p.get("note") else ""
        return (f"[{self.name}] step {step}  attempt {p.get('attempt', 0)}  "
                f"recoveries {p.get('failures', 0)}  events {p.get('events', 0)}{held}  "
                f"{time.time() - self.t0:5.1f}s{note}")

    def update(self, p: Dict[str, Any]) -> None:
        if not self.enabled:
            return
        if self._live is not None:
            self._live.update(self.line(p))
        else:
            changed = (p.get("attempt"), p.get("failures")) != (self._last.get("attempt"), self._last.get("failures"))
            if changed or time.time() - self._last_print > 10:
                print(self.line(p), file=sys.stderr, flush=True)
                self._last_print = time.time()
        self._last = p
