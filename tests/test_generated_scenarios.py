"""Hypothesis-generated scenarios on the real shared cluster, with the properties
as the test: the outcome must match Ray's failure-policy model and every
property must hold.

CI runs a handful of examples; FTHARNESS_EXAMPLES=N runs more, and
FTHARNESS_SHRINK=1 lets Hypothesis shrink a failure (every shrink step is a real
run). Each failing scenario is saved under FTHARNESS_FAILURES (default
results/hypothesis-failures) as a YAML file that `ftharness run` replays.
"""

import os

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from ftharness.reports.calibrate import from_results
from ftharness.scenarios.schema import parse_scenario
from ftharness.scenarios.simulator.schedule import simulate_schedule
from ftharness.scenarios.strategies import save_failing, scenario_dicts

EXAMPLES = int(os.environ.get("FTHARNESS_EXAMPLES", "3"))
PHASES = [Phase.generate] + ([Phase.shrink] if os.environ.get("FTHARNESS_SHRINK") == "1" else [])
FAILURES = os.environ.get("FTHARNESS_FAILURES", os.path.join("results", "hypothesis-failures"))
DATA = os.path.join(os.path.dirname(__file__), "data")
#: the simulator's stated error on a recovery time, calibrated from the two recorded runs and
#: checked on this machine under load: |measured - simulated| <= RECOVERY_ABS_S + RECOVERY_REL * simulated
RECOVERY_ABS_S, RECOVERY_REL = 15.0, 1.0


def simulated(sc):
    """The simulator's prediction for a scenario, or None for a kind it does not model."""
    cal = from_results([os.path.join(DATA, "kill-worker"), os.path.join(DATA, "preempt-node")])
    try:
        return simulate_schedule(sc.failure_config.model_dump(),
                                 [f.model_dump(mode="json", exclude_none=True) for f in sc.faults], cal,
                                 steps=sc.workload.steps, checkpoint_every=sc.workload.checkpoint_every)
    except ValueError:
        return None


def cross_validate(sc, summary):
    """Real run and simulator: same outcome and budget counts, recoveries within the stated error."""
    sim = simulated(sc)
    if sim is None:
        return
    assert (summary["outcome"], summary["error_type"]) == (sim.outcome, sim.error_type), sim
    assert summary["budgets"] == {b: sim.counts.get(b, 0) for b in summary["budgets"]}, sim
    measured = summary["recovery_times_s"]
    predicted = [r for r in sim.recovery_s if r is not None]
    assert len(measured) == len(predicted), (measured, sim)
    for m, p in zip(measured, predicted):
        assert abs(m - p) <= RECOVERY_ABS_S + RECOVERY_REL * p, (measured, predicted)


@pytest.mark.full
@pytest.mark.cluster
@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenario=scenario_dicts())
def test_generated_scenarios_keep_their_properties(ftharness_run, scenario):
    parse_scenario(scenario)  # every generated scenario is valid input
    summary = ftharness_run(scenario)
    if not summary["matches_expectation"]:
        path = save_failing(scenario, FAILURES)
        pytest.fail(f"{scenario['name']} (saved to {path}): {summary['mismatches']}")
    cross_validate(parse_scenario(scenario), summary)


@pytest.mark.parametrize("name", ["kill-worker", "preempt-node"])
def test_simulator_agrees_with_the_recorded_runs(name):
    import json

    from ftharness.history.records import read_events
    from ftharness.scenarios.schema import load_scenario
    from ftharness.scenarios.verdict import budgets_used, recovery_times

    folder = os.path.join(DATA, name)
    with open(os.path.join(folder, "summary.json")) as f:
        summary = json.load(f)
    events = read_events(os.path.join(folder, "history.jsonl"))
    summary.update(budgets=budgets_used(events), recovery_times_s=recovery_times(events))
    cross_validate(load_scenario(os.path.join(folder, "scenario.yaml")), summary)


@given(scenario=scenario_dicts(max_faults=3))
@settings(max_examples=200, deadline=None)
def test_generated_scenarios_are_valid(scenario):
    sc = parse_scenario(scenario)
    assert sc.expect.outcome in ("succeeded", "failed")
    steps = [f.at.step for f in sc.faults]
    assert steps == sorted(set(steps)) and all(s < sc.workload.steps for s in steps)
