"""Fault landing evidence (faults/*.landing), pure: for each kind, a history
where the fault took effect lands, and one where the evidence is missing does
not. A fault that did not land makes the run INCONCLUSIVE (tests/test_verdict.py)."""

import pytest
from pydantic import TypeAdapter

from ftharness.faults import REGISTRY, FaultSpec, make_fault
from ftharness.faults.base import judge_landing

NODE = "n" * 56


def group(seq, aid="a1", pids=(10, 11), node=NODE):
    return {"seq": seq, "kind": "worker_group_started", "attempt_id": aid, "t": seq,
            "workers": [{"rank": r, "pid": p, "node_id": node} for r, p in enumerate(pids)]}


def injected(seq, fault=0, **hit):
    return {"seq": seq, "kind": "fault_injected", "fault": fault, "t": seq, "t_done": seq, "target_hit": hit}


def failure(seq, budget="worker_group", aid="a1", **kw):
    return {"seq": seq, "kind": "failure", "budget": budget, "decision": "RETRY", "t": seq, "attempt_id": aid,
            "error_type": kw.pop("error_type", "WorkerGroupError"), **kw}


def run_end(seq, outcome="succeeded", error_type=None):
    return {"seq": seq, "kind": "run_end", "outcome": outcome, "error_type": error_type, "t": seq}


def spec_of(kind, **args):
    """The dict a fault gets at run time: its validated spec model's dump (a target where it needs one)."""
    if "target" in REGISTRY[kind].Spec.model_fields:
        args.setdefault("target", {"rank": 1})
    spec = TypeAdapter(FaultSpec).validate_python({"kind": kind, "at": {"step": 1}, **args})
    return spec.model_dump(mode="json", exclude_none=True)


def land(kind, events, **spec):
    return judge_landing(make_fault(0, spec_of(kind, **spec)), events)


@pytest.mark.parametrize("kind", ["kill_worker", "hang_worker", "crash_worker"])
def test_worker_fault_lands_on_a_live_attempt_followed_by_a_failure(kind):
    events = [group(1), injected(2, pid=11, rank=1), failure(3), run_end(9)]
    got = land(kind, events)
    assert got.status == "landed" and got.budget == "worker_group" and got.failure_seq == 3
    assert "failure seq 3" in got.evidence


def test_worker_fault_without_a_failure_did_not_land():
    got = land("kill_worker", [group(1), injected(2, pid=11, rank=1), run_end(9)])
    assert got.status == "missed" and "no failure decision followed" in got.evidence


def test_kill_of_a_worker_whose_attempt_had_ended_did_not_land():
    events = [group(1), {"seq": 2, "kind": "worker_group_shutdown", "attempt_id": "a1"},
              injected(3, pid=11, rank=1), failure(4), run_end(9)]
    got = land("kill_worker", events)
    assert got.status == "missed" and "no running attempt" in got.evidence


def test_skipped_and_never_fired_faults_did_not_land():
    skipped = [{"seq": 1, "kind": "fault_skipped", "fault": 0, "reason": "rank 3 is not in the group"}]
    assert land("kill_worker", skipped).status == "missed"
    assert "rank 3" in land("kill_worker", skipped).evidence
    never = land("kill_worker", [group(1), run_end(2)])
    assert never.status == "missed" and "never fired" in never.evidence
    live = judge_landing(make_fault(0, spec_of("kill_worker")), [group(1)], final=False)
    assert live.status == "pending"


def test_node_fault_lands_only_if_the_node_hosted_ranks():
    events = [group(1), injected(2, node_id=NODE, ranks=[0, 1]), failure(3), run_end(9)]
    assert land("kill_node", events).status == "landed"
    other = [group(1), injected(2, node_id="m" * 56, ranks=[]), failure(3), run_end(9)]
    assert "hosted no rank" in land("kill_node", other).evidence


def preemption(kill_ms_after_deadline=None, failure_at=None, end_first=False):
    events = [group(1), injected(2, node_id=NODE, ranks=[0, 1], deadline_ms=5000)]
    if end_first:
        events.append(run_end(3))
    if kill_ms_after_deadline is not None:
        events.append({"seq": 4, "kind": "fault_action", "fault": 0, "action": "preempted node dies (fault 0)",
                       "t": 5, "detail": {"ms_after_deadline": kill_ms_after_deadline}})
    if failure_at is not None:
        events.append(dict(failure(5, budget="preemption"), t=failure_at))
    if not end_first:
        events.append(run_end(9))
    return events


def test_preemption_killed_at_the_deadline_expects_the_preemption_budget():
    got = land("preempt_node", preemption(kill_ms_after_deadline=12.0, failure_at=6.0))
    assert got.status == "landed" and got.budget == "preemption"


def test_preemption_killed_before_the_deadline_expects_max_failures():
    got = land("preempt_node", preemption(kill_ms_after_deadline=-2000.0, failure_at=3.5))
    assert got.status == "landed" and got.budget == "worker_group"


def test_preemption_waited_out_by_the_controller_expects_the_preemption_budget():
    got = land("preempt_node", preemption(failure_at=5.2))  # PreemptionError before the kill
    assert got.budget == "preemption"


def test_preempted_node_that_dies_after_the_run_ended_did_not_land():
    got = land("preempt_node", preemption(kill_ms_after_deadline=5.0, end_first=True))
    assert got.status == "missed" and "before the node died" in got.evidence


def test_corrupted_checkpoint_lands_when_a_restart_restores_it():
    hit = {"checkpoint": "checkpoint_x", "path": "/s/checkpoint_x/state.pt", "how": "bitflip"}
    restored = {"seq": 5, "kind": "worker_start", "rank": 0, "restored_checkpoint": "checkpoint_x",
                "restored_intact": False}
    reg = {"seq": 1, "kind": "checkpoint_registered", "checkpoint": "checkpoint_x", "path": "/s/checkpoint_x"}
    got = land("corrupt_checkpoint", [reg, group(1), injected(2, **hit), failure(3), restored, run_end(9)])
    assert got.status == "landed" and "digest mismatch" in got.evidence and got.budget is None
    unread = land("corrupt_checkpoint", [reg, group(1), injected(2, **hit), run_end(9)])
    assert unread.status == "missed" and "no restart restored it" in unread.evidence


def test_corrupted_snapshot_lands_when_a_later_fit_reads_it():
    hit = {"path": "/s/checkpoint_manager_snapshot.json", "how": "snapshot"}
    later = [{"seq": 4, "kind": "run_start", "fit_index": 2},
             dict(run_end(5, "failed", "ControllerError"), error="CheckpointManagerInitializationError: bad json")]
    assert land("corrupt_checkpoint", [injected(2, **hit), run_end(3, "failed")] + later).status == "landed"
    assert land("corrupt_checkpoint", [injected(2, **hit), run_end(3)]).status == "missed"


def test_storage_errors_land_when_an_error_reached_ray():
    action = {"seq": 3, "kind": "fault_action", "fault": 0, "action": "storage fault 0 reached Ray",
              "detail": {"errors_returned": 2, "delays": 0, "first": {"op": "write", "path": "/s/c/x"}}}
    assert land("storage_errors", [injected(2, ops=["write"]), action, run_end(9)]).status == "landed"
    healed = {"seq": 4, "kind": "fault_healed", "fault": 0, "detail": {"errors_returned": 0, "delays": 0}}
    got = land("storage_errors", [injected(2, ops=["write"]), healed, run_end(9)])
    assert got.status == "missed" and "no error was returned" in got.evidence


def test_starvation_lands_on_a_failed_worker_group_start():
    starved = failure(4, budget="controller", error_type="ControllerError",
                      controller_failure="WorkerGroupStartupTimeoutError", decision="RAISE")
    events = [group(1), injected(2, cpus_requested=3), failure(3), starved, run_end(9, "failed")]
    got = land("starve_resources", events)
    assert got.status == "landed" and got.budget == "controller" and got.failure_seq == 4
    assert land("starve_resources", [group(1), injected(2), failure(3), run_end(9)]).status == "missed"


def test_controller_kill_lands_when_fit_raises_actor_died():
    ctl = {"seq": 1, "kind": "controller_state", "source": "controller", "pid": 99, "t": 1}
    events = [ctl, injected(2, pid=99), run_end(3, "failed", "ActorDiedError")]
    assert land("kill_controller", events).status == "landed"
    assert land("kill_controller", [ctl, injected(2, pid=99), run_end(3)]).status == "missed"


def test_kill_controller_targets_only_its_own_runs_controller():
    from ftharness.faults.controller import own_controller_pid

    ctl = lambda pid: {"kind": "controller_state", "source": "controller", "pid": pid}
    start = {"kind": "run_start", "source": "harness"}
    assert own_controller_pid([start, ctl(11), ctl(11)]) == 11
    assert own_controller_pid([start, ctl(11), start, ctl(12)]) == 12   # the resumed fit's controller
    assert own_controller_pid([start, ctl(11), start]) is None          # new fit, controller not heard yet
    assert own_controller_pid([]) is None


# ------------------------------------------------------------------ attribution (issue 22, "What was seen" 1 and 4)
# Each of these landed on ddb9692: a fault took the first failure decision later in the same fit.
def hit_r1(**kw):
    return dict({"pid": 11, "rank": 1, "node_id": NODE, "attempt_id": "a1"}, **kw)


def test_a_failure_of_another_attempt_is_no_landing():
    events = [group(1), injected(2, **hit_r1()), {"seq": 3, "kind": "worker_group_shutdown", "attempt_id": "a1"},
              group(4, aid="a2", pids=(20, 21)), failure(5, aid="a2"), run_end(9)]
    got = land("kill_worker", events)
    assert got.status == "missed" and "belongs to attempt a2" in got.evidence


def test_a_kill_of_rank_0_does_not_land_for_a_scenario_targeting_rank_1():
    events = [group(1), injected(2, pid=10, rank=0, node_id=NODE, attempt_id="a1"), failure(3), run_end(9)]
    got = land("kill_worker", events)   # spec_of targets rank 1
    assert got.status == "missed" and "the scenario targets rank 1" in got.evidence


def test_an_empty_target_hit_is_no_live_target():
    for kind in ("kill_worker", "kill_node", "hang_worker"):
        got = land(kind, [group(1), injected(2), failure(3), run_end(9)])
        assert got.status == "missed" and "empty target_hit" in got.evidence, kind


def test_a_failure_outside_the_kinds_window_is_no_landing():
    late = dict(failure(3), t=2 + 61)
    got = land("kill_worker", [group(1), injected(2, **hit_r1()), late, run_end(99)])
    assert got.status == "missed" and "outside the kill_worker window of 60 s" in got.evidence
    recorded = dict(injected(2, **hit_r1()), window_s=0.5)   # the window the injector recorded wins
    got = land("kill_worker", [group(1), recorded, dict(failure(3), t=3), run_end(9)])
    assert got.status == "missed" and "outside the kill_worker window" in got.evidence


def test_a_node_fault_lands_only_on_the_node_of_the_named_rank():
    two = {"seq": 1, "kind": "worker_group_started", "attempt_id": "a1", "t": 1,
           "workers": [{"rank": 0, "pid": 10, "node_id": "m" * 56}, {"rank": 1, "pid": 11, "node_id": NODE}]}
    wrong = land("kill_node", [two, injected(2, node_id="m" * 56, ranks=[0]), failure(3), run_end(9)])
    assert wrong.status == "missed" and "the scenario targets rank 1" in wrong.evidence
    assert land("kill_node", [two, injected(2, node_id=NODE, ranks=[1]), failure(3), run_end(9)]).status == "landed"


def test_network_degrade_without_counted_packets_did_not_land():
    hit = {"node_id": NODE, "ranks": [0, 1], "attempt_id": "a1", "how": "nft drop"}
    step = {"seq": 3, "kind": "step", "rank": 1, "node_id": NODE, "attempt_id": "a1", "t": 3}
    healed = {"seq": 4, "kind": "fault_healed", "fault": 0, "detail": {"how": "rules removed"}}
    got = land("network_degrade", [group(1), injected(2, **hit), step, healed, run_end(9)], loss_pct=30)
    assert got.status == "missed" and "no packet counter was recorded" in got.evidence
    healed["detail"]["counters"] = {"dropped_packets": 5}
    got = land("network_degrade", [group(1), injected(2, **hit), step, healed, run_end(9)], loss_pct=30)
    assert got.status == "landed" and "5 packets dropped by the nft rule" in got.evidence


def test_preemption_without_a_deadline_is_not_charged_to_the_preemption_budget():
    events = preemption(kill_ms_after_deadline=12.0, failure_at=6.0)
    del events[1]["target_hit"]["deadline_ms"]
    got = land("preempt_node", events)
    assert got.status == "missed" and "recorded no deadline" in got.evidence and got.budget is None


def test_a_preemption_notice_counts_only_from_a_rank_on_the_drained_node():
    two = {"seq": 1, "kind": "worker_group_started", "attempt_id": "a1", "t": 1,
           "workers": [{"rank": 0, "pid": 10, "node_id": "m" * 56}, {"rank": 1, "pid": 11, "node_id": NODE}]}
    drain = injected(2, node_id=NODE, ranks=[1], deadline_ms=50_000)
    notice = {"seq": 3, "kind": "preemption_notice", "rank": 0, "node_id": "m" * 56, "attempt_id": "a1",
              "deadline_ms": 50_000, "t": 3}
    got = land("preempt_node", [two, drain, notice, run_end(9)])
    assert got.status == "missed" and "not the drained node's" in got.evidence
    notice.update(rank=1, node_id=NODE)
    assert land("preempt_node", [two, drain, notice, run_end(9)]).status == "landed"


def test_kill_controller_lands_only_on_this_runs_controller_pid_dying():
    ctl = {"seq": 1, "kind": "controller_state", "source": "controller", "pid": 99, "t": 1}
    other = land("kill_controller", [ctl, injected(2, pid=77), run_end(3, "failed", "ActorDiedError")])
    assert other.status == "missed" and "this run's controller is pid 99" in other.evidence
    named = dict(run_end(3, "failed", "ActorDiedError"), error="The actor died unexpectedly before finishing this task.\n\tclass_name: TrainController\n"
                                                             "\tpid: 123\n\tip: 10.0.0.1")
    got = land("kill_controller", [ctl, injected(2, pid=99), named])
    assert got.status == "missed" and "names pid 123" in got.evidence


def test_a_corrupted_snapshot_lands_only_on_a_recorded_read():
    hit = {"path": "/s/checkpoint_manager_snapshot.json", "how": "snapshot"}
    later = [{"seq": 4, "kind": "run_start", "fit_index": 2}, run_end(5, "succeeded")]
    got = land("corrupt_checkpoint", [injected(2, **hit), run_end(3, "failed")] + later)
    assert got.status == "missed" and "recorded no read of the damaged snapshot" in got.evidence


def test_starvation_after_its_hogs_were_healed_did_not_land():
    starved = failure(5, budget="controller", error_type="ControllerError",
                      controller_failure="WorkerGroupStartupTimeoutError", decision="RAISE")
    healed = {"seq": 4, "kind": "fault_healed", "fault": 0, "detail": {"hogs_killed": 3}}
    got = land("starve_resources", [group(1), injected(2, cpus_requested=3), healed, starved, run_end(9, "failed")])
    assert got.status == "missed" and "after the hogs were released" in got.evidence


def test_the_injector_records_the_victims_attempt_and_the_named_nodes_facts():
    from types import SimpleNamespace

    from ftharness.faults.base import FaultContext

    node = SimpleNamespace(node_id=NODE, ip="10.0.0.3", labels={"zone": "a"}, alive=True, is_head=False)
    cluster = SimpleNamespace(nodes=lambda: [node], node_index=lambda node_id: 1,
                              capabilities=frozenset({"nodes", "node_index"}))
    ctx = FaultContext(cluster=cluster, agents=None, history_path="", storage_dir="",
                       members=[{"rank": 0, "pid": 10, "node_id": NODE, "attempt_id": "a7"}])
    kill = make_fault(0, spec_of("kill_node", target={"ip": "10.0.0.3"}))
    hit = kill.attribution(ctx, {"node_id": NODE, "ranks": [0]})
    assert hit == {"node_id": NODE, "ranks": [0], "attempt_id": "a7", "ip": "10.0.0.3"}
    by_index = make_fault(0, spec_of("kill_node", target={"node": 1})).attribution(ctx, {"node_id": NODE})
    assert by_index["node_index"] == 1
    assert make_fault(0, spec_of("hang_worker")).window(30.0) == 90.0   # a hang waits for the health check
    assert make_fault(0, spec_of("kill_worker")).window(30.0) == 60.0


def test_network_counters_are_read_from_nft_and_tc_listings():
    from ftharness.harness.cluster.netns import nft_dropped, tc_stats

    nft = ('table inet ftharness {\n\tchain in_f {\n\t\ttype filter hook input priority filter; policy accept;\n'
           '\t\tiifname "eth0" numgen random mod 10000 < 3000 counter packets 12 bytes 3456 drop\n\t}\n'
           '\tchain out_f {\n\t\toifname "eth0" counter packets 5 bytes 100 drop\n\t}\n}\n')
    assert nft_dropped(nft) == 17
    tc = ("qdisc tbf 8001: root refcnt 2 rate 1Mbit burst 4Kb lat 100ms \n"
          " Sent 123456 bytes 789 pkt (dropped 3, overlimits 45 requeues 0) \n backlog 0b 0p requeues 0\n")
    assert tc_stats(tc) == [{"kind": "tbf", "bytes": 123456, "packets": 789, "dropped": 3, "overlimits": 45}]
