"""Landings on the release that fixed a known bug (issue 36), on real histories and their edits.

A fixed release shows a fault's effect differently: a starvation that the 60 s start timeout of
2.54 outlasts makes the restart wait instead of fail; a deleted checkpoint folder is refused at
resume (2.56) instead of restored. Each real run must land and PASS; each edit that takes away
the evidence must not land (INCONCLUSIVE), so the new rules can fail. Pure: no Ray."""

import copy
import os

from ftharness.reports import mutation

DATA = os.path.join(os.path.dirname(__file__), "data")


def judged(tmp_path, name, events, scenario, what="real"):
    m = mutation.Mutant(name, "edit", "-", "-", what, events)
    return mutation.judge(m, scenario, str(tmp_path / what.replace(" ", "-")))


# ------------------------------------------------------------------ starve_resources on 2.54
def starve_run():
    """(events, scenario) of tests/data/start-timeout-254: Ray 2.54.0, hogs queued for 40 s after
    step 3, rank 1 killed at step 4; the restart began scheduling at once, 3 hogs answered at the
    heal, and the worker group started after they were killed (the 60 s start timeout outlasted
    the wait)."""
    return mutation.load(os.path.join(DATA, "start-timeout-254"))


def heal_and_start(events):
    heal = next(e for e in events if e["kind"] == "fault_healed" and e.get("fault") == 0)
    start = [e for e in events if e["kind"] == "attempt_start"][-1]
    return heal, start


def test_a_start_that_waited_out_the_starvation_lands_it(tmp_path):
    events, scenario = starve_run()
    out = judged(tmp_path, "start-timeout-254", events, scenario)
    assert out.verdict == "PASS", out.reasons


def test_a_start_that_waited_less_than_the_least_wait_does_not(tmp_path):
    events, scenario = starve_run()
    edited = copy.deepcopy(events)
    heal, start = heal_and_start(edited)
    start["t"] = heal["t"] - 1.0             # began 1 s before the heal: no proof it waited for the hogs
    out = judged(tmp_path, "start-timeout-254", edited, scenario, "short wait")
    assert out.verdict == "INCONCLUSIVE" and any("starve_resources) did not land" in r for r in out.reasons), out.reasons


def test_no_hog_killed_at_the_heal_is_no_starvation(tmp_path):
    events, scenario = starve_run()
    edited = copy.deepcopy(events)
    heal, _ = heal_and_start(edited)
    heal["detail"] = dict(heal["detail"], hogs_killed=0)
    out = judged(tmp_path, "start-timeout-254", edited, scenario, "no hogs")
    assert out.verdict == "INCONCLUSIVE" and any("starve_resources) did not land" in r for r in out.reasons), out.reasons


def test_hogs_that_held_no_cpu_at_the_heal_are_no_starvation(tmp_path):
    for running in (0, None):
        events, scenario = starve_run()
        edited = copy.deepcopy(events)
        heal, _ = heal_and_start(edited)
        heal["detail"] = {k: v for k, v in dict(heal["detail"], hogs_running=running).items() if v is not None}
        out = judged(tmp_path, "start-timeout-254", edited, scenario, f"running {running}")
        assert out.verdict == "INCONCLUSIVE" and any("starve_resources) did not land" in r for r in out.reasons), \
            out.reasons


def test_a_group_that_started_before_the_heal_did_not_wait_for_it(tmp_path):
    events, scenario = starve_run()
    edited = copy.deepcopy(events)
    heal, start = heal_and_start(edited)
    group = next(e for e in edited if e["kind"] == "worker_group_started" and e["attempt_id"] == start["attempt_id"])
    edited.remove(heal)                      # the heal comes after the group now
    edited.insert(edited.index(group) + 1, heal)
    out = judged(tmp_path, "start-timeout-254", edited, scenario, "group before heal")
    assert out.verdict != "PASS" and any("starve_resources) did not land" in r for r in out.reasons), out.reasons


# ------------------------------------------------------------------ a deleted folder refused at resume (2.56+)
def resume_run():
    """(events, scenario) of tests/data/resume-missing-260: Ray 2.60.0, the latest checkpoint's
    folder deleted at step 4, the controller SIGKILLed at step 5 and fit() called again; the new
    controller's constructor raised CheckpointManagerInitializationError naming the folder."""
    return mutation.load(os.path.join(DATA, "resume-missing-260"))


def last_end(events):
    return [e for e in events if e["kind"] == "run_end"][-1]


def test_a_resume_refused_for_the_deleted_folder_lands_it_and_passes(tmp_path):
    events, scenario = resume_run()
    end = last_end(events)
    assert end["error_cause"] == "CheckpointManagerInitializationError" and end["error_type"] == "ActorDiedError"
    out = judged(tmp_path, "resume-missing-260", events, scenario)
    assert out.verdict == "PASS", out.reasons


def test_a_resume_that_names_neither_the_folder_nor_the_check_does_not_land_it(tmp_path):
    events, scenario = resume_run()
    edited = copy.deepcopy(events)
    end = last_end(edited)
    end["error"] = "The actor died because of an error raised in its creation task, ray::TrainController.__init__()"
    out = judged(tmp_path, "resume-missing-260", edited, scenario, "anonymous error")
    assert out.verdict == "INCONCLUSIVE" and any("corrupt_checkpoint) did not land" in r for r in out.reasons), out.reasons


def test_a_constructor_that_raised_something_else_fails_the_expected_error(tmp_path):
    """Ray 2.54-2.55: the check's own error could not be built (TypeError); the refusal is there,
    the error a user gets is not the one that names the folder."""
    events, scenario = resume_run()
    edited = copy.deepcopy(events)
    last_end(edited)["error_cause"] = "TypeError"
    out = judged(tmp_path, "resume-missing-260", edited, scenario, "typeerror")
    assert out.verdict == "FAIL" and any("its constructor raised TypeError" in r for r in out.reasons), out.reasons
