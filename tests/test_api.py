"""The public face (ftharness/api.py, docs/api.md): what `import ftharness` gives, and the one
error root. Pure."""

import ast
import os
import subprocess
import sys

import ftharness
from ftharness import api
from ftharness.errors import FtharnessError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: exceptions that steer control flow inside ftharness and never reach a user, and why
CONTROL_FLOW = {
    "Finding": "harness/run/explore.py: a found gap, raised inside Hypothesis's test so that it shrinks it",
    "StopExploring": "harness/run/explore.py: a BaseException, so that Hypothesis lets a stop through",
}


def test_the_package_exports_the_api_and_nothing_else():
    assert set(ftharness.__all__) - {"discover", "__version__"} == set(api.__all__)
    for name in api.__all__:
        assert getattr(ftharness, name) is getattr(api, name), name


def test_every_public_name_is_documented():
    page = open(os.path.join(ROOT, "docs", "api.md")).read()
    for name in api.__all__:
        obj = getattr(api, name)
        if callable(obj):
            assert (obj.__doc__ or "").strip(), f"{name} has no docstring"
        assert f"`{name}" in page, f"docs/api.md does not name {name}"


def test_importing_ftharness_loads_no_api():
    code = "import sys, ftharness; print('ftharness.api' in sys.modules, 'ftharness.harness.run.runner' in sys.modules)"
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert out.stdout.split() == ["False", "False"], out.stdout + out.stderr


def test_every_error_ftharness_raises_on_purpose_is_an_ftharness_error():
    """A class of ours derived from an exception derives from FtharnessError (or is named in CONTROL_FLOW)."""
    builtin = {n for n in dir(__builtins__ if isinstance(__builtins__, dict) else __builtins__)}
    outside = []
    for folder in ("ftharness", "faults", "harness", "history", "reports", "scenarios"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(dirpath, f)
                for node in ast.walk(ast.parse(open(path).read())):
                    if not isinstance(node, ast.ClassDef):
                        continue
                    bases = [b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases]
                    raises = any(b.endswith(("Error", "Exception")) and b in builtin for b in bases)
                    ours = any(b == "FtharnessError" or not (b in builtin) and b.endswith("Error") for b in bases)
                    if raises and not ours and node.name not in CONTROL_FLOW and node.name != "FtharnessError":
                        outside.append(f"{os.path.relpath(path, ROOT)}:{node.lineno} {node.name}{tuple(bases)}")
    assert outside == []
    for cls in (api.ScenarioError, api.ClusterError, api.InputError):
        assert issubclass(cls, FtharnessError)
