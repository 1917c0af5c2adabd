"""The pytest plugin fits pytest: fixtures and markers under ftharness's own
names (the old ones deprecated aliases), overrides honoured, results kept with
--ftharness-results, and no other project's tests reordered. No Ray cluster:
the plugin is exercised with pytester on tests that start none."""

import os

import pytest

from ftharness.harness.frontends import pytest_plugin
from ftharness.harness.frontends.pytest_plugin import merge, results_dir, with_overrides
from conftest import REPO

pytest_plugins = ["pytester"]
KILL = os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml")


# ---------------------------------------------------------- what was seen (8)
def test_overrides_are_honoured_for_a_path_a_scenario_and_a_dict(tmp_path):
    """Seen: run_scenario(path, **overrides) silently dropped the overrides."""
    from ftharness.scenarios.schema import load_scenario

    sc = with_overrides(KILL, {"workload": {"steps": 9}, "failure_config": {"max_failures": 3}}, str(tmp_path))
    base = load_scenario(KILL)
    assert sc.workload.steps == 9 and sc.failure_config.max_failures == 3
    assert sc.workload.checkpoint_every == base.workload.checkpoint_every      # the rest of workload kept
    assert with_overrides(base, {"timeout_s": 42.0}, str(tmp_path)).timeout_s == 42.0
    assert with_overrides({"name": "x"}, {"workload": {"steps": 3}}, str(tmp_path)).workload.steps == 3
    from ftharness.errors import ScenarioError
    with pytest.raises(ScenarioError):                                          # validated again
        with_overrides(KILL, {"workload": {"steps": 2}}, str(tmp_path))          # its fault aims at step 5


def test_merge_is_key_by_key():
    assert merge({"a": {"b": 1, "c": 2}, "d": 1}, {"a": {"b": 5}, "d": {"x": 1}}) == {"a": {"b": 5, "c": 2},
                                                                                 "d": {"x": 1}}


def test_fixtures_and_markers_have_ftharness_names_and_old_names_are_deprecated(pytester):
    """Seen: generic names (run_scenario, exclusive_ray)."""
    pytester.makepyfile(test_names="""
        import pytest

        @pytest.mark.ftharness_exclusive
        def test_new(ftharness_exclusive, ftharness_results):
            assert ftharness_results

        def test_old(exclusive_ray):
            pass
    """)
    result = pytester.runpytest_subprocess("--strict-markers",
                                           "-W", "default::DeprecationWarning")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*'exclusive_ray' is deprecated; use 'ftharness_exclusive'*"])
    fixtures = pytester.runpytest_subprocess("--fixtures")
    text = fixtures.stdout.str()
    for name in ("ftharness_run", "ftharness_cluster", "ftharness_exclusive", "ftharness_results"):
        assert name in text


def test_another_projects_tests_are_not_reordered(pytester):
    """Seen: the plugin reordered every collected test of any project that has it installed."""
    pytester.makepyfile(test_order="""
        import pytest

        @pytest.mark.exclusive_ray
        def test_a(): pass

        def test_b(): pass

        @pytest.mark.ftharness_exclusive
        def test_c(): pass

        def test_d(): pass
    """)
    result = pytester.runpytest_subprocess("-v")
    lines = [ln for ln in result.stdout.lines if "::test_" in ln and "PASSED" in ln]
    assert [ln.split("::")[1].split()[0] for ln in lines] == ["test_a", "test_b", "test_c", "test_d"]


def test_ftharness_own_exclusive_tests_still_run_last():
    class Item:
        def __init__(self, name, marked, own=True):
            self.name, self.marked = name, marked
            self.path = os.path.join(pytest_plugin.OWN_TESTS if own else "/elsewhere", "test_x.py")

        def get_closest_marker(self, name):
            return self.marked if name == "ftharness_exclusive" else None

    items = [Item("mine-excl", True), Item("theirs", False, own=False), Item("mine", False)]
    pytest_plugin.pytest_collection_modifyitems(None, items)
    assert [i.name for i in items] == ["mine", "theirs", "mine-excl"]      # their slot untouched


def test_ftharness_results_keeps_runs_in_the_given_folder(pytester, tmp_path):
    """Seen: results left only in pytest's pruned temp folders."""
    keep = tmp_path / "kept"
    pytester.makepyfile(test_results=f"""
        def test_where(ftharness_results):
            assert ftharness_results.startswith({str(keep)!r})
            open(ftharness_results + "/marker", "w").write("x")
    """)
    result = pytester.runpytest_subprocess("--ftharness-results", str(keep))
    result.assert_outcomes(passed=1)
    (folder,) = keep.iterdir()
    assert "test_where" in folder.name and (folder / "marker").is_file()
    assert results_dir(None, "a::b", tmp_path) == str(tmp_path)
