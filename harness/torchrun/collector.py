"""The history of a torchrun run: the harness's own history book, served to
workers and agents over loopback TCP, and the agents' reports merged into the
attempt events a Ray Train controller would write.

Why a collector and not O_APPEND writes by each worker: the same
`ftharness.history.book.HistoryBook` that Ray serves in an actor stamps one total
order (`seq`), fires the fault triggers on the exact event and holds the
emitting worker at its gate, and counts every emitter for the sealed
`history_end`. Appends to one file from many processes could keep lines whole,
but not a total order, gates or the manifest. Durability is the same as under
Ray: an event is written and flushed before its emitter gets the acknowledgement,
so a SIGKILLed worker or agent loses nothing it handed over; the file lives with
the harness, which no fault targets (Ray's history actor lives on the head node).

Attempts. TorchElastic has no controller: each node's agent restarts its own
workers and re-rendezvouses. An attempt is one rendezvous round
(`attempt_id` = `round-N`, the same on every agent). The first agent to finish a
round makes the `attempt_start`; once every rank of the round has a pid, one
`worker_group_started` names them all (ranks, pids, nodes); the first agent to
stop its workers of a round makes its `worker_group_shutdown`. Failure decisions
are the agents' own events (ftharness.harness.torchrun.agent).
"""

from __future__ import annotations

import json
import os
import socket
import socketserver
import threading
from typing import Any, Callable, Dict, List, Optional

from ftharness.history.book import HistoryBook
from ftharness.history.event_source import EventSource


class LocalEmitter(EventSource):
    """ftharness.harness.cluster.history_service.Emitter for events made in the harness process:
    same fields and numbering (EventSource), appended to the book directly. Never waits at a
    fault gate (only worker events gate, and the harness drives the injector)."""

    def __init__(self, book: HistoryBook, run_name: str, source: str, base: Optional[Dict[str, Any]] = None,
                 name: Optional[str] = None):
        super().__init__(run_name, source, base, name)
        self.book = book
        self._order = threading.Lock()

    def emit(self, kind: str, wait: bool = True, **fields: Any) -> Optional[Dict[str, Any]]:
        e = self.event(kind, **fields)
        with self._order:
            return self.book.append(self.number(e))


class _Handler(socketserver.StreamRequestHandler):
    """One connection (one worker or agent process): a JSON request per line, a JSON reply per line."""

    def handle(self) -> None:
        ops: Dict[str, Callable] = self.server.ops  # type: ignore[attr-defined]
        self.server.connections.add(self.request)  # type: ignore[attr-defined]
        try:
            self._serve(ops)
        except OSError:
            pass   # the process at the other end died (a fault killed it): its events so far are on disk
        finally:
            self.server.connections.discard(self.request)  # type: ignore[attr-defined]

    def _serve(self, ops: Dict[str, Callable]) -> None:
        for line in self.rfile:
            try:
                req = json.loads(line)
                out = {"ok": ops[req["op"]](*req.get("args", []))}
            except Exception as e:  # noqa: BLE001 - the caller gets the error, the server goes on
                out = {"error": f"{type(e).__name__}: {str(e)[:300]}"}
            try:
                self.wfile.write((json.dumps(out, default=str) + "\n").encode())
            except OSError:
                return


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True          # a worker held at a gate never blocks close()
    allow_reuse_address = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.connections: set = set()

    def drop_connections(self) -> None:
        """Cut every open connection: an emitter that is still alive gets an error, never a late append."""
        for sock in list(self.connections):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Collector:
    """The book plus a TCP server on 127.0.0.1 (an ephemeral port) in the harness process."""

    def __init__(self, history_path: str, run_name: str):
        self.run_name = run_name
        self.book = HistoryBook(os.path.abspath(history_path))
        self.emitter = LocalEmitter(self.book, run_name, "controller", name="rendezvous")
        self.agent_exits: Dict[int, Dict[str, Any]] = {}
        self._attempts: Dict[str, Dict[str, Any]] = {}
        self._lock = threading.Lock()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.ops = {  # type: ignore[attr-defined]
            "append": self.book.append, "claim": self.book.claim, "gate": self.book.gate,
            "hold": self.book.hold, "progress": self.book.progress, "attempt_of": self.book.attempt_of,
            "agent_rendezvous": self.agent_rendezvous, "agent_started": self.agent_started,
            "agent_stopping": self.agent_stopping, "agent_exit": self.agent_exit,
        }
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="ftharness-collector", daemon=True)
        self._thread.start()
        self._closed = False

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"{host}:{port}"

    # -- the agents' reports, merged per rendezvous round
    def _attempt(self, attempt_id: str, world_size: int) -> Dict[str, Any]:
        a = self._attempts.get(attempt_id)
        if a is None:
            a = self._attempts[attempt_id] = {"world_size": world_size, "members": {}, "started": False,
                                              "shutdown": False, "announced": False}
        return a

    def agent_rendezvous(self, report: Dict[str, Any]) -> None:
        """An agent finished rendezvous round `attempt_id`: the first one opens the attempt."""
        with self._lock:
            a = self._attempt(report["attempt_id"], int(report["world_size"]))
            if not a["announced"]:
                a["announced"] = True
                self.emitter.emit("attempt_start", attempt_id=report["attempt_id"],
                                  num_workers=int(report["world_size"]), round=report.get("round"),
                                  agent=report.get("node"))

    def agent_started(self, report: Dict[str, Any]) -> None:
        """An agent started its workers of a round; with every rank known, the group is up."""
        with self._lock:
            a = self._attempt(report["attempt_id"], int(report["world_size"]))
            for m in report["members"]:
                a["members"][int(m["rank"])] = m
            if a["started"] or len(a["members"]) < a["world_size"]:
                return
            a["started"] = True
            members: List[Dict[str, Any]] = [a["members"][r] for r in sorted(a["members"])]
            self.book.announce_group(report["attempt_id"], members)
            self.emitter.emit("worker_group_started", attempt_id=report["attempt_id"], workers=members,
                              world_size=len(members))

    def agent_stopping(self, report: Dict[str, Any]) -> None:
        """An agent stops its workers of a round: the round is over (the first one says so)."""
        with self._lock:
            a = self._attempts.get(report.get("attempt_id"))
            if a is None or a["shutdown"]:
                return
            a["shutdown"] = True
            self.emitter.emit("worker_group_shutdown", attempt_id=report["attempt_id"],
                              errors=report.get("errors") or {}, agent=report.get("node"))

    def agent_exit(self, report: Dict[str, Any]) -> None:
        """How an agent's run() ended (it is the agent's last word; its exit code comes from the launcher)."""
        with self._lock:
            self.agent_exits[int(report["node"])] = dict(report)

    # -- lifecycle
    def close(self) -> None:
        """Stop serving and seal the history (history_end)."""
        if self._closed:
            return
        self._closed = True
        self._server.shutdown()
        self._server.server_close()
        self._server.drop_connections()
        self.book.close()
