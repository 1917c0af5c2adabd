"""Issue 49, item 5: every numeric option of `matrix` is checked in the argument layer, and a
`--set` value goes through the scenario's schema before the release's policy model reads it:
`--set failure_config.max_failures=x` was exit 4 (int('x') in the model); now one line naming
the field, exit 2, like `--cell-timeout nan` and `--host-lock /proc/...`. Pure: dry runs only."""

import os

import pytest

from conftest import REPO

from ftharness.harness.frontends.cli import main

KILL = os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml")


@pytest.mark.parametrize("argv, words", [
    (["--set", "failure_config.max_failures=x"], "failure_config.max_failures"),
    (["--set", "failure_config.max_failures=1,x"], "failure_config.max_failures"),
    (["--set", "failure_config.controller_failure_limit=1e400"], "failure_config.controller_failure_limit"),
    (["--set", "workload.checkpoint_every=0"], "workload.checkpoint_every"),
    (["--cell-timeout", "nan"], "--cell-timeout"), (["--cell-timeout", "inf"], "--cell-timeout"),
    (["--cell-timeout", "-1"], "--cell-timeout"), (["--cell-timeout", "1e12"], "--cell-timeout"),
    (["--host-lock", "/proc/self/x"], "--host-lock"), (["--host-lock", "/dev/null"], "--host-lock"),
    (["--repeat", "0"], "--repeat"),
])
def test_a_bad_number_is_one_line_exit_2_before_anything(tmp_path, capsys, argv, words):
    out = tmp_path / "m"
    assert main(["matrix", KILL, *argv, "--dry-run", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "internal error" not in err[0], err
    assert not out.exists()


def test_good_numbers_pass(tmp_path, capsys):
    assert main(["matrix", KILL, "--set", "failure_config.max_failures=0,2", "--cell-timeout", "60",
                 "--host-lock", str(tmp_path / "lock"), "--dry-run", "--out", str(tmp_path / "m")]) == 0
