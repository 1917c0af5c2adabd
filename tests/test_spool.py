"""The node-local journal (ftharness.history.spool), its merge into the history, and
`hold: false` triggers: pure, no Ray (HistoryBook is a plain class)."""

import json
import os

import pytest

from ftharness.faults.base import At
from ftharness.history import spool
from ftharness.history.records import read_events
from ftharness.history.book import HistoryBook
from ftharness.history.triggers import TriggerBook


@pytest.fixture
def run_name(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)
    name = "r-spool-test"
    yield name
    spool.remove(name)


def test_a_journal_is_written_only_while_the_run_keeps_one(run_name):
    e = {"kind": "step", "step": 5, "emitter": "worker-1-a", "eseq": 7, "t": 10.0}
    assert spool.write(run_name, "worker-1-a", e) is False       # no run folder: nothing left behind
    assert not os.path.exists(spool.spool_dir(run_name))
    spool.create(run_name)
    assert spool.write(run_name, "worker-1-a", e)
    with open(os.path.join(spool.spool_dir(run_name), "worker-1-a.jsonl"), "a") as f:
        f.write('{"kind": "step", "torn')                           # a write cut by a kill
    assert spool.collect(run_name) == [e]
    spool.remove(run_name)
    assert not os.path.exists(spool.spool_dir(run_name))
    assert spool.write(run_name, "worker-1-a", e) is False       # a zombie after the run


def test_merge_appends_what_the_actor_never_got_marked_spooled_and_drops_duplicates(tmp_path):
    book = HistoryBook(str(tmp_path / "history.jsonl"))
    got = {"t": 1.0, "kind": "step", "source": "worker", "rank": 0, "step": 4, "emitter": "w-1", "eseq": 1}
    book.append(got)
    late = [dict(got, step=5, eseq=2, t=3.0), dict(got, step=6, eseq=3, t=4.0)]
    assert book.merge_spooled([got, *late]) == 2                 # eseq 1 reached the actor already
    assert book.merge_spooled(late) == 0
    book.close()
    events = read_events(str(tmp_path))
    assert [(e["step"], bool(e.get("spooled"))) for e in events if e["kind"] == "step"] == \
        [(4, False), (5, True), (6, True)]
    end = events[-1]
    assert end["kind"] == "history_end" and end["emitters"] == {"w-1": 3}   # no eseq gap left
    assert [e["t"] for e in events if e.get("spooled")] == [3.0, 4.0]        # the worker's own clock


def test_hold_false_fires_without_holding_the_worker():
    held, free = TriggerBook(), TriggerBook()
    held.arm([{"at": {"step": 4}}])
    free.arm([{"at": {"step": 4, "hold": False}}])
    step4 = {"kind": "step", "step": 4, "rank": 0, "seq": 9}
    assert held.observe(dict(step4)) == 0
    assert free.observe(dict(step4)) is None
    fired = free.take_pending()
    assert [(f["fault"], f["gated"]) for f in fired] == [(0, False)]   # fired all the same


def test_hold_only_goes_with_worker_triggers():
    assert At(step=4, hold=False).hold is False
    assert At(event="checkpoint_written", hold=False).hold is False
    with pytest.raises(ValueError, match="hold only goes with step or event"):
        At(time_s=3, hold=False)


def test_the_history_file_reads_back_with_spooled_events(tmp_path):
    book = HistoryBook(str(tmp_path / "history.jsonl"))
    book.merge_spooled([{"t": 2.0, "kind": "step", "step": 1, "emitter": "w", "eseq": 1}])
    book.close()
    with open(tmp_path / "history.jsonl") as f:
        first = json.loads(f.readline())
    assert first["spooled"] is True and first["seq"] == 1
