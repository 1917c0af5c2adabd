"""A long history read into columns (ftharness.history.columns) says what its dicts say.

`read_history` keeps the steps, reports and written checkpoints of a long history
as numpy columns and the model files them in bulk (ftharness.history.filing).
Here every history is read both ways (columns from the first event on, and the
list of dicts it always was) and must give the same events, the same problems,
the same verdict and the same metrics, intact, damaged, and with values of
types the stores do not keep (those blocks stay dicts)."""

import json
import random

import pytest

from ftharness.history import records
from ftharness.history.columns import Events, EventsAt
from ftharness.history.model import History
from ftharness.history.records import read_history, sealed_lines
from ftharness.scenarios.properties import run_checks
from ftharness.scenarios.synthetic import generate
from test_checks_scale import plans
from test_scale_paths import damage


def read_both(path, monkeypatch, block=4096):
    """(read into columns, read as a list of dicts) of one file, `block` bytes at a time (the
    stores take a block's events all or none: small blocks keep the good ones in columns)."""
    monkeypatch.setattr(records, "_BLOCK", block)
    monkeypatch.setattr(records, "COLUMNS_FROM", 0)
    cols = read_history(str(path))
    monkeypatch.setattr(records, "COLUMNS_FROM", 1 << 62)
    plain = read_history(str(path))
    return cols, plain


def typed(events):
    """Events with the type of every value (1 and 1.0 and True differ; NaN equals itself)."""
    def one(v):
        if isinstance(v, dict):
            return {k: one(x) for k, x in v.items()}, list(v)
        if isinstance(v, list):
            return [one(x) for x in v]
        return type(v).__name__, repr(v)
    return [one(e) for e in events]


def judged(events, context):
    h = History(events)
    out = {name: [r.status, r.explanation, r.findings, r.violations]
           for name, r in run_checks(h, context).items()}
    try:
        out["metrics"] = h.run_metrics()
        out["spans"] = [vars(s) for s in h.step_spans()]
        out["recoveries"] = [r.row() for r in h.recoveries()]
        out["placed"] = [list(p) if p[1] is None else [p[0], list(p[1])] for p in h.placed]
        out["attempts"] = {str(k): [len(a.steps), len(a.reports), len(a.written), len(a.events)]
                           for k, a in h.attempts.items()}
    except Exception as e:  # noqa: BLE001 - the same error either way
        out["metrics"] = repr(e)
    return json.loads(json.dumps(out, default=str))


def test_columns_read_and_judge_as_the_dicts(tmp_path, monkeypatch):
    rng = random.Random(11)
    stored = 0
    for i, plan in enumerate(plans(40, seed=21)):
        syn = generate(plan)
        events = syn.events
        if i % 2:
            damage(events, rng)
        path = tmp_path / f"h{i}.jsonl"
        path.write_bytes(b"\n".join(sealed_lines(events, renumber=i % 4 != 1)) + b"\n")
        cols, plain = read_both(path, monkeypatch)
        assert isinstance(cols.events, Events) and isinstance(plain.events, list)
        assert typed(list(cols.events)) == typed(plain.events)
        assert cols.problems == plain.problems
        assert judged(cols.events, syn.context) == judged(plain.events, syn.context)
        stored += cols.events.stored
    assert stored > 1000   # the stores held most of them


def test_values_the_stores_do_not_keep_leave_their_block_as_dicts(tmp_path, monkeypatch):
    events = generate(next(plans(1, seed=3))).events
    steps = [e for e in events if e.get("kind") == "step"]
    reports = [e for e in events if e.get("kind") == "report"]
    steps[0]["loss"] = None                      # a None where the layout has a float
    steps[1]["seq_note"] = "x"                   # a key no store knows
    steps[2]["rows"] = [1, True, 2]              # a bool among the row ids
    reports[0]["metrics"]["extra"] = {"a": 1}    # a nested dict in the metrics
    reports[1]["digest"] = True
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(sealed_lines(events)) + b"\n")
    cols, plain = read_both(path, monkeypatch)
    assert typed(list(cols.events)) == typed(plain.events) and cols.problems == plain.problems
    assert 0 < cols.events.stored < len(cols.events)
    context = generate(next(plans(1, seed=3))).context
    assert judged(cols.events, context) == judged(plain.events, context)


@pytest.mark.parametrize("how", ["drop", "duplicate", "swap", "torn", "garble", "bigseq", "noseq"])
def test_damaged_files_read_the_same_in_columns(tmp_path, monkeypatch, how):
    events = generate(next(plans(1, seed=8))).events
    lines = sealed_lines(events)
    at = len(lines) // 2
    if how == "drop":
        del lines[at]
    elif how == "duplicate":
        lines.insert(at, lines[at])
    elif how == "swap":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif how == "torn":
        lines[-1] = lines[-1][:20]
    elif how == "garble":
        lines[at] = lines[at][:-5]
    elif how == "bigseq":
        e = json.loads(lines[at])
        lines[at] = json.dumps(dict(e, seq=2 ** 70)).encode()
    else:
        e = json.loads(lines[at])
        e.pop("seq")
        lines[at] = json.dumps(e).encode()
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(lines) + (b"" if how == "torn" else b"\n"))
    cols, plain = read_both(path, monkeypatch)
    assert typed(list(cols.events)) == typed(plain.events)
    assert cols.problems == plain.problems and cols.problems


def test_an_attempts_steps_read_their_columns(tmp_path, monkeypatch):
    syn = generate(next(plans(1, seed=5)))
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"\n".join(sealed_lines(syn.events)) + b"\n")
    cols, plain = read_both(path, monkeypatch)
    h, g = History(cols.events), History(plain.events)
    for key, att in h.attempts.items():
        assert isinstance(att.steps, EventsAt)
        for name in ("seq", "t", "step", "rank", "pid", "epoch", "attempt_id", "missing"):
            assert att.steps.column(name) == [e.get(name) for e in g.attempts[key].steps]
        assert list(att.steps) == g.attempts[key].steps and list(att.reports) == g.attempts[key].reports
        assert list(att.events) == g.attempts[key].events
    assert list(h.events) == plain.events
