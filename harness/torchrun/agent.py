"""One node's elastic agent: `python -m ftharness.harness.torchrun.agent <torchrun arguments>`.

This *is* `torch.distributed.run` (its `main`, its LocalElasticAgent, its c10d
rendezvous), with a recorder laid over six of the agent's own methods, the way
ftharness records Ray Train's controller through a callback. It reads what the
agent decides at the moment it decides it and never changes a decision:

- `_rendezvous` returned: the agent joined round N (`attempt_id` `round-N`,
  the same on every agent); the id goes into the environment its workers inherit.
- `_start_workers` returned: the pids of this node's ranks in that round.
- `_monitor_workers` found the group FAILED (or UNHEALTHY): the agent now
  retries while `_remaining_restarts > 0`, else raises; recorded as a
  `controller_state` and a `failure` charged to `max_restarts` with the count
  the agent's own budget reached. TorchElastic counts every failure of this
  node's group against one budget (`--max-restarts`), per agent: a node that
  only sees the others leave restarts without counting (membership change).
- `_restart_workers` with no failure seen first: the agent noticed that nodes
  are waiting to join (a node died and a spare or replacement took its place,
  or another node restarted first) and restarts its group as a *membership
  change*, which TorchElastic does not count. Recorded as a `failure` charged to
  `membership` (no budget), decision RETRY: the restart a dead node cost.
- `run` raised (rendezvous timed out or closed): a failure charged to no budget
  (`none`, RAISE), as Ray charges its fatal controller errors.
- `_stop_workers`: the agent ends its workers of the round.
Events go to the collector (ftharness.harness.torchrun.collector); a recorder that
cannot reach it loses the event (a visible gap) and the agent goes on.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, Dict, List, Optional

from ftharness.harness.torchrun.client import CollectorClient, TcpEmitter
from ftharness.harness.torchrun.orphans import die_with_parent

ENV_NODE = "FTHARNESS_NODE_INDEX"      # this agent's node index (0, 1, ... and on for replacements)
ENV_NODE_ID = "FTHARNESS_NODE_ID"      # its node id in the history
ENV_RUN = "FTHARNESS_RUN"              # the run name
ENV_PARENT = "FTHARNESS_PARENT_PID"    # the harness process
ENV_AGENT_PID = "FTHARNESS_AGENT_PID"  # exported to the workers: their expected parent
ENV_ATTEMPT = "FTHARNESS_ATTEMPT_ID"   # exported to the workers: the round they belong to
BUDGET = "max_restarts"
MEMBERSHIP = "membership"              # a restart TorchElastic does not count (nodes joined or left)
RAISED = "ChildFailedError"            # what torchrun raises when a group fails past its restarts
ROUND_ATTR = "_ftharness_round"        # set on the rendezvous handler: the round its last rendezvous completed


def describe(failure: Any) -> str:
    """'SIGKILL' or 'exit code 1' for a torch ProcessFailure."""
    code = getattr(failure, "exitcode", None)
    if isinstance(code, int) and code < 0:
        try:
            return failure.signal_name()
        except Exception:  # noqa: BLE001
            return f"signal {-code}"
    return f"exit code {code}"


class AgentRecorder:
    """Hands this agent's decisions to the collector."""

    def __init__(self, client: Optional[CollectorClient] = None):
        self.node = int(os.environ.get(ENV_NODE, "0"))
        self.node_id = os.environ.get(ENV_NODE_ID, f"agent-{self.node}")
        self.client = client or CollectorClient()
        self.emitter = TcpEmitter(self.client, os.environ.get(ENV_RUN, "run"), "controller",
                                  base={"agent": self.node, "node_id": self.node_id, "pid": os.getpid()})
        self.attempt_id: Optional[str] = None
        self.participated = False
        self._failure_seen = False
        self._last_failures: Dict[str, str] = {}

    def _tell(self, op: str, report: Dict[str, Any]) -> None:
        try:
            self.client.call(op, dict(report, node=self.node, node_id=self.node_id, t=time.time()))
        except Exception:  # noqa: BLE001 - recording never alters the agent
            pass

    # -- the agent's moments
    def rendezvoused(self, worker_group) -> None:
        try:
            handler = worker_group.spec.rdzv_handler
            # the round next_rendezvous completed (its store prefix names it); the shared state read
            # later may be a round ahead: under load the agents' keep-alives can both go stale, each
            # drops the other, and the emptied rendezvous moves to the next round while training goes on
            rnd = getattr(handler, ROUND_ATTR, None)
            if rnd is None:
                rnd = handler._state_holder.state.round   # private: the shared round number
            self.attempt_id = f"round-{rnd}"
        except Exception:  # noqa: BLE001 - another rendezvous backend: the round's master port names it
            rnd = None
            self.attempt_id = f"port-{worker_group.master_port}"
        os.environ[ENV_ATTEMPT] = self.attempt_id   # the workers started next inherit it
        self._tell("agent_rendezvous", {"attempt_id": self.attempt_id, "round": rnd,
                                        "group_rank": worker_group.group_rank,
                                        "group_world_size": worker_group.group_world_size,
                                        "world_size": _world_size(worker_group)})

    def started(self, worker_group, pids: Dict[int, Any]) -> None:
        self.participated = True
        members = [{"rank": w.global_rank, "local_rank": w.local_rank, "pid": pids.get(w.local_rank),
                    "node_id": self.node_id, "agent": self.node, "actor_id": None}
                   for w in worker_group.workers]
        self._tell("agent_started", {"attempt_id": self.attempt_id, "members": members,
                                     "world_size": _world_size(worker_group)})

    def stopping(self, worker_group, errors: Optional[Dict[str, str]] = None) -> None:
        self._tell("agent_stopping", {"attempt_id": self.attempt_id, "errors": errors or {}})

    def restarting(self, worker_group) -> None:
        """A restart: after a failure it was recorded by `failed`; otherwise it is a membership change."""
        if self._failure_seen:
            self._failure_seen = False
            return
        self.emitter.emit("controller_state", attempt_id=self.attempt_id, prev="RUNNING", cur="RESTARTING",
                          reason="membership change: nodes are waiting to join the rendezvous")
        self.emitter.emit("failure", attempt_id=self.attempt_id, budget=MEMBERSHIP, decision="RETRY",
                          error_type="MembershipChange", count=0, limit=None, counts={},
                          state=worker_group.state.name)

    def failed(self, agent, worker_group, result) -> None:
        """The group failed: the decision `_invoke_run` takes next, with this agent's count."""
        spec = worker_group.spec
        remaining = int(agent._remaining_restarts)
        retry = remaining > 0
        count = int(spec.max_restarts) - remaining + 1
        failures = {str(rank): describe(f) for rank, f in (getattr(result, "failures", None) or {}).items()}
        self._last_failures = failures
        self._failure_seen = True
        error = f"worker group {result.state.name} on node {self.node}: " + (
            ", ".join(f"rank {r} {d}" for r, d in sorted(failures.items())) or "no failure detail")
        self.emitter.emit("controller_state", attempt_id=self.attempt_id, prev="RUNNING",
                          cur="RESTARTING" if retry else "ERRORED", error_type=RAISED, error=error,
                          worker_failures=failures)
        self.emitter.emit("failure", attempt_id=self.attempt_id, budget=BUDGET,
                          decision="RETRY" if retry else "RAISE", error_type=RAISED, count=count,
                          limit=int(spec.max_restarts), counts={BUDGET: count}, worker_failures=failures,
                          state=result.state.name)

    def fatal(self, error: BaseException) -> None:
        """run() raised: nothing retries this (a rendezvous that timed out or closed)."""
        self.emitter.emit("controller_state", attempt_id=self.attempt_id, prev="RUNNING", cur="ERRORED",
                          error_type=type(error).__name__, error=str(error)[:500])
        self.emitter.emit("failure", attempt_id=self.attempt_id, budget="none", decision="RAISE",
                          error_type=type(error).__name__, count=0, limit=None, counts={})

    def exited(self, how: str, error: Optional[BaseException] = None) -> None:
        self._tell("agent_exit", {"how": how, "participated": self.participated,
                                  "error_type": type(error).__name__ if error is not None else None,
                                  "error": str(error)[:500] if error is not None else None})


def _world_size(worker_group) -> int:
    return int(worker_group.workers[0].world_size) if worker_group.workers else 0


def install(rec: AgentRecorder) -> List[str]:
    """Lay the recorder over the agent's methods; returns what it wraps."""
    from torch.distributed.elastic.agent.server.api import SimpleElasticAgent, WorkerState
    from torch.distributed.elastic.agent.server.local_elastic_agent import LocalElasticAgent
    from torch.distributed.elastic.multiprocessing.api import SignalException

    rendezvous, start = SimpleElasticAgent._rendezvous, LocalElasticAgent._start_workers
    stop, monitor, run = LocalElasticAgent._stop_workers, LocalElasticAgent._monitor_workers, SimpleElasticAgent.run
    restart = SimpleElasticAgent._restart_workers

    def _restart_workers(self, worker_group):
        rec.restarting(worker_group)
        return restart(self, worker_group)

    def _rendezvous(self, worker_group):
        rendezvous(self, worker_group)
        rec.rendezvoused(worker_group)

    def _start_workers(self, worker_group):
        pids = start(self, worker_group)
        rec.started(worker_group, pids)
        return pids

    def _stop_workers(self, worker_group, *args, **kwargs):
        rec.stopping(worker_group, rec._last_failures)
        return stop(self, worker_group, *args, **kwargs)

    def _monitor_workers(self, worker_group):
        result = monitor(self, worker_group)
        if result.state in (WorkerState.FAILED, WorkerState.UNHEALTHY):
            rec.failed(self, worker_group, result)
        return result

    def _run(self, *args, **kwargs):
        try:
            result = run(self, *args, **kwargs)
        except SignalException as e:   # the launcher's teardown, not a decision of the job
            rec.exited("signal", e)
            raise
        except Exception as e:
            rec.fatal(e)
            rec.exited("raised", e)
            raise
        rec.exited("failed" if result is not None and result.is_failed() else
                   "succeeded" if result is not None else "left the rendezvous")
        return result

    try:
        from torch.distributed.elastic.rendezvous.dynamic_rendezvous import DynamicRendezvousHandler

        next_rendezvous = DynamicRendezvousHandler.next_rendezvous

        def _next_rendezvous(self, *args, **kwargs):
            info = next_rendezvous(self, *args, **kwargs)
            try:
                setattr(self, ROUND_ATTR, int(self._state_holder.state.round))
            except Exception:  # noqa: BLE001 - the recorder falls back on the state
                pass
            return info

        DynamicRendezvousHandler.next_rendezvous = _next_rendezvous
    except ImportError:  # pragma: no cover - another torch layout: the state's round is read later
        pass
    SimpleElasticAgent._rendezvous = _rendezvous
    LocalElasticAgent._start_workers = _start_workers
    LocalElasticAgent._stop_workers = _stop_workers
    LocalElasticAgent._monitor_workers = _monitor_workers
    SimpleElasticAgent.run = _run
    SimpleElasticAgent._restart_workers = _restart_workers
    return ["next_rendezvous", "_rendezvous", "_start_workers", "_stop_workers", "_monitor_workers",
            "_restart_workers", "run"]


def main(argv: Optional[List[str]] = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    parent = os.environ.get(ENV_PARENT)
    die_with_parent(int(parent) if parent else None)
    os.environ[ENV_AGENT_PID] = str(os.getpid())
    install(AgentRecorder())
    from torch.distributed.run import main as torchrun_main

    torchrun_main(argv)


if __name__ == "__main__":
    main()
