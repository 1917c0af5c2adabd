"""The failure-policy model against hand-worked cases and Ray 2.60's own policy."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ftharness.scenarios.policy_model import (CLASSES, DEFAULTS, decide, expected_outcome, failure_class,
                                    limits)

limit_values = st.integers(min_value=-1, max_value=3)
failure_configs = st.fixed_dictionaries({
    "max_failures": limit_values,
    "max_preemption_failures": limit_values,
    "controller_failure_limit": limit_values,
})
failure_lists = st.lists(st.sampled_from(sorted(CLASSES)), max_size=8)


def test_limits_default_like_ray():
    assert limits({}) == {"worker_group": 0, "preemption": -1, "controller": -1}
    assert limits({"max_failures": None, "controller_failure_limit": 2})["controller"] == 2
    assert DEFAULTS["max_failures"] == 0


def test_decide_counts_before_comparing():
    assert decide(1, 1) == "RETRY"
    assert decide(2, 1) == "RAISE"
    assert decide(1, 0) == "RAISE"
    assert decide(10_000, -1) == "RETRY"


def test_no_failures_succeeds():
    out = expected_outcome({}, [])
    assert (out.outcome, out.error_type, out.decisions) == ("succeeded", None, [])


def test_worker_group_budget_allows_limit_retries():
    out = expected_outcome({"max_failures": 2}, ["worker_group"] * 3)
    assert [d.decision for d in out.decisions] == ["RETRY", "RETRY", "RAISE"]
    assert [d.count for d in out.decisions] == [1, 2, 3]
    assert (out.outcome, out.error_type) == ("failed", "WorkerGroupError")


def test_default_config_raises_first_worker_failure_but_retries_preemptions():
    out = expected_outcome({}, ["preemption", "preemption", "controller", "worker_group"])
    assert [d.decision for d in out.decisions] == ["RETRY", "RETRY", "RETRY", "RAISE"]
    assert out.counts == {"worker_group": 1, "preemption": 2, "controller": 1}


def test_budgets_are_independent():
    out = expected_outcome({"max_failures": 1, "max_preemption_failures": 1},
                           ["worker_group", "preemption", "preemption_death"])
    assert [d.budget for d in out.decisions] == ["worker_group", "preemption", "preemption"]
    assert out.decisions[-1].decision == "RAISE"
    assert out.error_type == "WorkerGroupError"  # death-path preemption raises WorkerGroupError


def test_preemption_error_raises_preemption_error():
    out = expected_outcome({"max_preemption_failures": 0}, ["preemption"])
    assert (out.outcome, out.error_type) == ("failed", "PreemptionError")


def test_fatal_controller_error_raises_at_once_without_charging():
    out = expected_outcome({"controller_failure_limit": -1}, ["controller", "controller_fatal", "worker_group"])
    fatal = out.decisions[1]
    assert (fatal.budget, fatal.decision, fatal.count) == ("none", "RAISE", 0)
    assert fatal.counts == {"worker_group": 0, "preemption": 0, "controller": 1}
    assert (out.error_type, out.unreached) == ("ControllerError", ["worker_group"])


def test_unknown_class_is_refused():
    with pytest.raises(ValueError):
        expected_outcome({}, ["gremlins"])


def test_failure_class_inverts_budget_and_error_type():
    for cls, (budget, error_type) in CLASSES.items():
        assert failure_class(budget, error_type) == cls
    assert failure_class("bogus", "WorkerGroupError") is None


@settings(max_examples=200, deadline=None)
@given(failure_configs, failure_lists)
def test_model_invariants(fc, failures):
    out = expected_outcome(fc, failures)
    raises = [d for d in out.decisions if d.decision == "RAISE"]
    assert len(raises) <= 1 and (not raises or out.decisions[-1] is raises[0])
    assert (out.outcome == "failed") == bool(raises)
    assert len(out.decisions) + len(out.unreached) == len(failures)
    for d in out.decisions:
        if d.budget != "none":
            assert d.count == d.counts[d.budget]
            assert (d.decision == "RAISE") == (d.limit != -1 and d.count > d.limit)


# ------------------------------------------------------------ against Ray itself
def _ray_error(cls):
    """A TrainingFailedError Ray's policy classifies as `cls`."""
    from ray.exceptions import RayActorError
    from ray.train.v2._internal.exceptions import WorkerGroupStartupFailedError
    from ray.train.v2.api.exceptions import ControllerError, PreemptionError, WorkerGroupError
    from ray.train.v2.api.preemption import PreemptionInfo

    return {
        "worker_group": lambda: WorkerGroupError("boom", {0: RuntimeError("boom")}),
        "preemption": lambda: PreemptionError(PreemptionInfo(deadline_ms=1, preempted_node_to_ranks={"n": [0]})),
        "preemption_death": lambda: WorkerGroupError(
            "gone", {0: RuntimeError("collective aborted"), 1: RayActorError(preempted=True)}),
        "controller": lambda: ControllerError(WorkerGroupStartupFailedError("no start")),
        "controller_fatal": lambda: ControllerError(RuntimeError("callback raised")),
    }[cls]()


@settings(max_examples=100, deadline=None)
@given(failure_configs, failure_lists)
def test_model_agrees_with_ray_default_failure_policy(fc, failures):
    default = pytest.importorskip("ray.train.v2._internal.execution.failure_handling.default")
    from ray.train.v2.api.config import FailureConfig

    policy = default.DefaultFailurePolicy(FailureConfig(**fc))
    out = expected_outcome(fc, failures)
    got = [policy.make_decision(_ray_error(cls)).value for cls in failures[:len(out.decisions)]]
    assert got == [d.decision for d in out.decisions]
    ray_counts = {"worker_group": policy._worker_group_failures, "preemption": policy._preemption_failures,
                  "controller": policy._controller_failures}
    assert ray_counts == out.counts
