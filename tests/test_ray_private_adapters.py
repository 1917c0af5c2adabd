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


def test_upload_working_dir_takes_the_releases_own_signature(monkeypatch):
    """2.51 and 2.52 have no `include_gitignore` (it arrived in 2.53): shipping a user's job must not
    pass it there (a recorded 2.51.1 run of every user job failed on the keyword)."""
    import ray._private.runtime_env.working_dir as wd

    from ftharness.harness.cluster import ray_private

    seen = {}

    def old(runtime_env, scratch_dir=None, logger=None, upload_fn=None):   # 2.51.1's signature
        seen.update(runtime_env=runtime_env, scratch_dir=scratch_dir)
        return {"working_dir": "gcs://_ray_pkg_x.zip"}

    def new(runtime_env, scratch_dir=None, logger=None, upload_fn=None, include_gitignore=True):
        seen.update(include_gitignore=include_gitignore)
        return {"working_dir": "gcs://_ray_pkg_y.zip"}

    monkeypatch.setattr(wd, "upload_working_dir_if_needed", old)
    assert ray_private.upload_working_dir("/tmp/job", "/tmp/s") == "gcs://_ray_pkg_x.zip"
    assert seen == {"runtime_env": {"working_dir": "/tmp/job"}, "scratch_dir": "/tmp/s"}
    monkeypatch.setattr(wd, "upload_working_dir_if_needed", new)
    assert ray_private.upload_working_dir("/tmp/job", "/tmp/s") == "gcs://_ray_pkg_y.zip"
    assert seen["include_gitignore"] is False
