"""Explore spends its budget on new ground (issue 50): once a gap is confirmed, a candidate that
could only show it again is skipped before it runs, and one that could show another gap still
runs. Pure: the claim is the scheduling, so a fake Executor stands in for the cluster (it returns a
fixed gap for every example of some kinds, as a job that never restores its checkpoint does)."""

import json
import os

from ftharness.harness.run import explore_ledger
from ftharness.harness.run.explore import Example, Explorer, Ledger
from ftharness.reports.explore import page_html, terminal_text
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import load_scenario

HERE = os.path.dirname(__file__)
REF = load_scenario(os.path.join(HERE, "..", "scenarios", "catalog", "default.yaml"))
#: a user's job (12 steps, a checkpoint every step, max_failures 1): no workload axis is drawn
PLANTED = load_scenario(os.path.join(HERE, "data", "explore-planted", "rank0-restore.yaml"))
LOST = "bounded_lost_work"


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


def after_a_checkpoint(fault):
    """The fake's own reading (not explore's) of whether a fault fires once a checkpoint of a job
    that checkpoints every step was registered (and is surely there to restore): from step 3, on
    any event but the first write, from 4 s."""
    at = fault.get("at") or {}
    if at.get("step") is not None:
        return at["step"] >= 3
    if at.get("event") in ("checkpoint_written", "checkpoint_reported"):
        return at.get("nth", 1) >= 2
    return at.get("event") is not None or (at.get("time_s") or 0) >= 4


class PlantedExecutor:
    """A job that never restores its checkpoint: every run in which a fault surely fails the worker
    group (a crash, a kill, a node lost, a hang, a partition) after a checkpoint was registered
    fails bounded_lost_work; a preemption fails `recovers` instead (another gap, another class);
    the rest passes. 30 fake seconds a run."""

    def __init__(self, clock, run_s=30.0):
        self.clock, self.run_s, self.runs = clock, run_s, []

    def run(self, scenario, folder):
        self.clock.t += self.run_s
        faults = [f.model_dump(mode="json", exclude_none=True) for f in scenario.faults]
        self.runs.append(faults)
        os.makedirs(folder, exist_ok=True)
        lost = any(es.failure_of(f) == ("worker_group", es.CERTAIN) and after_a_checkpoint(f) for f in faults)
        preempted = any(es.failure_of(f)[0] == "preemption" for f in faults)
        props = {LOST: {"status": "failed" if lost else "passed"},
                 "recovers": {"status": "failed" if preempted else "passed"}}
        bad = [f"property {n} failed" for n, p in props.items() if p["status"] == "failed"]
        return {"verdict": "FAIL" if bad else "PASS", "outcome": "succeeded", "error_type": None,
                "properties": props, "mismatches": bad, "inconclusive": [],
                "faults": [{"landed": True} for _ in faults]}

    def rejudge(self, folder, outcome):
        raise AssertionError("the planted job always ends as the model expects")


def explore(tmp_path, budget_s=720.0, cover_first=True, seed=0, base=PLANTED):
    """A 12-minute exploration (fake time) of a user's job with the planted executor."""
    clock = Clock()
    executor = PlantedExecutor(clock)
    exp = Explorer(base, executor, str(tmp_path / "out"), budget_s, seed=seed, max_faults=2, clock=clock,
                   say=lambda line: None, ray_version="2.60.0", cover_first=cover_first)
    return exp, exp.explore(), executor


def spent_after_confirmation(exp, result, gap):
    """Search examples that showed `gap` (alone or with other gaps confirmed by then), started
    after it was confirmed: what the budget spent on showing it again."""
    conf = exp.ledger.confirmed
    started = [e for e in result.examples if e.purpose == "search" and e.status == "FAIL"
               and gap in e.gap.split("+") and e.at_s - e.wall_s >= conf[gap]
               and all(conf.get(p, float("inf")) <= e.at_s - e.wall_s for p in e.gap.split("+"))]
    row = next(g for g in result.spending["gaps"] if g["gap"] == gap)
    assert len(started) == row["after_confirmed"]
    return len(started)


def test_after_its_confirmation_at_most_3_examples_go_to_a_known_gap(tmp_path):
    for seed in range(4):
        exp, result, _ = explore(tmp_path / str(seed), seed=seed)
        assert exp.ledger.confirmed.get(LOST) is not None
        assert spent_after_confirmation(exp, result, LOST) <= 3, seed
        skipped = result.spending["skipped"]
        assert skipped and all(LOST in s["gap"] or "recovers" in s["gap"] for s in skipped)
        # a skipped candidate surely failed the worker group or the preemption a gap was seen with
        for s in skipped:
            assert any(es.fault_token(f).startswith(("class:worker_group", "class:preemption")) for f in s["faults"]), s


def test_without_the_ledger_the_same_exploration_spends_its_budget_on_the_known_gap(tmp_path, monkeypatch):
    """The check above can fail: the ledger off, the same 12 minutes go to the known gap again."""
    monkeypatch.setattr(Ledger, "redundant", lambda self, course, workload: None)
    exp, result, _ = explore(tmp_path)
    assert spent_after_confirmation(exp, result, LOST) > 6
    assert result.spending["skipped_total"] == 0


def test_an_example_that_can_show_another_gap_still_runs(tmp_path):
    """A preemption is another class: it runs after bounded_lost_work is confirmed, and its own gap
    (recovers) is found; so does a damaged checkpoint beside a worker failure (a kind with no class
    of its own is its own token)."""
    exp, result, executor = explore(tmp_path)
    confirmed_at = exp.ledger.confirmed[LOST]
    kinds_after = {f["kind"] for e in result.examples if e.at_s - e.wall_s >= confirmed_at for f in e.faults}
    assert "preempt_node" in kinds_after and "corrupt_checkpoint" in kinds_after
    assert {g.example.gap for g in result.findings} >= {LOST, "recovers"}


def test_the_coverage_pass_skips_the_kinds_that_can_only_show_a_confirmed_gap(tmp_path):
    exp, result, executor = explore(tmp_path, cover_first=True)
    passed = [s for s in result.spending["skipped"] if s["stage"] == "coverage pass"]
    # the first kind (kill_worker) found it and was repeated at once; crash, node kill, hang and
    # partition, each a worker-group failure after a checkpoint, were not run
    assert {s["faults"][0]["kind"] for s in passed} >= {"crash_worker", "kill_node", "hang_worker", "partition_node"}
    # the simulator played each single worker failure: a restore, and the run succeeds as the model says
    assert all(s["by"] == "simulator" for s in passed if s["faults"][0]["kind"] in ("crash_worker", "kill_node"))
    assert [e.purpose for e in result.examples[:2]] == ["search", "confirm"]


def _course(faults, workload=None):
    from ftharness.scenarios.verdict import applicable_properties

    return es.course(REF, faults, es.expectation(REF.failure_config.model_dump(), faults, "2.60.0"),
                     workload, "2.60.0", applicable_properties)


def _ledger_with(example_faults, gap=LOST, workload=None):
    ledger = Ledger()
    ledger.confirmed[gap] = 0.0
    shown = Example(index=1, name="explore-00000000", faults=example_faults, phases=[], status="FAIL",
                    signature=gap + es.workload_text(workload or {}), workload=dict(workload or {}))
    ledger.learn(shown, _course(example_faults, workload))
    return ledger


KILL = [{"kind": "kill_worker", "at": {"step": 3}, "target": {"rank": 0}}]


def test_the_ledger_skips_only_what_can_show_nothing_but_the_confirmed_gap():
    ledger = _ledger_with(KILL)
    crash = [{"kind": "crash_worker", "at": {"step": 5}, "target": {"rank": 1}, "where": "before_step"}]
    assert ledger.redundant(_course(crash), None)[0] == LOST            # same class, a restore, same properties
    early = [{"kind": "crash_worker", "at": {"step": 1}, "target": {"rank": 0}, "where": "before_step"}]
    assert _course(early).restores is False                             # the simulator: nothing to restore yet
    assert ledger.redundant(_course(early), None) is None
    preempt = [es.plain("preempt_node", {"step": 3})]
    assert ledger.redundant(_course(preempt), None) is None             # another class
    corrupt = [es.plain("corrupt_checkpoint", {"step": 3}), dict(KILL[0])]
    assert ledger.redundant(_course(corrupt), None) is None             # a kind with no class of its own
    assert ledger.redundant(_course(KILL, {"data": "ray_data"}), {"data": "ray_data"}) is None   # another workload
    two = [dict(KILL[0]), {"kind": "kill_worker", "at": {"step": 20}, "target": {"rank": 1}}]
    assert ledger.redundant(_course(two), None) is None                 # over max_failures: another outcome
    assert _ledger_with(KILL, gap="recovers").redundant(_course(crash), None)[0] == "recovers"
    assert Ledger().redundant(_course(crash), None) is None             # nothing confirmed: everything runs
    # masked: beside a worker failure that surely shows the gap, a fault never seen with it runs
    # until MASKED_RUNS such examples showed nothing beyond the gap
    resumed = [es.plain("kill_controller", {"step": 3}), dict(KILL[0])]   # a resumed controller: no class
    assert ledger.redundant(_course(resumed), None) is None
    for i in range(explore_ledger.MASKED_RUNS):
        ledger.learn(Example(index=10 + i, name="explore-0000000%d" % i, faults=corrupt, phases=[], status="FAIL",
                             signature=LOST), _course(corrupt))
    assert ledger.redundant(_course(resumed), None)[0] == LOST
    assert ledger.redundant(_course(preempt), None) is None             # alone, another class still runs


def test_the_simulator_gives_the_course_where_it_can_play_the_schedule():
    at_step = _course(KILL)
    assert at_step.by == "simulator" and at_step.predicted == "succeeded" and at_step.restores is True
    assert at_step.tokens == {"class:worker_group"}
    on_event = _course([{"kind": "kill_worker", "at": {"event": "checkpoint_registered", "nth": 1},
                         "target": {"rank": 0}}])
    assert on_event.by == "declared" and on_event.restores is None
    controller = _course([es.plain("kill_controller", {"step": 3})])
    assert controller.by == "declared" and controller.tokens == {'kind:{"kind": "kill_controller", "resume": true}'}


def test_the_report_says_where_the_budget_went(tmp_path):
    _, result, _ = explore(tmp_path)
    saved = json.load(open(tmp_path / "out" / "explore.json"))
    sp = saved["spending"]
    assert sp["distinct_findings"] == len(result.findings) >= 2
    assert sp["findings_per_hour"] == round(len(result.findings) * 3600 / result.wall_s, 2)
    assert [t["s"] for t in sp["time_to_findings_s"]] == sorted(t["s"] for t in sp["time_to_findings_s"])
    row = next(g for g in sp["gaps"] if g["gap"] == LOST)
    assert row["skipped"] >= 4 and row["repeats"] == 1 and row["after_confirmed"] <= 3
    text = terminal_text(saved)
    assert f"gap {LOST}: {row['examples']} example(s)" in text and "distinct findings per hour" in text
    assert "skipped" in text and "could only show" in text
    page = page_html(saved)
    assert "Where the budget went" in page and "could only show" in page


def test_a_continued_exploration_reads_a_file_with_the_spending(tmp_path):
    explore(tmp_path, budget_s=300)
    exp, result, _ = explore(tmp_path, budget_s=200, seed=1)
    assert result.session == 2


def test_the_spending_splits_repeats_under_a_failure_shown_already_from_new_failure_classes(tmp_path):
    """A gap is its property with its failure class (issue 50): of the examples after confirmation,
    those whose every fault token had shown the gap before are counted apart; with the ledger off
    that count grows, with it on it stays within the target."""
    exp, result, _ = explore(tmp_path / "on")
    row = next(g for g in result.spending["gaps"] if g["gap"] == LOST)
    assert 0 <= row["after_confirmed_known"] <= row["after_confirmed"] <= 3
    assert len(row["after_confirmed_known_examples"]) == row["after_confirmed_known"]
    assert "under a failure it had shown already" in terminal_text(json.load(open(tmp_path / "on" / "out" / "explore.json")))


def test_without_the_ledger_most_repeats_are_under_a_failure_shown_already(tmp_path, monkeypatch):
    monkeypatch.setattr(Ledger, "redundant", lambda self, course, workload: None)
    exp, result, _ = explore(tmp_path)
    row = next(g for g in result.spending["gaps"] if g["gap"] == LOST)
    assert row["after_confirmed_known"] > 3
