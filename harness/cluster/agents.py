"""Per-node agent actors: the hands of process-level faults on every node.

An agent is a tiny actor pinned to one node (no CPUs). It signals processes on
its node and pauses or resumes the node's whole process tree. Faults go through
agents instead of calling `os.kill` from the driver, so a scenario works the
same on the embedded cluster and on a multi-machine cluster.

An agent refuses to touch a process that is not a Ray process of its own node
(a descendant of its raylet): faults touch only what the cluster runs.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Dict, List

import ray

from ftharness.harness.cluster.reaper import descendants

NAMESPACE = "ftharness"


@ray.remote(num_cpus=0, max_restarts=0)
class NodeAgent:
    def __init__(self):
        self.raylet_pid = os.getppid()  # Ray workers are children of their raylet

    def info(self) -> Dict[str, int]:
        return {"pid": os.getpid(), "raylet_pid": self.raylet_pid}

    def node_pids(self) -> List[int]:
        """The raylet and every process under it, this agent excluded."""
        return sorted(descendants({self.raylet_pid}) - {os.getpid()})

    def signal(self, pid: int, sig: int) -> bool:
        """Send `sig` to a Ray process of this node; False if it is already gone."""
        if not os.path.exists(f"/proc/{pid}"):
            return False
        if pid not in descendants({self.raylet_pid}) or pid == os.getpid():
            raise ValueError(f"pid {pid} is not a Ray process of this node")
        try:
            os.kill(pid, sig)
            return True
        except ProcessLookupError:
            return False

    def pause_node(self, duration_s: float) -> List[int]:
        """SIGSTOP the raylet and all its processes for `duration_s` (a node cut
        off: it neither heartbeats nor answers), then SIGCONT them.

        The resume is armed *here*, in a detached timer process, before the
        stop: once GCS declares the paused node dead, no call reaches this agent
        any more, on any cluster."""
        pids = self.node_pids()
        subprocess.Popen(
            [sys.executable, "-c",
             "import os,signal,sys,time; time.sleep(float(sys.argv[1]))\n"
             "for p in sys.argv[2:]:\n"
             "    try: os.kill(int(p), signal.SIGCONT)\n"
             "    except OSError: pass",
             str(duration_s), *map(str, pids)],
            start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        for p in pids:
            try:
                os.kill(p, signal.SIGSTOP)
            except ProcessLookupError:
                pass
        return pids

    def resume_node(self, pids: List[int]) -> None:
        for p in pids:
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def kill_raylet(self) -> None:
        """A node dying without notice: its raylet and everything under it."""
        for p in sorted(descendants({self.raylet_pid}) - {os.getpid()}, reverse=True):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os._exit(0)


class Agents:
    """Starts agents on demand, one per node, and forgets them when nodes die."""

    def __init__(self):
        self._agents: Dict[str, ray.actor.ActorHandle] = {}

    def on(self, node_id: str):
        if node_id not in self._agents:
            self.start([node_id])
        return self._agents[node_id]

    def start(self, node_ids: List[str], timeout_s: float = 30.0) -> None:
        """Start agents on these nodes in parallel; nodes that cannot host one are skipped."""
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        new = {n: NodeAgent.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n, soft=False)).remote()
               for n in node_ids if n not in self._agents}
        failed = []
        for node_id, agent in new.items():
            try:
                ray.get(agent.info.remote(), timeout=timeout_s)
                self._agents[node_id] = agent
            except Exception as e:
                ray.kill(agent)
                failed.append(f"{node_id[:12]} ({type(e).__name__})")
        if failed:
            raise RuntimeError(f"no agent could start on node {', '.join(failed)}")

    def signal(self, node_id: str, pid: int, sig: int) -> bool:
        return ray.get(self.on(node_id).signal.remote(pid, sig), timeout=30)

    def forget(self, node_id: str) -> None:
        self._agents.pop(node_id, None)

    def keep_only(self, node_ids: List[str]) -> None:
        """Agents of nodes not in `node_ids` (gone, replaced) ended and dropped: a suite keeps its
        cluster's agents from one run to the next, and a later run never signals through a dead one."""
        for node_id in [n for n in self._agents if n not in set(node_ids)]:
            try:
                ray.kill(self._agents.pop(node_id))
            except Exception:  # noqa: BLE001 - gone with its node
                pass

    def close(self) -> None:
        for a in self._agents.values():
            try:
                ray.kill(a)
            except Exception:
                pass
        self._agents.clear()
