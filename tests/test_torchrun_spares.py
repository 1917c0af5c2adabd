"""Issue 22, seen 7: torchrun launched as its users launch it, pure parts (no agent runs).

A spare node gets no agent: only as many agents start as the job needs, and a lost node's
agent starts again on a spare (the scheduler's part); `replace: true` adds a node to the pool.
The rendezvous is sized for a loaded machine; a node kill the job cannot survive by the way it
was set up is refused before the run, in one line. The real runs are in tests/test_torchrun.py."""

import subprocess
import time
from types import SimpleNamespace

import pytest

from ftharness.errors import ScenarioError
from ftharness.harness.run.runner import RunOptions
from ftharness.harness.run.torchrun_runner import TorchrunInjector, TorchrunRunner, launch_problem
from ftharness.harness.torchrun import launcher as launcher_mod
from ftharness.harness.torchrun.collector import Collector
from ftharness.harness.torchrun.launcher import JOIN_TIMEOUT_S, RDZV_CONF, Launcher
from ftharness.history.records import read_events
from ftharness.scenarios.schema import parse_scenario

NO_SUCH_PID = 99_999_999   # above any pid_max: signals to it fail, nothing real is touched


class FakeProc:
    def __init__(self, *args, **kwargs):
        self.pid, self.args, self.code = NO_SUCH_PID, args, None

    def poll(self):
        return self.code

    def wait(self, timeout=None):
        self.code = -9 if self.code is None else self.code
        return self.code


@pytest.fixture
def fake_agents(monkeypatch):
    """Launcher.start() with no processes: Popen and the rendezvous store are stand-ins."""
    import torch.distributed

    started = []

    def popen(cmd, env, **kwargs):
        started.append(env["FTHARNESS_NODE_ID"])
        return FakeProc(cmd)

    monkeypatch.setattr(launcher_mod.subprocess, "Popen", popen)
    monkeypatch.setattr(torch.distributed, "TCPStore", lambda *a, **k: SimpleNamespace(port=4242))
    return started


def launcher(tmp_path, nodes, nnodes=(2, 2)):
    return Launcher("run-x", nodes=nodes, nnodes=nnodes, max_restarts=1, spec_path="/tmp/spec.json",
                    collector_address="127.0.0.1:1", log_dir=str(tmp_path), profile="fast")


def test_a_spare_node_gets_no_agent_until_a_node_is_lost_then_the_lost_agent_starts_there(tmp_path, fake_agents):
    """Three nodes for two workers: two agents (the old launcher started three, and the spare churned
    the rendezvous); kill one node and an agent starts on the spare at once."""
    la = launcher(tmp_path, nodes=3).start()
    try:
        assert fake_agents == ["agent-0", "agent-1"] and la.spare_node_ids() == ["agent-2"]
        la.remove_node(0)
        assert fake_agents == ["agent-0", "agent-1", "agent-2"] and la.spare_node_ids() == []
        assert [(r["lost_node_id"], r["node_id"]) for r in la.rescheduled] == [("agent-0", "agent-2")]
        la.remove_node(1)                     # no spare left: nothing starts, as on a real pool
        assert len(fake_agents) == 3 and len(la.rescheduled) == 1
    finally:
        la.close()


def test_a_replacement_joins_the_pool_and_gets_an_agent_only_when_the_job_is_short_of_one(tmp_path, fake_agents):
    la = launcher(tmp_path, nodes=2).start()
    try:
        la.remove_node(0)                     # no spare: the job is short of a node
        assert la.add_node() == 2 and fake_agents == ["agent-0", "agent-1", "agent-2"]
        assert la.add_node() == 3 and len(fake_agents) == 3 and la.spare_node_ids() == ["agent-3"]
    finally:
        la.close()


def test_an_elastic_job_runs_one_agent_per_node_up_to_its_maximum(tmp_path, fake_agents):
    la = launcher(tmp_path, nodes=3, nnodes=(2, 4)).start()
    try:
        assert fake_agents == ["agent-0", "agent-1", "agent-2"] and la.spare_node_ids() == []
    finally:
        la.close()


def test_the_spare_takes_over_is_recorded_as_the_fault_s_follow_up(tmp_path):
    """The history says which node was lost and which spare took its place (what the real-cluster
    test asserts), in a fault_action of the fault that killed it."""
    sc = parse_scenario({"name": "t", "cluster": {"nodes": 3}, "failure_config": {"max_failures": 1},
                         "workload": {"runtime": "torchrun", "num_workers": 2, "steps": 10},
                         "faults": [{"kind": "kill_node", "target": {"rank": 0}, "at": {"step": 4}}]})
    history = str(tmp_path / "history.jsonl")
    col = Collector(history, "run")
    try:
        cluster = SimpleNamespace(rescheduled=[])

        class Kill:
            index, kind, target, duration_s, wants_resume = 0, "kill_node", {}, None, False

            def inject(self, ctx):
                cluster.rescheduled.append({"lost_node_id": "agent-0", "node_index": 2, "node_id": "agent-2",
                                            "t": time.time()})
                return {"node_id": "agent-0", "ranks": [0]}

        inj = TorchrunInjector(sc, cluster, col, "run", str(tmp_path / "run"), history)
        inj.faults = {0: Kill()}
        inj._fire(0, time.time(), {}, gated=False)
    finally:
        col.close()
    kinds = [(e["kind"], e.get("action")) for e in read_events(history) if e["kind"].startswith("fault_")]
    assert kinds == [("fault_injected", None),
                     ("fault_action", "spare node agent-2 takes the place of lost node agent-0")]
    action = [e for e in read_events(history) if e["kind"] == "fault_action"][0]
    assert action["fault"] == 0 and action["detail"]["node_id"] == "agent-2"


def test_the_rendezvous_is_sized_for_a_loaded_machine():
    """A keep-alive thread starved for seconds must not drop a live node (10 s, not 3 s), and a
    slow round must not time out at 60 s; the agents get exactly these settings."""
    fast = RDZV_CONF["fast"]
    assert fast["keep_alive_interval"] * fast["keep_alive_max_attempt"] >= 10
    assert fast["join_timeout"] == JOIN_TIMEOUT_S >= 600 and fast["close_timeout"] >= 60
    la = launcher("/tmp", nodes=2)
    la.port = 4242
    cmd = la.command()
    conf = dict(kv.split("=") for kv in cmd[cmd.index("--rdzv-conf") + 1].split(","))
    assert conf["keep_alive_max_attempt"] == "10" and conf["join_timeout"] == str(JOIN_TIMEOUT_S)


def torchrun(nodes, num_workers, fault, expect=None):
    data = {"name": "t", "cluster": {"nodes": nodes}, "failure_config": {"max_failures": 2},
            "workload": {"runtime": "torchrun", "num_workers": num_workers, "steps": 10},
            "faults": fault if isinstance(fault, list) else [fault]}
    if expect:
        data["expect"] = {"outcome": expect}
    return parse_scenario(data)


KILL = {"kind": "kill_node", "target": {"rank": 0}, "at": {"step": 4}}


@pytest.mark.parametrize("sc, field", [
    (torchrun(2, 2, KILL), "faults[0]: kill_node without replace leaves 1 node(s)"),
    (torchrun(3, 2, [KILL, dict(KILL, at={"step": 7})]), "faults[1]: kill_node without replace leaves 1 node(s)"),
    (torchrun(2, 2, dict(KILL, replace=True, replace_after_s=700)), "faults[0].replace_after_s: 700 s"),
])
def test_a_node_kill_the_job_cannot_survive_as_set_up_is_refused_before_the_run_in_one_line(tmp_path, sc, field):
    """The survivors would wait for a node that never comes and fail by RendezvousTimeoutError:
    the launch's doing, not TorchElastic's answer to the fault. Refused before any process starts."""
    with pytest.raises(ScenarioError) as e:
        TorchrunRunner(sc, RunOptions(out_dir=str(tmp_path / "out"), progress=False))
    msg = str(e.value)
    assert msg.startswith(field) and "\n" not in msg and len(msg) <= 300, msg
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("sc", [
    torchrun(3, 2, KILL),                                   # a spare node
    torchrun(2, 2, dict(KILL, replace=True)),               # a replacement
    torchrun(2, [1, 2], KILL),                              # elastic: goes on with one
    torchrun(2, 2, KILL, expect="failed"),                  # the user expects it to fail
    torchrun(2, 2, {"kind": "partition_node", "target": {"rank": 1}, "at": {"step": 4}, "duration_s": 5}),
])
def test_a_node_kill_the_job_can_survive_is_accepted(sc):
    assert launch_problem(sc) is None


def test_the_refusal_is_one_line_exit_2_from_the_cli_before_anything_starts(tmp_path, capsys):
    from ftharness.harness.frontends.cli import main

    path = tmp_path / "s.yaml"
    path.write_text("name: t\ncluster: {nodes: 2}\nworkload: {runtime: torchrun, num_workers: 2}\n"
                    "faults: [{kind: kill_node, target: {rank: 0}, at: {step: 4}}]\n")
    assert main(["run", str(path), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "kill_node without replace" in err[0], err
    assert subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True).stdout == b""
