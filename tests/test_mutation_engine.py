"""The mutation engine (ftharness.reports.mutation): its operators reach every event kind, its
equivalence rules are the written ones, its controls PASS, and on a seeded sample of the recorded
histories' mutants the verdict kills at least KILL_TARGET of the non-equivalent ones. The full
campaign (every mutant) is `benchmarks/mutation_score.py`; docs/verdicts.md publishes its figures."""

import os
from collections import Counter

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
                        seed=7)


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
