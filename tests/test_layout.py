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
PACKAGES = ("harness", "scenarios", "faults", "reports")

#: lowest first; a module may import only from its own layer or a lower one
LAYERS = [
    ("contracts", ("harness.errors", "harness.history")),
    ("doctor", ("harness.doctor",)),  # a pure leaf: parses user scripts, imports only the errors
    ("kinds", ("faults", "scenarios.properties", "scenarios.reference_data", "scenarios.policy_model")),
    ("simulator", ("scenarios.simulator",)),
    ("language", ("scenarios.schema", "scenarios.strategies", "scenarios.synthetic", "scenarios.soak")),
    ("verdict", ("scenarios.verdict",)),
    ("cluster", ("harness.cluster",)),
    ("job", ("harness.job",)),
    ("torchrun", ("harness.torchrun",)),  # the torchrun runtime: agents, Ray-free worker, collector
    ("reports", ("reports",)),
    ("run", ("harness.run",)),
    ("frontends", ("harness.frontends",)),
]

#: the one arrow downwards the layers, and why it must exist
EXCEPTIONS = {
    ("faults", "harness.frontends.ctk"):
        "`chaos discover ftharness` calls discover() on the distribution's first top-level package",
}


def modules():
    out = {}
    for pkg in PACKAGES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, pkg)):
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), ROOT)[:-3].replace(os.sep, ".")
                    out[rel.removesuffix(".__init__")] = os.path.join(dirpath, f)
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
            if mod in PACKAGES or target is None or target in PACKAGES:
                continue  # the top-level __init__ files are empty
            if layer(target) > layer(mod):
                if any(mod.startswith(a) and target.startswith(b) for a, b in EXCEPTIONS):
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


@pytest.mark.slow
def test_every_module_imports_in_a_fresh_interpreter():
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    names = sorted(m for m in MODULES if "ctk" not in m)  # ctk needs chaoslib's own import order
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]
