"""A short soak on the real shared cluster: the seeded plan's faults are really
injected while training runs to its deadline, every one lands, the run stops
on a step all ranks agree on, and the whole soak is judged."""

import pytest

from ftharness.history.records import read_events
from ftharness.harness.run.runner import RunOptions
from ftharness.harness.run.soak import soak_on
from ftharness.scenarios.schema import default_scenario_path, load_scenario
from ftharness.scenarios.soak import draw_plan, soak_scenario

pytestmark = pytest.mark.cluster


@pytest.mark.full
def test_soak_on_the_embedded_cluster(ftharness_cluster, tmp_path):
    plan = draw_plan(4, 120, 8, {"kill_worker": 1, "preempt_node": 1})
    scenario = soak_scenario(load_scenario(default_scenario_path()), plan)
    s = soak_on(ftharness_cluster, scenario, plan, RunOptions(out_dir=str(tmp_path / "soak"), progress=False))

    soak = s["soak"]
    assert soak["injected"], soak
    assert all(f["landed"] for f in s["faults"]), [(f["kind"], f["status"], f["evidence"]) for f in s["faults"]]
    assert len(s["faults"]) == len(soak["injected"])
    assert soak["not_reached"] == list(range(len(soak["injected"]), len(plan.draws)))
    assert s["verdict"] == "PASS", (s["mismatches"], s["inconclusive"])
    events = read_events(s["results_dir"])
    # training stopped on its deadline, not at the cap, at one step on every rank
    ends = [e for e in events if e["kind"] == "report" and (e.get("metrics") or {}).get("reason") == "deadline"]
    assert s["outcome"] == "succeeded" and s["steps"] < scenario.workload.steps
    assert {e["rank"] for e in ends} == {0, 1} and {e["step"] for e in ends} == {s["steps"]}
    assert sum(r["recoveries"] for r in soak["by_fault_kind"]) >= len(soak["injected"])
    assert {r["fault_kind"] for r in soak["by_fault_kind"]} <= {"kill_worker", "preempt_node", "failure"}
