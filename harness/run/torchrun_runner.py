"""Runs one `workload.runtime: torchrun` scenario: no Ray cluster is started.

Flow: validate -> results folder -> collector (the history book, served on
loopback) -> armed injector -> one elastic agent per node (ftharness.harness.torchrun.launcher)
-> the injector fires faults while the agents run -> every agent exits ->
`run_end` -> teardown -> the same verdict and summary.json as a Ray run.

What maps to what (README, "The torchrun runtime"): a node is an agent
process; an attempt is a rendezvous round; the budget is `--max-restarts`
(`failure_config.max_failures`), counted by each agent for its own group.
The run succeeded when every agent that took part and was not killed by a
fault exited 0; it failed when one of them did not (its error type: what the
agent raised, ChildFailedError when its restarts ran out).
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from typing import Any, Dict, List, Optional

from ftharness.faults import REGISTRY
from ftharness.history import records
from ftharness.harness.run.injector import Injector
from ftharness.harness.run.injector import crash_plans
from ftharness.harness.run.runtime import DECLARED, Run, Runtime, drive
from ftharness.harness.run.shared import (RunOptions, new_run_name, storage_location, summarize, versions, workload_config,
                                          write_scenario, write_summary)
from ftharness.errors import ScenarioError
from ftharness.history.model import TORCHRUN_BUDGET
from ftharness.harness.torchrun.collector import Collector, LocalEmitter
from ftharness.harness.torchrun.launcher import RDZV_CONF, Launcher, ProcessAgents
from ftharness.scenarios.schema import TORCHRUN_COLLECTIVE_TIMEOUT_S, Scenario

TICK_S = 0.05
#: after the first agent succeeded, how long the others may take to follow (exit barrier, spares)
FOLLOW_S = 60.0


class TorchrunInjector(Injector):
    """The fault injector on a history book in this process and local agent processes."""

    def __init__(self, scenario: Scenario, launcher: Launcher, collector: Collector, run_name: str,
                 storage_dir: str, history_path: str):
        # TorchElastic has no worker health check: what ends a hung worker is the other ranks'
        # collective timeout, so a hang's landing waits that long (ftharness.harness.run.injector.unresolved)
        super().__init__(scenario, launcher, collector.book, run_name, storage_dir, history_path,
                         health_check_timeout_s=collective_timeout_s(scenario))
        self.agents = ProcessAgents(launcher)

    def _start_agents(self) -> None:
        pass   # the nodes are local processes: nothing to place on them

    def _fire(self, index: int, t_requested: float, event: Dict[str, Any], gated: bool) -> Dict[str, Any]:
        """A fault, then what the scheduler did about it: a lost node's agent started on a
        spare node (ftharness.harness.torchrun.launcher), recorded as the fault's follow-up."""
        done = self.cluster.rescheduled
        before = len(done)
        record = super()._fire(index, t_requested, event, gated)
        for r in done[before:]:
            self.emitter.emit("fault_action", fault=index, fault_kind=self.faults[index].kind,
                              action=f"spare node {r['node_id']} takes the place of lost node {r['lost_node_id']}",
                              detail={**{k: v for k, v in r.items() if k != "t"}, "how": "agent started on a spare node"},
                              t_requested=r["t"], t_done=r["t"])
        return record

    def make_emitter(self, history, run_name: str):
        return LocalEmitter(history, run_name, "injector")

    def _call(self, method: str, *args: Any) -> Any:
        return getattr(self.history, method)(*args)

    _send = _call

    def _release(self, fault: int) -> None:
        self.history.release(fault)


def torchrun_use_gpu(scenario: Scenario, cuda=None) -> bool:
    """Whether the torchrun workers train on GPUs: `use_gpu: auto` takes them when the scenario
    gives each node one (cluster.gpus_per_node: 1) and this host has a GPU for every node;
    refused in one line where they cannot (`cuda`: ftharness.harness.job.device.CudaInfo)."""
    from ftharness.harness.job.device import CudaInfo, gpu_refusal, wants_gpu

    c = scenario.cluster
    use = wants_gpu(scenario.workload.use_gpu, c.gpus_per_node)
    if not use:
        return False
    cuda = cuda or CudaInfo.probe()
    why = gpu_refusal(use, c.gpus_per_node * c.nodes, cuda)
    if why is None and cuda.device_count < c.nodes:
        why = (f"cluster.gpus_per_node: {c.nodes} torchrun nodes of one GPU each need {c.nodes} GPUs on this "
               f"host; it has {cuda.device_count}")
    if why:
        raise ScenarioError(f"{scenario.name}: {why}")
    return True


def collective_timeout_s(scenario: Scenario) -> float:
    """The workers' gloo process-group timeout: the scenario's, or TorchElastic's usual default here."""
    return float(scenario.workload.collective_timeout_s or TORCHRUN_COLLECTIVE_TIMEOUT_S)


def rdzv_conf(scenario: Scenario) -> Dict[str, Any]:
    """The rendezvous settings the agents get (ftharness.harness.torchrun.launcher.RDZV_CONF)."""
    return {"is_host": False, **RDZV_CONF.get(scenario.cluster.profile, {})}


def nnodes(scenario: Scenario) -> tuple:
    w = scenario.workload
    return tuple(w.num_workers) if isinstance(w.num_workers, tuple) else (w.num_workers, w.num_workers)


def launch_problem(scenario: Scenario) -> Optional[str]:
    """Why ftharness cannot launch this torchrun scenario so that the runtime, not the launch,
    decides it, as one `field: reason` line; or None.

    A `kill_node` without `replace` takes a node for good. When the job then has fewer nodes
    than `num_workers` needs (no spare left, a fixed world size), the survivors wait in the
    rendezvous for a node that never comes and fail by RendezvousTimeoutError: that is how
    the scenario was set up, not TorchElastic's answer to the fault. A replacement that comes
    after the rendezvous has given up is the same. A scenario that expects the run to fail
    is left alone."""
    from ftharness.harness.torchrun.launcher import JOIN_TIMEOUT_S

    if scenario.expect.outcome == "failed":
        return None
    low, high = nnodes(scenario)
    nodes = scenario.cluster.nodes
    needed = min(nodes, high)
    spares, lost = nodes - needed, 0
    join_s = JOIN_TIMEOUT_S if scenario.cluster.profile == "fast" else 600
    for i, f in enumerate(scenario.faults):
        if not REGISTRY[f.kind].loses_node:
            continue
        if f.replace:
            if (f.replace_after_s or 0) >= join_s:
                return (f"faults[{i}].replace_after_s: {f.replace_after_s:g} s is past the rendezvous' join timeout "
                        f"({join_s} s): the survivors give up before the replacement comes; allowed: below {join_s}")
            continue
        lost += 1
        left = needed - max(0, lost - spares)
        if left < low:
            return (f"faults[{i}]: kill_node without replace leaves {left} node(s) for workload.num_workers "
                    f"{scenario.workload.num_workers} (cluster.nodes {nodes}, {spares} spare): the survivors would "
                    f"wait for a node that never comes; add a spare (cluster.nodes: {nodes + lost - spares}), "
                    f"replace: true, or an elastic num_workers: [{left}, {high}]")
    return None


class TorchrunRunner:
    """Drives one torchrun scenario; owns its processes from start to teardown."""

    def __init__(self, scenario: Scenario, options: RunOptions):
        declared = Torchrun.declared
        if scenario.workload.runtime != declared.name:
            raise ScenarioError(f"workload.runtime: this runner runs {declared.name} scenarios only")
        if options.resume:
            raise ScenarioError("--resume: a torchrun run cannot be resumed (TorchElastic has no run to continue)")
        if options.address:
            raise ScenarioError(declared.cluster_refusal("--address", options.address))
        problem = launch_problem(scenario)
        if problem:
            raise ScenarioError(problem)
        self.scenario = scenario
        self.options = options
        self.out_dir = os.path.abspath(options.out_dir)
        self.run_name = new_run_name(scenario.name)
        self.storage_path = storage_location(scenario.workload.storage_path or os.path.join(self.out_dir, "storage"))
        self.run_dir = os.path.join(self.storage_path, self.run_name)
        self.history_path = os.path.join(self.out_dir, records.HISTORY_FILE)
        self.max_restarts = int(scenario.failure_config.max_failures)
        self.use_gpu = torchrun_use_gpu(scenario)
        self.collector: Optional[Collector] = None
        self.launcher: Optional[Launcher] = None
        self.injector: Optional[TorchrunInjector] = None
        self.emitter: Optional[LocalEmitter] = None
        self.t0 = time.time()

    # -- public
    def run(self) -> Dict[str, Any]:
        """Start, wait for every agent to end, tear down; returns the summary."""
        return drive(self)

    def start(self) -> None:
        """Results folder, the collector, the armed injector and the agents, started; what
        was started is torn down (`close`) if the rest fails."""
        sc = self.scenario
        os.makedirs(self.out_dir, exist_ok=True)
        write_scenario(sc, os.path.join(self.out_dir, "scenario.yaml"))
        self.collector = Collector(self.history_path, self.run_name)
        try:
            self.emitter = emitter = LocalEmitter(self.collector.book, self.run_name, "harness")
            self.t0 = time.time()
            duration = sc.workload.duration_s
            cfg = workload_config(sc, use_gpu=self.use_gpu, stop_at=None if duration is None else self.t0 + duration)
            spec_path = self._write_spec(cfg)
            self.launcher = Launcher(self.run_name, sc.cluster.nodes, nnodes(sc), self.max_restarts, spec_path,
                                     self.collector.address, os.path.join(self.out_dir, "torchrun"),
                                     profile=sc.cluster.profile)
            self.injector = TorchrunInjector(sc, self.launcher, self.collector, self.run_name, self.run_dir,
                                             self.history_path)
            self.injector.arm()
            emitter.emit("run_start", scenario=sc.name, run_name=self.run_name, storage_path=self.storage_path,
                         resume_of=None, workload=cfg, failure_config=sc.failure_config.model_dump(),
                         num_workers=sc.workload.num_workers, fit_index=1, runtime="torchrun",
                         max_restarts=self.max_restarts, nodes=sc.cluster.nodes,
                         agents=self.launcher.needed, spare_nodes=self.launcher.spare_node_ids(),
                         rdzv_conf=rdzv_conf(sc))
            self.launcher.start()
        except BaseException:
            self.close()
            raise

    def wait(self) -> Dict[str, Any]:
        """The agents' outcome, once every one ended (or the run timed out), recorded as run_end."""
        outcome = self._wait()
        self.emitter.emit("run_end", fit_index=1, fault_specs=list(self.injector.specs), **outcome)
        return outcome

    def close(self) -> None:
        """Heal what is still broken, stop the agents, close the collector (the history)."""
        try:
            if self.injector is not None:
                self.injector.finish()
        finally:
            try:
                if self.launcher is not None:
                    self.launcher.close()
            finally:
                self.collector.close()

    # -- internals
    def _write_spec(self, cfg: Dict[str, Any]) -> str:
        sc = self.scenario
        spec = {"run_name": self.run_name, "run_dir": self.run_dir, "workload": cfg,
                "crash_plans": crash_plans(sc), "num_to_keep": sc.workload.num_to_keep,
                "hold_s": sc.timeout_s if (sc.faults and sc.landing_hold) else None,
                "pg_timeout_s": collective_timeout_s(sc),
                # every agent runs on this host, one worker each (LOCAL_RANK 0): the rank picks its GPU
                "use_gpu": self.use_gpu, "gpu_by": "rank",
                # storage_errors: the workers' checkpoint operations go through the chaos filesystem,
                # whose control file the fault writes in the storage root (ftharness.faults.storage)
                "storage_chaos_root": self.storage_path if any(REGISTRY[f.kind].wraps_storage for f in sc.faults)
                else None}
        folder = os.path.join(self.out_dir, "torchrun")
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, "worker-spec.json")
        with open(path, "w") as f:
            json.dump(spec, f, indent=2)
        return path

    def _wait(self) -> Dict[str, Any]:
        from ftharness.harness.run.progress import Progress

        deadline = self.t0 + self.scenario.timeout_s
        self.injector.start()
        last_progress, first_ok = 0.0, None
        with Progress(self.scenario, enabled=self.options.progress) as progress:
            while True:
                self.injector.tick()
                now = time.time()
                if now - last_progress > 0.5:
                    last_progress = now
                    self.launcher.sample()
                    state = self.collector.book.progress()
                    progress.update(state)
                    self.injector.resolve_hold(state)
                codes = self.launcher.exit_codes()
                if not self.launcher.running():
                    return self._outcome()
                if first_ok is None and any(c == 0 for c in codes.values()):
                    first_ok = now
                if first_ok is not None and now - first_ok > FOLLOW_S:
                    return self._outcome(note=f"agents {self.launcher.running()} still running {FOLLOW_S:.0f} s "
                                              f"after one finished; stopped")
                if now > deadline:
                    return {"outcome": "failed", "error_type": "ScenarioTimeout", "agents": self.agents_report(),
                            "error": f"the agents did not finish within timeout_s={self.scenario.timeout_s}"}
                time.sleep(TICK_S)

    def agents_report(self) -> List[Dict[str, Any]]:
        """Each agent: how it ended, by its own last word and its exit code."""
        exits = self.collector.agent_exits if self.collector is not None else {}
        killed = self.launcher.killed()
        return [{"node": i, "node_id": self.launcher.node_id(i), "exit_code": code,
                 "killed_by_fault": i in killed, **{k: v for k, v in exits.get(i, {}).items()
                                                    if k in ("how", "participated", "error_type", "error")}}
                for i, code in sorted(self.launcher.exit_codes().items())]

    def _outcome(self, note: Optional[str] = None) -> Dict[str, Any]:
        agents = self.agents_report()
        live = [a for a in agents if not a["killed_by_fault"]]
        # a spare node that never ran a worker may leave the closed rendezvous with an error: not the job's
        counted = [a for a in live if a.get("participated", True)]
        failed = [a for a in counted if a["exit_code"] != 0]
        ok = [a for a in counted if a["exit_code"] == 0]
        events = records.read_events(self.history_path)
        ends = [e for e in events if e.get("kind") == "worker_end" and e.get("rank") == 0
                and e.get("return_value") is not None]
        reports = [e for e in events if e.get("kind") == "report" and e.get("rank") == 0]
        out: Dict[str, Any] = {"agents": agents}
        if ok and not failed:
            out.update(outcome="succeeded", error_type=None, error=note,
                       return_value=ends[-1]["return_value"] if ends else None,
                       metrics=dict(reports[-1].get("metrics") or {}) if reports else None,
                       checkpoint=(reports[-1].get("checkpoint") if reports else None))
            return out
        first = failed[0] if failed else None
        raised = next((e for e in events if e.get("kind") == "failure" and e.get("decision") == "RAISE"), None)
        if raised is not None:     # the job failed of the first agent that gave up
            error_type = raised.get("error_type")
        elif first is not None:
            error_type = first.get("error_type") or f"AgentExit{first['exit_code']}"
        else:
            error_type = "AllNodesKilled"
        error = (f"node {first['node']} agent exited {first['exit_code']}: {first.get('error') or first.get('how')}"
                 if first else "no agent that took part was left (every one was killed)")
        out.update(outcome="failed", error_type=error_type, error=(error + (f"; {note}" if note else ""))[:2000])
        return out

    def summarize(self, outcome: Dict[str, Any], wall: float) -> Dict[str, Any]:
        leftovers = sorted(pid for pid, _ in self.launcher.leftovers()) if self.launcher else []
        summary = summarize(self.scenario, self.history_path, outcome, self.injector.specs if self.injector else None, {
            "not_applicable": {
                "budgets worker_group, preemption, controller": "Ray Train's separate budgets; TorchElastic has "
                "one, --max-restarts (failure_config.max_failures), counted by each node's agent, and "
                "budget_accounting judges by that rule",
                "Train controller states": "TorchElastic has no controller; the agents' decisions are recorded "
                "as controller_state and failure events (ftharness.harness.torchrun.agent)",
            },
            "run_name": self.run_name,
            "wall_time_s": round(wall, 3),
            "storage_path": self.storage_path,
            "resume_of": None,
            "results_dir": self.out_dir,
            "versions": versions(),
            "agents": outcome.get("agents", []),
        }, settings={
            "runtime": "torchrun",
            "profile": self.scenario.cluster.profile,
            "address": "torchrun (local elastic agents, no Ray)",
            "address_source": None,
            "head_node_id": "harness",
            "nodes": self.scenario.cluster.nodes,
            "nnodes": "%d:%d" % nnodes(self.scenario),
            "max_restarts": self.max_restarts,
            "collective_timeout_s": collective_timeout_s(self.scenario),
            "rdzv_conf": rdzv_conf(self.scenario),
            "agents_needed": self.launcher.needed if self.launcher else None,
            "spare_nodes": self.scenario.cluster.nodes - (self.launcher.needed if self.launcher else 0),
            "rescheduled": [{k: v for k, v in r.items() if k != "t"}
                            for r in (self.launcher.rescheduled if self.launcher else [])],
            "train_env": {},
            "use_gpu": self.use_gpu,
            "cluster_start_s": 0.0,
            "leftover_pids": leftovers,
        })
        summary["budgets"] = {TORCHRUN_BUDGET: summary["budgets"].get(TORCHRUN_BUDGET, 0)}
        write_summary(self.out_dir, summary)   # redacted, as every runtime's
        return summary


class Torchrun(Runtime):
    """torchrun: one TorchElastic agent process per node on this host, no Ray cluster."""

    declared = DECLARED["torchrun"]

    def cluster(self, scenario: Scenario, address: Optional[str]):
        return contextlib.nullcontext()   # each run starts its own agents (Launcher)

    def runner(self, scenario: Scenario, cluster, options: RunOptions) -> Run:
        return TorchrunRunner(scenario, options)

    def run_on(self, scenario: Scenario, cluster, options: RunOptions) -> Dict[str, Any]:
        return run_torchrun(scenario, options)

    def run(self, scenario: Scenario, options: RunOptions) -> Dict[str, Any]:
        return run_torchrun(scenario, options)


def run_torchrun(scenario: Scenario, options: RunOptions) -> Dict[str, Any]:
    """Run a torchrun scenario end to end; returns its summary."""
    from ftharness.harness.run.guard import check_capabilities

    check_capabilities(scenario, Launcher)   # what its faults need of the agents, before any starts
    return TorchrunRunner(scenario, options).run()
