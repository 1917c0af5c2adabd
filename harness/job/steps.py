"""What both runtimes' worker recorders do when a step is done (Ray-free: the torchrun worker
imports it too): `WorkerRecorder` (harness/job/instrument.py) and the torchrun worker's `Recorder`."""

from __future__ import annotations

from typing import Any, List, Optional


class StepRecorder:
    """Records a finished step and then runs the in-worker faults aimed after it. A subclass has
    `emit(kind, **fields)` (one event into the history) and `crash_point(where, step)`."""

    step = 0

    def emit(self, kind: str, **fields: Any) -> None:
        raise NotImplementedError

    def crash_point(self, where: str, step: Optional[int]) -> None:
        raise NotImplementedError

    def step_done(self, step: int, rows: Optional[List[int]] = None, **fields: Any) -> None:
        """Step `step` is done: a `step` event (with the rows it read, where the job says), then
        the faults aimed `after_step`."""
        self.step = int(step)
        extra = dict(fields)
        if rows is not None:
            extra["rows"] = [int(r) for r in rows]
            extra["n_rows"] = len(rows)
        self.emit("step", step=self.step, **extra)
        self.crash_point("after_step", self.step)
