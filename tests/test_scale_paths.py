"""What makes long histories cheap gives what the plain code gives: the reader
(orjson or the standard library, all at once or a few lines at a time), the
live model that grows with the file, and the fast paths of the model and the
properties (which only ever say "nothing wrong", leaving the rest to the
general code). benchmarks/checks_golden.py compares whole verdicts with the
code before these paths; these tests run without it."""

import copy
import json
import math
import random

import pytest

from ftharness.history import records
from ftharness.history.model import History
from ftharness.history.records import HistoryReader, LiveHistory, read_history, seal
from ftharness.scenarios.properties import exactly_once_restore, run_checks, shard_reassignment
from ftharness.scenarios.synthetic import generate
from test_checks_scale import plans


def damage(events, rng):
    """One defect the fast paths must leave to the general code."""
    steps = [e for e in events if e.get("kind") == "step"]
    how = rng.choice(["step", "rows", "epoch", "drop", "repeat", "rank", "float_step", "t"])
    e = rng.choice(steps)
    if how == "step":
        e["step"] += rng.choice([-1, 1, 2])
    elif how == "rows":
        e["rows"] = list(e["rows"][:-1]) + [rng.choice(steps)["rows"][0]]
    elif how == "epoch":
        e["epoch"] += 1
    elif how == "drop":
        events.remove(e)
    elif how == "repeat":
        events.insert(events.index(e) + 1, dict(e))
    elif how == "rank":
        e["rank"] = None
    elif how == "float_step":
        e["step"] = float(e["step"])
    else:
        e["t"] = -e["t"]


def general_only(monkeypatch):
    """Every fast path off: the properties and the model take the general code."""
    monkeypatch.setattr(shard_reassignment, "_table", lambda h, att: None)
    monkeypatch.setattr(shard_reassignment, "_lineage_whole", lambda h, kept, cfg: False)
    monkeypatch.setattr(exactly_once_restore, "_each_in_sequence", lambda *a: False)
    monkeypatch.setattr(History, "_step_spans_by_attempt", lambda self: self._step_spans_all())


def judged(events, context):
    h = History(copy.deepcopy(events))
    out = {name: [r.status, r.explanation, r.findings, r.violations]
           for name, r in run_checks(h, context).items()}
    try:
        out["metrics"] = h.run_metrics()
    except Exception as e:  # noqa: BLE001 - the same error either way
        out["metrics"] = repr(e)
    out["spans"] = [vars(s) for s in h.step_spans()] if not isinstance(out["metrics"], str) else None
    return json.loads(json.dumps(out, default=str))


def test_fast_paths_say_what_the_general_code_says(monkeypatch):
    rng = random.Random(17)
    cases = []
    for i, plan in enumerate(plans(60, seed=5)):
        syn = generate(plan)
        events = syn.events
        if i % 2:
            damage(events, rng)
        cases.append((events, syn.context))
    fast = [judged(events, context) for events, context in cases]
    general_only(monkeypatch)
    slow = [judged(events, context) for events, context in cases]
    for a, b in zip(fast, slow):
        assert a == b


def write(path, events):
    with open(path, "wb") as f:
        for e in events:
            f.write(json.dumps(e).encode() + b"\n")


def test_reading_appended_chunks_gives_what_one_read_gives(tmp_path):
    events = generate(next(plans(1, seed=9))).events
    whole = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    path = tmp_path / "history.jsonl"
    path.write_bytes(b"")
    reader = HistoryReader(str(path))
    rng = random.Random(2)
    at = 0
    while at < len(whole):
        at = min(len(whole), at + rng.randint(1, 700))   # cuts fall inside lines too
        path.write_bytes(whole[:at])
        reader.read()
        complete = whole[:whole.rfind(b"\n", 0, at) + 1]
        (tmp_path / "whole.jsonl").write_bytes(complete)
        assert reader.events == read_history(str(tmp_path / "whole.jsonl")).events
        assert reader.offset == len(complete)
    assert reader.events == events and not reader.problems


def test_a_torn_last_line_is_read_as_read_history_reads_it(tmp_path):
    events = generate(next(plans(1, seed=4))).events
    path = tmp_path / "history.jsonl"
    write(path, events)
    raw = path.read_bytes()
    for cut in (3, 40, len(raw) - 1):
        path.write_bytes(raw[:-cut])
        reader = HistoryReader(str(path))
        reader.read()
        reader.read(final=True)
        old = read_history(str(path))
        assert reader.events == old.events
        assert reader.problems == [p for p in old.problems if p.startswith("line ")]


def odd_history():
    """Lines that orjson would read differently, or not at all."""
    events = [{"seq": 1, "t": 1.0, "kind": "run_start", "source": "harness", "fit_index": 1},
              {"seq": 2, "t": 2.0, "kind": "note", "big": 2 ** 70, "neg": -2 ** 64,
               "metrics": {"nan": float("nan"), "inf": float("inf")}, "text": "caf\u00e9 \ud83d\ude00", "id": "1234567890123456789012"},
              {"seq": 3, "t": 3.0, "kind": "note", "x": [1, {"y": -0.0}], "long_float": 1.2345678901234567890123}]
    lines = [json.dumps(e).encode() for e in events]
    lines.insert(1, b"   ")                  # blank: skipped
    lines.insert(2, b"[1, 2]")               # not an object
    lines.insert(3, b'{"seq": 9, "bad": }')  # unreadable
    lines.insert(4, '{"seq": 4, "lone": "\\ud800"}'.encode())
    lines.append(b'{"seq": 5, "t": 5.0, "kind": "fault_injected", "t_done": NaN}')
    return b"\n".join(lines) + b"\n"


def same(a, b):
    """Equal events, NaN included, with the same types."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True) and \
        [sorted(map(type, e.values()), key=str) for e in a] == [sorted(map(type, e.values()), key=str) for e in b]


def test_orjson_and_the_standard_library_read_the_same_events(tmp_path, monkeypatch):
    path = tmp_path / "history.jsonl"
    path.write_bytes(odd_history())
    fast = read_history(str(path))
    monkeypatch.setattr(records, "_orjson_loads", None)
    plain = read_history(str(path))
    assert same(fast.events, plain.events) and fast.problems == plain.problems
    big = next(e for e in plain.events if "big" in e)
    assert type(big["big"]) is int and big["big"] == 2 ** 70 and math.isnan(big["metrics"]["nan"])
    assert any("unreadable" in p for p in plain.problems)
    # NaN is the job's value in its metrics; in a field of ftharness's own (a time) it is damage
    assert any("t_done is not what ftharness writes" in p for p in plain.problems)


def statuses(scenario, events, model=None):
    from ftharness.harness.run.soak import live_statuses

    return live_statuses(scenario, events, [f.model_dump(mode="json", exclude_none=True)
                                            for f in scenario.faults], model)


def test_the_live_model_grows_with_the_file_and_judges_as_a_fresh_read(tmp_path):
    from ftharness.scenarios.schema import parse_scenario

    scenario = parse_scenario({
        "name": "live", "cluster": {"nodes": 2, "cpus_per_node": 1},
        "workload": {"kind": "reference", "num_workers": 2, "steps": 12, "checkpoint_every": 2},
        "failure_config": {"max_failures": -1},
        "faults": [{"kind": "kill_worker", "at": {"step": 3}, "target": {"rank": 0}}],
        "expect": {"outcome": "succeeded"}})
    events = generate(next(plans(1, seed=3))).events
    whole = b"".join(json.dumps(e).encode() + b"\n" for e in events)
    path = tmp_path / "history.jsonl"
    live = LiveHistory(str(path))
    assert live.update()[0] == [] and statuses(scenario, *live.update()) == statuses(scenario, [])
    models = set()
    for at in range(0, len(whole) + 1, max(1, len(whole) // 7)):
        path.write_bytes(whole[:at])
        got, model = live.update()
        models.add(id(model))
        complete = tmp_path / "complete.jsonl"
        complete.write_bytes(whole[:whole.rfind(b"\n", 0, at) + 1] if at else b"")
        want = read_history(str(complete)).events
        assert got == want
        assert statuses(scenario, got, model) == statuses(scenario, want)
    path.write_bytes(whole)
    assert live.update()[0] == events and id(live.model) in models
    assert len(models) == 1   # extended, never built again
    # an event that sorts before the last one: built again, in seq order
    with open(path, "ab") as f:
        f.write(json.dumps(dict(events[3], seq=0)).encode() + b"\n")
    got, model = live.update()
    assert got == read_history(str(path)).events and id(model) not in models
    assert statuses(scenario, got, model) == statuses(scenario, got)


def test_integrity_in_one_pass_finds_what_the_general_check_finds(tmp_path):
    events = generate(next(plans(1, seed=8))).events
    for i, e in enumerate(events):
        e["emitter"], e["eseq"] = f"w{i % 3}", i // 3 + 1
    end = {"seq": len(events) + 1, "t": 9.0, "kind": "history_end", "source": "history",
           "events": len(events), "emitters": {f"w{k}": sum(1 for i in range(len(events)) if i % 3 == k)
                                               for k in range(3)}}
    variants = {"whole": events + [end]}
    variants["gap"] = [dict(e, eseq=e["eseq"] + 1) if e["emitter"] == "w1" and e["eseq"] > 2 else e
                       for e in events] + [end]
    variants["count"] = events + [dict(end, events=3)]
    variants["no_end"] = list(events)
    variants["after_end"] = events[:-1] + [dict(end, seq=len(events))] + [dict(events[-1], seq=len(events) + 1)]
    for name, evs in variants.items():
        evs = copy.deepcopy(evs)
        for e in evs:
            if e["kind"] == "history_end":
                e["seal"] = seal(e)
        path = tmp_path / f"{name}.jsonl"
        write(path, evs)
        reader = HistoryReader(str(path))
        reader.read(final=True)   # the events as read_history checks them (history_end with its digest)
        fast = records._integrity_in_order(reader.events)
        assert fast == records.integrity_problems(reader.events) or (fast is None and name == "after_end"), name


@pytest.mark.parametrize("decoder", ["orjson", "json"])
def test_read_history_keeps_its_promises_with_either_decoder(tmp_path, monkeypatch, decoder):
    if decoder == "json":
        monkeypatch.setattr(records, "_orjson_loads", None)
    events = generate(next(plans(1, seed=12))).events
    path = tmp_path / "history.jsonl"
    write(path, events)
    read = read_history(str(path))
    assert read.events == events
    assert read.problems == ["no history_end: the run did not close its history (crash or kill of the harness)"]
    kinds = {id(e["kind"]) for e in read.events if e["kind"] == "step"}
    assert len(kinds) == 1   # one copy of each repeated value
