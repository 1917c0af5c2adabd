"""When an emitter waits for the history's acknowledgement: pure, no Ray.

Streaming events (steps, reports, checkpoint writes and registrations) of a kind
no armed trigger can gate on are acknowledged one event late, so the wait overlaps
the training step; everything else, and every kind a trigger can gate on, is waited
for at once. `ray.get` and the actor handle are stand-ins here: what is checked is
the order of hand-overs and waits, the emitter's own logic. That the events land on
disk in a real cluster, and that a gated step still holds its worker, is
tests/test_run_base.py."""

import pytest

from ftharness.harness.cluster import history_service
from ftharness.history.book import HistoryBook
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
        self.run = "r"

    def remote(self, event):
        self.sent.append(event["kind"])
        return Ref(event, {"seq": len(self.sent), "gate": None, "gating": self.gating})


@pytest.fixture
def emitter(monkeypatch):
    waits = []

    def get(ref, timeout=None):
        waits.append(ref.event["kind"])
        return ref.ack

    monkeypatch.setattr(history_service.ray, "get", get)

    def make(gating):
        book = Book(gating)
        em = history_service.Emitter(book, "worker")
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
    monkeypatch.setattr(history_service.spool, "write", lambda run, eid, e: journaled.append(e["kind"]))

    def unreachable(ref, timeout=None):
        raise TimeoutError("no ack")

    monkeypatch.setattr(history_service.ray, "get", unreachable)
    monkeypatch.setattr(history_service.ray, "wait", lambda refs, timeout=0: ([], refs))
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
    book = HistoryBook(str(tmp_path / "history.jsonl"))
    assert book.append({"kind": "run_start"})["gating"] is None
    book.arm([{"at": {"event": "checkpoint_reported"}}])
    assert book.append({"kind": "step", "step": 1})["gating"] == ["report"]
    book.close()


class _Method:
    def __init__(self, calls, name):
        self.calls, self.name = calls, name

    def remote(self, *args, **kwargs):
        self.calls.append((self.name, args, kwargs))
        return len(self.calls)


class _Service:
    """Stands in for the HistoryService actor handle: records `.remote` calls."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        return _Method(self.calls, name)


def test_a_book_handle_calls_its_service_with_its_run_first():
    import pickle

    service = _Service()
    book = history_service.BookHandle(service, "run-a")
    book.append.remote({"kind": "step"})
    book.join.remote(123, timeout_s=5)
    history_service.BookHandle(service, "run-b").close.remote()
    assert service.calls == [("append", ("run-a", {"kind": "step"}), {}),
                             ("join", ("run-a", 123), {"timeout_s": 5}),
                             ("close", ("run-b",), {})]
    assert history_service.Emitter(book, "worker").run_name == "run-a"
    with pytest.raises(AttributeError):
        book._private
    copy = pickle.loads(pickle.dumps(history_service.BookHandle("a handle", "run-a")))   # travels with the train fn
    assert (copy.service, copy.run) == ("a handle", "run-a")


def test_the_service_slot_replaces_a_service_that_does_not_answer(monkeypatch):
    started, killed = [], []
    monkeypatch.setattr(history_service.ray, "kill", killed.append)
    answers = {"svc1": True}   # what each service's ping answers (False: it died)

    def get(ref, timeout=None):
        if not answers.get(ref):
            raise RuntimeError("actor died")
        return 1

    monkeypatch.setattr(history_service.ray, "get", get)
    monkeypatch.setattr(history_service, "start_service", lambda node_id=None: started.append(node_id) or _Pinged(f"svc{len(started)}"))
    slot = history_service.ServiceSlot()
    first = slot.get("head")
    assert slot.get() is first and started == ["head"]      # alive: the same one, no new process
    answers["svc1"] = False                                   # it died
    second = slot.get()
    assert second is not first and started == ["head", "head"] and killed == [first]


class _Pinged:
    def __init__(self, name):
        self.name = name
        self.ping = self

    def remote(self):
        return self.name
