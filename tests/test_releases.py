"""Every supported Ray release's rules: the release table, the policy model per release,
budget_accounting on a history of each release, and scenarios refused for a field a release
lacks (pure: no Ray)."""

import os

import pytest

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.scenarios import policy_model
from ftharness.scenarios.properties import budget_accounting
from ftharness.scenarios.schema import adapt_to_release, parse_scenario, release_problem, require_release

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

OLD = [v for v in releases.SUPPORTED if releases.parse(v) < (2, 58, 0)]
NEW = [v for v in releases.SUPPORTED if releases.parse(v) >= (2, 58, 0)]


def test_every_supported_release_has_rules_and_the_range_is_the_v2_era():
    assert releases.SUPPORTED[0].startswith("2.51.") and releases.SUPPORTED[-1].startswith("2.60.")
    assert [releases.release(v).minor for v in releases.SUPPORTED] == [(2, m) for m in range(51, 61)]
    assert releases.release("2.50.1") is None and releases.release("3.0.0") is None
    assert releases.release("garbage") is None
    assert releases.release("2.57.0").name == "2.57"          # any patch of a minor


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_failure_config_defaults_per_release(version):
    rel = releases.release(version)
    assert rel.failure_config["max_failures"] == 0 and rel.failure_config["controller_failure_limit"] == -1
    assert ("max_preemption_failures" in rel.failure_config) == (version in NEW)
    assert ("preemption_grace_s" in rel.failure_config) == version.startswith("2.60")
    assert rel.start_timeout_s == (30.0 if releases.parse(version) < (2, 54, 0) else 60.0)


def test_the_first_release_of_each_field():
    assert releases.field_needs("max_preemption_failures").name == "2.58"
    assert releases.field_needs("preemption_grace_s").name == "2.60"
    assert releases.field_needs("max_failures").name == "2.51"
    assert releases.field_needs("no_such") is None
    assert releases.field_release("elastic") == "2.55"


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_a_preemption_is_charged_where_each_release_charges_it(version):
    fc = {"max_failures": 0, "max_preemption_failures": 1}
    model = policy_model.expected_outcome(fc, ["preemption"], version)
    d = model.decisions[0]
    if version in NEW:
        assert (d.budget, d.decision, model.outcome) == ("preemption", "RETRY", "succeeded")
    else:   # no preemption budget: max_failures 0 raises at once
        assert (d.budget, d.decision, model.outcome, model.error_type) == ("worker_group", "RAISE", "failed",
                                                                           "WorkerGroupError")


@pytest.mark.parametrize("version", releases.SUPPORTED)
def test_limits_hold_only_the_budgets_a_release_has(version):
    lim = policy_model.limits({"max_failures": 2}, version)
    assert lim["worker_group"] == 2 and lim["controller"] == -1
    assert ("preemption" in lim) == (version in NEW)
    assert policy_model.charged("preemption", version) == ("preemption" if version in NEW else "worker_group")
    assert policy_model.charged("controller", version) == "controller"


def test_without_a_version_the_newest_rules_judge():
    assert policy_model.rules(None) is releases.newest()
    assert policy_model.expected_outcome({"max_preemption_failures": 1}, ["preemption"]).outcome == "succeeded"


def _history(version, budget, decision="RETRY", outcome="succeeded"):
    """One fit of two attempts whose failure is charged to `budget` on Ray `version`."""
    ev = [{"seq": 1, "t": 1.0, "kind": "run_start", "source": "harness", "fit_index": 1, "ray_version": version},
          {"seq": 2, "t": 2.0, "kind": "attempt_start", "source": "controller", "attempt_id": "a1"},
          {"seq": 3, "t": 3.0, "kind": "failure", "source": "controller", "attempt_id": "a1", "budget": budget,
           "decision": decision, "error_type": "WorkerGroupError", "count": 1,
           "counts": {"worker_group": int(budget == "worker_group"), "preemption": int(budget == "preemption"),
                      "controller": 0}},
          {"seq": 4, "t": 4.0, "kind": "attempt_start", "source": "controller", "attempt_id": "a2"},
          {"seq": 5, "t": 5.0, "kind": "run_end", "source": "harness", "fit_index": 1, "outcome": outcome,
           "error_type": None}]
    ctx = {"ray_version": version, "failure_config": {"max_failures": 1, "max_preemption_failures": 1},
           "outcome": outcome, "error_type": None, "expected_budgets": {3: ("preemption", "preempt_node")}}
    return ev, ctx


@pytest.mark.parametrize("version", OLD)
def test_budget_accounting_fails_a_preemption_budget_on_a_release_without_one(version):
    ev, ctx = _history(version, "preemption")
    r = budget_accounting.check(ev, ctx)
    assert r.status == "failed", r.explanation
    assert any(f"Ray {releases.release(version).name} has no preemption budget" in v for v in r.violations)


@pytest.mark.parametrize("version", OLD)
def test_budget_accounting_passes_a_preemption_charged_to_max_failures_before_2_58(version):
    ev, ctx = _history(version, "worker_group")
    r = budget_accounting.check(ev, ctx)
    assert r.status == "passed", r.explanation


@pytest.mark.parametrize("version", NEW)
def test_budget_accounting_fails_a_preemption_charged_to_max_failures_from_2_58(version):
    ev, ctx = _history(version, "worker_group")
    r = budget_accounting.check(ev, ctx)
    assert r.status == "failed", r.explanation


PREEMPT = {"name": "p", "failure_config": {"max_failures": 0, "max_preemption_failures": 1},
           "faults": [{"kind": "preempt_node", "target": {"rank": 1}, "at": {"step": 3}, "notice_s": 3}]}


@pytest.mark.parametrize("version", OLD)
def test_a_field_the_release_lacks_is_refused_naming_field_and_release(version):
    sc = parse_scenario(PREEMPT)
    problem = release_problem(sc, version)
    assert problem.startswith(f"failure_config.max_preemption_failures: Ray {version} has no such setting")
    assert "2.58" in problem and len(problem) < 300
    with pytest.raises(ScenarioError):
        require_release(sc, version)


@pytest.mark.parametrize("version", NEW)
def test_the_same_scenario_runs_where_the_field_exists(version):
    assert release_problem(parse_scenario(PREEMPT), version) is None


def test_defaults_not_written_are_never_refused():
    sc = parse_scenario({"name": "k", "failure_config": {"max_failures": 1}})
    assert all(release_problem(sc, v) is None for v in releases.SUPPORTED)


def test_elastic_and_jit_checkpoint_need_their_releases():
    el = parse_scenario({"name": "e", "cluster": {"nodes": 3}, "workload": {"num_workers": [1, 2]}})
    assert "num_workers" in release_problem(el, "2.54.1") and release_problem(el, "2.55.1") is None
    jit = parse_scenario({"name": "j", "workload": {"jit_checkpoint": True}})
    assert "jit_checkpoint" in release_problem(jit, "2.56.1") and release_problem(jit, "2.57.1") is None


def test_an_unsupported_release_is_one_line_and_torchrun_needs_no_ray():
    sc = parse_scenario({"name": "k"})
    assert "not supported" in release_problem(sc, "2.50.0")
    tr = parse_scenario({"name": "t", "cluster": {"nodes": 2}, "workload": {"runtime": "torchrun", "num_workers": 2}})
    assert release_problem(tr, "2.50.0") is None


def test_adapt_to_release_leaves_out_what_the_release_lacks_and_says_so():
    data, notes = adapt_to_release(PREEMPT, "2.57.1")
    assert data["failure_config"] == {"max_failures": 0}
    assert notes == ["failure_config.max_preemption_failures left out: Ray 2.57.1 has no such setting"]
    same, none = adapt_to_release(PREEMPT, "2.60.0")
    assert same == PREEMPT and none == []


def test_pyproject_admits_every_supported_release():
    """`pip install ftharness` into an environment with any supported release keeps it."""
    import os
    import tomllib

    from packaging.requirements import Requirement

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    deps = tomllib.load(open(os.path.join(root, "pyproject.toml"), "rb"))["project"]["dependencies"]
    ray = next(Requirement(d) for d in deps if d.startswith("ray"))
    assert {"default", "train"} <= ray.extras
    assert all(ray.specifier.contains(v) for v in releases.SUPPORTED)
    assert not ray.specifier.contains("2.50.0") and not ray.specifier.contains("2.61.0")


def test_a_scenario_edited_and_parsed_again_keeps_what_it_left_to_ray():
    """`run --steps/--scenario-dir` (every matrix cell and bisect probe), the pytest plugin's
    overrides, soak, explore and --submit parse a scenario again after editing it. A full dump
    marked every default as set, and a probe of dead-controller-pg on Ray 2.51.0 was refused
    (max_preemption_failures, which it never set)."""
    from ftharness.scenarios.schema import load_scenario, parse_scenario, release_problem, scenario_data

    sc = load_scenario(os.path.join(REPO, "scenarios", "known", "dead-controller-pg.yaml"))
    data = scenario_data(sc)
    data.setdefault("workload", {})["steps"] = 12
    again = parse_scenario(data, source="--steps")
    assert again.failure_config.model_fields_set == {"max_failures", "controller_failure_limit"}
    assert again.failure_config.given() == sc.failure_config.given()
    assert release_problem(again, "2.51.0") is None and again.workload.steps == 12
    full = parse_scenario(sc.model_dump(mode="json", exclude_none=True, exclude={"base_dir"}))
    assert release_problem(full, "2.51.0") is not None   # what the full dump did
