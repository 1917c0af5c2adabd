"""The failure simulator (scenarios/simulator) and `ftharness plan` (pure, no Ray)."""

import dataclasses
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from ftharness.harness.frontends.cli import main
from ftharness.scenarios.policy_model import CLASSES, decide, expected_outcome
from ftharness.scenarios.simulator import DEFAULTS, Calibration, Job, simulate, simulate_schedule
from ftharness.scenarios.simulator.engine import CLASS_NAMES, CODE, Events, play, raise_count
from ftharness.scenarios.simulator.rates import LLAMA3_TABLE5, make_rates

CAL = dataclasses.replace(DEFAULTS, step_s=1.0, checkpoint_s=10.0, registration_lag_s=5.0,
                          recoveries={"kill_worker": (60.0,)}, parts={})
NO_FAILURES = {name: 0.0 for name in make_rates()}
CONFIGS = st.fixed_dictionaries({k: st.one_of(st.none(), st.integers(-1, 4)) for k in
                                 ("max_failures", "max_preemption_failures", "controller_failure_limit")})


def events(rows):
    """Events of one run per row: [(t, class), ...], resuming 1 s after each failure."""
    k = max((len(r) for r in rows), default=0)
    t = np.full((len(rows), k), np.inf)
    code = np.zeros((len(rows), k), int)
    for i, row in enumerate(rows):
        for j, (when, cls) in enumerate(row):
            t[i, j], code[i, j] = when, CODE[cls]
    return Events(t, code, t + 1.0, np.full(t.shape, -np.inf), np.ones(t.shape, bool))


def test_table5_counts_sum_to_the_published_419():
    assert sum(n for _, _, n in LLAMA3_TABLE5) == 419
    rates = make_rates()
    assert math.isclose(sum(v for k, v in rates.items() if k not in ("spot", "controller", "fatal"))
                        * 16_384 * 54 * 24, 419)


def test_raise_count_is_where_policy_model_decides_raise():
    for limit in (-1, 0, 1, 2, 7):
        at = raise_count(limit)
        assert all(decide(c, limit) == "RETRY" for c in range(1, min(int(at) if at != math.inf else 50, 50)))
        if at != math.inf:
            assert decide(int(at), limit) == "RAISE"


@settings(max_examples=200, deadline=None)
@given(CONFIGS, st.lists(st.sampled_from(list(CLASSES)), max_size=12))
def test_engine_agrees_with_policy_model_on_every_sequence(config, classes):
    out = play(events([[(10.0 * (i + 1), c) for i, c in enumerate(classes)]]), 1e6, 100.0, CAL, config)
    exp = expected_outcome(config, classes)
    assert bool(out["failed"][0]) == (exp.outcome == "failed")
    code = int(out["error_code"][0])
    assert (None if code < 0 else CLASSES[CLASS_NAMES[code]][1]) == exp.error_type
    assert {b: int(out[f"count_{b}"][0]) for b in exp.counts} == exp.counts
    assert int(out["decisions"][0]) == len(exp.decisions)


@settings(max_examples=60, deadline=None)
@given(CONFIGS, st.lists(st.sampled_from(["worker_group", "preemption"]), max_size=6))
def test_schedule_agrees_with_policy_model(config, classes):
    faults = [{"kind": "kill_worker", "at": {"step": 3 * i + 2}} if c == "worker_group" else
              {"kind": "preempt_node", "at": {"step": 3 * i + 2}, "notice_s": 1.0} for i, c in enumerate(classes)]
    got = simulate_schedule(config, faults, CAL, steps=3 * len(classes) + 5, checkpoint_every=2)
    exp = expected_outcome(config, classes)
    assert (got.outcome, got.error_type, got.counts) == (exp.outcome, exp.error_type, exp.counts)
    assert got.decisions == [d.decision for d in exp.decisions]
    assert got.last_step == (3 * len(classes) + 5 if exp.outcome == "succeeded" else got.last_step)


def test_schedule_times_restore_and_registration_lag():
    # a kill right after the step-4 checkpoint, before it is registered, restores step 2
    cal = dataclasses.replace(CAL, checkpoint_s=0.0, registration_lag_s=1.5)
    got = simulate_schedule({"max_failures": 1}, [{"kind": "kill_worker", "at": {"step": 4}}], cal,
                            steps=10, checkpoint_every=2)
    assert got.restored_steps == [2] and got.lost_steps == [2] and got.recovery_s == [60.0]
    assert got.wall_s == pytest.approx(4 + 60 + 8)
    with pytest.raises(ValueError, match="kill_controller"):
        simulate_schedule({}, [{"kind": "kill_controller", "at": {"step": 1}}], cal)


def test_no_failures_goodput_is_one_less_checkpoint_overhead():
    job = Job(1024, 10, 600.0)
    r = simulate(job, CAL, NO_FAILURES, runs=5, seed=1)
    assert r.goodput() == pytest.approx(600 / 610, rel=1e-3)
    assert not r.values["failed"].any() and (r.values["interruptions"] == 0).all()


def test_lost_work_is_at_most_interval_plus_lag():
    rng = np.random.default_rng(3)
    rows = [[(float(t), "worker_group")] for t in rng.uniform(0, 5000, 500)]
    out = play(events(rows), 1e5, 100.0, CAL, {"max_failures": -1})
    assert (out["lost_s"] <= 100.0 + CAL.registration_lag_s + 1e-9).all()
    assert out["lost_s"].max() > 90   # and it does reach the interval


def test_raise_stops_the_run():
    out = play(events([[(100.0, "worker_group"), (200.0, "worker_group"), (300.0, "preemption")]]),
               1e4, 50.0, CAL, {"max_failures": 1})
    assert out["failed"][0] and out["wall_s"][0] == 200.0 and out["decisions"][0] == 2
    assert out["count_preemption"][0] == 0 and out["interruptions"][0] == 2


def test_llama3_scenario_reproduces_419_interruptions():
    job = Job(16_384, 54, 1800.0, {"max_failures": -1})
    r = simulate(job, DEFAULTS, make_rates(), runs=400, seed=0)
    mean, lo, hi = r.mean_interval("interruptions")
    assert abs(mean - 419) / 419 < 0.1 and lo < 419 < hi


def test_reproducible_with_a_seed():
    job = Job(4096, 30, 900.0, {"max_failures": 50}, spot_fraction=0.5)
    a, b, c = (simulate(job, DEFAULTS, make_rates(), runs=50, seed=s) for s in (7, 7, 8))
    assert all(np.array_equal(a.values[k], b.values[k]) for k in a.values)
    assert not np.array_equal(a.values["productive_s"], c.values["productive_s"])


def test_spot_notice_checkpoint_and_node_replacement():
    spot_only = {**NO_FAILURES, "spot": 1e-4}
    cal = dataclasses.replace(CAL, drain_notice_s=120.0)
    on = simulate(Job(1024, 10, 3600.0, spot_fraction=1.0), cal, spot_only, runs=50, seed=2)
    off = simulate(Job(1024, 10, 3600.0, spot_fraction=1.0, checkpoint_on_notice=False), cal, spot_only,
                   runs=50, seed=2)
    per = on.values["interruptions"].sum()
    assert per > 0 and on.values["lost_s"].sum() / per <= 120.0 + 1e-6
    assert off.values["lost_s"].sum() > 5 * on.values["lost_s"].sum()
    assert on.values["count_preemption"].sum() == per
    # a fixed-size job waiting 150 s for a node meets two 60 s startup timeouts per node loss
    waits = dataclasses.replace(CAL, replacement_s=150.0)
    gpu = {**NO_FAILURES, "gpu": 1e-5}
    fixed = simulate(Job(1024, 30, 600.0, {"max_failures": -1}), waits, gpu, runs=20, seed=4)
    assert (fixed.values["count_controller"] == 2 * fixed.values["count_worker_group"]).all()
    elastic = simulate(Job(1024, 30, 600.0, {"max_failures": -1}, elastic=True), waits, gpu, runs=20, seed=4)
    assert elastic.values["count_controller"].sum() == 0
    assert elastic.values["down_s"].mean() < fixed.values["down_s"].mean()


def test_young_daly_optimum_near_the_simulated_one():
    from ftharness.reports.plan import plan

    cal = dataclasses.replace(CAL, checkpoint_s=60.0)
    p = plan(Job(16_384, 30, 600.0, {"max_failures": -1}), cal, make_rates(), runs=300, seed=0)
    assert p["young_s"] / 2 <= p["best_s"] <= p["young_s"] * 2
    best = p["cadence"]["simulated_ettr"].max()
    at_young = p["cadence"].loc[(p["cadence"]["interval_s"] - p["young_s"]).abs().idxmin(), "simulated_ettr"]
    assert best - at_young < 0.005
    assert p["recommended"]["max_failures"] >= 150 and p["recommended_success"] >= 0.97


def test_default_calibration_matches_the_recorded_runs():
    from ftharness.reports.calibrate import from_results

    got = from_results(["tests/data/kill-worker", "tests/data/preempt-node"])
    for name in ("step_s", "checkpoint_s", "registration_lag_s"):
        assert getattr(got, name) == pytest.approx(getattr(DEFAULTS, name), rel=0.01)
    for kind, values in DEFAULTS.recoveries.items():
        assert got.recoveries[kind] == pytest.approx(values, rel=0.01)


def test_calibration_refuses_bad_figures():
    with pytest.raises(ValueError, match="checkpoint_s"):
        Calibration(1.0, -1.0, 0.0, {"kill_worker": (1.0,)})
    assert DEFAULTS.recovery_kind("kill_node") == "kill_worker"


def test_plan_cli_prints_labelled_simulated_figures_beside_419(capsys, tmp_path):
    rc = main(["plan", "--accelerators", "16384", "--days", "54", "--max-failures", "500", "--runs", "200",
               "--out", str(tmp_path / "plan")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "interruptions (simulated): mean 4" in out and "published: 419" in out
    assert "calibration: defaults" in out and "Young" in out and "simulated optimum" in out
    assert "max_failures=" in out and "max_preemption_failures=" in out
    assert (tmp_path / "plan" / "cadence.csv").read_text().count("True") >= 5


@pytest.mark.parametrize("argv, message", [
    (["--rate", "cosmic=1e-6"], "unknown cause 'cosmic'"),
    (["--rate", "gpu=-1"], "gpu=-1.0"),
    (["--rate", "gpu"], "CAUSE=PER_ACCELERATOR_HOUR"),
    (["--spot-fraction", "2"], "--spot-fraction"),
    (["--max-failures", "-3"], "--max-failures"),
    (["no/such/results"], "no/such/results"),
    (["--target", "1.5"], "--target"),
])
def test_plan_cli_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    rc = main(["plan", "--accelerators", "64", "--days", "1", "--runs", "10", *argv])
    err = capsys.readouterr().err
    assert rc == 2 and message in err and err.count("\n") == 1


def test_plan_cli_calibrates_from_results_folders(capsys):
    rc = main(["plan", "tests/data/kill-worker", "--accelerators", "512", "--days", "7", "--runs", "50"])
    out = capsys.readouterr().out
    assert rc == 0 and "calibration: measured: 1 results folder(s) (tests/data/kill-worker)" in out
