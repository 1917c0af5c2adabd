"""A run's history book: the pure book-keeping behind `history.jsonl`, shared by both runtimes.

The book stamps each event with a sequence number (the total order), appends it to
`history.jsonl` and flushes before it answers, so an emitter that waits for the answer loses
nothing when it is killed afterwards; it counts the events of every emitter and keeps a digest
of every line, closed by the sealed `history_end` manifest (ftharness.history.records checks
the file against it); it fires the fault triggers on the exact event and holds workers at their
gates; it merges the journals of emitters that were cut off, dropping what arrived twice.

No Ray here: under Ray Train one actor serves the books of a harness process
(ftharness.harness.cluster.history_service, with the emitters that feed it); under torchrun
the harness process serves the same book over loopback TCP (ftharness.harness.torchrun.collector).

Event kinds and their fields are documented in docs/history.md; the `KINDS` table below is
the same list in code. `ftharness.history.records.load_history(path)` gives a pandas frame.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from typing import Any, Dict, List, Optional

from ftharness.history.records import seal
from ftharness.history.triggers import TriggerBook
from ftharness.safety import redact

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
    "train_leftovers": ("harness", "Ray Train actors and placement groups still alive after the last fit() returned"),
    "landing_hold": ("injector", "workers held at the end of training were released; what was waited for"),
    "history_end": ("history", "the history was closed: events per emitter, digest of every line before"),
}


class HistoryBook:
    """Appends events to a JSONL file in arrival order; answers progress queries.

    Its server hands it appends one at a time (the actor's `max_concurrency=1`), so the
    events of one emitter, even those sent without waiting, keep their order in the file.
    Also maps worker pids to attempts: the controller callback announces each
    worker group, and a worker asks which attempt it belongs to (`join`, in its
    own thread group because it waits for that announcement).

    A plain class, thread-safe on its own lock: Ray serves it in
    `ftharness.harness.cluster.history_service.HistoryService`;
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
