"""`ftharness explore` on the real shared cluster, with a tiny budget (make test-full): every
example is a real run with its own results folder, judged, counted and reported."""

import json
import os

import pytest


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.cluster
def test_a_tiny_exploration_runs_real_examples(ftharness_explore):
    result = ftharness_explore(None, budget="90s", seed=0, max_faults=2, name="explore-tiny",
                               workload={"steps": 8, "checkpoint_every": 2, "step_delay_s": 0.05})
    searched = [e for e in result["examples"] if e["purpose"] == "search"]
    assert searched, "no example ran within the budget"
    for e in result["examples"]:
        with open(os.path.join(e["folder"], "summary.json")) as f:
            summary = json.load(f)
        assert summary["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE"), summary.get("internal_error")
        assert e["status"] in ("PASS", "FAIL", "INCONCLUSIVE")
    assert sum(result["counts"].values()) == len(searched)
    assert result["exit_code"] == (1 if result["findings"] else 3 if result["counts"]["INCONCLUSIVE"] else 0)
    out = os.path.dirname(os.path.dirname(searched[0]["folder"]))
    assert os.path.isfile(os.path.join(out, "explore.html"))
    assert os.path.isdir(os.path.join(out, ".hypothesis"))
    for g in result["findings"]:
        assert os.path.isfile(g["scenario_file"]) and g["status"] in ("confirmed", "flaky")
