"""hypothesis and Chaos Toolkit are extras (`[test]`, `[ctk]`), not what every user installs:
the commands a user runs first work where neither can be imported. A finder that refuses
their imports stands in for an environment without them."""

import json
import os
import subprocess
import sys

from conftest import REPO

BLOCK = """
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in ('hypothesis', 'chaoslib', 'chaostoolkit'):
            raise ModuleNotFoundError(f"No module named {name!r} (blocked: an extra)")
        return None
sys.meta_path.insert(0, Block())
from ftharness.harness.frontends.cli import main
code = main(sys.argv[1:])
leaked = sorted(m for m in sys.modules if m.split('.')[0] in ('hypothesis', 'chaoslib', 'chaostoolkit'))
print('LEAKED', leaked, file=sys.stderr)
sys.exit(code)
"""


def cli_without_extras(*args, cwd=REPO):
    return subprocess.run([sys.executable, "-P", "-c", BLOCK, *args], capture_output=True, text=True,
                          timeout=300, cwd=cwd)


def test_help_validate_check_and_verdict_need_no_extra(tmp_path):
    for args, code in ((["--help"], 0), (["validate", "scenarios/catalog/kill-worker.yaml"], 0),
                       (["check", "tests/data/kill-worker"], 0),
                       (["init", str(tmp_path / "chaos"), "--ci", "none"], 0)):   # a user's first command
        r = cli_without_extras(*args)
        assert r.returncode == code, (args, r.stderr[-1500:])
        assert "LEAKED []" in r.stderr or args == ["--help"], r.stderr[-500:]
    journal = tmp_path / "journal.json"
    journal.write_text(json.dumps({"status": "completed", "deviated": False, "steady_states": {}}))
    r = cli_without_extras("verdict", str(journal))
    assert r.returncode in (1, 3) and "Traceback" not in r.stderr and "LEAKED []" in r.stderr, r.stderr[-1500:]


def test_the_extras_hold_what_only_they_need():
    import tomllib

    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    runtime = " ".join(project["dependencies"])
    assert "hypothesis" not in runtime and "chaostoolkit" not in runtime
    assert any(d.startswith("hypothesis") for d in project["optional-dependencies"]["test"])
    assert any(d.startswith("chaostoolkit") for d in project["optional-dependencies"]["ctk"])


def test_explore_without_hypothesis_is_one_line_naming_its_extra(tmp_path):
    """Issue 49 item 8: `explore` is a user command whose search is Hypothesis's; an install
    without it is refused in one line naming the `explore` extra (exit 2), never exit 4."""
    import tomllib

    r = cli_without_extras("explore", "--budget", "90s", "--out", str(tmp_path / "o"))
    lines = [line for line in r.stderr.splitlines() if not line.startswith("LEAKED")]
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-1500:]
    assert "ftharness[explore]" in lines[0] and "Traceback" not in r.stderr
    assert not (tmp_path / "o").exists()
    with open(os.path.join(REPO, "pyproject.toml"), "rb") as f:
        extras = tomllib.load(f)["project"]["optional-dependencies"]
    assert any(d.startswith("hypothesis") for d in extras["explore"])
