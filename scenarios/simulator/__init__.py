"""A discrete-event simulator of Ray Train V2's fault handling (pure, no Ray).

`engine` plays many jobs at once under published or given failure rates
(`rates`), calibrated by measured runs (`calibration`); `schedule` plays one
scenario's fault schedule for comparison with a recorded run. Budget decisions
are always ftharness.scenarios.policy_model's.
"""

from ftharness.scenarios.simulator.calibration import DEFAULTS, Calibration
from ftharness.scenarios.simulator.engine import Job, Runs, simulate
from ftharness.scenarios.simulator.schedule import ScheduleResult, simulate_schedule

__all__ = ["DEFAULTS", "Calibration", "Job", "Runs", "ScheduleResult", "simulate", "simulate_schedule"]
