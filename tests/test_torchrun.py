"""workload.runtime: torchrun for real: TorchElastic agents and gloo workers on
loopback, real SIGKILLs, no Ray. Each test runs a catalog scenario (or the CLI)
and checks that the fault landed, the run recovered, the properties that apply
pass, the Ray-only notions say why they do not apply, and no process is left."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ftharness.history.records import read_history
from ftharness.harness.run.runner import RunOptions
from ftharness.harness.run.collect import catalog_dir
from ftharness.harness.run.torchrun_runner import run_torchrun
from ftharness.scenarios.schema import load_scenario, parse_scenario

pytestmark = pytest.mark.torchrun

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def processes_mentioning(text):
    """pids of live processes whose command line names `text` (this test's own folder)."""
    out = subprocess.run(["pgrep", "-f", text], capture_output=True, text=True).stdout.split()
    return sorted(int(p) for p in out if int(p) != os.getpid())


def wait_gone(text, timeout_s=20):
    deadline = time.time() + timeout_s
    while time.time() < deadline and processes_mentioning(text):
        time.sleep(0.5)
    return processes_mentioning(text)


def run_catalog(name, tmp_path):
    out = str(tmp_path / name)
    t = time.time()
    summary = run_torchrun(load_scenario(os.path.join(catalog_dir(), f"{name}.yaml")),
                           RunOptions(out_dir=out, progress=False))
    summary["_took_s"] = time.time() - t
    return summary, out


def assert_recovered_and_clean(summary, out, expected_budget="max_restarts"):
    assert summary["verdict"] == "PASS", summary["mismatches"] + summary["inconclusive"]
    assert summary["outcome"] == "succeeded" and summary["attempts"] >= 2
    assert [f["landed"] for f in summary["faults"]] == [True]
    assert summary["faults"][0]["expected_budget"] == expected_budget
    for name in summary["expected_properties"]:
        assert summary["properties"][name]["status"] == "passed", (name, summary["properties"][name])
    assert "do not apply" in summary["properties"]["budget_accounting"]["explanation"]
    assert all(reason for reason in summary["not_applicable"].values())
    assert summary["final_state"]["exact"] is True
    assert summary["recovery_times_s"] and all(r > 0 for r in summary["recovery_times_s"])
    assert read_history(out).complete
    assert summary["settings"]["leftover_pids"] == []
    assert wait_gone(out, 5) == [], "processes of the run are still alive"
    for f in ("summary.json", "history.jsonl", "scenario.yaml", "torchrun/worker-spec.json"):
        assert os.path.exists(os.path.join(out, f)), f


def test_kill_worker_under_torchrun_recovers_from_the_latest_checkpoint(tmp_path):
    summary, out = run_catalog("kill-worker-torchrun", tmp_path)
    print(f"kill-worker-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert_recovered_and_clean(summary, out)
    hit = summary["faults"][0]
    assert "SIGKILL" in hit["evidence"] and "rank 1" in hit["evidence"]
    events = read_history(out).events
    decisions = [e for e in events if e["kind"] == "failure"]
    # the killed worker's own agent charges it to its --max-restarts; the other one may restart by membership
    assert any(e["budget"] == "max_restarts" and e["decision"] == "RETRY" and e["count"] == 1 for e in decisions)
    assert {e["budget"] for e in decisions} <= {"max_restarts", "membership"}
    restored = [e for e in events if e["kind"] == "worker_start" and e.get("restored_checkpoint")]
    assert {e["restored_step"] for e in restored} == {4} and {e["rank"] for e in restored} == {0, 1}
    assert all(a["exit_code"] == 0 for a in summary["agents"] if a.get("participated"))
    # TorchElastic's per-attempt logs are the run's (--log-dir), not torchelastic_* folders left in /tmp
    elastic = os.path.join(out, "torchrun", "elastic")
    assert any(f.startswith(summary["run_name"]) for f in os.listdir(elastic)), os.listdir(elastic)


def spare_node_scenario(name, fault):
    """Three nodes for two workers: one spare, as people keep for rescheduling (issue 22, seen 7)."""
    return parse_scenario({
        "name": name, "cluster": {"nodes": 3}, "failure_config": {"max_failures": 1},
        "workload": {"runtime": "torchrun", "num_workers": 2, "steps": 12, "checkpoint_every": 2},
        "faults": [fault], "expect": {"outcome": "succeeded", "properties": [
            "exactly_once_restore", "budget_accounting", "shard_reassignment", "no_zombie_writes", "recovers"]}})


def run_spare(name, fault, tmp_path):
    out = str(tmp_path / name)
    t = time.time()
    summary = run_torchrun(spare_node_scenario(name, fault), RunOptions(out_dir=out, progress=False))
    print(f"{name}: {time.time() - t:.1f} s, {summary['attempts']} attempts, recovery {summary['recovery_times_s']} s")
    events = read_history(out).events
    start = next(e for e in events if e["kind"] == "run_start")
    assert start["spare_nodes"] == ["agent-2"] and start["agents"] == 2 and start["nodes"] == 3
    return summary, out, events


@pytest.mark.full   # the core lane keeps the spare taking a lost node's place (below)
def test_a_spare_node_under_a_worker_kill_stays_idle_and_the_run_recovers_in_one_restart(tmp_path):
    """The old launcher started an agent on the spare node too: it restarted 161 times in 220 s and
    failed. A killed worker is restarted by its own node's agent, as TorchElastic does: the spare is
    not needed, so no agent ever runs there and no round is churned."""
    summary, out, events = run_spare("spare-kill-worker-torchrun",
                                     {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}, tmp_path)
    assert_recovered_and_clean(summary, out)
    assert summary["attempts"] == 2
    assert not any(e.get("node_id") == "agent-2" or e.get("agent") == 2 for e in events)
    groups = [e for e in events if e["kind"] == "worker_group_started"]
    assert all({w["node_id"] for w in g["workers"]} == {"agent-0", "agent-1"} for g in groups)
    failures = [e for e in events if e["kind"] == "failure"]
    assert len(failures) <= 2 and [a["node_id"] for a in summary["agents"]] == ["agent-0", "agent-1"]


@pytest.mark.full   # the core lane's torchrun run is the worker kill above; this node kill runs in make test-full
def test_a_spare_node_under_a_node_kill_takes_the_lost_node_s_place(tmp_path):
    """The node of rank 0 dies (no `replace`): the launcher, in the scheduler's place, starts an agent
    on the spare node at once, it joins the rendezvous, and the next round runs there."""
    summary, out, events = run_spare("spare-kill-node-torchrun",
                                     {"kind": "kill_node", "target": {"rank": 0}, "at": {"step": 4}}, tmp_path)
    assert_recovered_and_clean(summary, out)
    killed = next(e for e in events if e["kind"] == "fault_injected")
    assert killed["target_hit"]["node_id"] == "agent-0"
    took = [e for e in events if e["kind"] == "fault_action" and e["fault"] == 0]
    assert [(a["detail"]["lost_node_id"], a["detail"]["node_id"]) for a in took] == [("agent-0", "agent-2")]
    assert took[0]["seq"] > killed["seq"]
    groups = [e for e in events if e["kind"] == "worker_group_started"]
    assert {w["node_id"] for w in groups[0]["workers"]} == {"agent-0", "agent-1"}
    assert {w["node_id"] for w in groups[-1]["workers"]} == {"agent-1", "agent-2"}
    spare = next(a for a in summary["agents"] if a["node_id"] == "agent-2")
    assert spare["exit_code"] == 0 and spare.get("participated") and not spare["killed_by_fault"]
    assert summary["settings"]["rescheduled"] == [{"lost_node_id": "agent-0", "node_index": 2, "node_id": "agent-2"}]


@pytest.mark.full
def test_kill_node_under_torchrun_kills_the_agent_and_its_workers_and_a_replacement_joins(tmp_path):
    summary, out = run_catalog("kill-node-torchrun", tmp_path)
    print(f"kill-node-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert_recovered_and_clean(summary, out)
    killed = [a for a in summary["agents"] if a["killed_by_fault"]]
    assert len(killed) == 1 and killed[0]["exit_code"] == -signal.SIGKILL
    events = read_history(out).events
    hit = next(e for e in events if e["kind"] == "fault_injected")["target_hit"]
    assert hit["node_id"] == killed[0]["node_id"] and hit["ranks"] == [0]
    assert any(e["kind"] == "fault_action" and "replacement" in e["action"] for e in events)
    assert len(summary["agents"]) == 3          # two nodes and the replacement
    groups = [e for e in events if e["kind"] == "worker_group_started"]
    assert killed[0]["node_id"] not in {w["node_id"] for w in groups[-1]["workers"]}


@pytest.mark.full
def test_hang_worker_under_torchrun_is_ended_by_the_collective_timeout_of_the_other_rank(tmp_path):
    """Nothing health-checks a torchrun worker: rank 1 stopped, rank 0's all-reduce times out after
    collective_timeout_s (5 s), its agent charges --max-restarts, and the new round restores."""
    summary, out = run_catalog("hang-worker-torchrun", tmp_path)
    print(f"hang-worker-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert_recovered_and_clean(summary, out)
    evidence = summary["faults"][0]["evidence"]
    assert "hang_worker hit rank 1" in evidence and "SIGSTOP" in evidence
    assert "what ended it: rank 0 raised" in evidence and "Timed out" in evidence, evidence
    assert summary["settings"]["collective_timeout_s"] == 5
    events = read_history(out).events
    stopped = next(e for e in events if e["kind"] == "fault_injected")
    error = next(e for e in events if e["kind"] == "worker_error" and e["seq"] > stopped["seq"])
    assert error["rank"] == 0 and error["t"] - stopped["t_done"] >= 4.5      # the gloo timeout, not sooner
    first = next(e for e in events if e["kind"] == "failure" and e["seq"] > stopped["seq"])
    assert (first["agent"], first["budget"], first["decision"]) == (0, "max_restarts", "RETRY")
    healed = next(e for e in events if e["kind"] == "fault_healed")
    assert healed["detail"]["how"] == "SIGCONT"


@pytest.mark.full
def test_partition_node_pause_under_torchrun_stops_the_agent_and_its_worker_then_resumes_them(tmp_path):
    summary, out = run_catalog("partition-node-torchrun", tmp_path)
    print(f"partition-node-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert_recovered_and_clean(summary, out)
    evidence = summary["faults"][0]["evidence"]
    assert "partition_node hit node_id agent-1" in evidence and "what ended it: rank 0 raised" in evidence
    events = read_history(out).events
    paused = next(e for e in events if e["kind"] == "fault_injected")
    hit = paused["target_hit"]
    assert hit["ranks"] == [1] and hit["how"] == "SIGSTOP agent and workers" and len(hit["paused_pids"]) == 2
    agent_pid = next(e["pid"] for e in events if e.get("source") == "controller" and e.get("agent") == 1
                     and e.get("pid"))
    assert hit["paused_pids"][0] == agent_pid                   # the agent stopped first, then its worker
    healed = next(e for e in events if e["kind"] == "fault_healed")
    assert healed["detail"]["how"] == "SIGCONT after duration_s"
    assert 9.5 <= healed["t_done"] - paused["t_done"] <= 30
    assert sorted(healed["detail"]["resumed_pids"]) == sorted(hit["paused_pids"])
    # the survivor's agent charged the stall first; the paused agent came back and joined the next round
    first = next(e for e in events if e["kind"] == "failure" and e["seq"] > paused["seq"])
    assert (first["agent"], first["budget"]) == (0, "max_restarts")
    last_group = [e for e in events if e["kind"] == "worker_group_started"][-1]
    assert {w["node_id"] for w in last_group["workers"]} == {"agent-0", "agent-1"}
    assert not any(a["killed_by_fault"] for a in summary["agents"])


@pytest.mark.full
def test_corrupt_checkpoint_under_torchrun_is_restored_silently_and_pinned_as_a_digest_mismatch(tmp_path):
    summary, out = run_catalog("corrupt-checkpoint-torchrun", tmp_path)
    print(f"corrupt-checkpoint-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert summary["verdict"] == "PASS", summary["mismatches"] + summary["inconclusive"]
    assert summary["outcome"] == "succeeded" and [f["landed"] for f in summary["faults"]] == [True, True]
    corrupt = summary["faults"][0]
    assert corrupt["kind"] == "corrupt_checkpoint" and "(digest mismatch)" in corrupt["evidence"]
    events = read_history(out).events
    hit = next(e for e in events if e["kind"] == "fault_injected" and e["fault"] == 0)["target_hit"]
    assert hit["how"] == "bitflip" and hit["path"].endswith("state.pt") and hit["sha256_before"] != hit["sha256_after"]
    registered = [e for e in events if e["kind"] == "checkpoint_registered" and e["seq"] < next(
        e["seq"] for e in events if e["kind"] == "fault_injected" and e["fault"] == 1)]
    assert registered[-1]["checkpoint"] == hit["checkpoint"]      # no newer commit slipped in before the kill
    restored = [e for e in events if e["kind"] == "worker_start" and e.get("restored_checkpoint")]
    assert {e["restored_checkpoint"] for e in restored} == {hit["checkpoint"]}
    assert {e["restored_intact"] for e in restored} == {False} and {e["rank"] for e in restored} == {0, 1}
    pinned = summary["properties"]["exactly_once_restore"]
    assert pinned["status"] == "failed" and "digest mismatch" in pinned["explanation"]
    assert summary["settings"]["leftover_pids"] == [] and wait_gone(out, 5) == []


@pytest.mark.full
def test_storage_errors_under_torchrun_fail_a_commit_in_staging_and_the_restart_restores_the_last_commit(tmp_path):
    summary, out = run_catalog("storage-errors-torchrun", tmp_path)
    print(f"storage-errors-torchrun: {summary['_took_s']:.1f} s, recovery {summary['recovery_times_s']} s")
    assert_recovered_and_clean(summary, out, expected_budget=None)
    evidence = summary["faults"][0]["evidence"]
    assert "error(s)" in evidence and "returned to the job, the first on write of" in evidence
    assert "/.staging/checkpoint_20" in evidence, evidence
    events = read_history(out).events
    error = next(e for e in events if e["kind"] == "worker_error")
    assert error["rank"] == 0 and error["error_type"] == "OSError" and "injected" in error["error"]
    first = next(e for e in events if e["kind"] == "failure")
    assert (first["agent"], first["budget"], first["decision"]) == (0, "max_restarts", "RETRY")
    registered = {e["checkpoint"] for e in events if e["kind"] == "checkpoint_registered"}
    restored = {e["restored_checkpoint"] for e in events if e["kind"] == "worker_start" and e.get("restored_checkpoint")}
    assert restored and restored <= registered           # a torn checkpoint is never committed, never restored


@pytest.mark.full
def test_crash_worker_and_an_exhausted_max_restarts_under_torchrun(tmp_path):
    """A raise in the train loop is charged like a kill; with --max-restarts 0 the agents raise
    ChildFailedError, the run fails as expected, and no recovery is owed."""
    base = {"cluster": {"nodes": 2}, "workload": {"runtime": "torchrun", "num_workers": 2, "steps": 10,
                                                  "checkpoint_every": 2}}
    crash = parse_scenario({**base, "name": "crash-torchrun", "failure_config": {"max_failures": 1},
                            "faults": [{"kind": "crash_worker", "target": {"rank": 0},
                                        "where": "after_checkpoint_write", "at": {"step": 4}}]})
    summary = run_torchrun(crash, RunOptions(out_dir=str(tmp_path / "crash"), progress=False))
    assert_recovered_and_clean(summary, str(tmp_path / "crash"))
    assert "crash_worker hit rank 0" in summary["faults"][0]["evidence"]

    out = str(tmp_path / "exhausted")
    exhausted = parse_scenario({**base, "name": "exhausted-torchrun", "failure_config": {"max_failures": 0},
                                "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 3}}],
                                "expect": {"outcome": "failed"}})
    summary = run_torchrun(exhausted, RunOptions(out_dir=out, progress=False))
    assert summary["verdict"] == "PASS", summary["mismatches"] + summary["inconclusive"]
    assert (summary["outcome"], summary["error_type"]) == ("failed", "ChildFailedError")
    assert summary["properties"]["budget_accounting"]["status"] == "passed"
    assert "no recovery owed" in summary["properties"]["recovers"]["explanation"]
    raises = [e for e in read_history(out).events if e["kind"] == "failure" and e["decision"] == "RAISE"]
    assert any(e["budget"] == "max_restarts" and e["count"] == 1 for e in raises)
    assert {e["budget"] for e in raises} <= {"max_restarts", "none"}   # `none`: a rendezvous closed under it
    assert summary["settings"]["leftover_pids"] == [] and wait_gone(out, 5) == []


@pytest.mark.full
def test_ctrl_c_and_a_killed_harness_leave_no_process_behind(tmp_path):
    """Ctrl-C: the runner tears everything down and exits 130. SIGKILL of the
    harness: the agents and workers die with it (PR_SET_PDEATHSIG)."""
    scenario = tmp_path / "long.yaml"
    scenario.write_text("name: long\ncluster: {nodes: 2}\n"
                        "workload: {runtime: torchrun, num_workers: 2, steps: 400, step_delay_s: 0.5}\n")
    for sig, code in ((signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)):
        out = str(tmp_path / f"out-{sig.name}")
        proc = subprocess.Popen([sys.executable, "-m", "ftharness.harness.frontends.cli", "run", str(scenario), "--out", out,
                                 "--quiet"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            deadline = time.time() + 240
            while time.time() < deadline and not _stepped(out):
                assert proc.poll() is None, proc.stdout.read().decode()[-2000:]
                time.sleep(0.5)
            assert _stepped(out), "no step within 240 s"
            assert len(processes_mentioning(out)) >= 4      # two agents, two workers
            proc.send_signal(sig)
            assert proc.wait(timeout=60) == code
            assert wait_gone(out, 20) == [], f"left behind after {sig.name}"
        finally:
            if proc.poll() is None:
                proc.kill()
            for pid in processes_mentioning(out):
                os.kill(pid, signal.SIGKILL)


def _stepped(out):
    try:
        with open(os.path.join(out, "history.jsonl")) as f:
            return any(json.loads(line).get("kind") == "step" for line in f if line.strip())
    except (OSError, ValueError):
        return False
