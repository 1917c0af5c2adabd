"""`cluster.train_env` (issue 47): a scenario's own Ray Train environment variables, refused at
load in one line unless RAY_TRAIN_* with a bounded string or finite number, merged over the
profile's in what the fit task sets, recorded in `ray_settings` with source "scenario", and the
health-check timeout the judge assumes follows it. Pure: no Ray cluster (a real run of it is the
known-bug entry collective-timeout-minus-one, measured by `bisect`)."""

import pytest

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.harness.run.ray_settings import differs, settings_used
from ftharness.profiles import PROFILES
from ftharness.scenarios.schema import parse_scenario
from ftharness.scenarios.verdict import declared

FAST_ENV = PROFILES["fast"]["train_env"]


def scenario(train_env=None, **cluster):
    return parse_scenario({"name": "x", "cluster": {**cluster, **({"train_env": train_env} if train_env else {})}},
                          source="t")


def test_values_reach_the_environment_as_text():
    sc = scenario({"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": -1, "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": 0.5,
                   "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "45"})
    assert sc.cluster.train_env_text() == {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "-1",
                                           "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.5",
                                           "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "45"}
    assert scenario().cluster.train_env == {}


@pytest.mark.parametrize("env, words", [
    ({"PATH": "/bin"}, "cluster.train_env: 'PATH' is not a Ray Train setting"),
    ({"ray_train_x": "1"}, "cluster.train_env: 'ray_train_x' is not a Ray Train setting"),
    ({"RAY_TRAIN_" + "X" * 100: "1"}, "is not a Ray Train setting"),
    ({"RAY_TRAIN_X": True}, "cluster.train_env.RAY_TRAIN_X: 'True' is not allowed"),
    ({"RAY_TRAIN_X": float("nan")}, "cluster.train_env.RAY_TRAIN_X: 'nan' is not allowed"),
    ({"RAY_TRAIN_X": "a\nb"}, "cluster.train_env.RAY_TRAIN_X"),
    ({"RAY_TRAIN_X": "x" * 201}, "cluster.train_env.RAY_TRAIN_X"),
    ({"RAY_TRAIN_X": [1]}, "cluster.train_env.RAY_TRAIN_X"),
    ({f"RAY_TRAIN_X{i}": "1" for i in range(33)}, "cluster.train_env"),
])
def test_bad_entries_are_refused_in_one_line(env, words):
    with pytest.raises(ScenarioError) as e:
        scenario(env)
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_ray_settings_name_the_scenario_as_the_source():
    sc = scenario({"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": -1, "RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": 30,
                   "RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S": 5})
    merged = {**FAST_ENV, **sc.cluster.train_env_text()}   # what the runner hands the fit task
    rows = {r["setting"]: r for r in settings_used(sc, releases.release("2.56.0").defaults(), merged, "fast",
                                                   storage_path="/r", use_gpu=False)}
    assert rows["env.RAY_TRAIN_COLLECTIVE_TIMEOUT_S"] == {
        "setting": "env.RAY_TRAIN_COLLECTIVE_TIMEOUT_S", "value": -1, "ray_default": None, "source": "scenario"}
    assert rows["env.RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"]["source"] == "scenario"
    assert rows["env.RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"]["value"] == 30
    assert rows["env.RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"]["source"] == "profile fast"   # the profile's stays
    # a setting ftharness reads no release default of still gets its row
    assert rows["env.RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S"] == {
        "setting": "env.RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S", "value": 5, "ray_default": None, "source": "scenario"}
    assert not any(ln.startswith("env.RAY_TRAIN_COLLECTIVE") for ln in differs(list(rows.values())))
    plain = {r["setting"]: r for r in settings_used(scenario(), releases.release("2.55.1").defaults(), FAST_ENV,
                                                    "fast", storage_path="/r")}
    assert plain["env.RAY_TRAIN_COLLECTIVE_TIMEOUT_S"]["source"] == "ray default"
    assert "env.RAY_TRAIN_COLLECTIVE_WARN_INTERVAL_S" not in plain


def test_the_fit_task_gets_the_profile_with_the_scenarios_over_it(tmp_path):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner

    class Cluster:
        def train_env(self):
            return dict(FAST_ENV)

    sc = scenario({"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": -1, "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": 45})
    spec = ScenarioRunner(sc, Cluster(), RunOptions(out_dir=str(tmp_path / "out")))._fit_spec(lambda: None, False)
    assert spec["train_env"] == {**FAST_ENV, "RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "-1",
                                 "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "45"}


def test_the_judge_takes_the_scenarios_health_check_timeout():
    assert declared(scenario(), {}).health_check_timeout_s == 10.0            # the fast profile's
    assert declared(scenario({"RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": 30}), {}).health_check_timeout_s == 30.0
