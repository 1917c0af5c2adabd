"""The history service: the Ray side of a run's history (the book itself is ftharness.history.book).

Every source (training workers, the Train controller callback, the fault injector, the
harness itself) hands its events to its run's book in the `HistoryService`, one Ray actor
pinned to the driver's node and started with the cluster. The book stamps each event with a
sequence number, appends it to `history.jsonl` and flushes before it acknowledges; emitters
wait for that acknowledgement, so a process killed after `emit` returned loses nothing (a
streaming event no trigger can gate on is waited for by the emitter's next one: see
`Emitter`). Every emitter numbers its events, and closing the history appends a
`history_end` manifest, so a lost or altered event is visible to the reader
(ftharness.history.records.read_history).

It lives with the cluster code, not in `history/`, because it needs Ray: `history/` stays
pure (tests/test_layout.py fails if a module there imports ray).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Dict, Optional

import ray

from ftharness.history import spool
from ftharness.history.book import HistoryBook
from ftharness.history.event_source import EventSource

NAMESPACE = "ftharness"


@ray.remote(num_cpus=0, max_concurrency=1, concurrency_groups={"join": 16, "hold": 256},
            enable_task_events=False)
class HistoryService:
    """The books of every ray_train run of one harness process, served by one Ray actor pinned
    to the driver's node (a `BookHandle` is one run's book in it).

    One process for all runs, started with the cluster, so a run starts no process of its
    own: on a small machine that start competed with the Train controller's and the
    workers' (benchmarks/overhead.py). Each book keeps its own lock and file; the default
    group runs one call at a time, so the events of one emitter keep their order. Its calls
    report no task events: they are the harness's plumbing, not the job's work, and would
    fill the user's dashboard and Ray's event pipeline."""

    def __init__(self):
        self._books: Dict[str, HistoryBook] = {}

    def open(self, run: str, path: str) -> None:
        """A new book for `run` (a closed one of the same name, a resumed run's, is replaced)."""
        old = self._books.get(run)
        if old is not None:
            old.close()
        self._books[run] = HistoryBook(path)

    def ping(self) -> int:
        """This process's pid: the service is up (and which one it is)."""
        return os.getpid()

    # the book's calls, each with the run first (HistoryBook says what they do)
    def append(self, run, event):
        return self._books[run].append(event)

    def attempt_of(self, run, attempt_id):
        return self._books[run].attempt_of(attempt_id)

    def announce_group(self, run, attempt_id, members):
        return self._books[run].announce_group(attempt_id, members)

    @ray.method(concurrency_group="join")
    def join(self, run, pid, timeout_s=30.0):
        return self._books[run].join(pid, timeout_s)

    def arm(self, run, faults):
        return self._books[run].arm(faults)

    def take_pending(self, run):
        return self._books[run].take_pending()

    def claim(self, run, fault, nth=1):
        return self._books[run].claim(fault, nth)

    def release(self, run, fault, action="continue"):
        return self._books[run].release(fault, action)

    @ray.method(concurrency_group="join")
    def gate(self, run, fault, timeout_s=120.0):
        return self._books[run].gate(fault, timeout_s)

    @ray.method(concurrency_group="hold")  # its own threads: held workers never starve `join`/`gate`
    def hold(self, run, pid, timeout_s):
        return self._books[run].hold(pid, timeout_s)

    def release_hold(self, run):
        return self._books[run].release_hold()

    def progress(self, run):
        return self._books[run].progress()

    def merge_spooled(self, run, events):
        return self._books[run].merge_spooled(events)

    def close(self, run):
        return self._books[run].close()


class BookHandle:
    """One run's book in the `HistoryService`, called as an actor handle is:
    `book.append.remote(event)` is `service.append.remote(run, event)`. Picklable, so the fit
    task, the controller callback and every worker get it with the train function."""

    def __init__(self, service, run: str):
        self.service = service
        self.run = run

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        return _BookMethod(getattr(self.service, method), self.run)


class _BookMethod:
    def __init__(self, method, run: str):
        self._method, self._run = method, run

    def remote(self, *args: Any, **kwargs: Any):
        return self._method.remote(self._run, *args, **kwargs)


def start_service(node_id: Optional[str] = None, wait: bool = True):
    """Start the history service, pinned to `node_id` (default: this node, the driver's).
    Without `wait` it returns at once: calls on it queue until it is up."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    node_id = node_id or ray.get_runtime_context().get_node_id()
    service = HistoryService.options(
        namespace=NAMESPACE, lifetime=None,
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote()
    if wait:
        ray.get(service.ping.remote())
    return service


def open_book(service, path: str, run_name: str) -> BookHandle:
    """A run's book in `service`, writing `path`; not waited for: the service does this
    caller's calls in order, so it is open before any later call from here."""
    service.open.remote(run_name, os.path.abspath(path))
    return BookHandle(service, run_name)


class ServiceSlot:
    """The history service a cluster handle keeps for its runs: started with the cluster (or at
    its first run), checked before each run and started again if it died, ended with the
    driver (`ray.shutdown` ends the actors it owns)."""

    PING_TIMEOUT_S = 30.0

    def __init__(self):
        self._service = None
        self._node_id: Optional[str] = None

    def get(self, node_id: Optional[str] = None):
        if self._service is not None:
            try:
                ray.get(self._service.ping.remote(), timeout=self.PING_TIMEOUT_S)
                return self._service
            except Exception:  # noqa: BLE001 - died (or hung): a run gets a fresh one
                self.end()
        self._node_id = node_id or self._node_id
        self._service = start_service(self._node_id)
        return self._service

    def end(self) -> None:
        service, self._service = self._service, None
        if service is not None:
            try:
                ray.kill(service)
            except Exception:  # noqa: BLE001 - already gone
                pass


def start_history(path: str, run_name: str) -> BookHandle:
    """A book in a service of its own, up when this returns (tests, tools: the runner shares
    its cluster's service); `ray.kill(book.service)` ends it."""
    service = start_service()
    ray.get(service.open.remote(run_name, os.path.abspath(path)))
    return BookHandle(service, run_name)


class Emitter(EventSource):
    """A handle any process of the run uses to record events durably.

    `emit` blocks until the history actor has flushed the event (a streaming
    event: until the previous one is flushed; below). Failures to
    record never raise into training or into the Train controller; every event
    is numbered (`emitter`, `eseq`) so a lost one is a visible gap.

    An acknowledgement that does not come within `ack_timeout_s` means the head
    is out of reach (a partition) or the actor is gone: the event goes to the
    node-local journal (ftharness.history.spool), and so does every later one
    until an earlier hand-over is seen to complete. Events are still sent,
    without waiting, so a slow actor loses nothing; the merge drops duplicates.

    Streaming events (steps, reports, checkpoint writes and registrations: a
    long run's bulk) of a kind no armed trigger can gate on (the actor's ack
    names the kinds that can) are not waited for at once: the emitter's next
    event, or `settle()`, first waits for that acknowledgement, so the wait
    overlaps the training step and at most one event per emitter is in flight.
    A process killed in that window can lose that one event, as it can lose one
    killed while waiting; either way it is the emitter's last, so no later event
    depends on it.
    """

    #: kinds that are acknowledged one event late when no armed trigger can gate on them
    STREAMING = frozenset({"step", "report", "checkpoint_written", "checkpoint_registered"})

    ack_timeout_s = 10.0

    def __init__(self, book: "BookHandle", source: str, base: Optional[Dict[str, Any]] = None):
        super().__init__(book.run, source, base)
        self._handle = book
        self._order = threading.Lock()
        self._cut_ref = None   # while cut off: the last hand-over sent without waiting
        self._gating: Optional[frozenset] = None   # from the last ack; None: every kind may gate
        self._unsettled = None   # (ref, event) of a streaming event not waited for yet

    def _reconnected(self) -> bool:
        """Whether the last hand-over sent while cut off has reached the actor."""
        if self._cut_ref is False:
            return False
        try:
            done, _ = ray.wait([self._cut_ref], timeout=0)
        except Exception:  # noqa: BLE001
            return False
        if done:
            self._cut_ref = None
        return bool(done)

    def handle(self) -> "BookHandle":
        return self._handle

    def emit(self, kind: str, wait: bool = True, **fields: Any) -> Optional[Dict[str, Any]]:
        """Record an event. With `wait`, return once it is on disk, and if it
        fired a gating fault trigger, once the injector has done that fault."""
        e = self.event(kind, **fields)
        ref = None
        try:
            with self._order:  # numbered in the order they are handed over
                self._settle_locked()
                self.number(e)
                if self._cut_ref is not None and not self._reconnected():
                    spool.write(self.run_name, self.id, e)
                    try:
                        self._cut_ref = self.handle().append.remote(e)
                    except Exception:  # noqa: BLE001 - the journal has it
                        self._handle = None
                    return None
                ref = self.handle().append.remote(e)
                if wait and self._gating is not None and kind in self.STREAMING and kind not in self._gating:
                    self._unsettled = (ref, e)
                    return None
            if not wait:
                return None
            ack = self._ack(ray.get(ref, timeout=self.ack_timeout_s))
        except Exception:  # never break the caller; the journal (or the eseq gap) keeps the event
            with self._order:
                spool.write(self.run_name, self.id, e)
                self._cut_ref = ref if ref is not None else False   # False: nothing sent yet
            return None
        if ack.get("gate") is not None:
            try:
                ack["action"] = ray.get(self.handle().gate.remote(ack["gate"]), timeout=180)
            except Exception:
                ack["action"] = "timeout"
        return ack

    def hand_over(self, kind: str, **fields: Any):
        """Send an event without waiting; returns the ref of its acknowledgement, for a caller
        that waits for it itself (the harness's run_start, while the fit task starts)."""
        e = self.event(kind, **fields)
        with self._order:
            self._settle_locked()
            self.number(e)
            return self.handle().append.remote(e)

    def _ack(self, ack: Dict[str, Any]) -> Dict[str, Any]:
        gating = ack.get("gating")
        self._gating = None if gating is None else frozenset(gating)
        return ack

    def settle(self) -> None:
        """Wait until the streaming event handed over last is on disk (or journaled)."""
        with self._order:
            self._settle_locked()

    def _settle_locked(self) -> None:
        if self._unsettled is None:
            return
        (ref, e), self._unsettled = self._unsettled, None
        try:
            self._ack(ray.get(ref, timeout=self.ack_timeout_s))
        except Exception:  # noqa: BLE001 - as in emit: the journal keeps it, and later events too
            spool.write(self.run_name, self.id, e)
            self._cut_ref = ref
