"""workload.runtime: torchrun, pure parts (no processes, no Ray): what the
scenario language refuses in one line naming the field, and what it accepts."""

import pytest

from ftharness.faults import FAULT_KINDS, REGISTRY
from ftharness.faults.base import TargetedSpec
from ftharness.errors import ScenarioError
from ftharness.scenarios.schema import TORCHRUN_FAULTS, TORCHRUN_REFUSED, parse_scenario

TARGETED = tuple(k for k, cls in REGISTRY.items() if issubclass(cls.Spec, TargetedSpec))


def torchrun(**parts):
    data = {"name": "t", "workload": {"runtime": "torchrun", **parts.pop("workload", {})}}
    data.update(parts)
    return data


def refused(data):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source="s.yaml")
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= 300, msg
    return msg


def test_runtime_defaults_to_ray_train_and_takes_only_two_values():
    assert parse_scenario({"name": "x"}).workload.runtime == "ray_train"
    assert parse_scenario(torchrun()).workload.runtime == "torchrun"
    msg = refused({"name": "x", "workload": {"runtime": "torchelastic"}})
    assert msg.startswith("s.yaml: workload.runtime:") and "'ray_train'" in msg and "'torchrun'" in msg


def test_every_fault_kind_is_either_accepted_or_refused_with_a_reason():
    assert set(TORCHRUN_FAULTS) | set(TORCHRUN_REFUSED) == set(FAULT_KINDS)
    assert not set(TORCHRUN_FAULTS) & set(TORCHRUN_REFUSED)


@pytest.mark.parametrize("kind", sorted(TORCHRUN_REFUSED))
def test_faults_torchrun_cannot_do_are_refused_naming_the_field_and_what_is_allowed(kind):
    fault = {"kind": kind, "at": {"step": 2}, **({"target": {"rank": 0}} if kind in TARGETED else {}),
             **({"loss_pct": 10} if kind == "network_degrade" else {})}
    msg = refused(torchrun(faults=[fault]))
    assert msg.startswith(f"s.yaml: faults[0].kind: {kind} "), msg
    assert "allowed: kill_worker, crash_worker, hang_worker, kill_node, partition_node, corrupt_checkpoint" in msg
    # the same fault is fine under Ray Train (a wire fault on namespace hosts)
    wire = {"cluster": {"network": "namespaces"}} if kind == "network_degrade" else {}
    gpu = {"cluster": {"gpus_per_node": 1}} if kind == "cuda_error" else {}   # GPU faults need GPU workers
    hang = {"workload": {"collective_timeout_s": 5}} if kind == "collective_hang" else {}
    parse_scenario({"name": "x", "faults": [fault], **wire, **gpu, **hang})


@pytest.mark.parametrize("fault", [
    {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}},
    {"kind": "kill_worker", "target": {"node": 0}, "at": {"event": "checkpoint_registered", "nth": 2}},
    {"kind": "kill_worker", "target": {"random": True}, "at": {"time_s": 3}},
    {"kind": "crash_worker", "target": {"rank": 0}, "where": "after_checkpoint_write", "at": {"step": 4}},
    {"kind": "kill_node", "target": {"rank": 0}, "at": {"step": 4}, "replace": True, "replace_after_s": 1},
    {"kind": "hang_worker", "target": {"rank": 1}, "at": {"step": 4}},
    {"kind": "hang_worker", "target": {"random": True}, "at": {"step": 4}, "duration_s": 8},
    {"kind": "partition_node", "target": {"rank": 1}, "at": {"step": 4}, "duration_s": 10, "mode": "pause"},
    {"kind": "partition_node", "target": {"node": 0}, "at": {"time_s": 5}},
    {"kind": "corrupt_checkpoint", "which": "latest", "how": "bitflip", "at": {"step": 5}},
    {"kind": "corrupt_checkpoint", "which": "oldest", "how": "truncate", "at": {"step": 5}},
    {"kind": "corrupt_checkpoint", "which": "index -2", "how": "delete_file", "at": {"step": 5}},
    {"kind": "corrupt_checkpoint", "which": "in_flight", "at": {"event": "checkpoint_written", "nth": 2}},
    {"kind": "storage_errors", "ops": ["write", "move"], "error_rate": 1.0, "partial": True, "duration_s": 3,
     "at": {"step": 3}},
    {"kind": "storage_errors", "ops": ["read", "list"], "latency_s": 0.5, "at": {"event": "restored"}},
])
def test_local_process_faults_are_accepted(fault):
    sc = parse_scenario(torchrun(faults=[fault], failure_config={"max_failures": 2}))
    assert sc.faults[0].kind == fault["kind"]


@pytest.mark.parametrize("how, why", [("snapshot", "checkpoint_manager_snapshot.json"),
                                      ("delete_dir", "falls back to the checkpoint before")])
def test_corrupt_checkpoint_modes_torchrun_cannot_have_are_refused_in_one_line(how, why):
    fault = {"kind": "corrupt_checkpoint", "which": "latest", "how": how, "at": {"step": 5}}
    msg = refused(torchrun(faults=[fault]))
    assert msg.startswith(f"s.yaml: faults[0].how: {how} ") and why in msg, msg
    assert msg.endswith("allowed: bitflip, truncate, delete_file"), msg
    parse_scenario({"name": "x", "faults": [fault]})   # fine under Ray Train


def test_collective_timeout_has_a_torchrun_default_and_is_a_torch_process_group_setting():
    from ftharness.harness.run.fit_task import _torch_config
    from ftharness.harness.run.torchrun_runner import collective_timeout_s
    from ftharness.scenarios.schema import TORCHRUN_COLLECTIVE_TIMEOUT_S

    assert collective_timeout_s(parse_scenario(torchrun())) == TORCHRUN_COLLECTIVE_TIMEOUT_S == 120
    assert collective_timeout_s(parse_scenario(torchrun(workload={"collective_timeout_s": 5}))) == 5
    # Ray Train's TorchTrainer takes it as TorchConfig(timeout_s); no default of ours there
    assert parse_scenario({"name": "x", "workload": {"collective_timeout_s": 5}}).workload.collective_timeout_s == 5
    assert _torch_config({"collective_timeout_s": 4.6, "trainer": "torch"})["torch_config"].timeout_s == 5
    assert _torch_config({"collective_timeout_s": None, "trainer": "torch"}) == {}
    msg = refused({"name": "x", "workload": {"collective_timeout_s": 5, "trainer": "xgboost", "entrypoint": "m:f"}})
    assert msg.startswith("s.yaml: workload.collective_timeout_s: the torch process group's timeout; "
                          "trainer xgboost has none"), msg
    assert refused(torchrun(workload={"collective_timeout_s": 0})).startswith("s.yaml: workload.collective_timeout_s:")


@pytest.mark.parametrize("data, field", [
    (torchrun(cluster={"address": "auto"}), "cluster.address"),
    (torchrun(cluster={"storage": "s3"}), "cluster.storage"),
    (torchrun(workload={"storage_path": "s3://bucket/x"}), "workload.storage_path"),
    (torchrun(workload={"entrypoint": "job:train"}), "workload.entrypoint"),
    (torchrun(workload={"data": "ray_data"}), "workload.data"),
    (torchrun(workload={"jit_checkpoint": True}), "workload.jit_checkpoint"),
    (torchrun(workload={"use_gpu": True}), "workload.use_gpu"),
    (torchrun(cluster={"gpus_per_node": 2}), "cluster.gpus_per_node"),
    (torchrun(workload={"num_workers": 4}), "workload.num_workers"),
    (torchrun(workload={"num_workers": [2, 4]}, cluster={"nodes": 1}), "workload.num_workers"),
    (torchrun(cluster={"cpus_per_node": 2}), "workload.cpus_per_worker"),
    (torchrun(failure_config={"max_failures": -1}), "failure_config.max_failures"),
    (torchrun(failure_config={"max_preemption_failures": 1}), "failure_config.max_preemption_failures"),
    (torchrun(failure_config={"controller_failure_limit": 2}), "failure_config.controller_failure_limit"),
    (torchrun(faults=[{"kind": "kill_worker", "graceful": True, "target": {"rank": 0}, "at": {"step": 2}}]),
     "faults[0].graceful"),
    (torchrun(faults=[{"kind": "kill_node", "target": {"node": 3}, "at": {"step": 2}}]), "faults[0].target.node"),
])
def test_ray_only_settings_are_refused_naming_the_field(data, field):
    assert refused(data).startswith(f"s.yaml: {field}:")


def test_elastic_workers_fit_when_the_minimum_has_nodes():
    sc = parse_scenario(torchrun(workload={"num_workers": [2, 4]}, cluster={"nodes": 3}))
    assert sc.workload.min_workers == 2


# ------------------------------------------------------------------ the max_restarts rule (pure)
from ftharness.history.model import TORCHRUN_BUDGET, History, charged  # noqa: E402
from ftharness.scenarios.policy_model import fit_expectation, torchrun_expectation  # noqa: E402
from ftharness.scenarios.properties import budget_accounting, recovers  # noqa: E402


def failure(agent, budget=TORCHRUN_BUDGET, decision="RETRY", count=None, **kw):
    error = {"max_restarts": "ChildFailedError", "membership": "MembershipChange"}.get(budget,
                                                                                      "RendezvousClosedError")
    return {"kind": "failure", "source": "controller", "agent": agent, "budget": budget, "decision": decision,
            "error_type": kw.pop("error_type", error), "count": count, "limit": kw.pop("limit", 1), **kw}


def test_each_agent_counts_its_own_failures_against_max_restarts():
    out = torchrun_expectation({"max_failures": 1}, [failure(1), failure(0), failure(1), failure(0)])
    assert [(d.decision, d.count) for d in out.decisions] == [("RETRY", 1), ("RETRY", 1), ("RAISE", 2), ("RAISE", 2)]
    assert (out.outcome, out.error_type) == ("failed", "ChildFailedError")


def test_membership_restarts_count_nothing_and_agent_errors_raise_at_once():
    out = torchrun_expectation({"max_failures": 0}, [failure(1, "membership"), failure(0, "membership")])
    assert [d.decision for d in out.decisions] == ["RETRY", "RETRY"] and out.outcome == "succeeded"
    out = torchrun_expectation({"max_failures": 3}, [failure(0, "none", error_type="RendezvousTimeoutError")])
    assert (out.decisions[0].budget, out.decisions[0].decision) == ("none", "RAISE")
    assert (out.outcome, out.error_type) == ("failed", "RendezvousTimeoutError")


def test_fit_expectation_picks_the_rule_by_runtime():
    ray_failures = [{"budget": "worker_group", "error_type": "WorkerGroupError"}]
    model, known = fit_expectation({"max_failures": 0}, ray_failures)
    assert (model.outcome, model.error_type, len(known)) == ("failed", "WorkerGroupError", 1)
    model, known = fit_expectation({"max_failures": 0}, [failure(0)], {"runtime": "torchrun"})
    assert model.decisions[0].budget == TORCHRUN_BUDGET and model.outcome == "failed"


def torchrun_history(failures, outcome="succeeded", error_type=None, restarts_after=True):
    """A minimal torchrun history: one attempt, the failures, a second attempt, the end."""
    events = [{"kind": "run_start", "source": "harness", "fit_index": 1, "runtime": "torchrun"},
              {"kind": "attempt_start", "source": "controller", "attempt_id": "round-0"}]
    events += [dict(f, attempt_id="round-0") for f in failures]
    if restarts_after:
        events.append({"kind": "attempt_start", "source": "controller", "attempt_id": "round-1"})
    events.append({"kind": "run_end", "source": "harness", "fit_index": 1, "outcome": outcome,
                   "error_type": error_type})
    for i, e in enumerate(events, 1):
        e.update(seq=i, t=1000.0 + i)
    return events


CONTEXT = {"runtime": "torchrun", "failure_config": {"max_failures": 1}}


def test_budget_accounting_passes_a_torchrun_run_by_its_own_rule():
    events = torchrun_history([failure(1, count=1), failure(0, "membership", count=0)])
    r = budget_accounting.check(events, CONTEXT)
    assert r.status == "passed", r.explanation
    assert "max_restarts" in r.explanation and "do not apply" in r.explanation
    assert charged(events)[TORCHRUN_BUDGET] == 1


@pytest.mark.parametrize("bad, why", [
    (failure(1, count=2), "max_restarts count 2, expected 1"),
    (failure(1, decision="RAISE", count=1), "TorchElastic decides RETRY"),
    (failure(1, count=1, limit=3), "--max-restarts 3"),
    (failure(1, budget="worker_group", count=1, error_type="ChildFailedError"),
     "charges ChildFailedError to max_restarts"),
])
def test_budget_accounting_fails_a_torchrun_run_that_breaks_the_rule(bad, why):
    r = budget_accounting.check(torchrun_history([bad]), CONTEXT)
    assert r.status == "failed" and why in r.explanation, r.explanation


def test_a_raise_fails_the_run_and_owes_no_recovery():
    events = torchrun_history([failure(1, count=1), failure(1, decision="RAISE", count=2),
                               failure(0, "none", decision="RAISE", error_type="RendezvousClosedError")],
                              outcome="failed", error_type="ChildFailedError", restarts_after=False)
    assert budget_accounting.check(events, CONTEXT).status == "passed"
    r = recovers.check(History(events), CONTEXT)
    assert r.status == "not_judged" and "exhausted the max_restarts budget" in r.explanation
    r = budget_accounting.check(torchrun_history([failure(1, count=1)], outcome="failed",
                                                 error_type="ChildFailedError"), CONTEXT)
    assert r.status == "failed" and "without a RAISE" in r.explanation


def test_a_membership_restart_after_a_fault_is_a_finding_not_a_violation():
    events = torchrun_history([failure(1, "membership", count=0)])
    ctx = dict(CONTEXT, expected_budgets={events[2]["seq"]: (TORCHRUN_BUDGET, "kill_node")})
    r = budget_accounting.check(events, ctx)
    assert r.status == "passed" and any("membership change" in f for f in r.findings), r


# ------------------------------------------------------------- collector, storage, launcher (no processes)
import json  # noqa: E402
import os  # noqa: E402
import threading  # noqa: E402

from ftharness.history.records import marker_name, read_history  # noqa: E402
from ftharness.harness.job.digests import digest_of, directory_intact, file_hashes, restore_check  # noqa: E402
from ftharness.harness.torchrun import storage  # noqa: E402
from ftharness.harness.torchrun.client import CollectorClient, TcpEmitter  # noqa: E402
from ftharness.harness.torchrun.collector import Collector, LocalEmitter  # noqa: E402
from ftharness.harness.torchrun.launcher import Launcher  # noqa: E402


def test_collector_orders_gates_and_seals_events_over_tcp(tmp_path):
    col = Collector(str(tmp_path / "history.jsonl"), "run")
    try:
        col.book.arm([{"at": {"step": 2}}])
        LocalEmitter(col.book, "run", "harness").emit("run_start", fit_index=1)
        client = CollectorClient(col.address)
        worker = TcpEmitter(client, "run", "worker", base={"rank": 0, "attempt_id": "round-0"})
        assert worker.emit("step", step=1)["gate"] is None
        released = []
        t = threading.Thread(target=lambda: released.append(worker.emit("step", step=2)))
        t.start()                                   # held at the gate of fault 0 ...
        for _ in range(100):
            if col.book._triggers.pending:
                break
            threading.Event().wait(0.02)
        assert t.is_alive()
        assert [p["fault"] for p in col.book.take_pending()["pending"]] == [0]
        col.book.release(0)                         # ... until the injector is done with it
        t.join(5)
        assert released and released[0]["action"] == "continue"
        assert client.call("claim", 7, 2) is False and client.call("claim", 7, 2) is True
        col.agent_rendezvous({"node": 0, "attempt_id": "round-0", "world_size": 2})
        col.agent_rendezvous({"node": 1, "attempt_id": "round-0", "world_size": 2})
        col.agent_started({"node": 1, "attempt_id": "round-0", "world_size": 2,
                           "members": [{"rank": 1, "pid": 11, "node_id": "agent-1"}]})
        col.agent_started({"node": 0, "attempt_id": "round-0", "world_size": 2,
                           "members": [{"rank": 0, "pid": 10, "node_id": "agent-0"}]})
        col.agent_stopping({"node": 1, "attempt_id": "round-0"})
        col.agent_stopping({"node": 0, "attempt_id": "round-0"})
        assert [m["rank"] for m in col.book.take_pending()["members"]] == [0, 1]
        LocalEmitter(col.book, "run", "harness").emit("run_end", fit_index=1, outcome="succeeded")
        client.close()
    finally:
        col.close()
    read = read_history(str(tmp_path))
    assert read.complete, read.problems
    kinds = [e["kind"] for e in read.events]
    assert kinds.count("attempt_start") == 1 and kinds.count("worker_group_shutdown") == 1
    group = next(e for e in read.events if e["kind"] == "worker_group_started")
    assert [w["pid"] for w in group["workers"]] == [10, 11] and group["world_size"] == 2
    assert kinds[-1] == "history_end"


def test_a_lost_event_leaves_a_gap_the_reader_names(tmp_path):
    col = Collector(str(tmp_path / "history.jsonl"), "run")
    client = CollectorClient(col.address)
    worker = TcpEmitter(client, "run", "worker")
    worker.emit("step", step=1)
    next(worker._numbers)                           # an event that never arrived
    worker.emit("step", step=2)
    col.close()
    assert worker.emit("step", step=3) is None      # the collector is gone: emit never raises
    problems = read_history(str(tmp_path)).problems
    assert any("never reached the history" in p for p in problems), problems


def test_checkpoints_commit_by_rename_and_keep_the_newest(tmp_path):
    run_dir = str(tmp_path / "run")
    names = []
    for step in (2, 4, 6):
        src = tmp_path / f"src{step}"
        src.mkdir()
        (src / "state.pt").write_bytes(bytes([step]) * 100)
        hashes = file_hashes(str(src))
        (src / marker_name(0)).write_text(
            json.dumps({"step": step, "rank": 0, "digest": digest_of(hashes), "files": hashes}))
        names.append(storage.commit(run_dir, str(src)))
        assert storage.latest(run_dir) == names[-1]
    assert names == sorted(names) and os.listdir(os.path.join(run_dir, storage.STAGING)) == []
    assert storage.prune(run_dir, 2) == names[:1] and storage.committed(run_dir) == names[1:]
    newest = os.path.join(run_dir, names[-1])
    markers = storage.read_markers(newest)
    assert [m["step"] for m in markers] == [6] and directory_intact(newest, markers) is True
    # the restore's per-rank digest is the one the report recorded (the verdict compares the two)
    assert restore_check(newest, markers) == (True, {"0": markers[0]["digest"]})
    with open(os.path.join(newest, "state.pt"), "r+b") as f:
        f.write(b"\xff")
    assert directory_intact(newest, markers) is False
    intact, digests = restore_check(newest, markers)
    assert intact is False and digests["0"] != markers[0]["digest"]
    os.remove(os.path.join(newest, "state.pt"))   # a file gone is a different digest too
    assert restore_check(newest, markers)[1]["0"] not in (None, markers[0]["digest"])


def test_agent_command_is_torchrun_with_the_scenario_budget_and_an_external_store(tmp_path):
    launcher = Launcher("run-x", nodes=3, nnodes=(2, 2), max_restarts=1, spec_path="/tmp/spec.json",
                        collector_address="127.0.0.1:1", log_dir=str(tmp_path), profile="fast")
    launcher.port = 4242
    cmd = launcher.command()
    assert cmd[1:3] == ["-m", "ftharness.harness.torchrun.agent"]
    joined = " ".join(cmd)
    for part in ("--nnodes 2:2", "--nproc-per-node 1", "--rdzv-backend c10d", "--rdzv-endpoint 127.0.0.1:4242",
                 "--max-restarts 1", "--monitor-interval 0.1", "-m ftharness.harness.torchrun.worker /tmp/spec.json"):
        assert part in joined
    assert "is_host=false" in cmd[cmd.index("--rdzv-conf") + 1]
    env = launcher.environment(0)
    assert env["TORCH_DISABLE_SHARE_RDZV_TCP_STORE"] == "1" and env["FTHARNESS_NODE_ID"] == "agent-0"
    assert launcher.head_node_id() == "harness" and launcher.running() == []


def test_ray_runner_refuses_torchrun_and_torchrun_runner_refuses_ray_options(tmp_path):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner
    from ftharness.harness.run.torchrun_runner import TorchrunRunner

    sc = parse_scenario(torchrun())
    with pytest.raises(ScenarioError, match="workload.runtime: torchrun runs without a Ray cluster"):
        ScenarioRunner(sc, None, RunOptions(out_dir=str(tmp_path)))
    with pytest.raises(ScenarioError, match="--resume"):
        TorchrunRunner(sc, RunOptions(out_dir=str(tmp_path), resume=str(tmp_path)))
    with pytest.raises(ScenarioError, match="--address"):
        TorchrunRunner(sc, RunOptions(out_dir=str(tmp_path), address="auto"))


# ------------------------------------------- recorded torchrun runs: re-judged, compared with Ray's
from ftharness.harness.frontends.cli import main as cli_main  # noqa: E402

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


@pytest.mark.parametrize("name", ["torchrun-kill-worker", "torchrun-kill-node"])
def test_recorded_torchrun_runs_pass_ftharness_check(name, capsys):
    assert cli_main(["check", os.path.join(DATA, name)]) == 0
    out = capsys.readouterr().out
    assert "PASS budget_accounting" in out and "max_restarts" in out and out.strip().endswith(
        f"PASS {name.replace('torchrun-', '')}-torchrun")


def test_compare_works_across_runtimes(tmp_path, capsys):
    out = tmp_path / "compare"
    code = cli_main(["compare", f"ray={os.path.join(DATA, 'kill-worker')}",
                     f"torchrun={os.path.join(DATA, 'torchrun-kill-worker')}", "--out", str(out)])
    assert code == 0
    table = capsys.readouterr().out
    rows = {tuple(line.split()[:2]) for line in table.splitlines() if line.split()}
    for metric in ("recovery_s", "detection_s", "lost_steps", "ettr", "wall_time_s"):
        assert (metric, "ray") in rows and (metric, "torchrun") in rows, table
    assert (out / "compare.csv").exists()


# ------------------------------------------------ the one reference loop, driven by Ray Train's side
def test_ray_train_side_drives_the_shared_loop_as_before(monkeypatch, tmp_path):
    """RayTrainSide with Ray Train's API stood in (no Ray started): the loop reads the
    context, restores, reports a checkpoint on rank 0 at the cadence, and ends exact."""
    import ray.train
    import ray.train.torch
    import torch

    from ftharness.harness.job import workload
    from ftharness.scenarios.reference_data import WorkloadConfig, expected_accumulators

    class Ctx:
        def get_world_rank(self):
            return 0

        def get_world_size(self):
            return 1

    reports = []

    def report(metrics, checkpoint=None):
        saved = None
        if checkpoint is not None:
            saved = torch.load(os.path.join(checkpoint.path, "state.pt"), weights_only=False)["step"]
        reports.append((metrics["step"], saved))

    monkeypatch.setattr(ray.train, "get_context", lambda: Ctx())
    monkeypatch.setattr(ray.train, "get_checkpoint", lambda: None)
    monkeypatch.setattr(ray.train, "report", report)
    monkeypatch.setattr(ray.train.torch, "get_device", lambda: torch.device("cpu"))
    monkeypatch.setattr(ray.train.torch, "prepare_model", lambda m: m)
    cfg = WorkloadConfig(steps=6, checkpoint_every=2).to_dict()
    out = workload.train_loop(cfg)
    assert reports == [(2, 2), (4, 4), (6, 6)]
    assert out["step"] == 6 and out["acc"] == expected_accumulators(WorkloadConfig(**cfg))


def test_cli_run_of_a_torchrun_scenario_refuses_address_and_ignores_ray_address(tmp_path, monkeypatch, capsys):
    path = tmp_path / "t.yaml"
    path.write_text("name: t\nworkload: {runtime: torchrun}\nfaults:\n"
                    "  - {kind: kill_worker, target: {rank: 1}, at: {step: 2}}\n")
    assert cli_main(["run", str(path), "--address", "auto", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ftharness: error: --address: workload.runtime torchrun") and err.count("\n") == 1
    started = []
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")   # a Ray cluster of someone else's: not ours to read
    monkeypatch.setattr("ftharness.harness.run.torchrun_runner.run_torchrun",
                        lambda sc, options: started.append(options.address) or {"verdict": "PASS"})
    monkeypatch.setattr("ftharness.harness.frontends.cli_run.print_summary", lambda *a: None)   # where cmd_run looks it up
    monkeypatch.setattr("ftharness.harness.frontends.cli_run.write_reports", lambda *a: None)
    assert cli_main(["run", str(path), "--out", str(tmp_path / "o")]) == 0 and started == [None]


# ---------------------------------------- hang, pause partition and corrupt checkpoint under torchrun (pure)
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from types import SimpleNamespace  # noqa: E402

from ftharness.faults import make_fault  # noqa: E402
from ftharness.faults.base import FaultContext, judge_landing  # noqa: E402
from ftharness.harness.cluster.reaper import alive  # noqa: E402


def _state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]


def test_launcher_pauses_a_node_tree_and_resumes_the_same_processes(tmp_path):
    """pause_node stops an agent and its children (SIGSTOP), resume_node continues them and
    leaves alone a process that is gone; nothing else is signalled."""
    launcher = Launcher("run-x", nodes=1, nnodes=(1, 1), max_restarts=0, spec_path="/tmp/spec.json",
                        collector_address="127.0.0.1:1", log_dir=str(tmp_path))
    child = "import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", child], start_new_session=True)
    launcher.agents[0] = SimpleNamespace(index=0, node_id="agent-0", proc=proc, seen=set(), killed_by_fault=False)
    try:
        deadline = time.time() + 20
        while time.time() < deadline and len(descendants_of(proc.pid)) < 2:
            time.sleep(0.1)
        stopped = launcher.pause_node(0)
        pids = [pid for pid, _ in stopped]
        assert pids[0] == proc.pid and len(pids) == 2           # the agent first, then its worker
        assert wait_for(lambda: all(_state(p) == "T" for p in pids))
        os.kill(pids[1], signal.SIGKILL)                        # a worker that dies while paused
        deadline = time.time() + 30
        while time.time() < deadline and alive({stopped[1]}):
            time.sleep(0.05)
        assert launcher.resume_node(stopped) == [proc.pid]
        assert wait_for(lambda: _state(proc.pid) in ("S", "R"))
        with pytest.raises(Exception, match="not running"):
            launcher.pause_node(5)
    finally:
        proc.kill()
        proc.wait()


def wait_for(cond, timeout_s=30.0):
    """A signal takes effect when its target next runs: on a loaded host (CI's pure lane runs
    beside the real-cluster lane) a SIGSTOPped process showed state T only after more than 5 s."""
    deadline = time.time() + timeout_s
    while not cond():
        if time.time() > deadline:
            return False
        time.sleep(0.02)
    return True


def descendants_of(pid):
    from ftharness.harness.cluster.reaper import descendants

    return descendants({pid})


class FakeNodes:
    """What PartitionNode sees of a torchrun cluster (ftharness.harness.torchrun.launcher.Launcher)."""

    from ftharness.harness.torchrun.launcher import Launcher
    capabilities = Launcher.capabilities

    def __init__(self):
        self.calls = []

    def head_node_id(self):
        return "harness"

    def node_index(self, nid):
        return {"agent-0": 0, "agent-1": 1}.get(nid)

    def worker_node_indices(self):
        return [0, 1]

    def node_id(self, index):
        return f"agent-{index}"

    def pause_node(self, index):
        self.calls.append(("pause", index))
        return [(100 + index, "1"), (200 + index, "2")]

    def resume_node(self, procs):
        self.calls.append(("resume", [p for p, _ in procs]))
        return [p for p, _ in procs][1:]


def fault_ctx(cluster, **kw):
    scheduled = []
    ctx = FaultContext(cluster=cluster, agents=None, members=[
        {"rank": 0, "node_id": "agent-0", "pid": 10}, {"rank": 1, "node_id": "agent-1", "pid": 11}],
        storage_dir=kw.pop("storage_dir", "/nonexistent"), history_path=kw.pop("history_path", "/nonexistent"),
        schedule=lambda delay, fn, label, kind="fault_action": scheduled.append((delay, fn, label, kind)), **kw)
    return ctx, scheduled


def test_partition_pause_under_torchrun_stops_the_node_and_resumes_it_after_duration_or_at_the_end():
    nodes = FakeNodes()
    spec = {"kind": "partition_node", "target": {"rank": 1}, "at": {"step": 4}, "duration_s": 7, "mode": "pause"}
    fault = make_fault(0, spec)
    ctx, scheduled = fault_ctx(nodes)
    hit = fault.inject(ctx)
    assert hit == {"node_id": "agent-1", "ranks": [1], "how": "SIGSTOP agent and workers",
                   "paused_pids": [101, 201], "duration_s": 7.0}
    (delay, fn, label, kind), = scheduled
    assert (delay, kind) == (7.0, "fault_healed") and "partition heals" in label
    healed = fn()
    assert healed["how"] == "SIGCONT after duration_s" and healed["gone_pids"] == [101]
    assert fault.heal(ctx) is None                      # already resumed: the end of the run has nothing to do
    fault = make_fault(0, spec)                         # a run that ends inside the partition
    fault.inject(ctx)
    assert fault.heal(ctx)["how"] == "SIGCONT at the end of the run"
    assert nodes.calls == [("pause", 1), ("resume", [101, 201]), ("pause", 1), ("resume", [101, 201])]
    with pytest.raises(Exception, match="head node"):
        make_fault(0, dict(spec, target={"rank": 1})).inject(
            fault_ctx(SimpleNamespace(**{**vars(FakeNodes()), "head_node_id": lambda: "agent-1",
                                         "node_index": nodes.node_index, "pause_node": nodes.pause_node}))[0])


def stall_history(kind, hit, error=True):
    """A worker or node stalled at seq 10; rank 0's collective times out; its agent retries."""
    events = [
        {"seq": 1, "t": 100.0, "kind": "run_start", "fit_index": 1, "runtime": "torchrun"},
        {"seq": 2, "t": 101.0, "kind": "attempt_start", "attempt_id": "round-0"},
        {"seq": 3, "t": 101.0, "kind": "worker_group_started", "attempt_id": "round-0", "workers": [
            {"rank": 0, "pid": 10, "node_id": "agent-0"}, {"rank": 1, "pid": 11, "node_id": "agent-1"}]},
        {"seq": 10, "t": 110.0, "kind": "fault_injected", "fault": 0, "fault_kind": kind, "target_hit": hit,
         "t_done": 110.0},
    ]
    if error:
        events.append({"seq": 11, "t": 115.1, "kind": "worker_error", "rank": 0, "error_type": "RuntimeError",
                       "error": "[gloo] Timed out waiting 5000ms for recv operation to complete"})
    events += [{"seq": 12, "t": 116.0, "kind": "failure", "agent": 0, "attempt_id": "round-0", "budget": "max_restarts",
                "decision": "RETRY", "error_type": "ChildFailedError", "count": 1},
               {"seq": 20, "t": 130.0, "kind": "run_end", "fit_index": 1, "outcome": "succeeded"}]
    return events


@pytest.mark.parametrize("kind, spec, hit", [
    ("hang_worker", {"target": {"rank": 1}}, {"rank": 1, "pid": 11, "node_id": "agent-1", "how": "SIGSTOP"}),
    ("partition_node", {"target": {"rank": 1}, "duration_s": 10},
     {"node_id": "agent-1", "ranks": [1], "how": "SIGSTOP agent and workers"}),
])
def test_a_stall_lands_on_the_failure_and_names_the_collective_timeout_that_ended_it(kind, spec, hit):
    fault = make_fault(0, {"kind": kind, "at": {"step": 4}, **spec})
    landing = judge_landing(fault, stall_history(kind, hit))
    assert landing.status == "landed" and landing.failure_seq == 12
    assert "what ended it: rank 0 raised RuntimeError 5.1 s after the fault" in landing.evidence
    assert "Timed out waiting 5000ms" in landing.evidence
    plain = judge_landing(fault, stall_history(kind, hit, error=False))   # as under Ray: the health check
    assert plain.status == "landed" and "what ended it" not in plain.evidence
    events = [e for e in stall_history(kind, hit) if e["kind"] not in ("failure", "worker_error")]
    assert judge_landing(fault, events).status == "missed"                # no failure: it did not land


def test_corrupt_checkpoint_damages_the_latest_committed_torchrun_checkpoint_and_lands_on_its_restore(tmp_path):
    run_dir = str(tmp_path / "storage" / "run")
    history = tmp_path / "history.jsonl"
    names, lines = [], []
    for step in (2, 4):
        src = tmp_path / f"src{step}"
        src.mkdir()
        (src / "state.pt").write_bytes(bytes(range(256)) * 4)
        hashes = file_hashes(str(src))
        (src / marker_name(0)).write_text(json.dumps({"step": step, "rank": 0, "digest": digest_of(hashes),
                                                      "files": hashes}))
        names.append(storage.commit(run_dir, str(src)))
        for kind in ("checkpoint_registered", "report"):
            lines.append({"seq": len(lines) + 1, "kind": kind, "rank": 0, "step": step, "checkpoint": names[-1],
                          "path": os.path.join(run_dir, names[-1])})
    history.write_text("".join(json.dumps(e) + "\n" for e in lines))
    fault = make_fault(0, {"kind": "corrupt_checkpoint", "which": "latest", "how": "bitflip", "at": {"step": 5}})
    ctx, _ = fault_ctx(FakeNodes(), storage_dir=run_dir, history_path=str(history))
    hit = fault.inject(ctx)
    assert hit["checkpoint"] == names[-1] == storage.latest(run_dir) and hit["path"].endswith("state.pt")
    assert hit["sha256_before"] != hit["sha256_after"]
    newest = os.path.join(run_dir, names[-1])
    assert directory_intact(newest, storage.read_markers(newest)) is False
    events = lines + [{"seq": 10, "kind": "fault_injected", "fault": 0, "target_hit": hit}]
    assert judge_landing(fault, events).status == "missed"       # nobody restored it: INCONCLUSIVE
    events.append({"seq": 12, "kind": "worker_start", "rank": 1, "restored_checkpoint": names[0]})
    assert judge_landing(fault, events).status == "missed"       # an older one is no evidence
    events.append({"seq": 13, "kind": "worker_start", "rank": 0, "restored_checkpoint": names[-1],
                   "restored_intact": False})
    landing = judge_landing(fault, events)
    assert landing.status == "landed" and "rank 0 restored it at seq 13 (digest mismatch)" in landing.evidence


def test_a_worker_held_by_two_faults_of_one_event_goes_on_only_after_both(tmp_path):
    """Two faults on rank 0's step 5 (corrupt, then kill): the worker waits at the gate of the
    first until the second is done too, so it cannot commit a newer checkpoint in between."""
    from ftharness.harness.run.torchrun_runner import TorchrunInjector

    sc = parse_scenario(torchrun(cluster={"nodes": 2}, workload={"num_workers": 2, "steps": 10},
                                 failure_config={"max_failures": 1}, faults=[
        {"kind": "corrupt_checkpoint", "which": "latest", "at": {"step": 5, "rank": 0}},
        {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5, "rank": 0}}]))
    col = Collector(str(tmp_path / "history.jsonl"), "run")
    try:
        inj = TorchrunInjector(sc, SimpleNamespace(rescheduled=[]), col, "run", str(tmp_path / "run"), str(tmp_path / "history.jsonl"))
        worker_waiting = []

        class Probe:
            def __init__(self, index, kind):
                self.index, self.kind, self.target, self.duration_s = index, kind, {}, None

            def inject(self, ctx):
                time.sleep(0.3)
                worker_waiting.append(t.is_alive())
                return {"probe": self.index}

        inj.faults = {0: Probe(0, "corrupt_checkpoint"), 1: Probe(1, "kill_worker")}
        inj.arm()
        worker = TcpEmitter(CollectorClient(col.address), "run", "worker", base={"rank": 0, "attempt_id": "round-0"})
        t = threading.Thread(target=lambda: worker.emit("step", step=5))
        t.start()
        assert wait_for(lambda: col.book._triggers.pending)
        inj.tick()
        t.join(5)
        assert worker_waiting == [True, True] and not t.is_alive()
    finally:
        col.close()


def test_a_torchrun_commit_through_the_chaos_filesystem_fails_in_staging_and_commits_nothing(tmp_path):
    """storage_errors under torchrun: the worker's commit goes through ftharness.faults.storage's filesystem;
    a torn write fails in the staging folder, nothing is committed, the hit is counted for landing."""
    from ftharness.faults.storage import CONTROL_FILE, chaos_filesystem, read_hits
    from ftharness.harness.torchrun.worker import storage_filesystem

    root = str(tmp_path / "storage")
    run_dir = os.path.join(root, "run")
    src = tmp_path / "src"
    src.mkdir()
    (src / "state.pt").write_bytes(b"x" * 1000)
    fs = chaos_filesystem(root)
    first = storage.commit(run_dir, str(src), fs)
    (tmp_path / "storage" / CONTROL_FILE).write_text(json.dumps(
        {"id": "0-abc", "ops": ["write"], "path_glob": "*/checkpoint_20*", "error_rate": 1.0, "partial": True}))
    time.sleep(0.15)                                   # the control file is read at most every 0.1 s
    with pytest.raises(OSError, match="injected partial write"):
        storage.commit(run_dir, str(src), fs)
    assert storage.committed(run_dir, fs) == [first] == storage.committed(run_dir)
    torn = os.listdir(os.path.join(run_dir, storage.STAGING))
    assert len(torn) == 1 and os.path.getsize(os.path.join(run_dir, storage.STAGING, torn[0], "state.pt")) == 500
    assert read_hits(pafs_local(), root, "0-abc")["errors_returned"] == 1
    assert storage.read_file(os.path.join(run_dir, first, "state.pt"), fs) == b"x" * 1000   # reads not chosen
    assert storage_filesystem({"storage_chaos_root": None}).type_name == "local"
    assert storage_filesystem({"storage_chaos_root": root}).type_name.startswith("py::ftharness-chaos")


def pafs_local():
    import pyarrow.fs as pafs

    return pafs.LocalFileSystem()


def test_an_agent_names_its_attempt_by_the_round_its_rendezvous_completed_not_a_later_one(monkeypatch):
    """Under load both agents' keep-alives can go stale: each drops the other and the emptied
    rendezvous moves on a round while the workers train on. The attempt is the round that
    next_rendezvous completed (recorded on the handler then), never the state's round read later."""
    from ftharness.harness.torchrun import agent

    monkeypatch.setenv(agent.ENV_ATTEMPT, "")            # rendezvoused() exports it: restored after the test
    told = []
    client = SimpleNamespace(call=lambda op, report: told.append((op, report)))
    rec = agent.AgentRecorder(client=client)
    state = SimpleNamespace(round=1)
    handler = SimpleNamespace(_state_holder=SimpleNamespace(state=state))
    group = SimpleNamespace(spec=SimpleNamespace(rdzv_handler=handler), group_rank=0, group_world_size=2,
                            workers=[SimpleNamespace(world_size=2)], master_port=1234)
    setattr(handler, agent.ROUND_ATTR, 0)
    rec.rendezvoused(group)
    assert rec.attempt_id == "round-0" and told[-1][1]["round"] == 0
    delattr(handler, agent.ROUND_ATTR)                  # a handler the wrapper never saw: the state's round
    rec.rendezvoused(group)
    assert rec.attempt_id == "round-1"


def test_an_injector_with_nothing_to_fire_never_polls_the_history(tmp_path):
    """A fault-free run (or one whose faults the worker does itself) has no trigger to poll:
    tick() asks the history nothing, so the injector does not slow training; with a fault it
    asks, and answers the run's progress (held workers too) from that one call."""
    from ftharness.harness.run.torchrun_runner import TorchrunInjector

    col = Collector(str(tmp_path / "history.jsonl"), "run")
    try:
        calls = []
        for faults in ([], [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}]):
            sc = parse_scenario(torchrun(cluster={"nodes": 2}, workload={"num_workers": 2, "steps": 10},
                                         failure_config={"max_failures": 1}, faults=faults))
            inj = TorchrunInjector(sc, SimpleNamespace(rescheduled=[]), col, "run", str(tmp_path / "run"),
                                   str(tmp_path / "history.jsonl"))
            real = inj._call
            inj._call = lambda method, *a, _real=real: (calls.append(method), _real(method, *a))[1]
            calls.clear()
            inj.arm()
            inj.start()
            polled = [inj.tick() for _ in range(3)]
            if not faults:
                assert polled == [None] * 3 and "take_pending" not in calls
            else:
                assert calls.count("take_pending") == 3 and {"held", "last_t", "events"} <= set(polled[-1])
    finally:
        col.close()
