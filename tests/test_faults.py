"""Every fault kind on the real shared cluster: the fault really happens, Ray
reacts as it would in production, and the history shows both.

Each test runs one scenario of the built-in catalog (scenarios/catalog), so the
catalog is exercised as the CI chaos suite too.
"""

import os

import pytest

from ftharness.history.records import read_events
from ftharness.harness.run.collect import catalog_dir

pytestmark = pytest.mark.cluster


def run(ftharness_run, name, **overrides):
    s = ftharness_run(os.path.join(catalog_dir(), f"{name}.yaml"), **overrides)
    assert all(f["landed"] for f in s["faults"]), [(f["kind"], f["status"], f["evidence"]) for f in s["faults"]]
    assert s["history"]["complete"], s["history"]["problems"]
    return s, read_events(s["results_dir"])


def kinds(events, *k):
    return [e for e in events if e["kind"] in k]


def failures(events):
    return [(e["budget"], e["decision"]) for e in kinds(events, "failure")]


def injected(events, kind):
    hits = [e for e in kinds(events, "fault_injected") if e["fault_kind"] == kind]
    assert hits, f"no {kind} was injected: {kinds(events, 'fault_skipped')}"
    return hits[0]


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False


@pytest.mark.full   # the core lane runs this scenario through the CLI (test_reports_logs) with these checks
def test_kill_worker_is_charged_to_max_failures(ftharness_run):
    assert_kill_worker_charged_to_max_failures(*run(ftharness_run, "kill-worker"))


def assert_kill_worker_charged_to_max_failures(s, ev):
    assert s["verdict"] == "PASS" and s["matches_expectation"], s["mismatches"]
    assert all(f["landed"] for f in s["faults"]) and s["history"]["complete"]
    hit = injected(ev, "kill_worker")["target_hit"]
    first_group = kinds(ev, "worker_group_started")[0]["workers"]
    assert hit["pid"] == next(w["pid"] for w in first_group if w["rank"] == 1)
    assert not pid_alive(hit["pid"])
    assert failures(ev) == [("worker_group", "RETRY")]
    # at step 5 exactly: no rank got past step 5 in the first attempt
    first = kinds(ev, "attempt_start")[0]["attempt_id"]
    assert max(e["step"] for e in kinds(ev, "step") if e["attempt_id"] == first) == 5


@pytest.mark.full
def test_crash_worker_raises_inside_the_train_function(ftharness_run):
    s, ev = run(ftharness_run, "crash-worker")
    assert s["matches_expectation"], s["mismatches"]
    err = kinds(ev, "worker_error")[0]
    assert err["rank"] == 0 and err["error_type"] == "ChaosCrash" and err["step"] == 4
    # the step-4 checkpoint was written but never reported
    first = kinds(ev, "attempt_start")[0]["attempt_id"]
    assert 4 in [e["step"] for e in kinds(ev, "checkpoint_written") if e["attempt_id"] == first]
    assert 4 not in [e["step"] for e in kinds(ev, "report") if e["attempt_id"] == first and e["checkpoint"]]
    assert failures(ev) == [("worker_group", "RETRY")]


@pytest.mark.full
def test_hang_worker_trips_the_health_check(ftharness_run):
    s, ev = run(ftharness_run, "hang-worker")
    assert s["matches_expectation"], s["mismatches"]
    assert injected(ev, "hang_worker")["target_hit"]["how"] == "SIGSTOP"
    state = next(e for e in kinds(ev, "controller_state") if e.get("error_type"))
    assert "WorkerHealthCheckTimeoutError" in state["worker_failures"].values()
    assert failures(ev) == [("worker_group", "RETRY")]


def test_kill_node_without_notice_is_charged_to_max_failures(ftharness_run, ftharness_cluster):
    s, ev = run(ftharness_run, "kill-node")
    assert s["matches_expectation"], s["mismatches"]
    hit = injected(ev, "kill_node")["target_hit"]
    import ray
    dead = [n for n in ray.nodes() if n["NodeID"] == hit["node_id"]]
    assert dead and not dead[0]["Alive"]
    assert failures(ev) == [("worker_group", "RETRY")]
    assert kinds(ev, "fault_action")[0]["detail"]["how"] == "add_node"  # capacity returned


def test_preemption_at_deadline_is_charged_to_preemption_budget(ftharness_run):
    s, ev = run(ftharness_run, "preempt-node")
    assert s["matches_expectation"], s["mismatches"]
    drain = injected(ev, "preempt_node")["target_hit"]
    kill = next(e for e in kinds(ev, "fault_action") if "dies" in e["action"])
    assert drain["how"] == "drain(PREEMPTION)" and kill["detail"]["ms_after_deadline"] >= 0
    assert failures(ev) == [("preemption", "RETRY")]
    assert s["budgets"] == {"worker_group": 0, "preemption": 1, "controller": 0}


@pytest.mark.full
def test_preemption_killed_before_deadline_is_an_ordinary_failure(ftharness_run):
    s, ev = run(ftharness_run, "preempt-node-early")
    assert s["matches_expectation"], s["mismatches"]
    kill = next(e for e in kinds(ev, "fault_action") if "dies" in e["action"])
    assert kill["detail"]["ms_after_deadline"] < 0
    assert failures(ev) == [("worker_group", "RETRY")]


@pytest.mark.full   # the core lane's partition is test_network's, with real packets dropped
def test_partitioned_node_is_detected_and_run_recovers(ftharness_run):
    s, ev = run(ftharness_run, "partition-node")
    assert s["matches_expectation"], s["mismatches"]
    hit = injected(ev, "partition_node")["target_hit"]
    assert hit["paused_pids"] >= 2 and hit["how"] == "SIGSTOP node"
    assert failures(ev) == [("worker_group", "RETRY")]
    second = kinds(ev, "worker_group_started")[1]["workers"]
    assert hit["node_id"] not in {w["node_id"] for w in second}


def test_starved_restart_is_charged_to_controller_budget(ftharness_run):
    s, ev = run(ftharness_run, "starve-resources")
    assert s["matches_expectation"], s["mismatches"]
    assert injected(ev, "starve_resources")["target_hit"]["cpus_requested"] >= 3  # every CPU, busy ones too
    assert failures(ev) == [("worker_group", "RETRY"), ("controller", "RAISE")]
    assert kinds(ev, "failure")[-1]["controller_failure"] == "WorkerGroupStartupTimeoutError"
    assert kinds(ev, "fault_healed")  # hogs released when the run ended


def test_killed_controller_is_resumed_by_a_second_fit(ftharness_run):
    s, ev = run(ftharness_run, "kill-controller")
    assert s["matches_expectation"], s["mismatches"]
    ends = kinds(ev, "run_end")
    assert [e["outcome"] for e in ends] == ["failed", "succeeded"]
    assert ends[0]["error_type"] == "ActorDiedError" and not kinds(ev, "failure")
    latest = [e for e in kinds(ev, "checkpoint_registered") if e["fit_index"] == 1][-1]
    starts = [e for e in kinds(ev, "worker_start") if e["fit_index"] == 2]
    assert starts and all(w["restored_checkpoint"] == latest["checkpoint"] for w in starts)


def test_corrupted_checkpoint_is_restored_silently(ftharness_run):
    """The catalog scenario with its worker killed by `ray.kill` (`graceful: true`), so the
    graceful path, which holds no handle to the controller's actor, is run for real too."""
    faults = [{"kind": "corrupt_checkpoint", "which": "latest", "how": "bitflip", "at": {"step": 5, "rank": 0}},
              {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5, "rank": 0}, "graceful": True}]
    s, ev = run(ftharness_run, "corrupt-checkpoint", faults=faults)
    assert s["matches_expectation"], s["mismatches"]
    kill = injected(ev, "kill_worker")["target_hit"]
    assert kill["how"] == "ray.kill" and not pid_alive(kill["pid"]), kill
    assert failures(ev) == [("worker_group", "RETRY")]
    hit = injected(ev, "corrupt_checkpoint")["target_hit"]
    assert hit["path"].startswith(s["storage_path"])
    restored = [e for e in kinds(ev, "worker_start") if e["restored_checkpoint"]]
    assert restored and all(e["restored_checkpoint"] == hit["checkpoint"] for e in restored)
    assert all(e["restored_intact"] is False for e in restored)
    assert "digest mismatch" in s["properties"]["exactly_once_restore"]["explanation"]


@pytest.mark.full
def test_elastic_group_goes_on_smaller_after_a_node_is_lost(ftharness_run):
    s, ev = run(ftharness_run, "elastic-shrink")
    assert s["matches_expectation"], s["mismatches"]
    groups = kinds(ev, "worker_group_started")
    sizes = [e["world_size"] for e in groups]
    # Ray 2.60 may start the first group below 3 (its coordinator's view lags); the last group
    # runs on what is left: at most the two surviving nodes, never the dead one
    dead = injected(ev, "kill_node")["target_hit"]["node_id"]
    assert 1 <= sizes[-1] <= 2 and dead not in {w["node_id"] for w in groups[-1]["workers"]}, sizes
    # the node's loss, then maybe startup timeouts while the coordinator still counted it
    f = failures(ev)
    assert f[0] == ("worker_group", "RETRY") and set(f[1:]) <= {("controller", "RETRY")}, f
    assert s["final_state"]["exact"] is True


@pytest.mark.full
def test_checkpoint_upload_errors_fail_the_attempt(ftharness_run):
    s, ev = run(ftharness_run, "storage-errors")
    assert s["matches_expectation"], s["mismatches"]
    assert injected(ev, "storage_errors")["target_hit"]["ops"] == ["write"]
    assert "injected partial write" in kinds(ev, "worker_error")[0]["error"]
    assert failures(ev)[0] == ("worker_group", "RETRY")


@pytest.mark.full
def test_snapshot_write_errors_are_fatal_controller_errors(ftharness_run):
    s, ev = run(ftharness_run, "storage-errors-snapshot")
    assert s["matches_expectation"], s["mismatches"]
    assert failures(ev) == [("none", "RAISE")]


@pytest.mark.full
def test_trigger_timing_is_recorded(ftharness_run):
    """Requested vs done, for a time trigger and an event trigger."""
    s = ftharness_run({"name": "timing", "landing_hold": False,  # fault 0 (error_rate 0) cannot land
                      "workload": {"num_workers": 2, "steps": 20, "step_delay_s": 0.1},
                      "failure_config": {"max_failures": 2},
                      "faults": [{"kind": "storage_errors", "ops": ["list"], "error_rate": 0.0,
                                  "duration_s": 1, "at": {"time_s": 2}},
                                 {"kind": "kill_worker", "target": {"rank": 0},
                                  "at": {"event": "checkpoint_registered", "nth": 3}}]})
    ev = read_events(s["results_dir"])
    done = kinds(ev, "fault_injected")
    assert len(done) == 2, kinds(ev, "fault_skipped")
    for e in done:
        assert 0 <= e["t_done"] - e["t_requested"] < 2.0
    start = kinds(ev, "run_start")[0]["t"]
    timed = next(e for e in done if e["fault"] == 0)
    assert abs(timed["t_requested"] - (start + 2)) < 1.0
    third = [e for e in kinds(ev, "checkpoint_registered")][2]
    evented = next(e for e in done if e["fault"] == 1)
    assert evented["t_requested"] == third["t"]


@pytest.mark.full
def test_ray_data_restart_replays_rows(ftharness_run):
    """Ray 2.60 keeps no data position: a restart replays its epoch (a finding)."""
    s, ev = run(ftharness_run, "ray-data-restart")
    assert s["matches_expectation"], s["mismatches"]
    findings = s["properties"]["shard_reassignment"]["findings"]
    assert any("replayed" in f for f in findings), findings
    assert s["final_state"]["exact"] is False


@pytest.mark.full
def test_recovery_times_agree_with_raw_timestamps(ftharness_run):
    """One worker kill and one preemption: the report's recovery times, recomputed
    here from the raw events (fault done -> first step of the next attempt)."""
    from ftharness.reports.metrics import recovery_table

    s = ftharness_run({"name": "kill-and-preempt",
                      "workload": {"num_workers": 2, "steps": 60, "checkpoint_every": 2, "step_delay_s": 0.1},
                      "failure_config": {"max_failures": 1, "max_preemption_failures": 1},
                      "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 4}},
                                 {"kind": "preempt_node", "target": {"rank": 0}, "at": {"step": 10},
                                  "notice_s": 2, "replace": True}]})
    assert s["matches_expectation"], s["mismatches"]
    ev = read_events(s["results_dir"])
    expected = []
    for fault in kinds(ev, "fault_injected"):
        old = {e["attempt_id"] for e in kinds(ev, "worker_group_started") if e["t"] < fault["t_done"]}
        first = min(e["t"] for e in kinds(ev, "step") if e["t"] > fault["t_done"] and e["attempt_id"] not in old)
        expected.append(first - fault["t_done"])
    table = recovery_table(ev)
    assert len(table) == 2
    assert list(table["recovery_s"].round(3)) == [round(x, 3) for x in expected]
    assert s["recovery_times_s"] == [round(x, 3) for x in expected]


@pytest.mark.full
def test_crash_on_restore_fires_on_the_nth_restore(ftharness_run):
    """crash_worker on_restore: rank 0 raises while restoring in the first restarted attempt."""
    s = ftharness_run({"name": "crash-on-restore",
                      "workload": {"num_workers": 2, "steps": 14, "checkpoint_every": 2, "step_delay_s": 0.1},
                      "failure_config": {"max_failures": 2},
                      # late enough that a checkpoint is registered (registration lags reports)
                      "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 9}},
                                 {"kind": "crash_worker", "target": {"rank": 0}, "where": "on_restore",
                                  "at": {"event": "restored", "nth": 1}}],
                      "expect": {"outcome": "succeeded", "properties": ["exactly_once_restore", "budget_accounting"]}})
    assert s["matches_expectation"], s["mismatches"]
    ev = read_events(s["results_dir"])
    crashes = [e for e in kinds(ev, "worker_error") if e["error_type"] == "ChaosCrash"]
    assert len(crashes) == 1, kinds(ev, "worker_error")
    assert crashes[0]["rank"] == 0 and crashes[0]["attempt"] == 2 and "on_restore" in crashes[0]["error"]
    assert failures(ev) == [("worker_group", "RETRY"), ("worker_group", "RETRY")]
    assert s["attempts"] == 3
