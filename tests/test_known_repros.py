"""The known-bug corpus's standalone reproductions (scenarios/known/repro/<id>.py).

Pure: every entry has its script; the script imports nothing but Ray, torch and the standard library
(an AST check: a maintainer runs it without ftharness); its ID, AFFECTED and FIXED constants are the
corpus entry's; it takes --expect. Full (`make test-full`, a real cluster per script): each script,
run on the installed release, exits 0 (the release behaves as the entry says for it), or 2 where the
entry names no behaviour for it (before its first affected release)."""

import ast
import os
import subprocess
import sys

import pytest

from ftharness import releases
from ftharness.scenarios import known_bugs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ALLOWED = {"ray", "torch"} | set(sys.stdlib_module_names)
BUGS = known_bugs.load()


def _tree(bug):
    with open(bug.repro_path) as f:
        return ast.parse(f.read(), filename=bug.repro)


def _imports(tree):
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                yield a.name.split(".")[0], node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                yield "." * node.level + (node.module or ""), node.lineno
            else:
                yield node.module.split(".")[0], node.lineno


def _constants(tree):
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign):
            value = node.value
            targets = node.targets[0]
            if isinstance(targets, ast.Tuple) and isinstance(value, ast.Tuple):
                for t, v in zip(targets.elts, value.elts):
                    out[t.id] = ast.literal_eval(v)
            elif isinstance(targets, ast.Name):
                try:
                    out[targets.id] = ast.literal_eval(value)
                except ValueError:
                    pass
    return out


def test_every_entry_has_its_standalone_script():
    names = {b.id + ".py" for b in BUGS}
    assert all(b.repro == f"scenarios/known/repro/{b.id}.py" and os.path.isfile(b.repro_path) for b in BUGS)
    on_disk = {f for f in os.listdir(os.path.join(ROOT, "scenarios", "known", "repro")) if f.endswith(".py")}
    assert on_disk == names, on_disk ^ names


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_a_script_imports_only_ray_torch_and_the_standard_library(bug):
    bad = [(m, line) for m, line in _imports(_tree(bug)) if m not in ALLOWED]
    assert not bad, f"{bug.repro}: imports beyond ray, torch and the standard library: {bad}"
    assert "ftharness" not in open(bug.repro_path).read().replace("scenarios/known_bugs.yaml", "")


@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_a_script_states_its_entry_and_boundary(bug):
    c = _constants(_tree(bug))
    assert c["ID"] == bug.id
    assert c["AFFECTED"] == (bug.first_affected, bug.last_affected) and c["FIXED"] == bug.fixed
    src = open(bug.repro_path).read()
    assert '"--expect"' in src and 'choices=("affected", "fixed")' in src
    assert "cluster.shutdown()" in src and "finally:" in src       # cleans up whatever happened


def test_expectation_follows_the_boundary():
    bug = {b.id: b for b in BUGS}
    assert bug["preemption-charged-to-max-failures"].expectation("2.57.1") == "affected"
    assert bug["preemption-charged-to-max-failures"].expectation("2.58.0") == "fixed"
    assert bug["bad-reclaim-charged-to-max-failures"].expectation("2.57.1") is None
    assert bug["worker-death-at-train-launch"].expectation(releases.ALL_RELEASES[-1]) == "affected"


def test_recorded_runs_name_known_entries_and_releases():
    for bid, runs in known_bugs.repro_results().items():
        b = {x.id: x for x in BUGS}[bid]
        for v, r in runs.items():
            assert v in releases.ALL_RELEASES and r["rc"] in (0, 1, 2, 124) and r["line"], (bid, v)
            assert r["expect"] == (b.expectation(v) or "n/a"), (bid, v)


@pytest.mark.full
@pytest.mark.slow
@pytest.mark.exclusive_ray
@pytest.mark.usefixtures("ftharness_exclusive")
@pytest.mark.parametrize("bug", BUGS, ids=[b.id for b in BUGS])
def test_the_script_agrees_with_the_corpus_on_the_installed_release(bug, tmp_path):
    installed = releases.installed()
    if installed not in releases.ALL_RELEASES:
        pytest.skip(f"Ray {installed} is not a supported release")
    r = subprocess.run([sys.executable, "-P", bug.repro_path], capture_output=True, text=True, cwd=str(tmp_path),
                       timeout=540)
    line = next((ln for ln in reversed(r.stdout.splitlines()) if ln.startswith(bug.id + ":")), "")
    want = 2 if bug.expectation(installed) is None else 0
    assert r.returncode == want and line, f"exit {r.returncode}: {line or r.stderr[-2000:]}"
