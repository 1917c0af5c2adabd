"""The nodes of a torchrun run: one elastic agent per node, as local processes.

`Launcher.start()` hosts the c10d rendezvous store in the harness process (a
TCPStore on loopback; every agent joins it with `is_host=false`, so killing any
node never takes the store down, as etcd or a head node would not go down with
a worker) and starts one `python -m ftharness.harness.torchrun.agent` per node the job needs:

    --nnodes MIN:MAX --nproc-per-node 1 --rdzv-backend c10d
    --rdzv-endpoint 127.0.0.1:PORT --rdzv-id RUN --max-restarts N --monitor-interval 0.1

**Spare nodes.** A scenario's `cluster.nodes` may exceed the nodes the job needs
(`workload.num_workers`, at most its maximum; one worker per node). Only as many agents
start as the job needs; the other nodes are a *pool*, as a Kubernetes node pool or a
Slurm allocation is for a PyTorchJob or TorchX app: when a node is lost
(`remove_node`), the launcher, in the scheduler's place, starts a new agent on a free
spare node at once, and that agent joins the rendezvous. An idle standby agent is not
what TorchElastic users run: beyond `--nnodes MAX` it sits in the rendezvous'
redundancy list, and after the first restart it lands in the wait list instead, where
every healthy round sees "nodes waiting" and restarts (a spare agent made a 2-worker
run restart 161 times in 220 s). `add_node` (a fault's `replace: true`) adds a node to
the pool: an agent starts there only if the job is short of one.

Each agent runs in its own session (process group) with its log in
`RESULTS/torchrun/node-<i>.log`; its workers, which TorchElastic starts in
sessions of their own, die with it (ftharness.harness.torchrun.orphans). `close()`
SIGTERMs every agent (TorchElastic stops its workers), then SIGKILLs what is
left of every process tree it ever saw; it runs on return, exception, Ctrl-C,
SIGTERM (turned into KeyboardInterrupt while running) and atexit.

The launcher is also what faults see of the cluster (FaultContext.cluster):
nodes by index and id, `remove_node` (SIGKILL an agent and all its workers;
its own agent restarts nothing, a spare node's agent takes its place), `add_node`
(a replacement node joins the pool);
and, through `ProcessAgents`, `signal(node_id, pid, sig)` for one worker.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Dict, FrozenSet, List, Optional, Set, Tuple

from ftharness.harness.cluster.reaper import Proc, SigtermAsInterrupt, alive, descendants, identify, kill_all
from ftharness.errors import FaultSkipped
from ftharness.faults import capabilities as caps

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HEAD = "harness"   # the harness's own "node": the store and the collector; never a fault's target

#: rendezvous settings per cluster.profile. `fast` is sized for a loaded machine (agents,
#: workers and other jobs sharing a few cores): a dead node is dropped after 10 missed 1-s
#: keep-alives (10 s; at 3 s a keep-alive thread starved for a few seconds dropped a live
#: node and the rounds churned), a round may take TorchElastic's default 600 s to gather
#: its nodes (at 60 s a slow restart on a loaded host ended in RendezvousTimeoutError), and
#: closing may take 60 s. A node the job waits for but that never comes is refused before
#: the run (ftharness.harness.run.torchrun_runner.launch_problem), not left to this timeout.
#: `ray_defaults` keeps TorchElastic's own (join 600 s, keep-alive 5 s x 3).
JOIN_TIMEOUT_S = 600
RDZV_CONF = {
    "fast": {"join_timeout": JOIN_TIMEOUT_S, "last_call_timeout": 1, "close_timeout": 60,
             "keep_alive_interval": 1, "keep_alive_max_attempt": 10},
    "ray_defaults": {},
}
MONITOR_INTERVAL_S = {"fast": 0.1, "ray_defaults": 0.1}
STOP_GRACE_S = 5.0


@dataclass
class AgentProcess:
    index: int
    node_id: str
    proc: subprocess.Popen
    log: Any
    started: float
    killed_by_fault: bool = False
    seen: Set[Proc] = field(default_factory=set)   # every process of its tree ever sampled


def node_id(index: int) -> str:
    """A node's id in the history: its agent (reports show an id's first 8 characters)."""
    return f"agent-{index}"


class Launcher(SigtermAsInterrupt):
    """The torchrun runtime's cluster: one elastic agent per node, all on this host. To a fault
    it is a cluster handle (faults/capabilities.py) whose nodes ftharness numbers, stops, adds
    and pauses itself; it runs no Ray."""

    capabilities: FrozenSet[str] = frozenset({caps.NODES, caps.NODE_INDEX, caps.REMOVE_NODE, caps.ADD_NODE,
                                              caps.PAUSE_NODE})
    kind = "the torchrun runtime's agents"

    def __init__(self, run_name: str, nodes: int, nnodes: Tuple[int, int], max_restarts: int, spec_path: str,
                 collector_address: str, log_dir: str, profile: str = "fast"):
        self.run_name = run_name
        self.initial_nodes = nodes
        self.needed = min(nodes, nnodes[1])    # agents the job runs: one per node, at most --nnodes MAX
        self.free: List[int] = list(range(self.needed, nodes))   # spare nodes: no agent until one is lost
        self.rescheduled: List[Dict[str, Any]] = []   # lost node -> spare node its agent was started on
        self.nnodes = nnodes
        self.max_restarts = max_restarts
        self.spec_path = spec_path
        self.collector_address = collector_address
        self.log_dir = log_dir
        self.profile = profile
        self.agents: Dict[int, AgentProcess] = {}
        self.store = None
        self.port: Optional[int] = None
        self._next = 0
        self._closed = False
        self._old_sigterm = None

    # -------------------------------------------------------------- lifecycle
    def start(self) -> "Launcher":
        from torch.distributed import TCPStore

        os.makedirs(self.log_dir, exist_ok=True)
        atexit.register(self.close)
        self._install_sigterm()
        self.store = TCPStore("127.0.0.1", 0, is_master=True, multi_tenant=True, wait_for_workers=False)
        self.port = int(self.store.port)
        self._next = self.initial_nodes
        for index in range(self.needed):
            self._start_agent(index)
        return self

    def spare_node_ids(self) -> List[str]:
        return [node_id(i) for i in self.free]

    def command(self) -> List[str]:
        conf = {"is_host": "false", **RDZV_CONF.get(self.profile, {})}
        return [sys.executable, "-m", "ftharness.harness.torchrun.agent",
                "--nnodes", f"{self.nnodes[0]}:{self.nnodes[1]}", "--nproc-per-node", "1",
                "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{self.port}",
                "--rdzv-id", self.run_name, "--rdzv-conf", ",".join(f"{k}={v}" for k, v in conf.items()),
                "--max-restarts", str(self.max_restarts),
                "--monitor-interval", str(MONITOR_INTERVAL_S.get(self.profile, 0.1)),
                "--local-addr", "127.0.0.1",
                # TorchElastic's per-attempt logs (error.json) with the run's, not torchelastic_* in /tmp
                "--log-dir", os.path.join(self.log_dir, "elastic"),
                "-m", "ftharness.harness.torchrun.worker", self.spec_path]

    def environment(self, index: int) -> Dict[str, str]:
        env = dict(os.environ)
        env.update({
            "PYTHONPATH": os.pathsep.join([REPO] + [p for p in [os.environ.get("PYTHONPATH")] if p]),
            "PYTHONUNBUFFERED": "1",
            "OMP_NUM_THREADS": "1",
            "LOGLEVEL": os.environ.get("FTHARNESS_TORCHRUN_LOGLEVEL", "INFO"),
            # each round's rank 0 hosts its workers' store: an agent's shared store would die with its node
            "TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1",
            "FTHARNESS_COLLECTOR": self.collector_address,
            "FTHARNESS_RUN": self.run_name,
            "FTHARNESS_NODE_INDEX": str(index),
            "FTHARNESS_NODE_ID": node_id(index),
            "FTHARNESS_PARENT_PID": str(os.getpid()),
        })
        env.pop("RAY_ADDRESS", None)
        return env

    def add_node(self) -> int:
        """A node joins the pool (a replacement); its index. An agent starts on it when the
        job is short of one, otherwise it waits as a spare."""
        if self._closed:
            raise FaultSkipped("the run's nodes are torn down")
        index, self._next = self._next, self._next + 1
        if len(self.running()) < self.needed:
            self._start_agent(index)
        else:
            self.free.append(index)
        return index

    def _start_agent(self, index: int) -> None:
        log = open(os.path.join(self.log_dir, f"node-{index}.log"), "ab")
        proc = subprocess.Popen(self.command(), env=self.environment(index), cwd=REPO, stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        self.agents[index] = AgentProcess(index, node_id(index), proc, log, time.time())
        self.sample()

    def _reschedule(self, lost: int) -> None:
        """The scheduler's part: a lost node's agent starts again on a free spare node."""
        if not self.free or self._closed or len(self.running()) >= self.needed:
            return
        spare = self.free.pop(0)
        self._start_agent(spare)
        self.rescheduled.append({"lost_node_id": node_id(lost), "node_index": spare, "node_id": node_id(spare),
                                 "t": time.time()})

    def sample(self) -> None:
        """Remember every process of every agent's tree (a killed agent's workers
        are re-parented and can no longer be found by walking from it)."""
        for a in self.agents.values():
            if a.proc.poll() is None:
                a.seen |= identify(descendants({a.proc.pid}))

    def running(self) -> List[int]:
        return [i for i, a in self.agents.items() if a.proc.poll() is None]

    def exit_codes(self) -> Dict[int, Optional[int]]:
        return {i: a.proc.poll() for i, a in self.agents.items()}

    def killed(self) -> Set[int]:
        return {i for i, a in self.agents.items() if a.killed_by_fault}

    def leftovers(self) -> Set[Proc]:
        """Processes of this run still alive (none after close)."""
        return alive(set().union(*(a.seen for a in self.agents.values())) if self.agents else set())

    def close(self) -> None:
        """Stop every agent (SIGTERM: TorchElastic stops its workers), then
        SIGKILL whatever of any tree is left; stop the rendezvous store."""
        if self._closed:
            return
        self._closed = True
        try:
            self.sample()
            for a in self.agents.values():
                if a.proc.poll() is None:
                    try:
                        os.kill(a.proc.pid, signal.SIGTERM)
                    except ProcessLookupError:
                        pass
            deadline = time.time() + STOP_GRACE_S
            for a in self.agents.values():
                try:
                    a.proc.wait(timeout=max(0.1, deadline - time.time()))
                except subprocess.TimeoutExpired:
                    pass
            everything = set().union(*(a.seen for a in self.agents.values())) if self.agents else set()
            for _ in range(3):
                kill_all(alive(everything))
                if not alive(everything):
                    break
                time.sleep(0.2)
            for a in self.agents.values():
                try:
                    a.proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    pass
                a.log.close()
        finally:
            self.store = None
            self._restore_sigterm()
            atexit.unregister(self.close)

    # ------------------------------------------------- what faults see (FaultContext.cluster)
    def head_node_id(self) -> str:
        return HEAD

    def node_id(self, index: int) -> str:
        return node_id(index)

    def node_index(self, nid: str) -> Optional[int]:
        for i, a in self.agents.items():
            if a.node_id == nid:
                return i
        return None

    def worker_node_indices(self) -> List[int]:
        """Indices of the nodes whose agent is alive."""
        return self.running()

    def nodes(self) -> List[Any]:
        from types import SimpleNamespace

        return [SimpleNamespace(node_id=a.node_id, is_head=False, alive=a.proc.poll() is None, ip=None, labels={})
                for a in self.agents.values()]

    def remove_node(self, index: int, graceful: bool = False) -> None:
        """The node dies: SIGKILL its agent and every process under it at once."""
        a = self.agents.get(index)
        if a is None or a.proc.poll() is not None:
            raise FaultSkipped(f"node {index} is not running")
        self.sample()
        a.killed_by_fault = True
        kill_all(alive(a.seen | identify(descendants({a.proc.pid}))))
        try:
            a.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._reschedule(index)

    def pause_node(self, index: int) -> List[Proc]:
        """The node is cut off: SIGSTOP its agent and every process under it (no keep-alive
        reaches the rendezvous, no worker answers a collective). What it stopped, (pid, start)."""
        a = self.agents.get(index)
        if a is None or a.proc.poll() is not None:
            raise FaultSkipped(f"node {index} is not running")
        self.sample()
        procs = alive(a.seen | identify(descendants({a.proc.pid})))
        order = sorted(procs, key=lambda p: p[0] != a.proc.pid)   # the agent first: it then restarts nothing
        for pid, _ in order:
            try:
                os.kill(pid, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        return order

    def resume_node(self, procs: List[Proc]) -> List[int]:
        """SIGCONT what `pause_node` stopped, the same processes only (a recycled pid is left
        alone), its workers before the agent; the pids resumed."""
        resumed = []
        for pid, start in reversed(list(procs)):
            if not alive({(pid, start)}):
                continue
            try:
                os.kill(pid, signal.SIGCONT)
                resumed.append(pid)
            except ProcessLookupError:
                pass
        return resumed

    def train_env(self) -> Dict[str, str]:
        return {}

    def signal_worker(self, nid: str, pid: int, sig: int) -> bool:
        """Send `sig` to a worker of node `nid`; False if it is already gone. Refuses
        any process that is not under that node's agent."""
        index = self.node_index(nid)
        a = self.agents.get(index) if index is not None else None
        if a is None or a.proc.poll() is not None:
            return False
        tree = descendants({a.proc.pid})
        if not os.path.exists(f"/proc/{pid}"):
            return False
        if pid not in tree or pid == a.proc.pid:
            raise ValueError(f"pid {pid} is not a worker of node {nid}")
        self.sample()
        try:
            os.kill(pid, sig)
            return True
        except ProcessLookupError:
            return False


class ProcessAgents:
    """FaultContext.agents for torchrun: signals a worker process of a node directly."""

    def __init__(self, launcher: Launcher):
        self.launcher = launcher

    def start(self, node_ids) -> None:
        pass

    def signal(self, nid: str, pid: int, sig: int) -> bool:
        return self.launcher.signal_worker(nid, pid, sig)

    def close(self) -> None:
        pass
