"""Plugins load only for commands that use kinds or properties (issue 49 item 6): `--version`,
`doctor` and a refused argument never import one; `list` does (so the check can fail).

A plugin distribution whose module writes a marker file at import (and would add its import
time to every command) is installed in a temporary folder a child ftharness sees on
PYTHONPATH, as tests/test_plugins.py installs its toy. `schema` prints the scenario schema,
plugin kinds included (tests/test_plugins.py), so it loads them.
"""

import os
import subprocess
import sys

import pytest

MODULE = """\
import os
open(os.environ["FTHARNESS_PLUGIN_MARKER"], "a").write("imported\\n")
from ftharness.faults.base import Fault  # noqa: E402
"""
ENTRY_POINTS = "[ftharness.faults]\nmarker = ftharness_marker:Marker\n\n[ftharness.properties]\nmarker_p = ftharness_marker:p\n"


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    folder = tmp_path_factory.mktemp("marker-plugin")
    (folder / "ftharness_marker.py").write_text(MODULE)
    info = folder / "ftharness_marker-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ftharness-marker\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(ENTRY_POINTS)
    return str(folder)


def imported(plugin, tmp_path, *args):
    marker = tmp_path / "marker"
    if marker.exists():
        marker.unlink()
    env = dict(os.environ, PYTHONPATH=plugin, FTHARNESS_PLUGIN_MARKER=str(marker))
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", *args], capture_output=True, text=True, env=env,
                       cwd=str(tmp_path), timeout=120)
    assert "Traceback" not in r.stderr, r.stderr
    return marker.exists(), r


@pytest.mark.parametrize("args", [["--version"], ["doctor", "--list-rules"], ["doctor", "code.py"],
                                  ["bisect", "x.yaml", "--cell-timeout", "nan"], ["plan"]])
def test_commands_that_use_no_kind_load_no_plugin(plugin, tmp_path, args):
    (tmp_path / "code.py").write_text("import ray\n")
    loaded, r = imported(plugin, tmp_path, *args)
    assert not loaded, (args, r.returncode, r.stderr)
    assert r.returncode in (0, 2), r.stderr


def test_a_command_that_lists_kinds_loads_the_plugin(plugin, tmp_path):
    loaded, r = imported(plugin, tmp_path, "list", "faults")
    assert loaded and r.returncode == 0


def test_the_exit_codes_written_out_are_the_verdicts():
    """cli_shared.py, reports/cli.py and harness/run/arguments.py name the exit codes without importing
    scenarios/verdict.py at start (it loads the plugins): the same numbers."""
    from ftharness.harness.frontends import cli_shared as cli
    from ftharness.harness.run import arguments
    from ftharness.reports import cli as reports_cli
    from ftharness.scenarios import verdict

    assert (cli.EXIT_PASS, cli.EXIT_FAIL, cli.EXIT_CANNOT_RUN, cli.EXIT_INCONCLUSIVE, cli.EXIT_INTERNAL) == \
        (verdict.EXIT_PASS, verdict.EXIT_FAIL, verdict.EXIT_CANNOT_RUN, verdict.EXIT_INCONCLUSIVE, verdict.EXIT_INTERNAL)
    assert arguments.EXIT_CANNOT_RUN == verdict.EXIT_CANNOT_RUN
    assert (reports_cli.EXIT_OK, reports_cli.EXIT_FAIL, reports_cli.EXIT_CANNOT_RUN) == \
        (verdict.EXIT_PASS, verdict.EXIT_FAIL, verdict.EXIT_CANNOT_RUN)
