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

from scenarios.schema import parse_scenario
from scenarios.strategies import save_failing, scenario_dicts

EXAMPLES = int(os.environ.get("FTHARNESS_EXAMPLES", "3"))
PHASES = [Phase.generate] + ([Phase.shrink] if os.environ.get("FTHARNESS_SHRINK") == "1" else [])
FAILURES = os.environ.get("FTHARNESS_FAILURES", os.path.join("results", "hypothesis-failures"))


@pytest.mark.cluster
@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=PHASES,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(scenario=scenario_dicts())
def test_generated_scenarios_keep_their_properties(run_scenario, scenario):
    parse_scenario(scenario)  # every generated scenario is valid input
    summary = run_scenario(scenario)
    if not summary["matches_expectation"]:
        path = save_failing(scenario, FAILURES)
        pytest.fail(f"{scenario['name']} (saved to {path}): {summary['mismatches']}")


@given(scenario=scenario_dicts(max_faults=3))
@settings(max_examples=200, deadline=None)
def test_generated_scenarios_are_valid(scenario):
    sc = parse_scenario(scenario)
    assert sc.expect.outcome in ("succeeded", "failed")
    steps = [f.at.step for f in sc.faults]
    assert steps == sorted(set(steps)) and all(s < sc.workload.steps for s in steps)
