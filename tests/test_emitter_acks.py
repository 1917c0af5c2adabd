"""When an emitter waits for the history's acknowledgement: pure, no Ray.

Streaming events (steps, reports, checkpoint writes and registrations) of a kind
no armed trigger can gate on are acknowledged one event late, so the wait overlaps
the training step; everything else, and every kind a trigger can gate on, is waited
for at once. `ray.get` and the actor handle are stand-ins here: what is checked is
the order of hand-overs and waits, the emitter's own logic. That the events land on
disk in a real cluster, and that a gated step still holds its worker, is
tests/test_run_base.py."""

import pytest

from ftharness.history import store
from ftharness.history.triggers import TriggerBook


class Ref:
    def __init__(self, event, ack):
        self.event, self.ack = event, ack


class Book:
    """The actor's `append`, answering as HistoryBook.append does."""

    def __init__(self, gating):
        self.gating = gating
        self.sent = []
        self.append = self

    def remote(self, event):
        self.sent.append(event["kind"])
        return Ref(event, {"seq": len(self.sent), "gate": None, "gating": self.gating})


@pytest.fixture
def emitter(monkeypatch):
    waits = []

    def get(ref, timeout=None):
        waits.append(ref.event["kind"])
        return ref.ack

    monkeypatch.setattr(store.ray, "get", get)

    def make(gating):
        em = store.Emitter("r", "worker")
        book = Book(gating)
        em._handle = book
        return em, book, waits

    return make


def test_nothing_armed_streaming_events_are_waited_for_by_the_next_event(emitter):
    em, book, waits = emitter([])
    em.emit("worker_start")             # the first ack tells the emitter what can gate
    em.emit("step", step=1)
    em.emit("report", step=1)
    assert book.sent == ["worker_start", "step", "report"]
    assert waits == ["worker_start", "step"]   # report is in flight, step was waited for before it
    em.emit("worker_end")
    assert waits == ["worker_start", "step", "report", "worker_end"]


def test_a_kind_a_trigger_can_gate_on_is_waited_for_at_once(emitter):
    em, book, waits = emitter(["step"])
    em.emit("worker_start")
    em.emit("step", step=1)
    assert waits == ["worker_start", "step"]
    em.emit("checkpoint_written", step=1)      # no trigger gates on it: one event late
    assert waits == ["worker_start", "step"]
    em.settle()
    assert waits == ["worker_start", "step", "checkpoint_written"]
    em.settle()                                # nothing left: no second wait
    assert len(waits) == 3


def test_before_the_first_ack_or_before_arming_every_event_is_waited_for(emitter):
    em, book, waits = emitter(None)            # the actor answers gating None until arm()
    em.emit("step", step=1)
    em.emit("step", step=2)
    assert waits == ["step", "step"]


def test_a_late_ack_that_fails_journals_the_event_and_cuts_the_emitter_off(emitter, monkeypatch):
    em, book, waits = emitter([])
    em.emit("worker_start")
    em.emit("step", step=1)
    journaled = []
    monkeypatch.setattr(store.spool, "write", lambda run, eid, e: journaled.append(e["kind"]))

    def unreachable(ref, timeout=None):
        raise TimeoutError("no ack")

    monkeypatch.setattr(store.ray, "get", unreachable)
    monkeypatch.setattr(store.ray, "wait", lambda refs, timeout=0: ([], refs))
    em.emit("worker_end")
    assert journaled == ["step", "worker_end"]   # both kept in the node's journal
    assert em._cut_ref is not None


def test_gating_kinds_follow_the_armed_triggers():
    book = TriggerBook()
    book.arm([{"at": {"step": 5}}, {"at": {"event": "checkpoint_registered"}},
              {"at": {"event": "checkpoint_written"}}, {"at": {"event": "checkpoint_reported", "hold": False}},
              {"at": {"time_s": 3}}, {"at": {"event": "restored"}}])
    assert book.gating_kinds() == {"step", "checkpoint_written", "worker_start"}
    assert TriggerBook().gating_kinds() == set()
    held_off = TriggerBook()
    held_off.arm([{"at": {"step": 5, "hold": False}}])
    assert held_off.gating_kinds() == set()


def test_the_book_names_the_gating_kinds_only_once_armed(tmp_path):
    book = store.HistoryBook(str(tmp_path / "history.jsonl"))
    assert book.append({"kind": "run_start"})["gating"] is None
    book.arm([{"at": {"event": "checkpoint_reported"}}])
    assert book.append({"kind": "step", "step": 1})["gating"] == ["report"]
    book.close()
