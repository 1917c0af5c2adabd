"""What the simulator needs to know about a job, measured or given.

A Calibration holds the time a step takes, what a checkpoint adds to the wall
time, how long after its report a checkpoint is registered (a restart restores
only registered ones), and the measured recoveries per fault kind. Measuring
them from results folders needs the reports layer, so that lives in
`reports/calibrate.py`; this module is pure.

DEFAULTS were measured by `ftharness.reports.calibrate.from_results` on the two recorded
runs in tests/data (kill-worker, preempt-node: 2 CPU workers, gloo, the `fast`
profile, this project's 2-core machine). They describe a toy job: for a plan
of a real job pass its results folders or its own figures.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Tuple

from ftharness.faults import FAULT_KINDS, REGISTRY
from ftharness.faults.node import PreemptNode
from ftharness.faults.process import KillWorker
from ftharness.history.model import PARTS

#: Ray Train's RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S (docs/ray-releases.md)
STARTUP_TIMEOUT_S = 60.0
#: which measured kind stands in for a kind that was not measured (each kind's `recovers_like`); the
#: causes that are no fault kind (rates.py: a controller failure, a resize) borrow the registry's first,
#: the plainest failure
FALLBACK = {**{k: c.recovers_like for k, c in REGISTRY.items() if c.recovers_like},
            "controller": FAULT_KINDS[0], "resize": FAULT_KINDS[0]}


@dataclass(frozen=True)
class Calibration:
    """Figures of one job; times in seconds. `recoveries`: fault kind ->
    measured recovery times (fault to first step after it), resampled by the
    simulator; `parts`: fault kind -> mean of each recovery part (PARTS)."""

    step_s: float
    checkpoint_s: float
    registration_lag_s: float
    recoveries: Mapping[str, Tuple[float, ...]]
    parts: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    drain_notice_s: float = 120.0           # AWS Spot's two-minute notice (rates.SPOT_NOTICE_S)
    replacement_s: float = 0.0              # until a lost node is replaced (0: hot spares)
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    source: str = "given figures"

    def __post_init__(self):
        for name in ("step_s", "checkpoint_s", "registration_lag_s", "drain_notice_s", "replacement_s",
                     "startup_timeout_s"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"calibration {name}: {value!r} is not a finite number >= 0")
        if not self.step_s > 0 or not self.startup_timeout_s > 0:
            raise ValueError("calibration step_s and startup_timeout_s must be > 0")
        for kind, values in self.recoveries.items():
            if not values or any(not (math.isfinite(v) and v >= 0) for v in values):
                raise ValueError(f"calibration recoveries[{kind}]: {values!r} are not times >= 0")
        if not self.recoveries:
            raise ValueError("calibration: no recovery time for any fault kind")

    def recovery_kind(self, kind: str) -> str:
        """The measured kind whose recoveries stand for `kind`."""
        seen = kind
        while seen not in self.recoveries and seen in FALLBACK:
            seen = FALLBACK[seen]
        return seen if seen in self.recoveries else next(iter(self.recoveries))

    def recovery_samples(self, kind: str) -> Tuple[float, ...]:
        return tuple(self.recoveries[self.recovery_kind(kind)])

    def mean_recovery_s(self, kind: str) -> float:
        values = self.recovery_samples(kind)
        return sum(values) / len(values)

    def with_figures(self, recovery_s: Optional[float] = None, source: Optional[str] = None,
                     **figures) -> "Calibration":
        """A copy with given figures in place of measured ones; `recovery_s`
        replaces every kind's recoveries."""
        given = {k: v for k, v in figures.items() if v is not None}
        if recovery_s is not None:
            given["recoveries"] = {k: (float(recovery_s),) for k in (*self.recoveries, KillWorker.kind)}
            given["parts"] = {}
        if not given:
            return self
        names = ", ".join(f"{k}={v:g}" for k, v in {**figures, "recovery_s": recovery_s}.items() if v is not None)
        return dataclasses.replace(self, **given, source=source or f"{self.source}; given: {names}")


#: measured on tests/data (see the module doc); test_simulator checks they still match
DEFAULTS = Calibration(
    step_s=0.1092, checkpoint_s=0.0225, registration_lag_s=0.1508,
    recoveries={KillWorker.kind: (18.952,), PreemptNode.kind: (22.578,)},
    parts={KillWorker.kind: dict(zip(PARTS, (0.225, 0.063, 12.598, 0.151, 5.916))),
           PreemptNode.kind: dict(zip(PARTS, (0.715, 3.914, 13.519, 0.112, 4.318)))},
    source="defaults: tests/data kill-worker + preempt-node (2 CPU workers, fast profile)",
)


def describe(cal: Calibration) -> Dict[str, str]:
    """The calibration as labelled lines, for plans."""
    rec = ", ".join(f"{k} {sum(v) / len(v):.1f}s (n={len(v)})" for k, v in cal.recoveries.items())
    return {"source": cal.source, "step": f"{cal.step_s:.4g}s", "checkpoint cost": f"{cal.checkpoint_s:.4g}s",
            "registration lag": f"{cal.registration_lag_s:.4g}s", "recovery": rec,
            "drain notice": f"{cal.drain_notice_s:g}s", "node replacement": f"{cal.replacement_s:g}s"}
