"""The import graph follows the layers of docs/architecture.md (pure, no Ray).

Every import of one of our modules, at module level or inside a function, must
point to the same layer or a lower one; module-level imports must not form a
cycle; and every module imports in a fresh interpreter.
"""

import ast
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: folder of the repository -> the package it installs as (pyproject.toml's package-dir)
FOLDERS = {"ftharness": "ftharness", "history": "ftharness.history", "faults": "ftharness.faults",
           "scenarios": "ftharness.scenarios", "harness": "ftharness.harness", "reports": "ftharness.reports"}
PACKAGES = ("ftharness", "ftharness.harness", "ftharness.scenarios", "ftharness.faults", "ftharness.reports")

#: lowest first; a module may import only from its own layer or a lower one
LAYERS = [
    ("contracts", ("ftharness.errors", "ftharness.releases", "ftharness.history")),
    ("doctor", ("ftharness.harness.doctor",)),  # a pure leaf: parses user scripts, imports only the errors
    ("kinds", ("ftharness.faults", "ftharness.scenarios.properties", "ftharness.scenarios.reference_data", "ftharness.scenarios.policy_model")),
    ("simulator", ("ftharness.scenarios.simulator",)),
    ("language", ("ftharness.scenarios.schema", "ftharness.scenarios.strategies", "ftharness.scenarios.synthetic", "ftharness.scenarios.soak")),
    ("verdict", ("ftharness.scenarios.verdict",)),
    ("cluster", ("ftharness.harness.cluster",)),
    ("job", ("ftharness.harness.job",)),
    ("torchrun", ("ftharness.harness.torchrun",)),  # the torchrun runtime: agents, Ray-free worker, collector
    ("reports", ("ftharness.reports",)),
    ("run", ("ftharness.harness.run", "ftharness.harness.matrix")),
    ("frontends", ("ftharness.harness.frontends", "ftharness.__main__")),
]

#: the one arrow up the layers, and why it must exist
EXCEPTIONS = {
    ("ftharness", "ftharness.harness.frontends.ctk"):
        "`chaos discover ftharness` calls discover() on the distribution's top-level package",
}


def modules():
    out = {}
    for folder, package in FOLDERS.items():
        base = os.path.join(ROOT, folder)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                    out[f"{package}.{rel}".removesuffix(".__init__").removesuffix(".")] = os.path.join(dirpath, f)
    return out


MODULES = modules()


def layer(module):
    best = None
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if (module == p or module.startswith(p + ".")) and (best is None or len(p) > best[1]):
                best = (i, len(p))
    return None if best is None else best[0]


def ours(name):
    """The module of ours that an imported name resolves to, or None."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports(path, module_level_only=False):
    tree = ast.parse(open(path).read())
    nodes = tree.body if module_level_only else ast.walk(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                yield node.lineno, a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for a in node.names:
                yield node.lineno, f"{node.module}.{a.name}"


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m not in PACKAGES and layer(m) is None] == []


def test_no_import_points_up_the_layers():
    wrong = []
    for mod, path in MODULES.items():
        for line, name in imports(path):
            target = ours(name)
            if target is None or target in PACKAGES or (mod in PACKAGES and (mod, target) not in EXCEPTIONS):
                continue  # the package __init__ files hold docstrings only
            if mod == "ftharness" or layer(target) > layer(mod):
                if any(mod == a and target.startswith(b) for a, b in EXCEPTIONS):
                    continue
                wrong.append(f"{path.removeprefix(ROOT + os.sep)}:{line}: {mod} ({LAYERS[layer(mod)][0]}) "
                             f"imports {target} ({LAYERS[layer(target)][0]})")
    assert wrong == []


def test_module_level_imports_have_no_cycle():
    graph = {m: {t for _, n in imports(p, module_level_only=True) if (t := ours(n)) and t != m}
             for m, p in MODULES.items()}
    state, cycle = {}, []

    def visit(m, stack):
        state[m] = "open"
        for t in sorted(graph.get(m, ())):
            if state.get(t) == "open":
                cycle.append(stack[stack.index(t):] + [t])
            elif t not in state:
                visit(t, stack + [t])
        state[m] = "done"

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycle == []


def test_pyproject_installs_every_package():
    """pyproject.toml lists its packages by name (they are mapped from the top folders);
    a new folder with an __init__.py must be listed there, or the wheel lacks it."""
    import tomllib

    cfg = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["tool"]["setuptools"]
    folders = {m for m, p in MODULES.items() if p.endswith("__init__.py")}
    assert set(cfg["packages"]) == folders
    assert cfg["package-dir"] == {package: folder for folder, package in FOLDERS.items()}


@pytest.mark.slow
def test_every_module_imports_in_a_fresh_interpreter():
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    names = sorted(m for m in MODULES if "ctk" not in m)  # ctk needs chaoslib's own import order
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
