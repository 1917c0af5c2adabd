"""ftharness.reports.metrics and ftharness.reports.frames on hand-built histories.

Every expected number is worked out by hand from the times written here, so a
change in how a metric is defined shows up as a failing number, not a shifted
one. No Ray cluster.
"""

import json

import pandas as pd
import pytest

from ftharness.reports import metrics
from ftharness.reports.frames import Frames

approx = pytest.approx


class History:
    """A synthetic history: seq in call order, times as given."""

    def __init__(self):
        self.events = []

    def add(self, kind, t, source="controller", **fields):
        self.events.append({"seq": len(self.events) + 1, "t": t, "kind": kind,
                            "source": source, "run": "demo", **fields})
        return self

    def worker(self, kind, t, aid, rank, **fields):
        return self.add(kind, t, "worker", attempt_id=aid, attempt=0, rank=rank, world_size=2,
                        node_id=f"n{rank}", pid=100 + rank, **fields)

    def state(self, t, aid, prev, cur, **fields):
        return self.add("controller_state", t, attempt_id=aid, prev=prev, cur=cur, **fields)

    def run_start(self, t, fit):
        return self.add("run_start", t, "harness", scenario="kill-one", run_name="demo",
                        fit_index=fit, num_workers=2,
                        failure_config={"max_failures": 1, "max_preemption_failures": 0,
                                        "controller_failure_limit": 0})

    def attempt(self, aid, t, t_group, t_workers, restored_step=None):
        """attempt_start, the group, RUNNING, and a worker_start per rank."""
        self.add("attempt_start", t, attempt_id=aid, num_workers=2)
        self.add("worker_group_started", t_group, attempt_id=aid, world_size=2,
                 workers=[{"rank": r, "node_id": f"n{r}", "pid": 100 + r, "actor_id": f"x{r}"}
                          for r in range(2)])
        self.state(t_group + 0.05, aid, "SCHEDULING", "RUNNING")
        ckpt = None if restored_step is None else f"checkpoint_{restored_step:06d}"
        for rank, tw in enumerate(t_workers):
            self.worker("worker_start", tw, aid, rank, restored_checkpoint=ckpt,
                        restored_step=restored_step)
        return self

    def steps(self, aid, first, last, t_first):
        """Steps first..last one second apart; rank 1 finishes each 0.05 s after rank 0."""
        for s in range(first, last + 1):
            for rank in range(2):
                self.worker("step", t_first + (s - first) + 0.05 * rank, aid, rank, step=s,
                            rows=[s * 2 + rank], n_rows=1, epoch=0, loss=1.0 / s)
        return self

    def failure(self, t, aid, budget="worker_group", decision="RETRY", count=1):
        return self.add("failure", t, attempt_id=aid, budget=budget, decision=decision,
                        error_type="WorkerGroupError", count=count,
                        counts={"worker_group": count, "preemption": 0, "controller": 0},
                        drain_timed_out=None)

    def finish(self, aid, t):
        self.state(t - 0.4, aid, "RUNNING", "SHUTTING_DOWN")
        self.state(t - 0.3, aid, "SHUTTING_DOWN", "FINISHED")
        return self.add("run_end", t, "harness", outcome="succeeded", error_type=None, fit_index=1)


def first_attempt(h):
    """Steps 1..8 end (last rank) at 2.05 .. 9.05; checkpoint at step 5."""
    h.run_start(0.0, 1).state(0.2, None, "INITIALIZING", "SCHEDULING")
    h.attempt("a1", 0.5, 1.0, [1.4, 1.5]).steps("a1", 1, 8, 2.0)
    h.worker("checkpoint_written", 6.1, "a1", 0, step=5, local_path="/tmp/ck5")
    h.worker("report", 6.2, "a1", 0, step=5, checkpoint="checkpoint_000005", metrics={})
    h.worker("report", 6.2, "a1", 1, step=5, checkpoint=None, metrics={})
    h.add("checkpoint_registered", 6.3, attempt_id="a1", checkpoint="checkpoint_000005",
          path="/s/checkpoint_000005", step=5)
    return h


def kill_history(fault=True, worker_error=False):
    """The worked example: rank 1 killed at 10.0, RUNNING->RESTARTING at 10.8,
    attempt_start 11.0, group up 12.5, worker_start 13.0, first step 13.4."""
    h = first_attempt(History())
    if fault:
        h.add("fault_injected", 10.0, "injector", fault=0, fault_kind="kill_worker",
              target_asked={"rank": 1}, target_hit={"rank": 1, "pid": 101, "node_id": "n1"},
              t_requested=9.95, t_done=10.0, detail="SIGKILL")
    if worker_error:
        h.worker("worker_error", 10.0, "a1", 1, error_type="RuntimeError", error="boom",
                 traceback="", step=8)
    h.state(10.8, "a1", "RUNNING", "RESTARTING", error_type="WorkerGroupError",
            worker_failures={"1": "ActorDiedError"})
    h.failure(10.81, "a1")
    h.state(10.85, "a1", "RESTARTING", "SCHEDULING")
    h.add("worker_group_shutdown", 10.9, attempt_id="a1", errors={"1": "ActorDiedError()"})
    h.attempt("a2", 11.0, 12.5, [13.0, 13.1], restored_step=5).steps("a2", 6, 10, 13.4)
    for rank in range(2):
        h.worker("worker_end", 17.5, "a2", rank, step=10)
    return h.finish("a2", 18.0).events


SUMMARY = {"scenario": "kill-one", "run_name": "demo", "outcome": "succeeded", "error_type": None,
           "attempts": 2, "wall_time_s": 18.2,
           "budgets": {"worker_group": 1, "preemption": 0, "controller": 0},
           "failure_config": {"max_failures": 1, "max_preemption_failures": 0,
                              "controller_failure_limit": 0},
           "properties": {"recovers": {"passed": True, "explanation": "step 10 reached"},
                          "budget_accounting": {"passed": False, "explanation": "off by one"}},
           "recovery_times_s": [3.4], "versions": {"ray": "2.60.0"}, "settings": {"profile": "fast"}}

PARTS_OF_KILL = {"detection_s": 0.8, "teardown_s": 0.2, "scheduling_s": 1.5, "restore_s": 0.5,
                 "first_step_s": 0.45, "recovery_s": 3.45}   # until rank 1, 0.05 s behind rank 0, stepped


def row_of(table, **where):
    hits = table
    for k, v in where.items():
        hits = hits[hits[k] == v]
    assert len(hits) == 1, table
    return hits.iloc[0]


# ------------------------------------------------------------------ recovery
def test_worker_kill_recovery_parts():
    table = metrics.recovery_table(kill_history())
    assert len(table) == 1
    row = table.iloc[0]
    assert (row["source"], row["fault_kind"], row["attempt"]) == ("fault", "kill_worker", 1)
    assert (row["state"], row["budget"], row["decision"]) == ("RESTARTING", "worker_group", "RETRY")
    assert (row["recovered_fit"], row["recovered_attempt"], row["restored_step"]) == (1, 2, 5)
    for col, want in PARTS_OF_KILL.items():
        assert row[col] == approx(want), col
    assert sum(row[p] for p in metrics.PARTS) == approx(row["recovery_s"])


def test_recovers_property_reports_the_tables_recovery_time():
    """The property judges the recovery the table shows (3.4 s from the kill),
    not its own (2.59 s from the failure decision, as it once did)."""
    from ftharness.scenarios.properties import CHECKS

    context = {"outcome": "succeeded", "failure_config": SUMMARY["failure_config"], "recovery_bound_s": 3.0}
    result = CHECKS["recovers"](kill_history(), context)
    assert not result.passed
    assert result.violations == ["recovery from fault 0 (kill_worker), failure seq 30 (attempt 1, WorkerGroupError) "
                                 "took 3.45 s (first step: attempt 2 seq 39), over the 3 s bound"]
    assert CHECKS["recovers"](kill_history(), dict(context, recovery_bound_s=3.5)).passed


def test_failure_without_fault_starts_at_the_worker_error():
    table = metrics.recovery_table(kill_history(fault=False, worker_error=True))
    row = row_of(table, source="failure")
    assert row["t0"] == 10.0
    for col, want in PARTS_OF_KILL.items():
        assert row[col] == approx(want), col


def test_failure_without_any_error_event_starts_at_the_controller():
    row = metrics.recovery_table(kill_history(fault=False)).iloc[0]
    assert (row["t0"], row["detection_s"]) == (10.8, 0.0)
    assert row["teardown_s"] == approx(0.2)
    assert row["recovery_s"] == approx(2.65)   # the slowest rank's first step ends it


def test_preemption_is_one_outage_detected_at_preempting():
    h = first_attempt(History())
    h.add("fault_injected", 10.0, "injector", fault=0, fault_kind="preempt_node",
          target_asked={"rank": 0}, target_hit={"node_id": "n0"}, t_requested=10.0, t_done=10.0)
    h.state(10.8, "a1", "RUNNING", "PREEMPTING")
    h.steps("a1", 9, 9, 11.0)  # survivors keep training until the deadline
    h.state(12.0, "a1", "PREEMPTING", "RESTARTING", error_type="PreemptionError")
    h.failure(12.01, "a1", budget="preemption")
    h.attempt("a2", 12.2, 13.0, [13.3, 13.3], restored_step=5).steps("a2", 6, 10, 13.5)
    table = metrics.recovery_table(h.finish("a2", 19.0).events)
    assert len(table) == 1  # the failure at RESTARTING belongs to the fault's outage
    row = table.iloc[0]
    assert (row["state"], row["budget"]) == ("PREEMPTING", "preemption")
    want = {"detection_s": 0.8, "teardown_s": 1.4, "scheduling_s": 0.8, "restore_s": 0.3,
            "first_step_s": 0.25, "recovery_s": 3.55}
    for col, value in want.items():
        assert row[col] == approx(value), col


def test_failed_restart_is_inside_the_first_recovery_and_an_outage_of_its_own():
    h = first_attempt(History())
    h.add("fault_injected", 10.0, "injector", fault=0, fault_kind="kill_node",
          t_requested=10.0, t_done=10.0)
    h.state(10.8, "a1", "RUNNING", "RESTARTING", error_type="WorkerGroupError")
    h.failure(10.81, "a1")
    h.attempt("a2", 11.0, 12.5, [12.7, 12.7], restored_step=5)
    h.state(13.0, "a2", "RUNNING", "RESTARTING", error_type="WorkerGroupError")
    h.failure(13.01, "a2", count=2)
    h.attempt("a3", 13.5, 14.0, [14.2, 14.2], restored_step=5).steps("a3", 6, 10, 14.5)
    table = metrics.recovery_table(h.finish("a3", 20.0).events)
    fault, again = row_of(table, source="fault"), row_of(table, source="failure")
    assert fault["recovered_attempt"] == again["recovered_attempt"] == 3
    assert fault["teardown_s"] == approx(2.7)  # 10.8 -> 13.5, across the failed attempt 2
    assert fault["recovery_s"] == approx(4.55)
    assert (again["attempt"], again["detection_s"]) == (2, 0.0)
    assert again["recovery_s"] == approx(1.55)


def kill_controller_history():
    """fit 1 loses its controller at 10.0 and is resumed as fit 2."""
    h = first_attempt(History())
    h.add("fault_injected", 10.0, "injector", fault=0, fault_kind="kill_controller",
          t_requested=10.0, t_done=10.0)
    h.add("run_end", 10.5, "harness", outcome="failed", error_type="ActorDiedError", fit_index=1)
    h.run_start(11.0, 2)
    h.attempt("b1", 12.0, 13.0, [13.5, 13.6], restored_step=5).steps("b1", 6, 10, 14.0)
    for rank in range(2):
        h.worker("worker_end", 18.5, "b1", rank, step=10)
    h.state(18.6, "b1", "RUNNING", "SHUTTING_DOWN").state(18.7, "b1", "SHUTTING_DOWN", "FINISHED")
    return h.add("run_end", 19.0, "harness", outcome="succeeded", error_type=None,
                 fit_index=2).events


def test_lost_controller_recovers_in_the_next_fit():
    row = metrics.recovery_table(kill_controller_history()).iloc[0]
    assert pd.isna(row["t_detect"]) and pd.isna(row["detection_s"])
    assert (row["recovered_fit"], row["recovered_attempt"]) == (2, 1)
    want = {"teardown_s": 2.0, "scheduling_s": 1.0, "restore_s": 0.5, "first_step_s": 0.55,
            "recovery_s": 4.05}
    for col, value in want.items():
        assert row[col] == approx(value), col


def test_fault_that_stopped_nothing_has_no_recovery():
    events = kill_history()
    events.append({"seq": len(events) + 1, "t": 15.0, "kind": "fault_injected", "source": "injector",
                   "fault": 1, "fault_kind": "corrupt_checkpoint", "t_requested": 15.0, "t_done": 15.0})
    row = row_of(metrics.recovery_table(events), fault=1)
    assert pd.isna(row["detection_s"]) and pd.isna(row["recovery_s"])


# ------------------------------------------------------------- work and time
def test_steps_redone_after_the_rollback_are_lost_work():
    steps = metrics.step_table(kill_history())
    assert len(steps) == 8 + 5
    lost = steps[steps["lost"]]
    assert list(zip(lost["attempt"], lost["step"])) == [(1, 6), (1, 7), (1, 8)]
    assert metrics.lost_work(kill_history()) == {"lost_steps": 3, "lost_step_s": approx(3.0)}


def test_first_step_of_an_attempt_is_start_up_not_step_time():
    steps = metrics.step_table(kill_history()).set_index(["attempt", "step"])
    assert pd.isna(steps.loc[(1, 1), "seconds"]) and pd.isna(steps.loc[(2, 6), "seconds"])
    assert steps.loc[(2, 7), "t_begin"] == approx(13.45)  # step 6 ended when rank 1 finished it
    assert steps.loc[(2, 7), "seconds"] == approx(1.0)


def test_ettr_is_kept_step_time_over_wall_time():
    # kept: steps 2..5 of attempt 1 and 7..10 of attempt 2, 1 s each; wall 0.0 -> 18.0
    assert metrics.ettr(kill_history()) == {"productive_s": approx(8.0), "wall_time_s": 18.0,
                                            "ettr": approx(8.0 / 18.0, abs=1e-6)}


def test_lost_work_across_fits():
    assert metrics.lost_work(kill_controller_history()) == {"lost_steps": 3, "lost_step_s": approx(3.0)}


def test_budget_use_against_limits():
    budgets = metrics.budget_use(kill_history(), SUMMARY["failure_config"])
    assert budgets["worker_group"] == {"limit": 1, "charged": 1, "retries": 1, "left": 0,
                                       "exhausted": False}
    assert budgets["preemption"] == {"limit": 0, "charged": 0, "retries": 0, "left": 0,
                                     "exhausted": False}


def test_budget_exhausted_and_unlimited():
    h = History()
    h.run_start(0.0, 1).attempt("a1", 0.5, 1.0, [1.2, 1.2])
    h.state(2.0, "a1", "RUNNING", "SHUTTING_DOWN", error_type="WorkerGroupError")
    h.failure(2.01, "a1", decision="RAISE", count=2)
    budgets = metrics.budget_use(h.events, {"max_failures": -1})
    assert budgets["worker_group"] == {"limit": -1, "charged": 1, "retries": 0, "left": None,
                                       "exhausted": True}
    assert budgets["none"]["limit"] is None


def test_run_metrics_uses_summary_limits():
    found = metrics.run_metrics(kill_history(), SUMMARY)
    assert (found["fits"], found["attempts"], found["failures"], found["faults_injected"]) == (1, 2, 1, 1)
    assert found["last_step"] == 10
    assert found["detection_s"] == [approx(0.8)] and found["recovery_s"] == [approx(3.45)]
    assert found["recovery_parts_mean_s"]["scheduling_s"] == approx(1.5)
    assert (found["lost_steps"], found["ettr"]) == (3, approx(0.444444, abs=1e-6))
    assert found["budgets"]["worker_group"]["left"] == 0
    json.dumps(found)  # a summary can carry it as is


def test_annotate_puts_zombie_events_in_their_own_fit():
    events = kill_controller_history()
    late = {"seq": len(events) + 1, "t": 19.5, "kind": "step", "source": "worker",
            "attempt_id": "a1", "attempt": 7, "rank": 0, "step": 9}
    last = metrics.annotate(events + [late])[-1]
    assert (last["fit_index"], last["attempt"]) == (1, 1)


# -------------------------------------------------------------------- frames
def write_results(folder, events, summary):
    folder.mkdir()
    with open(folder / "history.jsonl", "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
        f.write('{"seq": 999, "t": 1')  # a torn last line, as a killed writer leaves
    (folder / "summary.json").write_text(json.dumps(summary))
    return folder


def test_frames_of_one_folder(tmp_path):
    folder = write_results(tmp_path / "kill", kill_history(), SUMMARY)
    fr = Frames.load(folder)

    sc = fr.scenarios.iloc[0]
    assert (sc["scenario"], sc["budgets.worker_group"], sc["versions.ray"]) == ("kill-one", 1, "2.60.0")
    assert sc["metrics.lost_steps"] == 3 and sc["metrics.ettr"] == approx(0.444444, abs=1e-6)

    fault = fr.faults.iloc[0]
    assert (fault["event"], fault["asked.rank"], fault["hit.pid"]) == ("injected", 1, 101)
    assert fault["delay_s"] == approx(0.05)

    a1, a2 = (row_of(fr.attempts, attempt=n) for n in (1, 2))
    assert (a1["ended"], a1["budget"], a1["decision"]) == ("failure", "worker_group", "RETRY")
    assert (a1["t_start"], a1["t_group_started"], a1["t_end"]) == (0.5, 1.0, 10.9)
    assert (a1["world_size"], a1["nodes"], a1["n_steps"]) == (2, ["n0", "n1"], 8)
    assert (a2["ended"], a2["restored_step"], a2["first_step"], a2["last_step"]) == ("finished", 5, 6, 10)
    assert a2["restored_checkpoint"] == "checkpoint_000005" and a2["t_first_step"] == 13.4

    assert len(fr.steps) == 2 * 13
    assert fr.steps["lost"].sum() == 2 * 3
    assert list(fr.checkpoints["event"]) == ["written", "reported", "registered"]
    decision = fr.decisions.iloc[0]
    assert (decision["state"], decision["budget"], decision["counts.worker_group"]) == ("RESTARTING", "worker_group", 1)
    assert dict(zip(fr.properties["property"], fr.properties["passed"])) == {
        "recovers": True, "budget_accounting": False}
    assert fr.recovery.iloc[0]["recovery_s"] == approx(3.45)


def test_frames_stack_folders_and_write(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    write_results(runs / "kill", kill_history(), SUMMARY)
    write_results(runs / "resume", kill_controller_history(), {})  # crashed before its summary
    fr = Frames.load(runs)
    assert list(fr.scenarios["scenario"]) == ["kill-one", "kill-one"]
    assert fr.properties["results"].nunique() == 1
    lost = row_of(fr.attempts, results=str(runs / "resume"), fit_index=1)
    assert (lost["ended"], lost["error_type"]) == ("fit_ended", "ActorDiedError")

    written = fr.to_csv(tmp_path / "csv") + fr.to_parquet(tmp_path / "pq")
    assert len(written) == 2 * len(Frames.names())
    back = pd.read_parquet(tmp_path / "pq" / "attempts.parquet")
    assert len(back) == len(fr.attempts) == 2 + 2
    assert len(pd.read_csv(tmp_path / "csv" / "steps.csv")) == len(fr.steps)


def test_missing_folder_is_an_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        Frames.load(tmp_path)


def test_lists_of_settings_with_mixed_values_are_written_as_json(tmp_path):
    """Seen on a real run: summary.json's `ray_settings` (a list of dicts whose values mix
    numbers, text and null) made pyarrow refuse the whole report."""
    from ftharness.reports.frames import _storable

    settings = [{"name": "max_failures", "value": 1, "source": "scenario"},
                {"name": "storage_path", "value": "/tmp/x", "source": "ftharness"},
                {"name": "controller_failure_limit", "value": None, "source": "ray"}]
    df = pd.DataFrame({"ray_settings": [settings, None], "nodes": [["n0", "n1"], ["n2"]]})
    _storable(df).to_parquet(tmp_path / "x.parquet", index=False)
    back = pd.read_parquet(tmp_path / "x.parquet")
    assert json.loads(back["ray_settings"][0]) == settings
    assert list(back["nodes"][0]) == ["n0", "n1"]
