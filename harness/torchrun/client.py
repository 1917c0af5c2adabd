"""The worker and agent side of the collector: one TCP connection, JSON lines.

Kept to the standard library (workers and agents import it before torch is
up, and never import Ray). A call sends `{"op", "args"}` and waits for its
reply, so an event is on disk before `emit` returns, as with Ray's history
actor. Failures never raise into training: an event that could not be handed
over leaves a hole in its emitter's numbering (`eseq`), which the reader reports.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any, Dict, Optional

from ftharness.history.event_source import EventSource

ENV_ADDRESS = "FTHARNESS_COLLECTOR"   # host:port of the collector, set by the launcher
#: calls that may be sent again after a broken connection (they change nothing twice)
IDEMPOTENT = frozenset({"gate", "hold", "progress", "attempt_of"})


class CollectorClient:
    """Calls on the collector, one at a time over one connection (reconnects once on a broken one)."""

    def __init__(self, address: Optional[str] = None, connect_timeout_s: float = 10.0):
        address = address or os.environ[ENV_ADDRESS]
        host, _, port = address.rpartition(":")
        self.address = (host, int(port))
        self.connect_timeout_s = connect_timeout_s
        self._sock: Optional[socket.socket] = None
        self._file = None
        self._lock = threading.Lock()

    def call(self, op: str, *args: Any, timeout_s: float = 30.0) -> Any:
        """The collector's answer to `op(*args)`; raises on any failure."""
        with self._lock:
            for attempt in (1, 2):
                try:
                    if self._sock is None:
                        self._connect()
                    self._sock.settimeout(timeout_s)
                    self._sock.sendall((json.dumps({"op": op, "args": list(args)}, default=str) + "\n").encode())
                    line = self._file.readline()
                    if not line:
                        raise ConnectionError("the collector closed the connection")
                    reply = json.loads(line)
                    break
                except (OSError, ValueError):
                    self._close()
                    if attempt == 2 or op not in IDEMPOTENT:   # an append or a claim is never sent twice
                        raise
        if "error" in reply:
            raise RuntimeError(f"collector: {reply['error']}")
        return reply.get("ok")

    def _connect(self) -> None:
        deadline = time.time() + self.connect_timeout_s
        while True:
            try:
                self._sock = socket.create_connection(self.address, timeout=self.connect_timeout_s)
                self._file = self._sock.makefile("rb")
                return
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)

    def _close(self) -> None:
        try:
            if self._sock is not None:
                self._sock.close()
        finally:
            self._sock, self._file = None, None

    def close(self) -> None:
        with self._lock:
            self._close()


class TcpEmitter(EventSource):
    """The torchrun twin of ftharness.harness.cluster.history_service.Emitter: same fields, same
    numbering (EventSource), same gate; events go to the collector instead of a Ray actor."""

    def __init__(self, client: CollectorClient, run_name: str, source: str, base: Optional[Dict[str, Any]] = None):
        super().__init__(run_name, source, base)
        self.client = client
        self._order = threading.Lock()

    def emit(self, kind: str, wait: bool = True, **fields: Any) -> Optional[Dict[str, Any]]:
        """Record an event once it is on disk; if it fired a gating fault
        trigger, return only once the injector has done that fault. `wait` is
        accepted for Emitter's signature: every event here is acknowledged."""
        e = self.event(kind, **fields)
        try:
            with self._order:
                ack = self.client.call("append", self.number(e))
        except Exception:  # noqa: BLE001 - never break the caller; the eseq gap shows the loss
            return None
        if ack and ack.get("gate") is not None:
            try:
                ack["action"] = self.client.call("gate", ack["gate"], timeout_s=190)
            except Exception:  # noqa: BLE001
                ack["action"] = "timeout"
        return ack
