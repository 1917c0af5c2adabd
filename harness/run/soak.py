"""`ftharness soak`: train for a wall-clock duration while a seeded fault
process injects faults (the plan of `ftharness.scenarios.soak`), judging the properties
as they stand while it runs.

The driver runs inside the runner's polling loop: it waits until training is
under way, lets a drawn gap of training time pass, injects the next fault of
the plan, then stops the clock until the run trains again (a new attempt made
a step past the one the fault interrupted). The verdict at the end is the
ordinary one over every fault injected, so a fault that did not land makes the
soak INCONCLUSIVE like any run.
"""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

from ftharness.harness.cluster.handles import open_cluster
from ftharness.history import records
from ftharness.harness.run.runner import RunOptions, ScenarioRunner
from ftharness.harness.run.shared import write_summary
from ftharness.scenarios.soak import RECOVERY_WAIT_S, QUIET_TAIL_S, SoakPlan

#: live judging reads only what the history gained but judges it all again: at most this share of the time
JUDGE_SHARE = 0.1
JUDGE_MIN_INTERVAL_S = 20.0


class SoakDriver:
    """Injects a SoakPlan's faults as the run goes and judges the history live."""

    def __init__(self, plan: SoakPlan):
        self.plan = plan
        self.next = 0                          # index of the next draw
        self.due: Optional[float] = None       # when it fires (None: the clock is stopped)
        self.gate: Optional[Dict[str, Any]] = None   # the fault we wait to recover from
        self.injected: List[Dict[str, Any]] = []
        self.waits: List[Dict[str, Any]] = []  # recoveries the plan gave up waiting for
        self.live: Dict[str, str] = {}
        self._next_judge = time.time() + JUDGE_MIN_INTERVAL_S
        self._history: Optional[records.LiveHistory] = None   # the history read so far, and its model

    # -- the fault process
    def tick(self, runner: ScenarioRunner, progress: Dict[str, Any]) -> str:
        now = time.time()
        stop_at = runner.stop_at or now
        attempt, step = int(progress.get("attempt") or 0), int(progress.get("step") or 0)
        if self.gate is not None:
            # trained again: a later attempt made a step of its own (not a late step of the old one)
            if attempt > self.gate["attempt"] and int(progress.get("attempt_steps") or 0) > 0:
                self.gate = None
            elif now - self.gate["t"] > RECOVERY_WAIT_S:
                self.waits.append(dict(self.gate, gave_up_after_s=RECOVERY_WAIT_S))
                self.gate = None
            if self.gate is None and self.next < len(self.plan.draws):
                self.due = now + self.plan.draws[self.next].gap_s
        elif self.due is None and step >= 1 and self.next < len(self.plan.draws):
            self.due = now + self.plan.draws[self.next].gap_s    # training is under way: start the clock
        if self.due is not None and now >= self.due and now < stop_at - QUIET_TAIL_S:
            draw = self.plan.draws[self.next]
            record = runner.injector.inject_now(draw.spec)
            self.injected.append({"draw": draw.index, "fault": record["fault"], "kind": draw.kind,
                                  "status": record["kind"], "t": now, "attempt": attempt, "step": step})
            self.next += 1
            self.due = None
            self.gate = {"fault": record["fault"], "attempt": attempt, "step": step, "t": now}
        if now >= self._next_judge:
            self._judge(runner)
        return self.note()

    def note(self) -> str:
        marks = {"passed": "ok", "failed": "FAIL", "not_judged": "?"}
        props = " ".join(f"{name}:{marks.get(status, status)}" for name, status in self.live.items())
        return f"faults {len(self.injected)}/{len(self.plan.draws)}" + (f"  {props}" if props else "")

    # -- live verdict
    def _judge(self, runner: ScenarioRunner) -> None:
        """The properties over the history so far (as they stand: the run has no
        outcome yet), reading only what it gained since the last time."""
        t = time.time()
        try:
            if self._history is None or self._history.path != records.history_path(runner.history_path):
                self._history = records.LiveHistory(runner.history_path)
            events, model = self._history.update()
            self.live = live_statuses(runner.scenario, events, runner.injector.specs, model)
        except Exception as e:  # noqa: BLE001 - a live view that fails must not stop the soak
            self.live = {"judging": f"failed ({type(e).__name__})"}
        cost = time.time() - t
        self._next_judge = time.time() + max(JUDGE_MIN_INTERVAL_S, cost / JUDGE_SHARE)

    def summary(self) -> Dict[str, Any]:
        return {
            "seed": self.plan.seed, "duration_s": self.plan.duration_s, "mtbf_s": self.plan.mtbf_s,
            "mix": self.plan.mix, "planned": len(self.plan.draws), "injected": self.injected,
            "not_reached": [d.index for d in self.plan.draws[self.next:]],
            "recovery_waits_given_up": self.waits, "budgets_sized": self.plan.budgets(),
        }


def live_statuses(scenario, events: List[Dict[str, Any]], specs, model=None) -> Dict[str, str]:
    """Each property's status over the history as it stands (the run has no
    outcome yet); `model`: the events' History, when kept up to date."""
    from ftharness.scenarios.verdict import fault_landings, run_properties

    faults = fault_landings(scenario, events, specs)
    results = run_properties(scenario, events, {}, None, faults, model)
    return {name: r["status"] for name, r in results.items()}


def run_soak(scenario, plan: SoakPlan, options: RunOptions) -> Dict[str, Any]:
    """Open the cluster, soak, close it; returns the summary (with a `soak` section)."""
    with open_cluster(scenario.cluster, options.address) as cluster:
        return soak_on(cluster, scenario, plan, options)


def soak_on(cluster, scenario, plan: SoakPlan, options: RunOptions) -> Dict[str, Any]:
    """Soak on an open cluster (the caller owns it); returns the summary."""
    from ftharness.reports.metrics import fault_kind_table

    driver = SoakDriver(plan)
    runner = ScenarioRunner(scenario, cluster, options, driver=driver)
    summary = runner.run()
    events = records.read_history(runner.history_path).events
    summary["soak"] = dict(driver.summary(), by_fault_kind=fault_kind_table(events).to_dict("records"))
    write_summary(runner.out_dir, no_fault_no_pass(summary))   # redacted, as every summary.json
    return summary


def no_fault_no_pass(summary: Dict[str, Any]) -> Dict[str, Any]:
    """A soak that injected no fault tested nothing: INCONCLUSIVE, never PASS."""
    if not summary["soak"]["injected"] and summary.get("verdict") == "PASS":
        summary["verdict"] = "INCONCLUSIVE"
        summary["matches_expectation"] = False
        summary.setdefault("inconclusive", []).append(
            f"the soak injected no fault ({summary['soak']['planned']} planned, none reached): "
            f"a longer --duration or a shorter --mtbf")
    return summary
