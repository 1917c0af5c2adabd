"""The causal model's rules that hold a record against what was declared and done
(history/causal_declared.py): each planted violation in a recorded real history
(tests/data, re-sealed so that only the rules decide) must not PASS, with the rule
named; each correct edit (a control) must still PASS. Pure: no Ray."""

import copy
import json
import os

import pytest

from ftharness.history.records import read_history, sealed_lines
from ftharness.reports.judgement import rejudge

DATA = os.path.join(os.path.dirname(__file__), "data")


def load(name):
    events = [copy.deepcopy(e) for e in read_history(os.path.join(DATA, name)).events if e.get("kind") != "history_end"]
    with open(os.path.join(DATA, name, "scenario.yaml")) as f:
        return events, f.read()


def judged(tmp_path, events, scenario_text):
    folder = tmp_path / "run"
    folder.mkdir(exist_ok=True)
    eseq = {}
    out = []
    for e in sorted(events, key=lambda e: e.get("seq", 0)):
        e = dict(e)
        if e.get("emitter"):
            eseq[e["emitter"]] = eseq.get(e["emitter"], 0) + 1
            e["eseq"] = eseq[e["emitter"]]
        out.append(e)
    (folder / "history.jsonl").write_bytes(b"".join(x + b"\n" for x in sealed_lines(out, renumber=True)))
    (folder / "scenario.yaml").write_text(scenario_text)
    s = rejudge(str(folder))
    return s["verdict"], list(s.get("mismatches") or []) + list(s.get("inconclusive") or [])


def of(events, kind, **match):
    return [e for e in events if e.get("kind") == kind and all(e.get(k) == v for k, v in match.items())]


def attempts(events):
    return [e["attempt_id"] for e in of(events, "attempt_start")]


def notice_after_drain(events, rank=1, dt=0.3, deadline_delta=0):
    """A preemption_notice taken by `rank` dt s after preempt-node's drain, with the drain's deadline."""
    drain = of(events, "fault_injected")[0]
    w = next(e for e in events if e.get("kind") == "step" and e.get("rank") == rank and e["t"] > drain["t"] + dt)
    n = {k: w[k] for k in ("source", "run", "fit_index", "attempt", "attempt_id", "rank", "world_size", "node_id",
                           "pid", "emitter")}
    n.update(kind="preemption_notice", t=w["t"] + 0.001, step=w["step"],
             deadline_ms=drain["target_hit"]["deadline_ms"] + deadline_delta, seq=w["seq"] + 0.5)
    events.append(n)
    return n


def shift_process(events, emitter, d):
    for e in events:
        if e.get("emitter") == emitter:
            e["t"] += d


# ------------------------------------------------------------------ controls
@pytest.mark.parametrize("name", ["kill-worker", "preempt-node"])
def test_the_recorded_runs_pass(tmp_path, name):
    events, text = load(name)
    assert judged(tmp_path, events, text)[0] == "PASS"


def test_a_notice_with_its_drains_deadline_passes(tmp_path):
    events, text = load("preempt-node")
    notice_after_drain(events, rank=1)
    notice_after_drain(events, rank=0)   # get_preemption_info is a broadcast: every rank takes it
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "PASS", why


# ------------------------------------------------------------------ planted violations
def test_a_notice_no_drain_gave_fails(tmp_path):
    events, text = load("preempt-node")
    notice_after_drain(events, deadline_delta=60_000)
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: notice" in w for w in why), why


def test_a_notice_before_its_drain_fails(tmp_path):
    events, text = load("preempt-node")
    n = notice_after_drain(events)
    drain = of(events, "fault_injected")[0]
    start = next(e for e in events if e.get("kind") == "worker_start" and e.get("emitter") == n["emitter"])
    n["t"], n["seq"], n["step"] = start["t"] + 0.5, start["seq"] + 0.5, 0   # before any step: before the drain
    assert n["t"] < drain["t"] - 3
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: notice" in w for w in why), why


def test_a_drain_shorter_than_the_scenarios_notice_is_inconclusive(tmp_path):
    events, text = load("preempt-node")
    drain = of(events, "fault_injected")[0]
    drain["target_hit"]["deadline_ms"] -= 2000    # 1 s of notice where the scenario asks 3 s
    kill = of(events, "fault_action")[0]
    kill["detail"]["ms_after_deadline"] += 2000   # (the derived field agrees with the edit)
    verdict, why = judged(tmp_path, events, text)
    assert verdict in ("INCONCLUSIVE", "FAIL") and any("model: fault-notice" in w for w in why), why


def test_a_drain_recorded_after_its_node_died_is_inconclusive(tmp_path):
    events, text = load("preempt-node")
    drain = of(events, "fault_injected")[0]
    kill = of(events, "fault_action")[0]
    for k in ("t", "t_done", "t_requested"):
        drain[k] = kill["t_done"] + 5
    drain["target_hit"]["deadline_ms"] = int((drain["t_requested"] + 3) * 1000)
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("fault-notice" in w for w in why), why


def test_an_event_of_another_run_is_inconclusive(tmp_path):
    events, text = load("kill-worker")
    of(events, "step")[3]["run"] = "another-run-20261130-000000-000000"
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "INCONCLUSIVE" and any("model: run-identity" in w for w in why), why


def test_a_registration_in_another_runs_folder_fails(tmp_path):
    events, text = load("kill-worker")
    reg = of(events, "checkpoint_registered")[1]
    head, name = os.path.split(reg["path"])
    reg["path"] = os.path.join(os.path.dirname(head), "another-run", name)
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: registration" in w and "another-run" in w for w in why), why


def test_a_group_smaller_than_the_fixed_scaling_config_fails(tmp_path):
    events, text = load("kill-worker")
    second = attempts(events)[1]
    of(events, "attempt_start", attempt_id=second)[0]["num_workers"] = 1
    g = of(events, "worker_group_started", attempt_id=second)[0]
    g["workers"] = [w for w in g["workers"] if w["rank"] == 0]
    g["world_size"] = 1
    events[:] = [e for e in events if not (e.get("attempt_id") == second and e.get("source") == "worker"
                                           and e.get("rank") == 1)]
    for e in events:
        if e.get("attempt_id") == second and e.get("source") == "worker":
            e["world_size"] = 1
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: group" in w and "num_workers is 2" in w for w in why), why


def test_a_sparser_checkpoint_cadence_than_declared_is_inconclusive(tmp_path):
    events, text = load("kill-worker")
    first = attempts(events)[0]
    gone = set()
    for r in of(events, "report", attempt_id=first):
        if r["step"] == 2 and r.get("checkpoint"):
            gone.add(r["checkpoint"])
            r["checkpoint"], r["digest"] = None, None
    events[:] = [e for e in events if not (e.get("kind") == "checkpoint_registered" and e.get("checkpoint") in gone)
                 and not (e.get("kind") == "checkpoint_written" and e.get("attempt_id") == first and e["step"] == 2)]
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: cadence" in w for w in why), why


def test_one_failure_charged_twice_fails(tmp_path):
    events, text = load("preempt-node")
    f = of(events, "failure")[0]
    twice = dict(f, t=f["t"] + 0.01, seq=f["seq"] + 0.5)
    events.append(twice)
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: failure-count" in w for w in why), why


@pytest.mark.parametrize("d", [3.0, -3.0, 30.0])
def test_one_workers_whole_clock_shifted_is_not_a_pass(tmp_path, d):
    events, text = load("kill-worker")
    rank1 = next(e["emitter"] for e in of(events, "step", rank=1))
    shift_process(events, rank1, d)
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS", why


def test_a_rank_stepping_alone_after_its_group_was_shut_down_fails(tmp_path):
    events, text = load("kill-worker")
    first = attempts(events)[0]
    shut = of(events, "worker_group_shutdown", attempt_id=first)[0]
    last = [e for e in of(events, "step", attempt_id=first, rank=0)][-1]
    late = dict(last, t=shut["t"] + 8.0, step=last["step"] + 1, seq=shut["seq"] + 0.5, rows=[])
    events.append(late)
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("after-shutdown" in w or "lockstep" in w for w in why), why


def test_a_success_whose_last_attempt_never_ran_fails(tmp_path):
    events, text = load("kill-worker")
    second = attempts(events)[1]
    events[:] = [e for e in events if not (e.get("attempt_id") == second and e.get("source") == "worker")
                 and not (e.get("kind") == "checkpoint_registered" and e.get("attempt_id") == second)]
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL", why


# ------------------------------------------------------------------ facts that were written and read by nothing
def test_shutdown_errors_of_other_ranks_than_the_failure_named_fail(tmp_path):
    events, text = load("kill-worker")
    shut = of(events, "worker_group_shutdown")[0]
    shut["errors"] = {k: v for k, v in shut["errors"].items() if k == "1"}
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: shutdown-errors" in w for w in why), why


def test_a_decision_naming_another_controller_failure_than_its_state_fails(tmp_path):
    events, text = load("elastic-shrink")
    f = next(e for e in of(events, "failure") if e.get("controller_failure"))
    f["controller_failure"] = "ControllerError"
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: failure-detail" in w for w in why), why


def test_a_preemption_killed_later_than_the_scenario_says_is_inconclusive(tmp_path):
    events, text = load("preempt-node")
    of(events, "fault_injected")[0]["target_hit"]["kill_in_s"] = 30.0
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "INCONCLUSIVE" and any("model: fault-spec" in w for w in why), why


def test_a_heal_on_another_node_is_inconclusive(tmp_path):
    events, text = load("partition-unregistered")
    of(events, "fault_healed")[0]["detail"]["node_id"] = "f" * 56
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: fault-heal" in w for w in why), why


def test_an_error_recorded_at_a_step_its_rank_never_reached_is_not_a_pass(tmp_path):
    events, text = load("kill-worker")
    of(events, "worker_error")[0]["step"] = 99
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: worker-step" in w for w in why), why


def test_a_torchrun_restart_count_its_agent_never_charged_is_inconclusive(tmp_path):
    events, text = load("torchrun-kill-worker")
    em = next(e["emitter"] for e in events if e.get("restart_count") == 1)
    for e in events:
        if e.get("emitter") == em:
            e["restart_count"] = 0
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: restart-count" in w for w in why), why


def test_a_torchrun_success_with_an_agent_that_exited_1_is_inconclusive(tmp_path):
    events, text = load("torchrun-kill-worker")
    of(events, "run_end")[0]["agents"][1]["exit_code"] = 1
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: agent" in w for w in why), why


def test_a_failure_config_value_the_scenario_did_not_ask_for_is_not_a_pass(tmp_path):
    events, text = load("kill-worker")
    of(events, "run_start")[0]["failure_config"]["preemption_grace_s"] = 30.0
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("preemption_grace_s" in w for w in why), why


@pytest.mark.parametrize("d", [30.0, 600.0])
def test_a_partitioned_ranks_steps_before_the_cut_are_still_judged(tmp_path, d):
    """A cut-off node's events may arrive late, but only those that arrived after the cut was recorded:
    its steps before the partition shifted by a whole clock are not excused."""
    events, text = load("partition-unregistered")
    rank1 = next(e["emitter"] for e in of(events, "step", rank=1))
    shift_process(events, rank1, d)
    assert judged(tmp_path, events, text)[0] != "PASS"


def test_a_torchrun_agent_deciding_after_its_next_rounds_workers_started_is_not_a_pass(tmp_path):
    events, text = load("torchrun-kill-worker")
    agent = next(e["emitter"] for e in of(events, "failure") if e.get("node_id") == "agent-0")
    shift_process(events, agent, 30.0)
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("agent-order" in w for w in why), why


def test_a_worker_event_of_an_attempt_nobody_started_fails(tmp_path):
    events, text = load("kill-worker")
    first = attempts(events)[0]
    for e in events:   # rank 1's error spliced in from another run's attempt (run id rewritten)
        if e.get("kind") == "worker_error" and e.get("attempt_id") == first:
            e["attempt_id"] = "a1c4419290307d93" * 2
            break
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("no attempt_start of this history started" in w for w in why), why


def test_an_error_the_shutdown_listed_recorded_after_the_shutdown_fails(tmp_path):
    events, text = load("kill-worker")
    shut = of(events, "worker_group_shutdown")[0]
    err = next(e for e in of(events, "worker_error") if shut["errors"].get(str(e["rank"]), "").startswith(e["error_type"]))
    em = err["emitter"]
    later = [e for e in events if e.get("emitter") == em and e["seq"] >= err["seq"]]
    for e in later:   # the rank's error and what follows it, 8 s later (its clock kept monotonic)
        e["t"] = shut["t"] + 8.0 + (e["t"] - err["t"])
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "FAIL" and any("model: shutdown-errors" in w for w in why), why


def test_shutdowns_swapped_between_attempts_are_inconclusive(tmp_path):
    events, text = load("kill-worker")
    a, b = of(events, "worker_group_shutdown")
    a["attempt_id"], b["attempt_id"] = b["attempt_id"], a["attempt_id"]
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: attempt" in w for w in why), why


def test_a_controller_state_naming_no_attempt_while_one_runs_is_inconclusive(tmp_path):
    events, text = load("preempt-node")
    next(e for e in of(events, "controller_state") if e.get("cur") == "RESTARTING")["attempt_id"] = None
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("model: attempt" in w for w in why), why


def test_a_second_run_start_of_one_fit_is_inconclusive(tmp_path):
    events, text = load("kill-worker")
    start = of(events, "run_start")[0]
    events.append(dict(start, seq=start["seq"] + 0.5, t=start["t"] + 0.001))
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("two run_start" in w for w in why), why


@pytest.mark.parametrize("edit", ["drop-step", "swap-order"])
def test_a_user_jobs_steps_are_its_reports(tmp_path, edit):
    events, text = load("controls/lightning-kill-worker-2.60.0")
    em = of(events, "step")[0]["emitter"]
    mine = [e for e in events if e.get("emitter") == em and e.get("kind") in ("report", "step")]
    if edit == "drop-step":
        events.remove(mine[3] if mine[3]["kind"] == "step" else mine[2])
    else:   # a report recorded after the step it counts (its clock kept)
        r, s = mine[0], mine[1]
        r["seq"], s["seq"] = s["seq"], r["seq"]
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS", why


@pytest.mark.parametrize("name", ["kill-worker", "preempt-node", "torchrun-kill-worker", "start-timeout-254"])
@pytest.mark.parametrize("later", [1, 3])
def test_a_fault_record_that_arrives_after_the_failure_it_caused_still_lands(tmp_path, name, later):
    """The history appends in arrival order: a loaded injector may write its record of a kill after the
    controller's decision on the failure it caused. Landings order such events by their clocks (a false
    INCONCLUSIVE on a correct run otherwise); the mutation engine's `arrival-order` rule found it."""
    events, text = load(name)
    for inj in of(events, "fault_injected"):
        i = events.index(inj)
        events.insert(min(i + later, len(events) - 1), events.pop(i))
    for n, e in enumerate(events, 1):
        e["seq"] = n
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "PASS", why


@pytest.mark.parametrize("name", ["torchrun-kill-node", "torchrun-kill-worker"])
def test_a_torchrun_agents_decision_arriving_after_the_next_round_still_opens_its_outage(tmp_path, name):
    """Each torchrun agent records its own decisions and the rendezvous its rounds: one may arrive after
    the next round's start it preceded. Outages follow the clocks (recovers FAILed such a correct run)."""
    events, text = load(name)
    f = of(events, "failure")[0]
    i = events.index(f)
    events.insert(i + 3, events.pop(i))
    for n, e in enumerate(events, 1):
        e["seq"] = n
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "PASS", why


# ------------------------------------------------------------------ a hung worker's heal
def test_a_hung_worker_ray_ended_is_named_gone_and_its_heal_stands(tmp_path):
    """tests/data/hang-worker-gone: a real catalog run (2.60.0) whose SIGSTOPped worker Ray ended when it
    restarted the group, before the heal's SIGCONT; recorded before heals said `gone`, it is INCONCLUSIVE
    as recorded. Named gone, with its attempt's shutdown before the heal, the run PASSes."""
    events, text = load("hang-worker-gone")
    verdict, why = judged(tmp_path, copy.deepcopy(events), text)
    assert verdict == "INCONCLUSIVE" and any("not resumed" in w for w in why), why
    heal = of(events, "fault_healed")[0]
    heal["detail"]["gone"] = True
    verdict, why = judged(tmp_path, events, text)
    assert verdict == "PASS", why


def test_a_process_named_gone_while_its_attempt_ran_on_is_not_taken_on_its_word(tmp_path):
    events, text = load("hang-worker-gone")
    heal = of(events, "fault_healed")[0]
    heal["detail"]["gone"] = True
    hit = of(events, "fault_injected")[0]["target_hit"]["attempt_id"]
    for e in events:   # nothing recorded ends the hit attempt before the heal
        if e.get("kind") in ("worker_group_shutdown", "attempt_start", "worker_group_started") \
                and e.get("seq", 0) < heal["seq"] and (e.get("kind") == "worker_group_shutdown" or e.get("attempt_id") != hit):
            e["seq"] = heal["seq"] + 0.5 + e["seq"] / 1e6
    verdict, why = judged(tmp_path, events, text)
    assert verdict != "PASS" and any("nothing recorded ended its attempt" in w for w in why), why
