"""The durable, ordered history of a run: one JSON object per line.

Every source (training workers, the Train controller callback, the fault
injector, the harness itself) hands its events to its run's book in the
`HistoryService`, one Ray actor pinned to the driver's node. The book stamps
each event with a sequence number, appends it to `history.jsonl` and flushes
before it acknowledges; emitters wait for that acknowledgement, so a process killed after `emit` returned loses nothing (a
streaming event no trigger can gate on is waited for by the emitter's next one:
see `Emitter`).
Every emitter numbers its events, and closing the history appends a
`history_end` manifest, so a lost or altered event is visible to the reader
(ftharness.history.records.read_history).

Event kinds and their fields are documented in docs/history.md; the `KINDS`
table below is the same list in code. `load_history(path)` gives a pandas frame.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import threading
import time
import uuid
from typing import Any, Dict, List, Optional

import ray

from ftharness.history import spool
from ftharness.safety import redact
from ftharness.history.records import seal
from ftharness.history.triggers import TriggerBook

NAMESPACE = "ftharness"

#: event kind -> (source, what it means). Documented at length in docs/history.md.
KINDS: Dict[str, tuple] = {
    "run_start": ("harness", "a fit() of the scenario begins"),
    "run_end": ("harness", "fit() returned or raised; outcome, error"),
    "controller_state": ("controller", "the Train controller changed state"),
    "failure": ("controller", "a training failure met the failure policy; budget class and decision"),
    "attempt_start": ("controller", "a worker group is about to start (new or reused attempt id)"),
    "worker_group_started": ("controller", "all workers of an attempt are up; ranks, nodes, pids"),
    "worker_group_shutdown": ("controller", "a worker group is shut down; per-rank errors"),
    "checkpoint_registered": ("controller", "the controller registered a reported checkpoint"),
    "worker_start": ("worker", "the train function starts on a rank; what it restored"),
    "step": ("worker", "a training step finished on a rank; rows consumed"),
    "checkpoint_written": ("worker", "a rank wrote checkpoint files locally, before report"),
    "report": ("worker", "ray.train.report returned on a rank; the checkpoint it persisted"),
    "preemption_notice": ("worker", "a rank saw a preemption notice"),
    "dataset_shard": ("worker", "a user job's rank asked get_dataset_shard for a dataset; whether its rows are recorded"),
    "worker_end": ("worker", "the train function returned on a rank"),
    "worker_error": ("worker", "the train function raised on a rank"),
    "fault_injected": ("injector", "a fault was done; target asked and hit"),
    "fault_healed": ("injector", "a fault was healed"),
    "fault_skipped": ("injector", "a fault could not be done; why"),
    "fault_action": ("injector", "a follow-up of a fault: a preempted node dies, a replacement joins"),
    "landing_hold": ("injector", "workers held at the end of training were released; what was waited for"),
    "history_end": ("history", "the history was closed: events per emitter, digest of every line before"),
}


class HistoryBook:
    """Appends events to a JSONL file in arrival order; answers progress queries.

    Appends run one at a time (`max_concurrency=1`), so the events of one
    emitter, even those sent without waiting, keep their order in the file.
    Also maps worker pids to attempts: the controller callback announces each
    worker group, and a worker asks which attempt it belongs to (`join`, in its
    own thread group because it waits for that announcement).

    A plain class, thread-safe on its own lock: Ray serves it in `HistoryService`;
    a torchrun run (ftharness.harness.torchrun.collector) serves the same book from the
    harness process over loopback TCP, so both runtimes write one format.
    """

    def __init__(self, path: str):
        self._path = path
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self._file = open(path, "a", buffering=1)
        self._lock = threading.Lock()
        self._seq = 0
        self._attempt_by_pid: Dict[int, Dict[str, Any]] = {}
        self._attempt_ids: List[str] = []
        self._group_ready = threading.Condition(self._lock)
        self._fit_index = 0
        self._progress: Dict[str, Any] = {"step": 0, "attempt": 0, "attempt_steps": 0, "failures": 0, "ended": False}
        self._triggers = TriggerBook()
        self._released = threading.Condition(self._lock)
        self._members: List[Dict[str, Any]] = []
        self._claims: Dict[int, int] = {}
        self._digest = hashlib.sha256()
        self._emitted: Dict[str, int] = {}
        self._hold_released = False
        self._held: Dict[int, float] = {}   # pid -> since when its train function is held
        self._gating: Optional[List[str]] = None   # kinds an armed trigger can gate on (None: not armed yet)

    # -- writing
    def append(self, event: Dict[str, Any]) -> Dict[str, Any]:
        """Record an event; answers its seq and, if it fired a gating trigger,
        the fault index the emitter must wait on (`gate`)."""
        with self._lock:
            if self._file.closed:
                return {"seq": None, "gate": None}
            seq = self._append_locked(event)
            gate = self._triggers.observe(dict(event, seq=seq, fit_index=event.get("fit_index", self._fit_index)))
            return {"seq": seq, "gate": gate, "gating": self._gating}

    def _append_locked(self, event: Dict[str, Any]) -> int:
        self._seq += 1
        event = dict(event)
        event["seq"] = self._seq
        event.setdefault("t", time.time())
        self._last_event_t = time.time()
        if event.get("kind") == "run_start":
            self._fit_index = int(event.get("fit_index") or self._fit_index + 1)
            self._attempt_ids = []
        event.setdefault("fit_index", self._fit_index)
        line = json.dumps(event, default=str) + "\n"
        if "@" in line or "=" in line:   # credentials in a URL (a storage_path) never reach the disk
            line = redact(line)
        self._file.write(line)
        self._file.flush()
        self._digest.update(line.encode())
        if event.get("emitter") is not None:
            self._emitted[event["emitter"]] = self._emitted.get(event["emitter"], 0) + 1
        self._track(event)
        return self._seq

    def _track(self, e: Dict[str, Any]) -> None:
        kind = e.get("kind")
        if kind == "attempt_start":
            aid = e.get("attempt_id")
            if aid not in self._attempt_ids:
                self._attempt_ids.append(aid)
            self._progress["attempt"] = self._attempt_ids.index(aid) + 1
            self._progress["attempt_steps"] = 0
        elif kind == "step":
            self._progress["step"] = max(self._progress["step"], int(e.get("step") or 0))
            if self._attempt_ids and e.get("attempt_id") == self._attempt_ids[self._progress["attempt"] - 1]:
                self._progress["attempt_steps"] += 1   # steps of the current attempt (not a zombie's)
        elif kind == "failure":
            self._progress["failures"] += 1
        elif kind == "run_end":
            self._progress["ended"] = True

    def attempt_of(self, attempt_id: str) -> int:
        """1-based ordinal of an attempt id (0 if unknown)."""
        with self._lock:
            if attempt_id not in self._attempt_ids:
                self._attempt_ids.append(attempt_id)
            return self._attempt_ids.index(attempt_id) + 1

    def announce_group(self, attempt_id: str, members: List[Dict[str, Any]]) -> None:
        with self._lock:
            if attempt_id not in self._attempt_ids:
                self._attempt_ids.append(attempt_id)
            attempt = self._attempt_ids.index(attempt_id) + 1
            self._members = [dict(m, attempt=attempt, attempt_id=attempt_id) for m in members]
            for m in members:
                self._attempt_by_pid[int(m["pid"])] = {"attempt": attempt, "attempt_id": attempt_id,
                                                       "fit_index": self._fit_index}
            self._group_ready.notify_all()

    def join(self, pid: int, timeout_s: float = 30.0) -> Dict[str, Any]:
        """The attempt of the worker with this pid; waits for the group announcement."""
        deadline = time.time() + timeout_s
        with self._lock:
            while pid not in self._attempt_by_pid and time.time() < deadline:
                self._group_ready.wait(timeout=max(0.0, deadline - time.time()))
            return dict(self._attempt_by_pid.get(pid, {"attempt": 0, "attempt_id": None,
                                                       "fit_index": self._fit_index}))

    # -- fault triggers
    def arm(self, faults: List[Dict[str, Any]]) -> None:
        with self._lock:
            self._triggers.arm(faults)
            self._gating = sorted(self._triggers.gating_kinds())

    def take_pending(self) -> Dict[str, Any]:
        """Fired triggers for the injector, and the current worker group."""
        with self._lock:
            return {"pending": self._triggers.take_pending(), "members": list(self._members),
                    "progress": self._progress_locked()}

    def claim(self, fault: int, nth: int = 1) -> bool:
        """True exactly once per fault, on its `nth` claim: a worker-side fault
        (crash_worker) fires once, e.g. on the 2nd restore of its rank."""
        with self._lock:
            self._claims[fault] = self._claims.get(fault, 0) + 1
            return self._claims[fault] == nth

    def release(self, fault: int, action: str = "continue") -> None:
        with self._lock:
            self._triggers.released[fault] = action
            self._released.notify_all()

    def gate(self, fault: int, timeout_s: float = 120.0) -> str:
        """Block the calling worker until the injector released this fault."""
        deadline = time.time() + timeout_s
        with self._lock:
            while fault not in self._triggers.released and time.time() < deadline:
                self._released.wait(timeout=max(0.0, deadline - time.time()))
            return self._triggers.released.get(fault, "timeout")

    # -- the landing hold: a train function that returns waits here until every fault resolved
    def hold(self, pid: int, timeout_s: float) -> str:
        """Block a worker whose train function returned until `release_hold`."""
        deadline = time.time() + timeout_s
        with self._lock:
            self._held[pid] = time.time()
            while not self._hold_released and time.time() < deadline:
                self._released.wait(timeout=max(0.0, min(1.0, deadline - time.time())))
            self._held.pop(pid, None)
            return "released" if self._hold_released else "timeout"

    def release_hold(self) -> None:
        with self._lock:
            self._hold_released = True
            self._released.notify_all()

    # -- reading
    def progress(self) -> Dict[str, Any]:
        with self._lock:
            return self._progress_locked()

    def _progress_locked(self) -> Dict[str, Any]:
        return dict(self._progress, events=self._seq, held=len(self._held),
                    held_since=min(self._held.values(), default=None), last_t=self._last_t())

    def _last_t(self) -> Optional[float]:
        return getattr(self, "_last_event_t", None)

    def merge_spooled(self, events: List[Dict[str, Any]]) -> int:
        """Append events that emitters journaled on their nodes while the actor was out of
        reach, marked `spooled`, unless the actor got them too; returns how many were new."""
        with self._lock:
            if self._file.closed or not events:
                return 0
            emitters = {e.get("emitter") for e in events}
            have = set()
            self._file.flush()
            with open(self._path) as f:
                for line in f:
                    if '"eseq"' in line:
                        try:
                            r = json.loads(line)
                        except ValueError:
                            continue
                        if r.get("emitter") in emitters:
                            have.add((r["emitter"], r.get("eseq")))
            new = 0
            for e in sorted(events, key=lambda e: (e.get("t") or 0, str(e.get("emitter")), e.get("eseq") or 0)):
                if (e.get("emitter"), e.get("eseq")) in have:
                    continue
                have.add((e.get("emitter"), e.get("eseq")))
                self._append_locked(dict(e, spooled=True))
                new += 1
            return new

    def close(self) -> int:
        """Write `history_end` (the manifest a reader checks the file against) and close."""
        with self._lock:
            if self._file.closed:
                return self._seq
            end = {"kind": "history_end", "source": "history", "events": self._seq,
                   "emitters": dict(self._emitted), "digest": self._digest.hexdigest(),
                   "seq": self._seq + 1, "t": time.time(), "fit_index": self._fit_index}
            end["seal"] = seal(end)
            self._append_locked(end)
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
            return self._seq


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


class Emitter:
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
        self.run_name = book.run
        self.source = source
        self.base = dict(base or {})
        self._handle = book
        self.id = f"{source}-{os.getpid()}-{uuid.uuid4().hex[:6]}"
        self._numbers = itertools.count(1)
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

    def event(self, kind: str, **fields: Any) -> Dict[str, Any]:
        e = {"t": time.time(), "kind": kind, "source": self.source, "run": self.run_name}
        e.update(self.base)
        e.update(fields)
        return e

    def emit(self, kind: str, wait: bool = True, **fields: Any) -> Optional[Dict[str, Any]]:
        """Record an event. With `wait`, return once it is on disk, and if it
        fired a gating fault trigger, once the injector has done that fault."""
        e = self.event(kind, **fields)
        ref = None
        try:
            with self._order:  # numbered in the order they are handed over
                self._settle_locked()
                e["emitter"], e["eseq"] = self.id, next(self._numbers)
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
            e["emitter"], e["eseq"] = self.id, next(self._numbers)
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
