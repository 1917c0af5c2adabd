"""Every default ftharness relies on is the release's own (issue 36, item 4).

A setting a scenario leaves out must be what a plain TorchTrainer script gets on
that release. ftharness/releases.py holds each release's defaults; these tests
read the installed release's real classes and constants and compare (pure: no
cluster). The `full` test does the same in every cached release environment
of the matrix (harness/matrix/envs.py), so 2.51 and 2.57 are checked as well.
"""

import json
import os
import subprocess

import pytest

from ftharness import releases
from ftharness.harness.cluster import ray_private as rp
from ftharness.harness.run.ray_settings import differs, effective_failure_config, settings_used
from ftharness.scenarios.schema import FailureConfigSpec, parse_scenario, torchrun_problem

INSTALLED = releases.installed()
FAST_ENV = {"RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20", "RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": "10"}


def test_releases_py_holds_the_installed_releases_own_defaults():
    ours, theirs = releases.release(INSTALLED).defaults(), rp.release_defaults()
    assert sorted(ours) == sorted(theirs)
    assert {k: v for k, v in ours.items() if theirs[k] != v} == {}


def test_failure_config_spec_defaults_are_the_installed_failure_configs():
    from ray.train import FailureConfig

    plain = FailureConfig()
    spec = FailureConfigSpec()
    for name in rp.failure_config_defaults():
        assert getattr(spec, name) == getattr(plain, name), name
    assert spec.controller_failure_limit == -1 and spec.max_preemption_failures == -1


def test_every_release_defaults_both_limits_to_unlimited():
    for rel in releases.RELEASES.values():
        assert rel.failure_config["controller_failure_limit"] == -1
        assert rel.failure_config.get("max_preemption_failures", -1) == -1
        assert rel.failure_config["max_failures"] == 0


def test_a_field_left_out_is_not_given_to_ray_and_is_recorded_as_the_releases():
    sc = parse_scenario({"name": "spot", "failure_config": {"max_failures": 0}}, source="t")
    assert sc.failure_config.given() == {"max_failures": 0}
    d57, d60 = releases.release("2.57.1").defaults(), releases.release("2.60.0").defaults()
    assert effective_failure_config(sc.failure_config.given(), d57) == {"max_failures": 0,
                                                                         "controller_failure_limit": -1}
    assert effective_failure_config(sc.failure_config.given(), d60) == {
        "max_failures": 0, "controller_failure_limit": -1, "max_preemption_failures": -1,
        "relax_collectives_on_preemption": False, "preemption_grace_s": 0.0}


def test_settings_used_names_each_source_and_the_fast_profiles_differences():
    sc = parse_scenario({"name": "x", "failure_config": {"max_failures": 3}}, source="t")
    rows = {r["setting"]: r for r in settings_used(sc, releases.release("2.60.0").defaults(), FAST_ENV, "fast",
                                                   storage_path="/r", use_gpu=False)}
    assert rows["failure_config.max_failures"]["source"] == "scenario"
    assert rows["failure_config.controller_failure_limit"] == {
        "setting": "failure_config.controller_failure_limit", "value": -1, "ray_default": -1, "source": "ray default"}
    assert rows["env.RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"]["value"] == 10
    assert rows["env.RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"]["source"] == "ray default"
    lines = differs(list(rows.values()))
    assert any(ln.startswith("env.RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S: 20 (profile fast; Ray's default 60.0)")
               for ln in lines)
    assert not any(ln.startswith("failure_config.") for ln in lines)
    plain = settings_used(sc, releases.release("2.60.0").defaults(), {}, "ray_defaults", storage_path="/r")
    assert not any(ln.startswith("env.") for ln in differs(plain))


def test_the_profiles_node_environment_is_a_row_of_its_own_with_rays_default():
    from ftharness.profiles import PROFILES

    sc = parse_scenario({"name": "x"}, source="t")
    node_env = PROFILES["fast"]["node_env"]
    rows = {r["setting"]: r for r in settings_used(sc, releases.release("2.51.0").defaults(), FAST_ENV, "fast",
                                                   storage_path="/r", node_env=node_env)}
    assert rows["env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S"] == {
        "setting": "env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S", "value": 5, "ray_default": 30, "source": "profile fast"}
    assert "env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S: 5 (profile fast; Ray's default 30)" in differs(list(rows.values()))
    # a cluster ftharness did not start gives no node environment: the row is Ray's default
    existing = {r["setting"]: r for r in settings_used(sc, releases.release("2.51.0").defaults(), FAST_ENV, "fast",
                                                       storage_path="/r", node_env={})}
    assert existing["env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S"]["source"] == "ray default"
    assert PROFILES["ray_defaults"]["node_env"] == {}


def test_torchrun_scenarios_are_not_refused_for_ray_budgets_they_leave_out():
    base = {"name": "t", "workload": {"runtime": "torchrun"}}
    assert torchrun_problem(parse_scenario(base, source="t")) is None
    from ftharness.errors import ScenarioError

    with pytest.raises(ScenarioError, match="failure_config.controller_failure_limit: a Ray Train budget"):
        parse_scenario({**base, "failure_config": {"controller_failure_limit": 2}}, source="t")


def test_every_catalog_scenario_validates():
    from ftharness.harness.run.collect import collect_files
    from ftharness.scenarios.schema import load_scenario

    for path in collect_files([]):
        load_scenario(path)


@pytest.mark.full
def test_cached_release_environments_hold_their_releases_defaults():
    """Each release environment the matrix has built (2.51.2, 2.57.1, ...) reads its own
    classes and constants; they must be what releases.py says for that release."""
    from ftharness.harness.matrix.envs import cache_root, code_farm

    root = cache_root() / "envs"
    envs = sorted(p for p in root.glob("ray-*") if (p / ".ftharness-env").is_file()) if root.is_dir() else []
    if not envs:
        pytest.skip("no release environment built (ftharness matrix --ray 2.51.2 builds one)")
    code = ("import json, ray; from ftharness.harness.cluster import ray_private as rp; "
            "print(json.dumps([ray.__version__, rp.release_defaults()]))")
    for env in envs:
        code_farm(env / "shared-code")   # this checkout's code, as the matrix links it on every use
        r = subprocess.run([str(env / "bin" / "python"), "-P", "-c", code], capture_output=True, text=True,
                           timeout=300, cwd=str(env), env={**os.environ, "PYTHONPATH": ""})
        assert r.returncode == 0, r.stderr[-500:]
        version, theirs = json.loads(r.stdout.strip().splitlines()[-1])
        ours = releases.release(version).defaults()
        assert {k: (v, theirs.get(k)) for k, v in ours.items() if theirs.get(k) != v} == {}, version
        assert sorted(ours) == sorted(theirs), version
