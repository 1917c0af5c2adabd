"""The property checks over synthetic histories: valid runs pass, planted
violations are caught (scenarios/synthetic.py builds the histories)."""

import copy
import os
import subprocess
import sys

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from ftharness.scenarios.reference_data import WorkloadConfig
from ftharness.scenarios.properties import CHECKS, CheckResult, run_checks
from ftharness.scenarios.synthetic import FAULTS, Fault, Plan, generate

SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
LIMITS = ("max_failures", "max_preemption_failures", "controller_failure_limit")


# ----------------------------------------------------------------- strategies
def faults(max_steps, classes=tuple(sorted(FAULTS))):
    return st.builds(
        Fault,
        cls=st.sampled_from(classes),
        after_steps=st.integers(0, max_steps),
        after_checkpoint=st.booleans(),
        recovery_s=st.floats(0.5, 5.0),
        world_size=st.one_of(st.none(), st.integers(1, 4)),
    )


@st.composite
def plans(draw, data="resumable", min_workers=1, faulty=False, limit=st.integers(-1, 3)):
    """A random run; `faulty` forces a first worker failure after a checkpoint
    (so a restart restores one, with an older one registered before it) and
    leaves budget for it."""
    steps = draw(st.integers(4 if faulty else 1, 12))
    cfg = WorkloadConfig(steps=steps, batch_size=draw(st.sampled_from([4, 6, 8])),
                         epochs=draw(st.integers(1, min(3, steps))),
                         checkpoint_every=draw(st.integers(1, 2 if faulty else 4)), data=data)
    fc = {k: draw(limit) for k in LIMITS}
    plan_faults = draw(st.lists(faults(steps), max_size=4))
    if faulty:
        fc["max_failures"] = draw(st.sampled_from([-1, 1, 2, 3]))
        first = Fault("worker_group", after_steps=2 * cfg.checkpoint_every, after_checkpoint=True,
                      recovery_s=draw(st.floats(0.5, 5.0)))
        plan_faults = [first] + plan_faults
    return Plan(cfg, num_workers=draw(st.integers(min_workers, 4)), failure_config=fc, faults=plan_faults)


def failing(name, events, context):
    result = CHECKS[name](events, context)
    assert isinstance(result, CheckResult) and result.name == name
    assert not result.passed, f"{name} missed the violation"
    assert result.explanation and result.findings
    return result


def all_pass(events, context):
    """No check fails; the two that every history supports actually judged."""
    results = run_checks(events, context)
    for name, result in results.items():
        assert result.status != "failed", f"{name}: {result.explanation}"
    assert results["budget_accounting"].passed, results["budget_accounting"].explanation
    if any(e["kind"] == "step" for e in events):
        assert results["exactly_once_restore"].passed, results["exactly_once_restore"].explanation
    elif any(e["kind"] == "worker_start" for e in events):   # workers started, no step: never a pass
        assert results["exactly_once_restore"].status == "not_judged", results["exactly_once_restore"].explanation


# ---------------------------------------------------------------- valid runs
@settings(max_examples=150, **SETTINGS)
@given(plans())
def test_valid_resumable_histories_pass_every_check(plan):
    syn = generate(plan)
    all_pass(syn.events, syn.context)
    if syn.context["outcome"] == "succeeded":
        assert syn.context["final"] == syn.context["expected_final"]


@settings(max_examples=80, **SETTINGS)
@given(plans(data="ray_data"))
def test_valid_ray_data_histories_pass_every_check(plan):
    syn = generate(plan)
    all_pass(syn.events, syn.context)


@settings(max_examples=30, **SETTINGS)
@given(plans())
def test_user_job_histories_without_rows_or_workload_pass(plan):
    syn = generate(plan)
    events = [{k: v for k, v in e.items() if k not in ("rows", "n_rows", "epoch")} for e in syn.events]
    context = dict(syn.context, workload=None, expected_final=None, final=None)
    all_pass(events, context)


def test_fault_free_run_explains_itself():
    syn = generate(Plan(WorkloadConfig(steps=6, batch_size=4, checkpoint_every=2)))
    results = run_checks(syn.events, syn.context)
    nothing = ("recovers", "bounded_lost_work", "monotonic_counters", "no_leftovers")
    assert all(r.passed and not r.findings for n, r in results.items() if n not in nothing)
    # nothing to recover from, no restart, no counter declared, no leftover sample: absence is no pass
    assert all(results[n].status == "not_judged" for n in nothing)
    assert "attempt 1: 1-6" in results["exactly_once_restore"].explanation


def test_worker_that_never_started_is_no_violation():
    plan = Plan(WorkloadConfig(steps=6, batch_size=4), num_workers=2, failure_config={"max_failures": 2},
                faults=[Fault("worker_group", after_steps=3), Fault("worker_group", after_steps=0)])
    syn = generate(plan)
    starts = [e for e in syn.events if e["kind"] == "worker_start" and e["attempt"] == 2 and e["rank"] == 1]
    events = [e for e in syn.events if e is not starts[0]]
    all_pass(events, syn.context)


def test_resumed_fit_restores_the_previous_fits_checkpoint():
    plan = Plan(WorkloadConfig(steps=8, batch_size=4, checkpoint_every=2), num_workers=2,
                faults=[Fault("controller_kill", after_steps=5)])
    syn = generate(plan)
    results = run_checks(syn.events, syn.context)
    assert all(r.status != "failed" for r in results.values())
    assert "fit 2 attempt 1: 5-8" in results["exactly_once_restore"].explanation
    assert any("ActorDiedError" in f for f in results["budget_accounting"].findings)


def test_ray_data_restart_replays_as_a_finding():
    plan = Plan(WorkloadConfig(steps=8, batch_size=4, epochs=1, checkpoint_every=3, data="ray_data"),
                num_workers=2, failure_config={"max_failures": 1}, faults=[Fault("worker_group", after_steps=4)])
    syn = generate(plan)
    result = run_checks(syn.events, syn.context, ["shard_reassignment"])["shard_reassignment"]
    assert result.passed
    assert any("replayed" in f and "attempt 2" in f for f in result.findings)


def test_ray_data_equal_split_drop_is_a_finding():
    plan = Plan(WorkloadConfig(steps=6, batch_size=6, epochs=2, rows_per_epoch=18, data="ray_data"),
                num_workers=4)
    syn = generate(plan)
    result = CHECKS["shard_reassignment"](syn.events, syn.context)
    assert result.passed
    assert any("equal split dropped" in f for f in result.findings)


# ------------------------------------------------------------- planted faults
def resequence(events):
    for i, e in enumerate(events, 1):
        e["seq"] = i
    return events


def of(events, kind, **match):
    return [e for e in events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]


def planted(plan, mutate):
    """Generate, copy and mutate; skip the example when the mutation does not apply."""
    syn = generate(plan)
    events, context = copy.deepcopy(syn.events), copy.deepcopy(syn.context)
    applied = mutate(events, context)
    assume(applied is not False)
    return resequence(events), context


def restore_older(events, context):
    names = [e["checkpoint"] for e in of(events, "checkpoint_registered")]
    regs = of(events, "checkpoint_registered")
    for ws in of(events, "worker_start"):
        if ws["restored_checkpoint"] and names.index(ws["restored_checkpoint"]) > 0:
            older = regs[names.index(ws["restored_checkpoint"]) - 1]
            for other in of(events, "worker_start", attempt_id=ws["attempt_id"]):
                other.update(restored_checkpoint=older["checkpoint"], restored_step=older["step"])
            return True
    return False


def restores(events):
    return [e for e in of(events, "worker_start") if e["restored_checkpoint"]]


def restore_nothing(events, context):
    restored = restores(events)
    if restored:
        restored[0].update(restored_checkpoint=None, restored_step=None)
    return bool(restored)


def restore_unregistered(events, context):
    restored = restores(events)
    if restored:
        restored[-1]["restored_checkpoint"] = "checkpoint_never_registered"
    return bool(restored)


def skip_step(events, context):
    steps = of(events, "step")
    have = {(e["attempt_id"], e["step"]) for e in steps}
    for e in steps:
        if (e["attempt_id"], e["step"] + 1) in have:
            gone = of(events, "step", attempt_id=e["attempt_id"], step=e["step"])
            events[:] = [x for x in events if not any(x is g for g in gone)]
            return True
    return False


def duplicate_step(events, context):
    steps = of(events, "step")
    if not steps:
        return False
    i = events.index(steps[len(steps) // 2])
    events.insert(i + 1, dict(events[i]))
    return True


def overlap_rows(events, context):
    for e in of(events, "step", rank=1):
        first = of(events, "step", attempt_id=e["attempt_id"], step=e["step"], rank=0)
        if e["rows"] and first and first[0]["rows"]:
            e["rows"] = [first[0]["rows"][0]] + e["rows"][1:]
            return True
    return False


def drop_row(events, context):
    steps = [e for e in of(events, "step") if e["rows"]]
    if not steps:
        return False
    victim = steps[len(steps) // 2]
    victim["rows"] = victim["rows"][:-1]
    victim["n_rows"] -= 1
    return True


def wrong_budget(events, context):
    failures = of(events, "failure")
    if not failures:
        return False
    f = failures[0]
    f["budget"] = "preemption" if f["budget"] == "worker_group" else "worker_group"
    return True


def count_skips(events, context):
    failures = [f for f in of(events, "failure") if f["budget"] != "none"]
    if not failures:
        return False
    failures[-1]["count"] += 1
    return True


def raise_too_early(events, context):
    retries = of(events, "failure", decision="RETRY")
    if not retries:
        return False
    f = retries[0]
    f["decision"] = "RAISE"
    del events[events.index(f) + 1:]
    events.append(dict(f, kind="run_end", source="harness", outcome="failed", error_type=f["error_type"],
                       fit_index=of(events, "run_start")[-1]["fit_index"]))
    context.update(outcome="failed", error_type=f["error_type"], final=None)
    return True


def fail_without_raise(events, context):
    if context["outcome"] != "succeeded":
        return False
    of(events, "run_end")[-1].update(outcome="failed", error_type="WorkerGroupError")
    context.update(outcome="failed", error_type="WorkerGroupError")
    return True


def zombie_checkpoint_restored(events, context):
    """A worker of an ended attempt persists a checkpoint late; the next attempt restores it."""
    for shutdown in of(events, "worker_group_shutdown"):
        starts = of(events, "worker_start", attempt_id=shutdown["attempt_id"], rank=0)
        later = [e for e in of(events, "worker_start") if e["seq"] > shutdown["seq"]
                 and e["attempt_id"] != shutdown["attempt_id"]]
        if starts and later:
            zombie = dict(starts[0], kind="report", step=99, checkpoint="checkpoint_zombie", metrics={},
                          t=shutdown["t"] + 0.0005)
            events.insert(events.index(shutdown) + 1, zombie)
            for ws in of(events, "worker_start", attempt_id=later[0]["attempt_id"]):
                ws["restored_checkpoint"] = "checkpoint_zombie"
            return True
    return False


def zombie_step(events, context):
    for shutdown in of(events, "worker_group_shutdown"):
        steps = of(events, "step", attempt_id=shutdown["attempt_id"])
        if steps:
            zombie = dict(steps[-1], step=steps[-1]["step"] + 1, t=shutdown["t"] + 0.0005)
            events.insert(events.index(shutdown) + 1, zombie)
            return True
    return False


def register_dead_report(events, context):
    for shutdown in of(events, "worker_group_shutdown"):
        starts = of(events, "worker_start", attempt_id=shutdown["attempt_id"], rank=0)
        if starts:
            i = events.index(shutdown)
            report = dict(starts[0], kind="report", step=0, checkpoint="checkpoint_late", metrics={},
                          t=shutdown["t"] - 0.0005)
            late = dict(shutdown, kind="checkpoint_registered", checkpoint="checkpoint_late",
                        path="/tmp/checkpoint_late", step=0, t=shutdown["t"] + 0.0005)
            events[i:i + 1] = [report, shutdown, late]
            return True
    return False


def over_bound(events, context):
    failures = of(events, "failure", decision="RETRY")
    if context["outcome"] != "succeeded" or not failures:
        return False
    context["recovery_bound_s"] = 0.25
    return True


def restore_corrupted(events, context):
    restored = restores(events)
    if restored:
        restored[0]["restored_intact"] = False
    return bool(restored)


def wrong_final(events, context):
    if context["final"] is None:
        return False
    context["final"][1] += 1.0
    return True


PLANTS = [
    ("exactly_once_restore", restore_older, "older"),
    ("exactly_once_restore", restore_nothing, "restored nothing"),
    ("exactly_once_restore", restore_unregistered, "never registered"),
    ("exactly_once_restore", skip_step, "step"),
    ("exactly_once_restore", duplicate_step, "applied twice"),
    ("exactly_once_restore", wrong_final, "accumulators"),
    ("exactly_once_restore", restore_corrupted, "digest mismatch"),
    ("shard_reassignment", overlap_rows, "row"),
    ("shard_reassignment", drop_row, "rows"),
    ("shard_reassignment", duplicate_step, "row"),
    ("budget_accounting", wrong_budget, "charged to"),
    ("budget_accounting", count_skips, "count"),
    ("budget_accounting", raise_too_early, "Ray decides RETRY"),
    ("budget_accounting", fail_without_raise, "without a RAISE"),
    ("recovers", raise_too_early, "allowed a retry"),
    ("recovers", fail_without_raise, "allowed a retry"),
    ("recovers", over_bound, "over the"),
    ("no_zombie_writes", zombie_checkpoint_restored, "persisted by a zombie"),
    ("no_zombie_writes", register_dead_report, "reported only by"),
]


@pytest.mark.parametrize("name,mutate,words", PLANTS, ids=[f"{n}-{m.__name__}" for n, m, _ in PLANTS])
@settings(max_examples=25, **SETTINGS)
@given(data=st.data())
def test_planted_violation_is_caught(name, mutate, words, data):
    plan = data.draw(plans(min_workers=2, faulty=True))
    events, context = planted(plan, mutate)
    assert words in failing(name, events, context).explanation


@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_late_step_during_teardown_is_a_finding_not_a_violation(data):
    plan = data.draw(plans(min_workers=2, faulty=True))
    events, context = planted(plan, zombie_step)
    result = CHECKS["no_zombie_writes"](events, context)
    assert result.passed and any("after the attempt ended" in f for f in result.findings)


@pytest.mark.parametrize("mutate", [overlap_rows, duplicate_step], ids=lambda m: m.__name__)
@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_ray_data_overlap_within_an_attempt_fails(mutate, data):
    plan = data.draw(plans(data="ray_data", min_workers=2, faulty=True))
    events, context = planted(plan, mutate)
    assert "consumed twice" in failing("shard_reassignment", events, context).explanation


def test_preemption_error_charged_to_worker_group_fails_without_hints():
    plan = Plan(WorkloadConfig(steps=6, batch_size=4), faults=[Fault("preemption", after_steps=2)])
    syn = generate(plan)
    of(syn.events, "failure")[0]["budget"] = "worker_group"
    result = failing("budget_accounting", syn.events, dict(syn.context, injected=None))
    assert "Ray charges it to preemption" in result.explanation


def test_run_checks_selects_and_survives_malformed_histories():
    events = [{"seq": 1, "kind": "step", "source": "worker", "attempt": 1, "rank": 0, "step": 1, "rows": 5}]
    results = run_checks(events, {}, ["shard_reassignment", "recovers"])
    assert set(results) == {"shard_reassignment", "recovers"}
    assert not results["shard_reassignment"].passed
    assert "crashed" in results["shard_reassignment"].explanation


def test_every_property_module_is_registered_in_order():
    """A property is one module of scenarios/properties and one line of its registry."""
    import ftharness.scenarios.properties as props

    folder = os.path.dirname(props.__file__)
    modules = {f[:-3] for f in os.listdir(folder) if f.endswith(".py") and f not in ("__init__.py", "base.py")}
    assert set(props.REGISTRY) == modules
    assert props.PROPERTIES == tuple(CHECKS) == ("exactly_once_restore", "budget_accounting", "shard_reassignment",
                                                 "no_zombie_writes", "recovers", "bounded_lost_work",
                                                 "monotonic_counters", "no_leftovers")
    for name, module in props.REGISTRY.items():
        assert module.__name__ == f"ftharness.scenarios.properties.{name}" and CHECKS[name] is module.check
        assert callable(module.applies)


def test_checks_never_import_ray():
    code = "import sys, ftharness.scenarios.properties, ftharness.scenarios.synthetic, ftharness.history.model; assert 'ray' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_controller_death_is_a_finding_only_when_a_controller_kill_explains_it():
    plan = Plan(WorkloadConfig(steps=6, batch_size=4), faults=[Fault("controller_kill", after_steps=2)])
    syn = generate(plan)
    first_fit = [e for e in syn.events if e["seq"] <= of(syn.events, "run_end")[0]["seq"]]
    context = dict(syn.context, outcome=None, final=None)
    assert CHECKS["budget_accounting"](first_fit, context).passed
    unexplained = [e for e in first_fit if e["kind"] != "fault_injected"]
    assert "without a RAISE" in failing("budget_accounting", unexplained, dict(context, injected=[])).explanation
    assert not CHECKS["recovers"](first_fit, context).passed


def _journaled(events, e):
    """`e` as the runner merges a node's journal: at the end, marked spooled, own clock kept."""
    events.append(dict(e, seq=max(x["seq"] for x in events) + 1, spooled=True))


@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_journaled_late_step_of_a_cut_off_worker_is_a_finding(data):
    plan = data.draw(plans(min_workers=2, faulty=True))
    events, context = planted(plan, lambda ev, ctx: True)
    shutdown = of(events, "worker_group_shutdown")
    steps = of(events, "step", attempt_id=shutdown[0]["attempt_id"]) if shutdown else []
    assume(steps)
    _journaled(events, dict(steps[-1], step=steps[-1]["step"] + 1, t=shutdown[0]["t"] + 8.0))
    result = CHECKS["no_zombie_writes"](events, context)
    assert result.passed and any("journaled on its node" in f for f in result.findings), result


@settings(max_examples=15, **SETTINGS)
@given(data=st.data())
def test_journaled_checkpoint_of_a_cut_off_worker_that_was_restored_fails(data):
    plan = data.draw(plans(min_workers=2, faulty=True))
    events, context = planted(plan, lambda ev, ctx: True)
    for shutdown in of(events, "worker_group_shutdown"):
        later = [e for e in of(events, "worker_start") if e["seq"] > shutdown["seq"]
                 and e["attempt_id"] != shutdown["attempt_id"]]
        starts = of(events, "worker_start", attempt_id=shutdown["attempt_id"], rank=0)
        if later and starts:
            break
    else:
        assume(False)
    for ws in of(events, "worker_start", attempt_id=later[0]["attempt_id"]):
        ws["restored_checkpoint"] = "checkpoint_cut_off"
    _journaled(events, dict(starts[0], kind="report", step=99, checkpoint="checkpoint_cut_off", metrics={},
                            t=shutdown["t"] + 8.0))
    assert "persisted by a zombie" in failing("no_zombie_writes", events, context).explanation


# ------------------------------------------ missing evidence is never a pass (issue 22)
def killed_once():
    plan = Plan(WorkloadConfig(steps=8, batch_size=4, checkpoint_every=2), num_workers=2,
                failure_config={"max_failures": 1}, faults=[Fault("worker_group", after_steps=3)])
    return generate(plan)


@pytest.mark.parametrize("name,mutate,words", [
    ("exactly_once_restore", lambda evs: [e.update(restored_intact=None) for e in evs
                                          if e["kind"] == "worker_start" and e.get("restored_checkpoint")],
     "restored_intact None"),
    ("budget_accounting", lambda evs: [e.pop("count") for e in evs if e["kind"] == "failure"], "records no count"),
    ("budget_accounting", lambda evs: [e.pop("counts") for e in evs if e["kind"] == "failure"], "records no counts"),
], ids=["restored-intact", "count", "counts"])
def test_missing_evidence_is_not_judged(name, mutate, words):
    syn = killed_once()
    events = copy.deepcopy(syn.events)
    assert CHECKS[name](events, syn.context).passed
    mutate(events)
    r = CHECKS[name](events, syn.context)
    assert r.passed is None and words in r.explanation, r.explanation


def test_a_failure_decided_with_another_limit_fails():
    syn = killed_once()
    events = copy.deepcopy(syn.events)
    for e in events:
        if e["kind"] == "failure":
            e["limit"] = 4
    r = failing("budget_accounting", events, syn.context)
    assert "decided with worker_group limit 4, the run's failure_config sets 1" in r.explanation


def test_the_recorded_failure_config_decides_and_a_different_scenario_is_not_judged():
    syn = killed_once()
    events = copy.deepcopy(syn.events)
    start = next(e for e in events if e["kind"] == "run_start")
    start["failure_config"] = {"max_failures": 1, "max_preemption_failures": 0, "controller_failure_limit": 0}
    ctx = dict(syn.context, failure_config={"max_failures": 2})
    r = CHECKS["budget_accounting"](events, ctx)
    assert r.passed is None and "recorded failure_config.max_failures 1, the scenario says 2" in r.explanation
    start["failure_config"]["max_failures"] = 0   # the run had no retry to give, yet it retried
    assert CHECKS["budget_accounting"](events, ctx).passed is False


def test_recovers_without_a_measured_recovery_is_not_a_pass():
    syn = killed_once()
    events = [e for e in syn.events if not (e["kind"] == "controller_state" and e.get("cur") == "RESTARTING")]
    r = CHECKS["recovers"](events, syn.context)
    assert r.passed is None, r.explanation
    # with the fault's landing in hand, a run that succeeded yet never recovered fails
    seq = next(e["seq"] for e in events if e["kind"] == "failure")
    r = CHECKS["recovers"](events, dict(syn.context, landed=[{"index": 0, "kind": "kill_worker",
                                                               "failure_seq": seq}]))
    assert r.passed is False and "but no recovery was recorded" in r.explanation


def test_recovers_default_bound_is_not_the_runs_own():
    from ftharness.scenarios.properties.recovers import DEFAULT_RECOVERY_BOUND_S

    syn = killed_once()
    r = CHECKS["recovers"](syn.events, dict(syn.context, recovery_bound_s=None))
    assert r.passed and f"within the {DEFAULT_RECOVERY_BOUND_S:g} s bound (default" in r.explanation


def test_a_registered_checkpoint_nobody_reported_fails():
    syn = killed_once()
    events = copy.deepcopy(syn.events)
    [e for e in events if e["kind"] == "checkpoint_registered"][-1]["checkpoint"] = "checkpoint_ghost"
    r = failing("no_zombie_writes", events, syn.context)
    assert "checkpoint_ghost registered at seq" in r.explanation and "reported by no attempt" in r.explanation
    assert r.standing == []   # a lost report could explain it: with a gap, INCONCLUSIVE


def test_standing_violations_are_marked():
    syn = killed_once()
    events = copy.deepcopy(syn.events)
    for e in events:
        if e["kind"] == "failure":
            e["budget"] = "preemption"
    r = CHECKS["budget_accounting"](events, syn.context)
    assert r.passed is False and r.standing and all(v in r.violations for v in r.standing)


def test_a_killed_controller_owes_no_recovery_but_an_unexplained_death_does():
    """A real explore example (tests/data/kill-controller-unresumed): the controller killed while a
    checkpoint was written, no second fit(). Ray's budgets retry no controller death, so
    `recovers` owes nothing (it said "although the budgets allowed a retry": a false FAIL). The
    same death with no kill_controller injected stays a violation, of both checks."""
    from ftharness.history.records import read_events
    from ftharness.reports.judgement import rejudge

    folder = os.path.join(os.path.dirname(__file__), "data", "kill-controller-unresumed")
    judged = rejudge(folder)["properties"]
    assert judged["recovers"]["status"] == "not_judged", judged["recovers"]
    assert "retry no controller death" in judged["recovers"]["explanation"]
    assert judged["budget_accounting"]["status"] == "passed"
    events = read_events(folder)
    unprompted = [dict(e, fault_kind="kill_worker") if e["kind"] == "fault_injected" else e for e in events]
    ctx = {"injected": [{"kind": "kill_worker"}], "failure_config": {"max_failures": 1}, "expect_outcome": "succeeded"}
    r = CHECKS["recovers"](unprompted, ctx)
    assert r.passed is False and "although the budgets allowed a retry" in r.explanation, r.explanation
    assert CHECKS["budget_accounting"](unprompted, ctx).passed is False
