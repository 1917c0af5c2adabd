"""no_leftovers (pure): the train_leftovers sample after the last fit() is what it judges; a
planted actor or placement group fails it, a missing sample leaves it not judged."""

from ftharness.history.triggers import ArmedTrigger
from ftharness.scenarios.properties import OPT_IN, PROPERTIES, Facts, applicable
from ftharness.scenarios.properties.no_leftovers import check


def history(sample=None, extra_fit=False):
    ev = [{"seq": 1, "kind": "run_start", "fit_index": 1, "t": 1.0},
          {"seq": 2, "kind": "run_end", "fit_index": 1, "outcome": "failed", "t": 9.0}]
    if extra_fit:
        ev += [{"seq": 3, "kind": "train_leftovers", "fit_index": 1, "waited_s": 15.0, "settle_s": 15.0,
                "actors": [{"class_name": "TrainController", "pid": 7}], "placement_groups": []},
               {"seq": 4, "kind": "run_start", "fit_index": 2, "t": 20.0},
               {"seq": 5, "kind": "run_end", "fit_index": 2, "outcome": "succeeded", "t": 30.0}]
    if sample is not None:
        ev.append({"seq": 10, "kind": "train_leftovers", "fit_index": 2 if extra_fit else 1, "settle_s": 15.0,
                   "waited_s": 0.5, **sample})
    return ev


def test_nothing_left_passes():
    r = check(history({"actors": [], "placement_groups": []}), {})
    assert r.passed is True and "nothing of the run alive" in r.explanation


def test_a_leftover_actor_fails_naming_it():
    r = check(history({"actors": [{"class_name": "PlacementGroupCleaner", "pid": 42}], "placement_groups": []}), {})
    assert r.passed is False and "PlacementGroupCleaner" in r.explanation and "pid 42" in r.explanation


def test_a_leftover_placement_group_fails():
    r = check(history({"actors": [], "placement_groups": [{"state": "PENDING", "bundles": 3}]}), {})
    assert r.passed is False and "placement group (PENDING)" in r.explanation


def test_no_sample_is_not_judged():
    assert check(history(), {}).passed is None
    assert check([], {}).passed is None


def test_a_sample_of_an_earlier_fit_is_no_evidence_for_the_last():
    assert check(history(extra_fit=True), {}).passed is None
    assert check(history({"actors": [], "placement_groups": []}, extra_fit=True), {}).passed is True


def test_a_malformed_sample_is_not_judged():
    assert check(history({"actors": "none", "placement_groups": []}), {}).passed is None


def test_it_is_opt_in():
    facts = Facts(reference_workload=True, restarts=True, retried=True, expect_outcome="succeeded")
    assert "no_leftovers" in PROPERTIES and "no_leftovers" in OPT_IN
    assert "no_leftovers" not in applicable(facts)


def test_attempt_scheduling_fires_on_the_attempt_start_without_holding():
    t = ArmedTrigger(fault=0, event="attempt_scheduling")
    assert t.matches({"kind": "worker_group_started", "fit_index": 1, "attempt_id": "a"}) == (False, False)
    assert t.matches({"kind": "attempt_start", "fit_index": 1, "attempt_id": "a"}) == (True, False)


def test_it_judges_a_history_model_as_the_verdict_hands_it():
    from ftharness.history.model import as_history

    r = check(as_history(history({"actors": [{"class_name": "PlacementGroupCleaner"}], "placement_groups": []})), {})
    assert r.passed is False
