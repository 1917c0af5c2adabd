"""The causal model's blames, clock tolerances and time readings, shared by its rule modules.

`history/causal.py` builds the model and `history/causal_declared.py` adds the rules that
hold it against what was declared; both read these, so neither imports the other's
constants (one direction of import: causal -> causal_declared -> tolerances).
"""

from __future__ import annotations

import math
from typing import Any, Optional

#: a finding's blame: the system under test contradicts itself (FAIL), or ftharness's record is damaged
SYSTEM, RECORDS = "system", "records"
#: seconds one process's clock may seem to run backwards between two of its events
TOL_SAME = 0.25
#: seconds two processes' clocks may disagree (one host: one clock; a cluster: NTP's skew)
TOL_CROSS = 2.0
#: seconds the injector may take to write down what it did (a node removed, then recorded)
RECORD_LAG_S = 30.0


def num(v: Any) -> Optional[float]:
    """A finite number as a float; None for anything else (a bool, a string, NaN)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v) if math.isfinite(v) else None


def fault_time(e: dict) -> Optional[float]:
    """When a fault (or one of its actions) was done: its `t_done` where that agrees with the
    event's own time (done before it was written, and not long before), else the event's own time;
    never a reading the record contradicts."""
    t, done = num(e.get("t")), num(e.get("t_done"))
    if done is not None and t is not None and done <= t + TOL_SAME and t - done <= RECORD_LAG_S:
        return done
    return t
