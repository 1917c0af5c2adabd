"""Whether a scenario's `module:function` exists, proved without running the module.

`validate` and `suite` (before anything runs) are the static authority editors and CI
run on scenarios from pull requests: importing the module would run its top-level code
on the reviewer's machine. Here the module's file is found by the same search `run`
imports it by (the code root first, `workload.working_dir` or the scenario's folder, then the interpreter's path; the scenario's
folder is never added to it), read through the bounded reader, and parsed with `ast`;
the function must be bound at the module's top level (a `def`, a class, an assignment,
an import) or the module must leave room for it (`from x import *`, a module
`__getattr__`). A compiled module or a built-in one is only found, not read. Whether
the module imports cleanly is `run`'s to find (it imports it before a cluster starts).
"""

from __future__ import annotations

import ast
import importlib.machinery
import sys
from typing import Iterable, Optional

from ftharness.errors import ScenarioError
from ftharness.harness.run.runtime import declared_of
from ftharness.inputs import InputRefused, MAX_SOURCE_BYTES, read_bounded, shown
from ftharness.scenarios.schema import one_line


def _spec(module_name: str, base_dir: Optional[str]):
    """The module's spec found as `import` would find it, without executing anything: the
    scenario's folder first (PathFinder), then the interpreter's finders (sys.meta_path: the
    path, built-ins, editable installs), each package level under its parent's `__path__`."""
    parts = module_name.split(".")
    spec, search = None, None
    for i in range(len(parts)):
        name = ".".join(parts[: i + 1])
        spec = None
        if i == 0 and base_dir:
            spec = importlib.machinery.PathFinder.find_spec(name, [base_dir])
        for finder in ([] if spec is not None else sys.meta_path):
            find = getattr(finder, "find_spec", None)
            spec = find(name, search) if find is not None else None
            if spec is not None:
                break
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
        if i < len(parts) - 1 and not search:
            return None   # a module, not a package: it has no submodules
    return spec


def _bound(body: Iterable[ast.stmt], name: str) -> bool:
    """Whether `name` is bound at the module's top level (branches of if/try/with included)."""
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if node.name in (name, "__getattr__"):
                return True
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                for sub in ast.walk(t):
                    if isinstance(sub, ast.Name) and sub.id in (name, "__getattr__"):
                        return True
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.name == "*" or (alias.asname or alias.name.split(".")[0]) == name:
                    return True
        elif isinstance(node, (ast.If, ast.For, ast.While, ast.With, ast.AsyncWith, ast.AsyncFor)):
            if _bound(node.body, name) or _bound(getattr(node, "orelse", []), name):
                return True
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if any(_bound(part, name) for part in (node.body, node.orelse, node.finalbody,
                                                   *[h.body for h in node.handlers])):
                return True
        elif isinstance(node, ast.Expr) and isinstance(node.value, ast.NamedExpr):
            if node.value.target.id == name:
                return True
    return False


def check_function(ref: str, field: str, base_dir: Optional[str]) -> None:
    """One line (ScenarioError) when `ref` ('module:function') names no module file that the
    search finds, or a module that binds no `function`; nothing of the module runs."""
    module_name, _, fn_name = ref.partition(":")
    if not module_name or module_name.startswith(".") or not fn_name:
        raise ScenarioError(f"{field}: {ref!r} must be 'module:function' (an absolute module name)")
    if not all(p.isidentifier() for p in module_name.split(".")) or not fn_name.isidentifier():
        raise ScenarioError(one_line(f"{field}: {ref[:80]!r}: module and function must be Python names"))
    try:
        spec = _spec(module_name, base_dir)
    except Exception as e:  # noqa: BLE001 - a finder's failure is this field's
        raise ScenarioError(one_line(f"{field}: {module_name!r} cannot be found ({type(e).__name__})")) from None
    if spec is None:
        where = f" in {shown(base_dir, 80)} or on the Python path" if base_dir else " on the Python path"
        raise ScenarioError(one_line(f"{field}: no module named {module_name!r}{where}"))
    origin = spec.origin
    if not origin or origin in ("built-in", "frozen") or not origin.endswith(".py"):
        return   # a namespace package, a compiled or built-in module: found; its names are run's to check
    try:
        source = read_bounded(origin, MAX_SOURCE_BYTES, f"{field}: {shown(origin, 80)}")
    except InputRefused as e:
        raise ScenarioError(one_line(str(e))) from None
    try:
        tree = ast.parse(source, filename=origin)
    except SyntaxError as e:
        raise ScenarioError(one_line(f"{field}: {shown(origin, 80)} line {e.lineno}: does not parse "
                                     f"({e.msg})")) from None
    except (ValueError, RecursionError, MemoryError) as e:
        raise ScenarioError(one_line(f"{field}: {shown(origin, 80)} does not parse ({type(e).__name__})")) from None
    if not _bound(tree.body, fn_name):
        raise ScenarioError(one_line(f"{field}: {module_name!r} ({shown(origin, 80)}) has no function {fn_name!r}"))


def check_scenario_functions(scenario) -> None:
    """Every module:function the scenario names (entrypoint, datasets, dataset_config), statically."""
    from ftharness.harness.run.usercode import code_root

    w = scenario.workload
    if not declared_of(scenario).imports_job_functions:
        return
    root = code_root(scenario)   # workload.working_dir, else the scenario's folder: where run imports from
    for field in ("entrypoint", "datasets", "dataset_config"):
        ref = getattr(w, field, None)
        if field == "entrypoint" and w.kind == "reference":
            continue
        if ref:
            check_function(ref, f"workload.{field}", root)
