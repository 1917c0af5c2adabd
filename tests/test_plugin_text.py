"""Issue 49, item 6 (the part outside the plugin loaders): a plugin's text (its kind's docstring,
its names) is its author's, so `ftharness list` prints it with control characters escaped: a
docstring holding terminal escape sequences cannot drive the operator's terminal. Pure: a child
ftharness sees a toy distribution on PYTHONPATH."""

import os
import subprocess
import sys

from test_plugins import TOY, install

ESCAPE = "\x1b]0;owned\x07\x1b[31m"


def test_a_plugin_docstring_with_escape_sequences_is_printed_escaped(tmp_path):
    folder = install(str(tmp_path / "plugin"))
    module = os.path.join(folder, "ftharness_toy.py")
    text = open(TOY).read().replace(
        '"""Writes a small marker file into the run\'s storage folder: a toy fault kind."""',
        f'"""Writes a marker {ESCAPE.encode("unicode_escape").decode()}red: a toy fault kind."""', 1)
    assert ESCAPE.encode("unicode_escape").decode() in text
    with open(module, "w") as f:
        f.write(text)
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "list", "faults"], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=folder), timeout=300)
    assert r.returncode == 0, r.stderr
    line = next(line for line in r.stdout.splitlines() if "touch_file" in line)
    assert "\x1b" not in r.stdout and "\x07" not in r.stdout
    assert "\\x1b]0;owned\\x07\\x1b[31m" in line, line


def test_a_property_that_returns_no_checkresult_is_its_own_inconclusive(monkeypatch):
    """A plugin's check that returns something else is that property's `not judged`, never exit 4."""
    from ftharness.scenarios import properties as P

    monkeypatch.setitem(P.CHECKS, "odd_plugin", lambda events, context: {"passed": True})
    r = P._run_one("odd_plugin", [], {})
    assert r.passed is None and "not a CheckResult" in r.explanation


def test_a_plugin_raising_systemexit_at_import_is_one_warning(monkeypatch):
    """SystemExit (or KeyboardInterrupt) raised by a plugin's import is that plugin's: named, left out."""
    import importlib.metadata as md

    from ftharness import faults
    from ftharness.scenarios import properties as P

    class EP:
        name, value, dist = "bad", "bad_plugin:Kind", None

        def load(self):
            raise SystemExit(7)

    monkeypatch.setattr(md, "entry_points", lambda group: [EP()])
    kinds, problems = faults.load_plugins()
    assert kinds == [] and "SystemExit" in problems[0]
    props, problems = P.load_plugins()
    assert props == {} and "SystemExit" in problems[0]
