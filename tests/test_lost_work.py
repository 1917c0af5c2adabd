"""bounded_lost_work and monotonic_counters over synthetic histories (jobs with
the defects scenarios/synthetic.py plays: no checkpoint reported, nothing or
the oldest checkpoint restored, a counter reset) and the recorded ones in
tests/data; their scenario keys and their verdicts. Pure: no Ray."""

import copy
import json
import os

import pytest

from ftharness.errors import ScenarioError
from ftharness.history.records import read_history
from ftharness.reports.judgement import rejudge
from ftharness.scenarios.properties import CHECKS, Facts, applicable
from ftharness.scenarios.reference_data import WorkloadConfig
from ftharness.scenarios.schema import load_scenario, parse_scenario
from ftharness.scenarios.synthetic import DEFECTS, Fault, Plan, generate
from ftharness.scenarios.verdict import evaluate, expected_properties

DATA = os.path.join(os.path.dirname(__file__), "data")


def run(defect=None, steps=12, every=2, after=6, faults=None, max_failures=1):
    """A synthetic run of 2 workers killed once after `after` steps (by default)."""
    faults = [Fault("worker_group", after_steps=after)] if faults is None else faults
    return generate(Plan(WorkloadConfig(steps=steps, batch_size=4, checkpoint_every=every), num_workers=2,
                         failure_config={"max_failures": max_failures}, faults=faults, defect=defect))


def lost(events, context=None, **extra):
    return CHECKS["bounded_lost_work"](events, dict(context or {}, **extra))


def counters(events, context=None, names=("step", "count")):
    return CHECKS["monotonic_counters"](events, dict(context or {}, monotonic=list(names)))


def without(events, *kinds):
    return [e for e in events if e["kind"] not in kinds]


def user_job(events):
    """The history as a user job records it: no rows, epochs or workload config."""
    return [{k: v for k, v in e.items() if k not in ("rows", "n_rows", "epoch")} for e in events]


def scenario(every=2, **expect):
    return parse_scenario({"name": "k", "failure_config": {"max_failures": 1},
                           "workload": {"steps": 12, "batch_size": 4, "checkpoint_every": every},
                           "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 6}}],
                           "expect": {"outcome": "succeeded", **expect}})


def verdict(sc, syn, events=None):
    ctx = syn.context
    return evaluate(sc, syn.events if events is None else events,
                    {"outcome": ctx["outcome"], "error_type": ctx["error_type"], "error": None,
                     "return_value": {"acc": ctx["final"]}})


def recorded(name):
    folder = os.path.join(DATA, name)
    read, summary = read_history(folder), json.load(open(os.path.join(folder, "summary.json")))
    outcome = {"outcome": summary["outcome"], "error_type": summary.get("error_type"), "error": summary.get("error"),
               "return_value": {"acc": summary["final_state"]["accumulators"]}}
    return load_scenario(os.path.join(folder, "scenario.yaml")), read, outcome


# ----------------------------------------------------------- bounded_lost_work
def test_job_that_never_reports_a_checkpoint_fails_and_says_so():
    """The issue's job: saves to a local path, reports every step without a checkpoint, killed once."""
    syn = run("no_checkpoints", every=1)
    events = user_job(syn.events)
    r = lost(events)
    assert r.passed is False
    assert "no checkpoint was ever reported" in r.explanation
    assert "restored nothing after the lineage reached step 6: 6 step(s) lost (steps 1-6)" in r.explanation
    assert "fault 0 (kill_worker)" in r.explanation and "failure seq" in r.explanation
    assert CHECKS["exactly_once_restore"](events, {}).passed   # what every other property said


def test_restart_that_restores_nothing_after_a_registered_checkpoint_fails():
    syn = run("restore_nothing")
    r = lost(syn.events, syn.context)
    assert r.passed is False
    assert "a checkpoint was reported but not restored (checkpoint_f1_a1_s00004 at step 4" in r.explanation
    assert "registered at seq" in r.explanation and "no checkpoint was ever reported" not in r.explanation


def no_recorder(events):
    """The history as one recorded without the controller's recorder: no registration events,
    and no event of the controller's at all."""
    return [dict(e, source="harness") if e.get("source") == "controller" else e
            for e in without(events, "checkpoint_registered")]


def test_without_registration_events_an_older_reported_checkpoint_must_be_restored():
    syn = run("restore_nothing")
    r = lost(no_recorder(syn.events), syn.context)
    assert r.passed is False
    # step 4 may still have been in flight; step 2 was surely registered
    assert "reported but not restored (checkpoint_f1_a1_s00002 at step 2, reported at seq" in r.explanation


def test_where_the_controller_records_registrations_none_before_a_restart_means_none_to_restore():
    """A real exploration (Ray Data, rank 1's node frozen right after both ranks reported step 1):
    the controller never collected rank 1's report, so step 1 was never registered and the restart
    restored nothing. That is no violation; the older rule took the reports alone and said it was."""
    syn = run("restore_nothing")
    r = lost(without(syn.events, "checkpoint_registered"), syn.context)
    assert "reported but not restored" not in r.explanation, r.explanation   # (the 6 steps break the bound)
    folder = os.path.join(DATA, "partition-unregistered")    # the real run: 2 steps lost, bound 2
    judged = rejudge(folder)
    assert judged["properties"]["bounded_lost_work"]["status"] == "passed", judged["properties"]["bounded_lost_work"]


def test_restoring_before_the_first_checkpoint_was_registered_is_no_violation():
    syn = run("restore_nothing", after=1)   # killed at step 2 before its checkpoint was registered
    r = lost(syn.events, syn.context)
    assert r.passed, r.explanation
    assert "restored nothing after the lineage reached step 1: 1 step(s) lost" in "".join(r.findings)


def test_restoring_a_checkpoint_far_older_than_the_cadence_fails_naming_recovery_fault_and_bound():
    syn = run("restore_oldest", after=9)
    r = lost(syn.events, syn.context)
    assert r.passed is False
    seq = [e["seq"] for e in syn.events if e["kind"] == "failure"][0]
    assert r.violations == [
        f"attempt 2 (recovery from fault 0 (kill_worker), failure seq {seq} (attempt 1, WorkerGroupError)) "
        f"restored step 2 (checkpoint_f1_a1_s00002) after the lineage reached step 9: 7 step(s) lost (steps 3-9), "
        f"over the bound of 4 (checkpoint cadence 2 (workload.checkpoint_every) + 2 for a checkpoint not yet "
        f"registered when the failure hit; expect.max_lost_steps sets another)"]


def test_default_bound_is_the_cadence_plus_one_interval_for_registration():
    """From the scenario (the recorded checkpoint_every), never from the run judged."""
    syn = run(every=3, after=5)   # checkpoints at 3, 6, ...: killed after step 5, restores 3
    r = lost(syn.events, syn.context)
    assert r.passed, r.explanation
    assert "at most 2 step(s) lost per restart, within the bound of 6 (checkpoint cadence 3 " \
           "(workload.checkpoint_every) + 3 for a checkpoint not yet registered" in r.explanation
    # registration events change nothing: the bound is the scenario's
    r = lost(without(syn.events, "checkpoint_registered"), syn.context)
    assert r.passed and "within the bound of 6" in r.explanation
    # a user job states no cadence: the gaps between the checkpoints it reported are its cadence
    r = lost(user_job(syn.events))
    assert r.passed and "within the bound of 6 (checkpoint cadence 3 (the largest gap between the job's " \
                        "reported checkpoints)" in r.explanation


def test_the_recorded_runs_lose_within_the_default_bound():
    """tests/data: Ray registers a checkpoint about one report later; the kill
    at step 5 loses steps 3-5 (step 4's checkpoint was reported, not yet registered)."""
    for name, text in [("kill-worker", "restored step 2 (checkpoint_2026-11-30_10-35-23.927551) after the lineage "
                                       "reached step 5: 3 step(s) lost (steps 3-5)"),
                       ("preempt-node", "restored step 26 (checkpoint_2026-11-30_10-36-50.504067) after the "
                                        "lineage reached step 28: 2 step(s) lost (steps 27-28)")]:
        _, read, _ = recorded(name)
        r = lost(read.events)
        assert r.passed, r.explanation
        assert "within the bound of 4 (checkpoint cadence 2" in r.explanation
        assert any(text in f for f in r.findings), r.findings
    r = lost(recorded("kill-worker")[1].events, max_lost_steps=2)
    assert not r.passed and "3 step(s) lost (steps 3-5), over the bound of 2 (expect.max_lost_steps)" in r.explanation


def test_explicit_max_lost_steps_is_the_bound():
    syn = run(after=5)   # restores 4 after step 5: 1 step lost
    assert lost(syn.events, syn.context, max_lost_steps=1).passed
    r = lost(syn.events, syn.context, max_lost_steps=0)
    assert not r.passed and "over the bound of 0 (expect.max_lost_steps)" in r.explanation
    # a job without checkpoints may declare what it can afford to lose
    none = user_job(run("no_checkpoints", every=1).events)
    assert lost(none, max_lost_steps=6).passed
    assert "over the bound of 5 (expect.max_lost_steps)" in lost(none, max_lost_steps=5).explanation


def test_a_resumed_fit_is_a_restart_too():
    kill = [Fault("controller_kill", after_steps=5)]
    r = lost(run(faults=kill).events)
    assert r.passed and any(f.startswith("fit 2 attempt 1 (recovery from fault 0 (kill_controller))")
                            for f in r.findings), r.findings
    r = lost(run("restore_oldest", faults=[Fault("controller_kill", after_steps=9)]).events)
    assert not r.passed and r.explanation.startswith("fit 2 attempt 1 (recovery from fault 0 (kill_controller))")
    assert "7 step(s) lost (steps 3-9), over the bound of 4" in r.explanation


def test_every_restart_of_a_cascade_is_judged():
    faults = [Fault("worker_group", after_steps=5), Fault("worker_group", after_steps=3)]
    r = lost(run("restore_oldest", faults=faults, max_failures=2, every=1).events)
    assert not r.passed and len(r.violations) == 2, r.violations
    assert r.violations[1].startswith("attempt 3") and "restored step 1" in r.violations[1]


def test_no_restart_or_no_steps_is_not_judged():
    r = lost(run(faults=[]).events)
    assert r.passed is None and r.status == "not_judged" and "no restart" in r.explanation
    raised = run(max_failures=0)   # the kill exhausts the budget: no restart after the last failure
    assert raised.context["outcome"] == "failed" and "no restart" in lost(raised.events).explanation
    r = lost(without(run().events, "step"))
    assert r.passed is None and "no step was recorded" in r.explanation


def test_lost_work_nothing_bounds_is_not_judged():
    """Killed before any checkpoint, then the run raised: nothing says what the
    job could have kept."""
    syn = run(faults=[Fault("worker_group", after_steps=1), Fault("worker_group", after_steps=1)], every=4)
    r = lost(user_job(syn.events))   # a user job: no cadence stated, none reported
    assert r.passed is None and "no bound: no checkpoint was reported" in r.explanation


def test_an_unjudged_bounded_lost_work_makes_an_expecting_run_inconclusive():
    syn = run()
    s = verdict(scenario(properties=["bounded_lost_work"]), syn, without(syn.events, "step"))
    assert s["verdict"] == "INCONCLUSIVE"
    assert "property bounded_lost_work not judged: no step was recorded: the lost work is unknown" in s["inconclusive"]


def test_verdict_fails_the_job_without_checkpoints_by_default():
    syn = run("no_checkpoints", every=1)
    sc = scenario(every=1)
    assert "bounded_lost_work" in expected_properties(sc)
    s = verdict(sc, syn)
    assert s["verdict"] == "FAIL"
    assert [m for m in s["mismatches"] if "bounded_lost_work" in m and "no checkpoint was ever reported" in m]
    assert verdict(scenario(), run())["verdict"] == "PASS"


def test_bounded_lost_work_is_expected_where_a_restart_is():
    base = dict(reference_workload=True, retried=True, expect_outcome="succeeded")
    assert "bounded_lost_work" in applicable(Facts(restarts=True, **base))
    assert "bounded_lost_work" not in applicable(Facts(restarts=False, **base))
    # a run expected to fail may raise before any restart
    assert "bounded_lost_work" not in applicable(Facts(restarts=True, **dict(base, expect_outcome="failed")))
    assert "bounded_lost_work" not in expected_properties(parse_scenario({"name": "quiet"}))


# ---------------------------------------------------------- monotonic_counters
def test_counter_reset_by_a_restart_fails():
    syn = run("counter_reset")
    r = counters(syn.events)
    assert r.passed is False
    assert r.violations[0] == ("attempt 2 rank 0 reset count after restoring step 4: 8.0 at step 6, "
                               "below 16.0 at step 4 (attempt 1)")
    assert verdict(scenario(monotonic=["count"]), syn)["verdict"] == "FAIL"


def test_counters_that_grow_over_the_lineage_pass_across_rollbacks():
    syn = run(after=5)   # step 5 redone: count goes back in time, never in the lineage
    r = counters(syn.events)
    assert r.passed, r.explanation
    assert "step, count never decreased over the kept lineage (attempt 1: 1-4, attempt 2: 5-12)" in r.explanation
    _, read, _ = recorded("kill-worker")
    assert counters(read.events, names=["step", "count", "sum_ids"]).passed


def test_decrease_within_an_attempt_fails():
    events = copy.deepcopy(run().events)
    report = [e for e in events if e["kind"] == "report" and e["rank"] == 1 and e["step"] == 10][0]
    report["metrics"]["step"] = 3
    r = counters(events)
    assert not r.passed and r.explanation == "attempt 2 rank 1: step went down from 8 at step 8 to 3 at step 10"


def test_a_declared_counter_never_reported_is_named():
    r = counters(run().events, names=["count", "epochs_done"])
    assert r.passed and r.explanation.endswith("; declared but never reported: epochs_done")
    r = counters(run("counter_reset").events, names=["count", "epochs_done"])
    assert not r.passed and "declared but never reported: epochs_done" in r.explanation


def test_values_that_are_no_number_are_not_compared():
    events = copy.deepcopy(run().events)
    for e in events:
        if e["kind"] == "report":
            e["metrics"]["done"] = True
    r = counters(events, names=["reason", "done", "step"])
    assert r.passed
    # reports at steps 2, 4 (attempt 1) and 6-12 (attempt 2), on 2 ranks
    assert any(f.startswith("reason: 12 value(s) not a number") for f in r.findings), r.findings
    assert any(f.startswith("done: 12 value(s) not a number") for f in r.findings), r.findings
    assert "never decreased" in r.explanation and "step" in r.explanation


def test_counters_not_declared_or_never_reported_are_not_judged():
    syn = run()
    r = CHECKS["monotonic_counters"](syn.events, syn.context)
    assert r.passed is None and "no counter was declared monotonic" in r.explanation
    r = counters(syn.events, names=["epochs_done"])
    assert r.passed is None and "no report carried a declared counter (epochs_done)" in r.explanation
    r = counters(without(syn.events, "step"))
    assert r.passed is None and "no step was recorded" in r.explanation
    one = run(faults=[], steps=2)   # one report per rank: nothing to compare
    r = counters(one.events)
    assert r.passed is None and "no declared counter was reported at two steps" in r.explanation


def test_an_unjudged_monotonic_counters_makes_the_run_inconclusive():
    sc = scenario(monotonic=["epochs_done"])
    assert "monotonic_counters" in expected_properties(sc)
    s = verdict(sc, run())
    assert s["verdict"] == "INCONCLUSIVE"
    assert "property monotonic_counters not judged: no report carried a declared counter (epochs_done)" \
        in s["inconclusive"]
    assert verdict(scenario(monotonic=["step", "count"]), run())["verdict"] == "PASS"


def test_monotonic_counters_is_expected_only_when_counters_are_declared():
    base = dict(reference_workload=True, restarts=True, retried=True, expect_outcome="succeeded")
    assert "monotonic_counters" not in applicable(Facts(**base))
    assert "monotonic_counters" in applicable(Facts(monotonic=True, **base))
    assert "monotonic_counters" not in expected_properties(scenario())


# ------------------------------------------------------------------- scenario
def test_scenario_keys_validate():
    sc = scenario(max_lost_steps=0, monotonic=["epoch", "samples"])
    assert sc.expect.max_lost_steps == 0 and sc.expect.monotonic == ["epoch", "samples"]
    for bad, field in [({"max_lost_steps": -1}, "expect.max_lost_steps"),
                       ({"max_lost_steps": "3"}, "expect.max_lost_steps"),
                       ({"max_lost_steps": True}, "expect.max_lost_steps"),
                       ({"monotonic": "epoch"}, "expect.monotonic"),
                       ({"monotonic": [""]}, "expect.monotonic[0]"), ({"monotonic": [3]}, "expect.monotonic[0]")]:
        with pytest.raises(ScenarioError) as e:
            scenario(**bad)
        assert str(e.value).startswith(f"scenario: {field}:"), str(e.value)


def test_scenario_keys_reach_the_checks():
    from ftharness.scenarios.verdict import check_context

    sc = scenario(max_lost_steps=3, monotonic=["count"])
    ctx = check_context(sc, [], {}, None)
    assert ctx["max_lost_steps"] == 3 and ctx["monotonic"] == ["count"]
    assert check_context(scenario(), [], {}, None)["monotonic"] == []


def test_every_defect_is_played():
    assert set(DEFECTS) == {"no_checkpoints", "restore_nothing", "restore_oldest", "counter_reset"}
    for defect in DEFECTS:
        events = run(defect).events
        assert any(e["kind"] == "worker_start" and e["attempt"] == 2 for e in events), defect
