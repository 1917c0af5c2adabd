"""The import graph follows the layers of docs/architecture.md (pure, no Ray).

Folder by folder (`FOLDER_LAYERS`: the error root, history/, faults/, scenarios/, reports/
and harness/'s parts, in the order data flows) and module by module (`LAYERS`): every
import of one of our modules, at module level or inside a function, points to the same
layer or a lower one, and imports form no cycle. The two tables of docs/architecture.md
are these two lists, and every module imports in a fresh interpreter.
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
    ("contracts", ("ftharness.errors", "ftharness.releases", "ftharness.safety", "ftharness.profiles",
                   "ftharness.inputs", "ftharness.outputs", "ftharness.history")),
    ("doctor", ("ftharness.harness.doctor",)),  # a pure leaf: parses user scripts, imports only the errors
    ("kinds", ("ftharness.faults", "ftharness.scenarios.properties", "ftharness.scenarios.forked_checks",
               "ftharness.scenarios.reference_data", "ftharness.scenarios.policy_model")),
    ("simulator", ("ftharness.scenarios.simulator",)),
    ("language", ("ftharness.scenarios.schema", "ftharness.scenarios.language", "ftharness.scenarios.strategies", "ftharness.scenarios.synthetic", "ftharness.scenarios.soak",
                  "ftharness.scenarios.known_bugs", "ftharness.scenarios.explore_strategies")),
    ("verdict", ("ftharness.scenarios.verdict", "ftharness.scenarios.run_summary", "ftharness.scenarios.job_error")),
    ("cluster", ("ftharness.harness.cluster",)),
    ("job", ("ftharness.harness.job",)),
    ("torchrun", ("ftharness.harness.torchrun",)),  # the torchrun runtime: agents, Ray-free worker, collector
    ("reports", ("ftharness.reports",)),
    ("run", ("ftharness.harness.run", "ftharness.harness.matrix")),
    ("frontends", ("ftharness.harness.frontends", "ftharness.__main__", "ftharness.api")),
]

#: folder by folder, lowest first: a folder imports only from itself or a folder below it
#: (a folder's own subfolders belong to it unless listed: scenarios/properties/ is scenarios/)
FOLDER_LAYERS = [
    ("root", ("ftharness.errors", "ftharness.releases", "ftharness.safety", "ftharness.profiles",
              "ftharness.inputs", "ftharness.outputs")),  # ftharness/: the error root, the Ray releases' facts
    ("history", ("ftharness.history",)),
    ("doctor", ("ftharness.harness.doctor",)),
    ("faults", ("ftharness.faults",)),
    ("scenarios", ("ftharness.scenarios",)),
    ("cluster", ("ftharness.harness.cluster",)),
    ("job", ("ftharness.harness.job",)),
    ("torchrun", ("ftharness.harness.torchrun",)),
    ("reports", ("ftharness.reports",)),
    ("run", ("ftharness.harness.run", "ftharness.harness.matrix")),
    ("frontends", ("ftharness.harness.frontends", "ftharness.__main__", "ftharness.api")),
]

#: cycles among modules (imports inside functions included) still to be broken, and by what
KNOWN_CYCLES: dict = {}   # none: the two runners share what they share through harness/run/shared.py

#: the one arrow up the layers, and why it must exist
EXCEPTIONS = {
    ("ftharness", "ftharness.harness.frontends.ctk"):
        "`chaos discover ftharness` calls discover() on the distribution's top-level package",
    ("ftharness", "ftharness.api"):
        "`import ftharness` gives the public API (ftharness.api), loaded on first use",
}


def modules():
    out = {}
    for folder, package in FOLDERS.items():
        base = os.path.join(ROOT, folder)
        for dirpath, _, files in os.walk(base):
            if os.path.relpath(dirpath, ROOT).replace(os.sep, "/").startswith("scenarios/known/repro"):
                continue   # standalone reproductions: they import only Ray and torch (tests/test_known_repros.py)
            for f in files:
                if f.endswith(".py"):
                    rel = os.path.relpath(os.path.join(dirpath, f), base)[:-3].replace(os.sep, ".")
                    out[f"{package}.{rel}".removesuffix(".__init__").removesuffix(".")] = os.path.join(dirpath, f)
    return out


MODULES = modules()


def layer(module, layers=LAYERS):
    best = None
    for i, (_, prefixes) in enumerate(layers):
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


def folder_of(module):
    """The FOLDER_LAYERS index of a module; None for the two packages that hold no code of a
    layer (`ftharness` itself, whose discover() is the EXCEPTIONS arrow, and `ftharness.harness`)."""
    return layer(module, FOLDER_LAYERS)


def test_every_module_has_a_folder_layer():
    assert sorted(m for m in MODULES if folder_of(m) is None) == ["ftharness", "ftharness.harness"]


def test_no_import_points_up_the_folders():
    """Folder by folder: ftharness/ (the error root, the releases' facts) and history/ at the bottom, then faults/, scenarios/,
    the cluster, the job, torchrun, reports/, the run, the front ends. Package __init__ files
    (the registries of faults/ and scenarios/properties/) are checked like any module."""
    wrong = []
    for mod, path in MODULES.items():
        for line, name in imports(path):
            target = ours(name)
            if target is None or target == mod:
                continue
            if folder_of(mod) is None:
                if (mod, target) not in EXCEPTIONS and not any(mod == a and target.startswith(b) for a, b in EXCEPTIONS):
                    wrong.append(f"{path.removeprefix(ROOT + os.sep)}:{line}: {mod} imports {target}")
                continue
            if folder_of(target) is None:
                continue  # `import ftharness` (its file, its version): the root runs no code of a layer
            if folder_of(target) > folder_of(mod):
                wrong.append(f"{path.removeprefix(ROOT + os.sep)}:{line}: {mod} ({FOLDER_LAYERS[folder_of(mod)][0]}) "
                             f"imports {target} ({FOLDER_LAYERS[folder_of(target)][0]})")
    assert wrong == []


def ray_imports(source):
    """(line, name) of every import of Ray in a module's source: import statements at any depth,
    and `importlib.import_module("ray...")` / `__import__("ray...")` with the name written out."""
    out = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and ((isinstance(node.func, ast.Name) and node.func.id == "__import__")
                   or (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module"))):
            names = [node.args[0].value]
        out += [(node.lineno, n) for n in names if n == "ray" or n.startswith("ray.")]
    return out


def test_history_imports_no_ray():
    """history/ is the pure record every stage reads, offline too: neither it nor any module of
    ours it imports imports Ray (the service that holds a run's history on a cluster is
    harness/cluster/history_service.py)."""
    graph = {m: {t for _, n in imports(p) if (t := ours(n)) and t != m} for m, p in MODULES.items()}
    todo = [m for m in MODULES if m == "ftharness.history" or m.startswith("ftharness.history.")]
    seen = set()
    while todo:
        m = todo.pop()
        if m not in seen:
            seen.add(m)
            todo += sorted(graph[m] - {"ftharness"})
    assert "ftharness.history.book" in seen
    wrong = [f"{MODULES[m].removeprefix(ROOT + os.sep)}:{line}: {m} imports {name}"
             for m in sorted(seen) for line, name in ray_imports(open(MODULES[m]).read())]
    assert wrong == []


def test_the_ray_import_finder_finds_planted_ones():
    planted = ("import ray\nfrom ray.util import queue\nimport ray.train as rt\n"
               "def f():\n    import importlib\n    importlib.import_module('ray.util')\n    __import__('ray')\n")
    assert [line for line, _ in ray_imports(planted)] == [1, 2, 3, 6, 7]
    assert ray_imports("import rayon\nfrom raytracer import x\nimport os\n# import ray\ns = 'import ray'\n") == []


def strongly_connected(graph):
    """The cycles of a graph: its strongly connected components of more than one node."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(frozenset(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_cycle_among_modules_even_inside_functions():
    """An import inside a function is still an arrow: two modules that need each other are one
    job in two files. The known cycles must be broken, not added to."""
    graph = {m: {t for _, n in imports(p) if (t := ours(n)) and t != m} for m, p in MODULES.items()}
    cycles = set(strongly_connected(graph))
    assert cycles - set(KNOWN_CYCLES) == set()
    assert set(KNOWN_CYCLES) - cycles == set(), "a known cycle is gone: remove it from KNOWN_CYCLES"


def test_no_cycle_among_folders():
    def unit(m):
        return FOLDER_LAYERS[folder_of(m)][0]

    graph = {}
    for m, p in MODULES.items():
        if folder_of(m) is None:
            continue
        for _, n in imports(p):
            t = ours(n)
            if t and folder_of(t) is not None and unit(t) != unit(m):
                graph.setdefault(unit(m), set()).add(unit(t))
    assert strongly_connected(graph) == []


def test_the_cycle_finder_finds_a_planted_cycle():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def doc_table(title):
    """The rows of docs/architecture.md's table under the heading `title`: (name, [module])."""
    text = open(os.path.join(ROOT, "docs", "architecture.md")).read()
    section = text.split(f"### {title}\n", 1)[1].split("\n#", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0][:1].isdigit():
            continue
        paths = cells[1].split("`")[1::2]
        rows.append((cells[0].split(" ", 1)[1], [path_module(p) for p in paths]))
    return rows


def path_module(path):
    """`scenarios/schema.py` -> ftharness.scenarios.schema; `harness/run/` -> ftharness.harness.run."""
    parts = path.rstrip("/").removesuffix(".py").split("/")
    return ".".join([FOLDERS[parts[0]]] + parts[1:])


def test_architecture_tables_are_the_layers_tested_here():
    """docs/architecture.md lists the layers top first, numbered; each row's paths are exactly
    the prefixes of that layer here."""
    for title, layers in (("Folder by folder", FOLDER_LAYERS), ("Module by module", LAYERS)):
        rows = doc_table(title)
        assert rows == [(name, list(prefixes)) for name, prefixes in reversed(layers)], title


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
    # data folders (the catalog, the report templates) are listed too, as setuptools asks,
    # with their files in package-data
    data = set(cfg["packages"]) - folders
    assert data <= set(cfg["package-data"]), data
    for name in data:
        parent, _, leaf = name.rpartition(".")
        assert os.path.isdir(os.path.join(ROOT, {v: k for k, v in FOLDERS.items()}[parent], leaf)), name
    assert folders <= set(cfg["packages"])
    assert cfg["package-dir"] == {package: folder for folder, package in FOLDERS.items()}


@pytest.mark.slow
def test_every_module_imports_in_a_fresh_interpreter():
    code = "import importlib, sys\nfor m in sys.argv[1:]:\n    importlib.import_module(m)\n"
    names = sorted(m for m in MODULES if "ctk" not in m)  # ctk needs chaoslib's own import order
    r = subprocess.run([sys.executable, "-c", code, *names], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-2000:]


# ------------------------------------------------------------------ fault kind names
#: modules outside faults/ that still write a fault kind's name as a string literal, and why they
#: may for now (each is to read the registry instead; the test fails when one no longer needs its
#: line, so this list only shrinks)
KIND_LITERALS_LEFT: dict = {}


def docstrings(tree):
    """The string constants of `tree` that are docstrings (of the module, a class or a function)."""
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                out.add(id(body[0].value))
    return out


def kind_literals(path, kinds):
    """(line, name) of each string literal in the file at `path` that is a fault kind's name
    (docstrings aside; comments are no literals)."""
    tree = ast.parse(open(path).read())
    skip = docstrings(tree)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.value in kinds
                  and id(n) not in skip)


def test_no_fault_kind_is_named_outside_faults():
    """What a kind causes, draws, needs and ends is declared on the kind (faults/base.py) and read
    from the registry: no module outside faults/ names a kind."""
    from ftharness.faults import FAULT_KINDS

    found = {}
    for module, path in MODULES.items():
        if module == "ftharness.faults" or module.startswith("ftharness.faults."):
            continue
        hits = kind_literals(path, set(FAULT_KINDS))
        if hits and module not in KIND_LITERALS_LEFT:
            found[module] = hits
    assert not found, "fault kind names outside faults/ (read the registry instead): " + "; ".join(
        f"{os.path.relpath(MODULES[m], ROOT)}: " + ", ".join(f"line {ln} {v!r}" for ln, v in hits)
        for m, hits in sorted(found.items()))
    stale = [m for m in KIND_LITERALS_LEFT if m in MODULES and not kind_literals(MODULES[m], set(FAULT_KINDS))]
    assert not stale, f"KIND_LITERALS_LEFT lists modules that name no kind any more: {stale}"


def test_the_kind_name_finder_finds_planted_ones(tmp_path):
    planted = tmp_path / "m.py"
    planted.write_text('"""kill_worker in a docstring."""\n'
                       'def f(k):\n    """kill_node"""\n    # "kill_worker" in a comment\n'
                       '    return k == "kill_worker" or k in ("preempt_node", "not_a_kind")\n')
    assert kind_literals(str(planted), {"kill_worker", "kill_node", "preempt_node"}) == [
        (5, "kill_worker"), (5, "preempt_node")]


# ------------------------------------------------------------------ one reader (issue 49 item 1)
#: the folders of the package scanned for raw readers; scenarios/known/repro/ holds standalone
#: scripts (plain Ray, no ftharness), and ftharness/inputs.py is the one reader itself
READER_FOLDERS = ("ftharness", "history", "faults", "scenarios", "reports", "harness")
READER_EXEMPT = ("ftharness/inputs.py", "scenarios/known/repro/")
#: calls that read a file by themselves (a read mode of open/fdopen/tarfile.open, a loader given a file)
READ_CALLS = {"json.load", "yaml.safe_load", "yaml.load", "yaml.full_load", "yaml.unsafe_load", "pickle.load",
              "marshal.load", "tomllib.load", "zipfile.ZipFile", "io.open", "codecs.open"}
READ_METHODS = {"read_text", "read_bytes", "open_input_stream", "open_input_file"}
#: (file, function) -> reason: readers of files ftharness wrote itself (in this run, this process or
#: the job it started), of its own package data, or of /proc entries of its own processes; everything
#: a user or a handed folder gives goes through ftharness/inputs.py (read_input and its kinds)
RAW_READERS_ALLOWED = {
    ("harness/job/digests.py", "file_hashes"): "a checkpoint folder the job itself just wrote",
    ("harness/job/instrument.py", "read_markers"): "the markers the job wrote into its own checkpoint",
    ("harness/cluster/log_capture.py", "copy_to"): "Ray's logs of the cluster this run started, copied bounded "
                                                   "(LOG_FILE_BYTES)",
    ("harness/cluster/log_capture.py", "_read_back"): "the driver log this capture writes itself, read back bounded "
                                                      "(NativeStderr.MAX_NATIVE_BYTES)",
    ("harness/torchrun/storage.py", "*"): "checkpoint files a torchrun worker of this run wrote",
    ("harness/torchrun/worker.py", "main"): "the spec file the launcher wrote for this worker (same run)",
    ("harness/cluster/reaper.py", "*"): "/proc/PID/stat of processes this run started",
    ("harness/cluster/ns_node.py", "*"): "/proc/PID/cmdline of processes this run started",
    ("harness/run/submit.py", "unpack"): "the results tar the submitted job printed; extracted with tarfile's "
                                         "data filter (no link or path out of OUT)",
    ("scenarios/forked_checks.py", "*"): "this process's own pipe to its forked check, and /proc/self",
    ("scenarios/known_bugs.py", "*"): "the package's own data files (scenarios/known/*.yaml, *.json)",
    ("scenarios/language/yaml_reader.py", "load_yaml_text"): "parses bytes the one reader already bounded",
    ("history/book.py", "*"): "the history file this process is writing",
    ("history/split.py", "*"): "its own pipe, and history.jsonl after can_split found it a regular file "
                                "(not under /proc, /sys or /dev) and the reader bounded its lines",
    ("history/spool.py", "*"): "spool files opened O_NOFOLLOW|O_NONBLOCK, each line bounded",
    ("faults/storage.py", "*"): "the run's own storage, through its fault-injecting filesystem",
    ("faults/checkpoint.py", "*"): "the run's own checkpoints, which the fault corrupts",
}


def _call_name(func) -> str:
    parts = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


def _mode(call: ast.Call, position: int):
    for kw in call.keywords:
        if kw.arg == "mode":
            return kw.value.value if isinstance(kw.value, ast.Constant) else None
    if len(call.args) > position:
        arg = call.args[position]
        return arg.value if isinstance(arg, ast.Constant) else None
    return "r"


def _reads(call: ast.Call) -> bool:
    name = _call_name(call.func)
    if name in READ_CALLS:
        return True
    if name in ("open", "os.fdopen", "tarfile.open"):
        mode = _mode(call, 1)
        return not (isinstance(mode, str) and any(c in mode for c in "wax+"))
    return isinstance(call.func, ast.Attribute) and call.func.attr in READ_METHODS


def raw_readers(root: str, folders=READER_FOLDERS, exempt=READER_EXEMPT):
    """(file, function, line) of every call that opens or loads a file itself, outside the one reader."""
    found = []
    for folder in folders:
        for base, dirs, files in os.walk(os.path.join(root, folder)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in files:
                if not name.endswith(".py"):
                    continue
                path = os.path.join(base, name)
                rel = os.path.relpath(path, root).replace(os.sep, "/")
                if any(rel == e or (e.endswith("/") and rel.startswith(e)) for e in exempt):
                    continue
                tree = ast.parse(open(path).read(), filename=rel)
                for node in ast.walk(tree):
                    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        for call in ast.walk(node):
                            if isinstance(call, ast.Call) and _reads(call):
                                found.append((rel, node.name, call.lineno))
                for call in [n for n in tree.body if not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                                          ast.ClassDef))]:
                    for c in ast.walk(call):
                        if isinstance(c, ast.Call) and _reads(c):
                            found.append((rel, "<module>", c.lineno))
    return sorted(set(found))


def _not_allowed(found):
    return [f for f in found if (f[0], f[1]) not in RAW_READERS_ALLOWED and (f[0], "*") not in RAW_READERS_ALLOWED]


def test_every_file_from_outside_is_read_through_the_one_reader():
    """A new `open(`/`json.load`/`yaml.safe_load`/`read_text` in the package outside ftharness/inputs.py
    fails here: read it through ftharness.inputs.read_input (a kind of KINDS), or, for a file ftharness
    wrote itself, add it to RAW_READERS_ALLOWED with the reason."""
    bad = _not_allowed(raw_readers(ROOT))
    assert not bad, "raw readers outside ftharness/inputs.py: " + ", ".join(f"{f}:{ln} in {fn}" for f, fn, ln in bad)


def test_every_allowed_raw_reader_still_exists():
    """An entry of RAW_READERS_ALLOWED whose reader is gone is removed, so the list stays the list."""
    found = raw_readers(ROOT)
    have = {(f, fn) for f, fn, _ in found} | {(f, "*") for f, _, _ in found}
    assert sorted(k for k in RAW_READERS_ALLOWED if k not in have) == []


def test_the_raw_reader_finder_finds_planted_ones(tmp_path):
    pkg = tmp_path / "reports"
    pkg.mkdir()
    (pkg / "planted.py").write_text(
        "import json, yaml, os\n"
        "def a(p):\n    return json.load(open(p))\n"
        "def b(p):\n    with open(p, 'rb') as f:\n        return f.read()\n"
        "def c(p):\n    return yaml.safe_load(open(p, mode='r'))\n"
        "def d(p):\n    return p.read_text()\n"
        "def e(p):\n    with open(p, 'w') as f:\n        f.write('x')\n"   # a writer: not found
        "def f(fd):\n    return os.fdopen(fd, 'rb').read()\n")
    found = {(fn, ln) for _, fn, ln in raw_readers(str(tmp_path), folders=("reports",))}
    assert {fn for fn, _ in found} == {"a", "b", "c", "d", "f"}


#: files the project's authors have beside the repository and its users do not
PRIVATE_DOCS = ("design.md", "ray-train-v2-faults.md")


def test_no_module_cites_a_file_users_do_not_have():
    """Docstrings and comments send a reader to docs/ (what ships), never to the authors' own notes."""
    cited = []
    for folder in ("ftharness", "harness", "history", "faults", "scenarios", "reports"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(dirpath, name)
                    text = open(path, encoding="utf-8").read()
                    cited += [f"{os.path.relpath(path, ROOT)}: {doc}" for doc in PRIVATE_DOCS if doc in text]
    assert not cited, "cites a file users do not have: " + "; ".join(cited)
