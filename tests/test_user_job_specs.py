"""Users' jobs as scenario input (pure): trainer and datasets fields, the example
scenarios, the doctor probe's scenario, and refusals before a cluster starts."""

import glob
import os

import pytest

from harness.errors import ScenarioError
from harness.frontends.cli import main
from harness.run.probe import KILL_AFTER, probe_scenario
from scenarios.schema import load_scenario, parse_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))))
def test_example_scenarios_are_valid_user_jobs(path):
    sc = load_scenario(path)
    assert sc.workload.kind == "entrypoint" and sc.faults
    module = sc.workload.entrypoint.split(":")[0]
    assert os.path.exists(os.path.join(ROOT, "examples", module + ".py"))


def test_trainer_and_datasets_belong_to_entrypoint_jobs():
    sc = parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "trainer": "xgboost", "datasets": "m:d"}},
                        source="t")
    assert (sc.workload.trainer, sc.workload.datasets) == ("xgboost", "m:d")
    with pytest.raises(ScenarioError, match="trainer"):
        parse_scenario({"name": "x", "workload": {"trainer": "xgboost"}}, source="t")
    with pytest.raises(ScenarioError, match="datasets"):
        parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "datasets": "nocolon"}}, source="t")
    with pytest.raises(ScenarioError, match="trainer"):
        parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "trainer": "tensorflow"}}, source="t")


def test_probe_scenario_kills_rank_1_after_a_few_reports_with_one_retry():
    sc = probe_scenario("examples.xgboost_job:train_func", "xgboost", "examples.xgboost_job:datasets", {"rounds": 5})
    assert sc.failure_config.max_failures == 1
    assert [(f.kind, f.target.rank, f.at.step) for f in sc.faults] == [("kill_worker", 1, KILL_AFTER)]
    assert sc.workload.train_loop_config == {"rounds": 5}
    with pytest.raises(ScenarioError, match="entrypoint"):
        probe_scenario("no_colon")


def test_doctor_run_refuses_an_entrypoint_that_does_not_import_before_any_cluster(tmp_path, capsys):
    out = tmp_path / "probe"
    assert main(["doctor", "--run", "no_such_module_xyz:f", "--out", str(out)]) == 2
    assert "cannot import 'no_such_module_xyz'" in capsys.readouterr().err
    assert not out.exists()
    assert main(["doctor", "--run", "m:f", "--config", "[1]"]) == 2
    assert main(["doctor", "--run", "m:f", "--config", "{bad"]) == 2
