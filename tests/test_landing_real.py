"""Faults that cannot land make a real run INCONCLUSIVE (exit 3), each with its
reason named, one per fault family; and the landing hold makes the same fault
land: a spot node preempted at the very last step still hits the job, and Ray
charges it to the preemption budget."""

import pytest

from ftharness.harness.run.runner import exit_code

pytestmark = pytest.mark.cluster

LAST_STEP_PREEMPTION = {"kind": "preempt_node", "target": {"rank": 1}, "at": {"step": 8}, "notice_s": 4,
                        "replace": True}


def test_faults_that_cannot_land_make_the_run_inconclusive(ftharness_run):
    s = ftharness_run({
        "name": "cannot-land",
        "landing_hold": False,  # the job may outrun its faults
        "workload": {"num_workers": 2, "steps": 8, "checkpoint_every": 2, "num_to_keep": 1},
        "failure_config": {"max_failures": 1, "max_preemption_failures": 1, "controller_failure_limit": 1},
        "faults": [
            {"kind": "corrupt_checkpoint", "which": "oldest", "at": {"step": 1}},            # checkpoint
            {"kind": "storage_errors", "ops": ["delete"], "path_glob": "*/no-such-file*",   # storage
             "at": {"step": 2}},
            {"kind": "starve_resources", "at": {"step": 3}, "duration_s": 1},              # resources
            dict(LAST_STEP_PREEMPTION, notice_s=20),                                        # node
            {"kind": "kill_worker", "target": {"rank": 0}, "at": {"time_s": 500}},          # process
            {"kind": "kill_controller", "at": {"time_s": 500}},                             # controller
        ]})
    assert s["outcome"] == "succeeded"
    assert s["verdict"] == "INCONCLUSIVE" and exit_code(s) == 3, s["mismatches"]
    why = {f["index"]: f["evidence"] for f in s["faults"]}
    assert not any(f["landed"] for f in s["faults"]), why
    assert "skipped: no registered checkpoint exists yet" in why[0]
    assert "no error was returned" in why[1]
    assert "no worker-group start failed" in why[2]
    assert "the run ended" in why[3] and "before the node died" in why[3]
    assert "never fired" in why[4] and "never fired" in why[5]
    for i in range(6):
        assert any(f"fault {i} (" in r for r in s["inconclusive"]), s["inconclusive"]


@pytest.mark.full
def test_landing_hold_makes_a_last_step_preemption_land(ftharness_run):
    s = ftharness_run({
        "name": "preempt-last-step",
        "workload": {"num_workers": 2, "steps": 8, "checkpoint_every": 2},
        "failure_config": {"max_failures": 0, "max_preemption_failures": 1},
        "faults": [LAST_STEP_PREEMPTION]})
    assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]
    (fault,) = s["faults"]
    assert fault["landed"] and fault["expected_budget"] == "preemption", fault
    assert s["budgets"] == {"worker_group": 0, "preemption": 1, "controller": 0}
    assert s["attempts"] == 2
