"""The mutation engine (ftharness.reports.mutation): its operators reach every event kind, its
equivalence rules are the written ones, its controls PASS, and on a seeded sample of the recorded
histories' mutants the verdict kills at least KILL_TARGET of the non-equivalent ones. The
self-consistent operators (shift a process or a node, splice another run, move across a boundary,
two facts together, relabel, transplant) keep every process's clock running forwards and the
numbering contiguous, so only a semantic rule can refuse them; `killer` names the rule code and
the figures set the generic rules aside. The full campaign is `benchmarks/mutation_score.py`;
docs/mutation-figures.md publishes its figures."""

import json
import os
from collections import Counter, defaultdict

import pytest

from ftharness.reports import mutation

DATA = os.path.join(os.path.dirname(__file__), "data")
SOURCES = ("kill-worker", "preempt-node", "torchrun-kill-worker", "torchrun-kill-node")
#: the share of non-equivalent mutants the verdict must refuse (never PASS) on the seeded sample
KILL_TARGET = 0.95


def test_operators_reach_every_event_kind():
    events, _ = mutation.load(os.path.join(DATA, "kill-worker"))
    ms = list(mutation.mutants("kill-worker", events))
    kinds = {e["kind"] for e in events}
    for op in ("delete", "delete-in-transit", "duplicate", "revalue"):
        assert {m.kind for m in ms if m.operator == op} == kinds, op
    assert {m.operator for m in ms} >= {"delete", "delete-in-transit", "duplicate", "reorder", "retime", "revalue",
                                        "swap", "edit-after-seal"}
    assert all(m.equivalent in (None, *mutation.EQUIVALENCE) for m in ms)


def test_retime_in_place_is_the_only_equivalent_move_in_time():
    times = [1.0, 2.0, 5.0]
    assert mutation._in_place(times, 2.0, 2.5)          # still between 1 and 5
    assert not mutation._in_place(times, 2.0, 5.5)      # now after the event at 5
    assert not mutation._in_place(times, 2.0, 0.5)      # now before the event at 1


@pytest.fixture(scope="module")
def sampled_score():
    """One judged sample (the controls and `FTHARNESS_MUTANTS` mutants per source), shared by
    the tests below: judging it is the pure lane's costliest step."""
    return mutation.run([os.path.join(DATA, s) for s in SOURCES], sample=int(os.environ.get("FTHARNESS_MUTANTS", "40")),
                        seed=7, consistent=False)


def test_controls_are_correct_histories(sampled_score):
    score = sampled_score
    controls = [o for o in score.outcomes if o.mutant.control]
    assert len(controls) >= 4 * 7
    assert not score.controls_wrong, [(o.mutant.name, o.reasons[:2]) for o in score.controls_wrong]


def test_the_verdict_kills_the_sampled_mutants(sampled_score, capsys):
    score = sampled_score
    with capsys.disabled():
        print(f"\nmutants judged {len(score.judged)}, equivalent {len(score.equivalent)}, kill rate "
              f"{score.kill_rate:.1%}, by {dict(score.by_killer().most_common())}")
    assert not score.controls_wrong
    assert score.kill_rate >= KILL_TARGET, [o.mutant.name for o in score.survivors]
    assert Counter(o.verdict for o in score.judged if o.verdict != "PASS")["FAIL"] > 0


def test_the_result_is_judged_against_rank_0s_report(tmp_path):
    """Ray's Result.metrics is rank 0's report (report_handler: metrics_per_worker[0]): rank 0's
    report of the last registered checkpoint edited is FAIL; rank 1's value at that step edited
    (a user job where each rank reports its own loss) stays PASS."""
    import copy

    events, scenario = mutation.load(os.path.join(DATA, "kill-worker"))
    last = [e for e in events if e["kind"] == "checkpoint_registered"][-1]

    def edited(rank):
        out = copy.deepcopy(events)
        for e in out:
            if e["kind"] == "report" and e.get("rank") == rank and e.get("step") == last["step"]:
                e["metrics"]["loss"] += 1.0
        return mutation.Mutant("kill-worker", "revalue", "report", "metrics.loss", f"rank {rank}", out)

    zero = mutation.judge(edited(0), scenario, str(tmp_path / "r0"))
    one = mutation.judge(edited(1), scenario, str(tmp_path / "r1"))
    assert zero.verdict == "FAIL" and any("result metrics differ" in r for r in zero.reasons), zero.reasons
    assert one.verdict == "PASS", one.reasons


# ------------------------------------------------------------------ self-consistent operators
#: the share of the sampled self-consistent mutants a *semantic* rule must refuse: a ratchet at the
#: figure measured when the operators were written (docs/mutation-figures.md); issue 46's target is 0.95
SEMANTIC_FLOOR = 0.90
#: self-consistent operators whose mutants move clock readings (each process must still run forwards)
TIMED_OPERATORS = ("shift-process", "shift-node", "move-across", "move-across-tail", "splice", "splice-as-own")


@pytest.fixture(scope="module")
def kill_worker():
    events, scenario = mutation.load(os.path.join(DATA, "kill-worker"))
    others = [(s, mutation.load(os.path.join(DATA, s))[0]) for s in ("preempt-node", "torchrun-kill-node")]
    return events, scenario, others, list(mutation.consistent_mutants("kill-worker", events, others))


def _written(m, tmp_path):
    """The mutant as written (renumbered, sealed) and read back."""
    from ftharness.history.records import read_history

    folder = str(tmp_path / "w")
    mutation.write(m, "name: x\n", folder)
    read = read_history(folder)
    return read


def test_every_consistent_operator_produces_mutants(kill_worker):
    _, _, _, ms = kill_worker
    ops = Counter(m.operator for m in ms)
    assert set(ops) == set(mutation.CONSISTENT_OPERATORS), ops
    assert all(m.equivalent in (None, *mutation.EQUIVALENCE) for m in ms)
    assert len({m.name for m in ms}) == len(ms), "mutant names are unique"
    assert all(m.events != kill_worker[0] for m in ms), "every mutant changes the history"


def test_shift_and_move_keep_every_process_running_forwards(kill_worker):
    _, _, _, ms = kill_worker
    checked = 0
    for m in ms:
        if m.operator not in TIMED_OPERATORS:
            continue
        last = {}
        for e in m.events:
            em = e.get("emitter")
            if em is None or not isinstance(e.get("t"), float):
                continue
            assert e["t"] >= last.get(em, float("-inf")), (m.name, em)
            last[em] = e["t"]
        checked += 1
    assert checked > 100


def test_shift_moves_every_reading_of_one_process_by_one_constant(kill_worker):
    events, _, _, ms = kill_worker
    m = next(m for m in ms if m.operator == "shift-process" and m.what.startswith("injector-")
             and m.what.endswith("+30s"))
    before = {(e["kind"], e["eseq"]): e for e in events if str(e.get("emitter")).startswith("injector-")}
    after = {(e["kind"], e["eseq"]): e for e in m.events if str(e.get("emitter")).startswith("injector-")}
    assert before.keys() == after.keys()
    for k, e in before.items():
        for f in ("t", "t_done", "t_requested"):
            if f in e:
                assert after[k][f] == pytest.approx(e[f] + 30.0)
    others = [e for e in m.events if not str(e.get("emitter")).startswith("injector-")]
    assert others == [e for e in events if not str(e.get("emitter")).startswith("injector-")]
    node = next(m for m in ms if m.operator == "shift-node")
    assert len({e["emitter"] for e, o in zip(sorted(node.events, key=lambda e: (e["emitter"], e["eseq"])),
                                            sorted(events, key=lambda e: (e["emitter"], e["eseq"])))
                if e["t"] != o["t"]}) > 1, "a node shift moves every process of the node"


def test_shift_in_place_is_equivalent_only_when_it_passes_nothing():
    assert mutation._set_in_place([1.0, 5.0], [(2.0, 4.0), (3.0, 4.5)])
    assert not mutation._set_in_place([1.0, 5.0], [(2.0, 4.0), (3.0, 6.0)])
    events = [{"kind": "a", "emitter": "x", "t": 0.0}, {"kind": "b", "emitter": "y", "t": 100.0},
              {"kind": "c", "emitter": "x", "t": 200.0}]
    ms = list(mutation._shifts("s", events))
    y = {m.what: m.equivalent for m in ms if m.what.startswith("y")}
    assert y["y+3s"] == y["y-30s"] == "in-place" and y["y+600s"] is None
    x = {m.what: m.equivalent for m in ms if m.what.startswith("x")}
    assert x["x+3s"] == x["x-30s"] == "in-place"   # 0 stays before 100, 200 after it
    assert x["x+600s"] is None and x["x-600s"] is None   # 0 -> 600 (200 -> -400) passes y's event


def test_merge_keeps_each_emitters_order():
    base = [{"emitter": "a", "t": 1.0}, {"emitter": "b", "t": 2.0}, {"emitter": "a", "t": 3.0}]
    ins = [{"emitter": "c", "t": 0.5}, {"emitter": "c", "t": 2.5}, {"emitter": "c", "t": 9.0}]
    out = mutation._merge(base, ins)
    assert [e["t"] for e in out] == [0.5, 1.0, 2.0, 2.5, 3.0, 9.0]


def test_splice_keeps_every_emitters_numbering_contiguous(kill_worker, tmp_path):
    _, _, _, ms = kill_worker
    spliced = [m for m in ms if m.operator in ("splice", "splice-as-own")]
    assert {m.kind for m in spliced} >= {"process:worker", "worker_start", "step", "report"}
    for m in spliced[::7]:
        read = _written(m, tmp_path)
        assert read.problems == [], (m.name, read.problems)
        seqs = defaultdict(list)
        for e in read.events:
            if e.get("emitter"):
                seqs[e["emitter"]].append(e["eseq"])
        assert all(v == list(range(1, len(v) + 1)) for v in seqs.values()), m.name
    own = next(m for m in spliced if m.operator == "splice-as-own" and m.kind == "process:worker")
    kept = next(m for m in spliced if m.operator == "splice" and m.what == own.what)
    run_id = mutation._run_id(kill_worker[0])
    assert {e["run"] for e in own.events} == {run_id}
    assert len({e["run"] for e in kept.events}) == 2


def test_move_across_lands_past_its_boundary(kill_worker):
    events, _, _, ms = kill_worker
    moves = [m for m in ms if m.operator == "move-across"]
    assert {m.field for m in moves} >= {"worker_group_shutdown", "next attempt_start", "death", "attempt_start",
                                        "fault"}
    for m in moves:
        i, b = _move_indices(m.what)
        moved = [e for e in m.events if e not in events]
        assert len(moved) == 1, m.name
        tb = events[b]["t"]
        assert (moved[0]["t"] > tb) if "+" in m.what.split("s past")[0] else (moved[0]["t"] < tb), m.name


def _move_indices(what):
    """(moved index, boundary index) from a move-across mutant's `what` ("#23+8s past #29")."""
    head, tail = what.split("s past #")
    i = int(head[1:].replace("+", " ").replace("-", " ").split()[0])
    return i, int(tail)


def test_pairs_change_facts_that_agree_with_each_other(kill_worker):
    events, _, _, ms = kill_worker
    pairs = {m.field: m for m in ms if m.operator == "pair"}
    assert set(pairs) >= {"budget+counts", "count+counts", "step+metrics.step", "step+report.step",
                          "restored_checkpoint+restored_step", "world_size+num_workers", "outcome+error_type",
                          "target_hit(pid,rank,node)", "checkpoint+path", "error_type+controller_state.error_type"}
    for m in ms:
        if m.operator != "pair":
            continue
        for e in m.events:
            if e.get("kind") == "failure" and isinstance(e.get("counts"), dict):
                assert e["count"] == e["counts"][e["budget"]], m.name
            if e.get("kind") == "report" and isinstance(e.get("metrics"), dict):
                assert e["metrics"].get("step", e["step"]) == e["step"], m.name
        if m.field == "restored_checkpoint+restored_step":
            reg = {e["checkpoint"]: e["step"] for e in events if e["kind"] == "checkpoint_registered"}
            for e in m.events:
                if e["kind"] == "worker_start" and e.get("restored_checkpoint"):
                    assert reg[e["restored_checkpoint"]] == e["restored_step"], m.name


def test_transplants_take_values_of_the_same_field(kill_worker):
    events, _, others, ms = kill_worker
    trans = [m for m in ms if m.operator == "transplant"]
    assert {m.field for m in trans} >= {"rows", "metrics.loss", "restored_step", "digest", "checkpoint"}
    pool = mutation._same_field_pool(events)
    for m in trans[::5]:
        values = {json.dumps(v) for _, v in pool[(m.kind, m.field)]}
        changed = [e for e, o in zip(m.events, events) if e != o]
        assert len(changed) == 1, m.name
        got = {json.dumps(v) for p, v in mutation._field_leaves(changed[0]) if mutation._norm(p) == m.field}
        assert got <= values, m.name
    foreign = [m for m in ms if m.operator == "transplant-foreign"]
    assert foreign and {m.field for m in foreign} >= {"path", "node_id", "attempt_id"}


def test_relabel_moves_a_whole_process(kill_worker):
    events, _, _, ms = kill_worker
    for m in (m for m in ms if m.operator == "relabel"):
        em = m.what.split("=")[0]
        mine = [e for e in m.events if e.get("emitter") == em]
        assert len({(e.get("attempt_id"), e.get("rank")) for e in mine}) == 1, m.name


def test_consistent_controls_pass(kill_worker, tmp_path):
    events, scenario, _, _ = kill_worker
    cs = [c for c in mutation.controls("kill-worker", events) if c.operator in ("control-rename", "control-skew-node")]
    assert {c.field for c in cs} == {"attempt_id", "checkpoint", "node_id", "pid", "t"}
    for n, c in enumerate(cs):
        o = mutation.judge(c, scenario, str(tmp_path / str(n)))
        assert o.verdict == "PASS", (c.name, o.reasons[:2])


def test_killer_names_the_rule_and_separates_generic_from_semantic():
    def summary(*reasons, verdict="INCONCLUSIVE"):
        return {"verdict": verdict, "mismatches": [r for r in reasons if r.startswith("!")],
                "inconclusive": [r for r in reasons if not r.startswith("!")]}

    assert mutation.killer({"verdict": "PASS"}) == "-"
    assert mutation.killer(summary("model: clock: step seq 9 of worker-1 is 3.000 s before ...")) == "model:clock"
    assert mutation.killer(summary("model: registration: checkpoint x registered twice")) == "model:registration"
    assert mutation.killer(summary("history: a gap in the numbering of worker-1")) == "history"
    assert mutation.killer(summary("fault 0 (kill_worker) did not land: no failure")) == "landing"
    assert mutation.killer(summary("property recovers failed: ...")) == "recovers"
    assert mutation.killer(summary("pinned property recovers held, but ...")) == "recovers"
    assert mutation.reason_code("model: the history could not be read as a run") == "model:unreadable"
    assert mutation.reason_code("outcome failed (expected succeeded)") == "outcome"
    assert mutation.reason_code("fault record seq 3: fault_kind is no fault kind (int)") == "fault-record"
    assert {"history", "model:clock", "model:odd-value", "model:unreadable"} <= mutation.GENERIC
    assert not mutation.is_generic("model:registration") and not mutation.is_generic("landing")

    m = mutation.Mutant("s", "retime", "step", "t", "#1", [])
    generic = mutation.Outcome(m, "INCONCLUSIVE", "model:clock", [], ["model:clock", "history"])
    semantic = mutation.Outcome(m, "INCONCLUSIVE", "model:clock", [], ["model:clock", "model:after-shutdown"])
    survivor = mutation.Outcome(m, "PASS", "-", [], [])
    assert generic.semantic_killer is None and semantic.semantic_killer == "model:after-shutdown"
    score = mutation.Score([generic, semantic, survivor])
    assert len(score.generic_only) == 1 and len(score.semantic_killed) == 1 and len(score.survivors) == 1
    assert score.by_rule() == Counter({"model:after-shutdown": 1})
    assert score.by_killer() == Counter({"model:clock": 2})
    assert score.semantic_rate == pytest.approx(1 / 3) and score.kill_rate == pytest.approx(2 / 3)
    assert score.table() == [("retime", 3, 2, 1, 1, 1)]
    assert score.by_field() == [("step.t", 3, 2, 1, 1, 1)]
    j = score.to_json()
    assert j["totals"]["generic_only"] == 1 and j["per_rule"] == {"model:after-shutdown": 1}
    assert j["survivor_classes"][0]["count"] == 1
    assert mutation.field_key("worker_group_started", "workers.0.pid") == "worker_group_started.workers.[].pid"


def test_judging_a_real_kill_names_its_rule(tmp_path):
    """A worker process of the killed attempt shifted 600 s later: its steps after its own death and
    after the run ended; killed by a semantic rule, named by its code."""
    events, scenario = mutation.load(os.path.join(DATA, "kill-worker"))
    victim = next(e for e in events if e["kind"] == "fault_injected")["target_hit"]["pid"]
    em = next(e["emitter"] for e in events if e.get("pid") == victim and e.get("source") == "worker")
    m = next(m for m in mutation._shifts("kill-worker", events) if m.what == f"{em}+600s")
    o = mutation.judge(m, scenario, str(tmp_path / "m"))
    assert o.verdict != "PASS" and o.semantic_killer is not None, o.reasons[:3]
    assert all(c == "model:" + r.split(":")[1].strip() for c, r in zip(o.codes, o.reasons) if r.startswith("model: "))


@pytest.fixture(scope="module")
def consistent_score():
    """A seeded sample of the self-consistent mutants (`FTHARNESS_CONSISTENT_MUTANTS` per operator per
    source; the controls, the new ones included, are judged in `sampled_score`)."""
    return mutation.run([os.path.join(DATA, s) for s in SOURCES], single=False, seed=7, with_controls=False,
                        per_operator=int(os.environ.get("FTHARNESS_CONSISTENT_MUTANTS", "3")))


def test_a_semantic_rule_refuses_the_self_consistent_mutants(consistent_score, capsys):
    score = consistent_score
    with capsys.disabled():
        print(f"\nself-consistent mutants judged {len(score.judged)}, semantic kill rate {score.semantic_rate:.1%}, "
              f"generic-only {len(score.generic_only)}, surviving {len(score.survivors)}, "
              f"by {dict(score.by_rule().most_common(8))}")
    assert score.semantic_rate >= SEMANTIC_FLOOR, [o.mutant.name for o in score.survivors + score.generic_only]
