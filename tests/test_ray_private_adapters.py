"""harness/cluster/ray_private.py's per-release adapters, on real Ray exception objects (no cluster).

The installed release's own classification is used where it exists; where an older release lacks
it (no `_is_preemption_failure` before 2.58), the adapter answers as that release's policy does.
The absence is simulated by removing the attribute (pure logic), the rules come from ftharness.releases.
"""

import ray.exceptions
from ray.train.v2.api.exceptions import ControllerError, WorkerGroupError

from ftharness.harness.cluster import ray_private as rp


class _Preempted(ray.exceptions.RayActorError):
    """An actor death Ray Core marked as a preemption (its `preempted` flag)."""

    def __init__(self):
        super().__init__()

    @property
    def preempted(self):
        return True


def _group(error):
    return WorkerGroupError("worker died", {1: error})


def test_the_installed_release_classifies_as_its_own_policy():
    assert rp.classify_failure(ControllerError(RuntimeError("x"))) == "controller"
    assert rp.classify_failure(_group(RuntimeError("user bug"))) == "worker_group"
    expected = "preemption" if rp._is_preemption_failure is not None else "worker_group"
    assert rp.classify_failure(_group(_Preempted())) == expected
    assert rp.preempted_ranks(_group(_Preempted())) == [1]
    assert rp.preempted_ranks(_group(RuntimeError("x"))) == []


def test_without_a_preemption_class_a_preempted_death_is_a_worker_group_failure(monkeypatch):
    monkeypatch.setattr(rp, "_is_preemption_failure", None)     # as on 2.51-2.57
    assert rp.classify_failure(_group(_Preempted())) == "worker_group"
    assert rp.preempted_ranks(_group(_Preempted())) == [1]       # Ray Core still marks the death


def test_failure_config_gets_only_the_fields_the_release_has():
    from ray.train import FailureConfig

    kwargs = rp.failure_config_kwargs({"max_failures": 1, "max_preemption_failures": 2, "no_such": 3})
    assert "no_such" not in kwargs and kwargs["max_failures"] == 1
    FailureConfig(**kwargs)                                       # accepted as is


def test_retryable_controller_errors_come_from_the_release():
    assert rp.retryable_controller_errors() == ("WorkerGroupStartupFailedError", "WorkerGroupStartupTimeoutError")
