"""doctor --ray: pitfalls that depend on the release (pure: ast only)."""

import os

import pytest

from ftharness.harness.doctor import analyse, release_rules

SPOT = os.path.join(os.path.dirname(__file__), "data", "doctor_releases", "spot_job.py")


def _rules(version):
    release_rules.set_target(version)
    try:
        return {f.rule for f in analyse([SPOT]) if f.rule.startswith("release-")}
    finally:
        release_rules.set_target(None)


@pytest.mark.parametrize("version,expected", [
    ("2.51.2", {"release-missing-setting", "release-elastic", "release-missing-api", "release-collective-timeout"}),
    ("2.54.1", {"release-missing-setting", "release-elastic", "release-missing-api"}),
    ("2.55.1", {"release-missing-setting", "release-missing-api"}),
    ("2.57.1", {"release-missing-setting", "release-missing-api", "release-collective-timeout"}),
    ("2.58.1", {"release-missing-setting", "release-collective-timeout"}),
    ("2.60.0", {"release-collective-timeout"}),
])
def test_each_release_finds_what_it_lacks(version, expected):
    assert _rules(version) == expected


def test_a_sync_shutdown_callback_is_an_error_from_2_55(tmp_path):
    f = tmp_path / "cb.py"
    f.write_text("from ray.train.v2._internal.execution.callback import ControllerCallback\n"
                 "class Mine(ControllerCallback):\n    def before_controller_shutdown(self):\n        pass\n"
                 "class Fine(ControllerCallback):\n    async def before_controller_shutdown(self):\n        pass\n")
    for version, hits in (("2.54.1", 0), ("2.55.1", 1), ("2.60.0", 1)):
        release_rules.set_target(version)
        try:
            found = [x for x in analyse([str(f)]) if x.rule == "release-sync-shutdown-callback"]
        finally:
            release_rules.set_target(None)
        assert len(found) == hits and all(x.severity == "error" and "Mine" in x.message for x in found)
