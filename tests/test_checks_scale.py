"""The checks cost time linear in the history, and the shortcuts that make
them so give what the plain computations give (benchmarks/checks_golden.py
compares whole verdicts against the code before; benchmarks/checks_scale.py
measures the time)."""

import random

import numpy as np
import pytest

from ftharness.history.model import History, _Steps
from ftharness.faults import landings
from ftharness.faults.base import EventIndex, FaultView
from ftharness.scenarios.properties import OPT_IN, PROPERTIES, run_checks
from ftharness.scenarios import reference_data
from ftharness.scenarios.properties.base import lineage
from ftharness.scenarios.reference_data import (WorkloadConfig, accumulate, epoch_permutation, expected_accumulators,
                                      global_batch, rank_slice)
from ftharness.scenarios.synthetic import Fault, Plan, generate


def test_rank_slice_is_array_split():
    for n in range(0, 40):
        batch = np.arange(100, 100 + n)
        for ws in range(1, 9):
            for rank in list(range(ws)) + [-1]:
                assert rank_slice(batch, rank, ws).tolist() == np.array_split(batch, ws)[rank].tolist()
    with pytest.raises(IndexError):
        rank_slice(np.arange(4), 3, 2)


def per_step(cfg):
    total = np.zeros(4, dtype=np.float64)
    for s in range(cfg.steps):
        total += accumulate(global_batch(cfg, s), s // cfg.steps_per_epoch, cfg.rows)
    return total.tolist()


def test_expected_accumulators_is_the_per_step_sum_to_the_bit():
    rng = random.Random(7)
    configs = [WorkloadConfig(steps=rng.randint(1, 50), batch_size=rng.choice([1, 3, 4, 32, 33]),
                              epochs=rng.randint(1, 4), seed=rng.randint(0, 5),
                              rows_per_epoch=rng.choice([None, None, 40, 1000])) for _ in range(60)]
    # sums past 2**53, where the order of the additions shows in the last bits
    configs += [WorkloadConfig(steps=40, batch_size=50_000, epochs=2),
                WorkloadConfig(steps=3, batch_size=2_000, rows_per_epoch=4_000_000)]
    for cfg in configs:
        assert expected_accumulators(cfg) == per_step(cfg), cfg


def test_global_batch_is_a_copy_of_one_permutation_per_epoch():
    cfg = WorkloadConfig(steps=12, batch_size=4, epochs=3)
    batch = global_batch(cfg, 5)
    want = np.random.default_rng([cfg.seed, 1]).permutation(cfg.rows)[4:8]
    assert batch.tolist() == want.tolist()
    batch[:] = -1   # the caller's to keep or change
    assert global_batch(cfg, 5).tolist() == want.tolist()
    assert epoch_permutation(cfg, 1) is epoch_permutation(cfg, 1)
    assert not epoch_permutation(cfg, 1).flags.writeable


def test_each_epoch_is_numpys_permutation_of_its_rows():
    # (an int32 arange shuffled in place: the very permutation numpy draws, whatever the size)
    for rows in [1, 2, 3, 17, 1000, 65_537, 1_000_003]:
        for seed, epoch in [(0, 0), (7, 3), (123, 11)]:
            cfg = WorkloadConfig(steps=1, batch_size=rows, seed=seed, epochs=epoch + 1)
            want = np.random.default_rng([seed, epoch]).permutation(rows)
            assert np.array_equal(epoch_permutation(cfg, epoch), want)


def test_first_step_after_is_what_a_scan_finds():
    rng = random.Random(3)
    for _ in range(200):
        steps = [((rng.randint(1, 4), rng.randint(1, 3)), {"t": rng.choice([0.5, 1.0, 1.5, 2, 2.5, 3.0])})
                 for _ in range(rng.randint(0, 30))]
        steps.sort(key=lambda ke: ke[1]["t"])   # ties keep their order, as History sorts them
        ok = {k for k, _ in steps if rng.random() < 0.5}
        since = rng.choice([0, 0.5, 1.2, 2, 3.0, 4])
        scan = next(((k, e) for k, e in steps if e["t"] > since and k in ok), (None, None))
        found = _Steps(steps).first_after(since, lambda k: k in ok)
        assert found[0] == scan[0] and found[1] is scan[1]


def plans(n, seed=11):
    """`n` random fault plans (no budget limits), the same for a given seed."""
    rng = random.Random(seed)
    for _ in range(n):
        steps = rng.randint(4, 24)
        cfg = WorkloadConfig(steps=steps, batch_size=rng.choice([4, 6, 8]), epochs=rng.randint(1, 3),
                             checkpoint_every=rng.randint(1, 3))
        faults = [Fault(rng.choice(["worker_group", "preemption", "controller_kill", "controller"]),
                        after_steps=rng.randint(0, steps), world_size=rng.choice([None, 1, 2, 3]))
                  for _ in range(rng.randint(0, 4))]
        yield Plan(cfg, num_workers=rng.randint(1, 4), failure_config={"max_failures": -1,
                   "max_preemption_failures": -1, "controller_failure_limit": -1}, faults=faults)


def plain_lineage(h):
    """lineage() as it was first written (max and filter over the dict per attempt)."""
    kept, problems, started = {}, [], False
    for att in h.ordered():
        r = att.restored_step()
        if r is None:
            continue
        top = max(kept, default=0)
        if r > top and started:
            problems.append(f"{h.label(att.key)} restored step {r} but the lineage only reached "
                            f"step {top}: steps {top + 1}-{r} were never run")
        for s in range(top + 1, r + 1):
            kept[s] = None
        for s in [s for s in kept if s > r]:
            del kept[s]
        for s in sorted({e.get("step") for e in att.steps if (e.get("step") or 0) > r}):
            kept[s] = att.key
        started = True
    return kept, problems


def test_model_shortcuts_agree_with_plain_scans():
    for plan in plans(40):
        events = generate(plan).events
        h = History(events)
        assert lineage(h) == plain_lineage(h)
        assert list(lineage(h)[0].items()) == list(plain_lineage(h)[0].items())
        for q in range(0, len(events) + 2):
            earlier = [e for e in h.registered if e.get("seq", 0) < q]
            assert h.latest_registered(q) is (earlier[-1] if earlier else None)
        assert h.step_spans() == h.step_spans() and h.step_spans() is not h.step_spans()
        for kind in ("step", "failure", "attempt_start", "nothing"):
            assert h._of(kind) == [(e, f, k) for e, (f, k) in zip(h.events, h.placed) if e.get("kind") == kind]


def test_fault_views_on_a_shared_index_read_what_their_own_scans_read():
    for plan in plans(30):
        events = generate(plan).events
        shared = EventIndex(events)
        for i in range(len(plan.faults) + 1):
            a, b = FaultView(i, events), FaultView(i, events, shared)
            assert (a.injected, a.skipped, a.actions, a.healed) == (b.injected, b.skipped, b.actions, b.healed)
            for seq in range(0, len(events) + 2, 3):
                assert a.fit_end(seq) == b.fit_end(seq) and a.failures_after(seq) == b.failures_after(seq)
                for pid in (1001, 1003, 1010):
                    assert a.live_attempt_of(pid, seq) == b.live_attempt_of(pid, seq)
                assert a.ranks_on("node-1", seq) == b.ranks_on("node-1", seq)
    assert landings([{"kind": "kill_worker"}], ["not an event"])[0][1].status == "missed"


def test_a_long_history_is_judged_in_one_pass():
    """A history of ~30,000 events (4 ranks, a fault every ~150 steps) passes;
    the permutation of an epoch is drawn once however many steps read it."""
    cfg = WorkloadConfig(steps=6000, batch_size=32, epochs=2, checkpoint_every=10)
    plan = Plan(cfg, num_workers=4, failure_config={"max_failures": -1, "max_preemption_failures": -1},
                faults=[Fault("worker_group" if i % 2 else "preemption", after_steps=150 + i) for i in range(30)])
    syn = generate(plan)
    assert len(syn.events) > 25_000
    info0 = reference_data._permutation.cache_info()
    results = run_checks(syn.events, dict(syn.context, monotonic=["step", "count"]),
                         [p for p in PROPERTIES if p not in OPT_IN])   # opt-in: its evidence is a real run's
    assert all(r.passed for r in results.values()), {n: r.explanation for n, r in results.items()}
    info1 = reference_data._permutation.cache_info()
    assert info1.misses - info0.misses <= 2   # each epoch drawn at most once (generate drew them already)


def plain_overlap(h):
    """shard_reassignment._overlap_violations as first written: a dict entry per row."""
    from collections import defaultdict
    out = []
    for att in h.ordered():
        seen, dups = {}, defaultdict(list)
        for e in att.steps:
            here = (e.get("rank"), e.get("step"), e.get("seq"))
            for row in e.get("rows") or []:
                first = seen.setdefault((e.get("epoch"), row), here)
                if first is not here:
                    dups[e.get("epoch")].append(f"row {row} by rank {first[0]} step {first[1]} (seq {first[2]}) "
                                                f"and rank {here[0]} step {here[1]} (seq {here[2]})")
        out += [f"{h.label(att.key)} epoch {ep}: {len(d)} row(s) consumed twice, e.g. {d[0]}"
                for ep, d in sorted(dups.items(), key=lambda kv: str(kv[0]))]
    return out


def plain_lineage_rows(h, kept, cfg):
    """shard_reassignment._lineage_row_violations as first written: a tuple per row."""
    from collections import Counter
    from ftharness.scenarios.properties.shard_reassignment import _epoch_kept, _lineage_rows
    out = []
    for epoch, rows in sorted(_lineage_rows(h, kept).items(), key=lambda kv: str(kv[0])):
        counts = Counter(r for r, _, _ in rows)
        twice = sorted(r for r, n in counts.items() if n > 1)
        if twice:
            steps = [s for r, s, _ in rows if r == twice[0]]
            out.append(f"epoch {epoch}: {len(twice)} row(s) applied more than once in the kept "
                       f"lineage, e.g. row {twice[0]} at steps {steps}")
        if cfg is not None and _epoch_kept(kept, cfg, epoch):
            missing = sorted(set(range(cfg.rows)) - set(counts))
            if missing:
                out.append(f"epoch {epoch}: {len(missing)} row(s) never consumed in the kept lineage, "
                           f"e.g. row {missing[0]}")
    return out


def test_row_checks_agree_with_a_dict_per_row_whatever_the_rows():
    """The array and set shortcuts answer only what they can answer exactly:
    floats, bools, strings, huge ints and repeats go the row-by-row way."""
    from ftharness.scenarios.properties import shard_reassignment as sr
    odd = [1.0, True, "3", 2 ** 70, 0, None, -1, 10 ** 6, 2.5]
    rng = random.Random(5)
    for plan in plans(40):
        syn = generate(plan)
        steps = [e for e in syn.events if e["kind"] == "step"]
        for _ in range(3):
            events = [dict(e) for e in syn.events]
            for e in rng.sample([e for e in events if e["kind"] == "step"], min(3, len(steps))):
                e["rows"] = list(e["rows"]) + [rng.choice(odd + e["rows"])]
                if rng.random() < 0.3:
                    e["rows"] = e["rows"][1:]
            h = History(events)
            kept, _ = lineage(h)
            cfg = WorkloadConfig(**syn.context["workload"])
            try:
                want = plain_overlap(h), plain_lineage_rows(h, kept, cfg)
            except TypeError as e:
                with pytest.raises(TypeError, match=str(e)[:20]):
                    sr._overlap_violations(h), sr._lineage_row_violations(h, kept, cfg)
                continue
            assert (sr._overlap_violations(h), sr._lineage_row_violations(h, kept, cfg)) == want


def _scale_bench():
    """benchmarks/checks_scale.py as a module (its generator writes a sealed history)."""
    import importlib.util
    import os

    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks", "checks_scale.py")
    spec = importlib.util.spec_from_file_location("checks_scale_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_benchmark_writes_the_history_the_generator_plays(tmp_path, monkeypatch):
    """The benchmark writes its events as they age (a 10^7-event run does not fit in
    memory as dicts): the same file as one written from the whole list, sealed, and PASS."""
    import hashlib
    import json

    bench = _scale_bench()
    monkeypatch.setattr(bench._Spool, "KEEP", 50)   # most events written long before the run ends
    bench.generate(3000, 4, str(tmp_path / "h"))
    lines = (tmp_path / "h" / "history.jsonl").read_bytes().splitlines(keepends=True)
    events = generate(bench.plan_for(3000, 4)).events
    assert lines[:-1] == [json.dumps(e).encode() + b"\n" for e in events]
    end = json.loads(lines[-1])
    assert end["digest"] == hashlib.sha256(b"".join(lines[:-1])).hexdigest() and end["events"] == len(events)
    assert bench.judge(str(tmp_path / "h"))["verdict"] == "PASS"


def test_reading_and_judging_cost_a_bounded_amount_per_event(tmp_path, monkeypatch):
    """What a long history costs in memory grows with its events by a fixed amount
    per event: the slope between two sizes (tracemalloc, never timings) of the events
    read and of the peak of judging them, read into columns as a long history is. The bounds
    hold today's costs with a margin (about 0.11 KB per event read, 0.25 KB more at the peak of
    judging; 1.2 and 0.35 KB when every event was a dict): a regression that copies the
    events, or keeps something per event that it need not, fails here."""
    import gc
    import json
    import tracemalloc

    from ftharness.history.records import read_history
    from ftharness.scenarios.schema import parse_scenario
    from ftharness.scenarios.verdict import evaluate

    from ftharness.history import records

    monkeypatch.setattr(records, "COLUMNS_FROM", 0)   # columns, as for a long history
    bench = _scale_bench()
    cost = {}
    for n in (6000, 12000):
        folder = str(tmp_path / str(n))
        bench.generate(n, 4, folder)
        with open(folder + "/scenario.json") as f:
            scenario = parse_scenario(json.load(f))
        with open(folder + "/outcome.json") as f:
            outcome = json.load(f)
        evaluate(scenario, read_history(folder).events, outcome)   # caches and imports, once
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            read = read_history(folder)
            held = tracemalloc.get_traced_memory()[0] - base
            tracemalloc.reset_peak()
            summary = evaluate(scenario, read.events, outcome, read.problems)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
        assert summary["verdict"] == "PASS", summary["mismatches"] + summary["inconclusive"]
        cost[n] = (len(read.events), held, peak)
        del read, summary
    (n1, held1, peak1), (n2, held2, peak2) = cost[6000], cost[12000]
    per_event_read = (held2 - held1) / (n2 - n1)
    per_event_judged = (peak2 - held2 - (peak1 - held1)) / (n2 - n1)
    assert per_event_read < 300, per_event_read
    assert per_event_judged < 450, per_event_judged
