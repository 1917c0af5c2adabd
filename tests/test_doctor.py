"""`ftharness doctor`: every rule fires exactly where the corpus marks it, and nowhere else.

Each file under tests/data/doctor marks the findings it must produce with a trailing
`# expect: rule-id[, rule-id]` on the exact line; the correct scripts (ok_*.py) mark none.
The files are parsed, never imported or run (no Ray).
"""

import ast
import glob
import json
import os
import re
import sys

import pytest

from conftest import REPO, run_cli
from ftharness.harness.doctor import RULES, analyse, python_files
from ftharness.harness.frontends.cli import main

CORPUS = os.path.join(os.path.dirname(__file__), "data", "doctor")
FILES = python_files([CORPUS])
EXPECT = re.compile(r"#\s*expect:\s*([\w\-, ]+)$")


def expected(path):
    marks = set()
    with open(path) as f:
        for line_no, line in enumerate(f, 1):
            if (m := EXPECT.search(line.rstrip())):
                marks |= {(line_no, r.strip()) for r in m.group(1).split(",") if r.strip()}
    return marks


@pytest.fixture(scope="module")
def findings():
    return analyse([CORPUS])  # together: a driver's trainer may use another file's train function


@pytest.mark.parametrize("path", FILES, ids=lambda p: os.path.relpath(p, CORPUS))
def test_findings_are_exactly_the_expect_markers(findings, path):
    got = {(f.line, f.rule) for f in findings if f.file == path}
    assert sorted(got) == sorted(expected(path))


def test_every_rule_fires_somewhere_in_the_corpus():
    marked = {rule for p in FILES for _, rule in expected(p)}
    # the release-* rules fire for other releases than the installed one: tests/test_doctor_releases.py
    assert {r for r in RULES if not r.startswith("release-")} - marked == set()
    assert marked - set(RULES) == set(), "a marker names no rule"


def test_the_correct_scripts_have_no_finding():
    ok = [p for p in FILES if os.path.basename(p).startswith("ok_")]
    assert len(ok) >= 3 and analyse(ok) == []


def test_every_rule_has_a_severity_why_and_fix():
    for r in RULES.values():
        assert r.severity in ("error", "warning", "info") and r.why and r.fix


def test_exit_codes(capsys):
    assert main(["doctor", os.path.join(CORPUS, "ok_torch.py"), os.path.join(CORPUS, "ok_xgboost.py")]) == 0
    assert "no findings in 2 files" in capsys.readouterr().out
    assert main(["doctor", os.path.join(CORPUS, "storage.py")]) == 0  # warnings only
    assert main(["doctor", os.path.join(CORPUS, "run_name.py")]) == 0  # info only
    assert main(["doctor", os.path.join(CORPUS, "failure_config.py")]) == 1
    capsys.readouterr()
    assert main(["doctor", os.path.join(CORPUS, "no-such-file.py")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no-such-file.py: no such file or directory" in err[0]
    assert main(["doctor"]) == 2


def test_an_unreported_checkpoint_and_a_fixed_restore_path_are_errors(capsys):
    """Issue 22, seen 8: each silently voids fault tolerance, so doctor exits 1 on them (they were
    warnings, exit 0); the example job with the classic mistake is one of them."""
    for name, rule in (("unreported_checkpoint.py", "checkpoint-not-reported"),
                       ("fixed_restore.py", "fixed-restore-path")):
        path = os.path.join(CORPUS, name)
        assert RULES[rule].severity == "error"
        assert main(["doctor", path]) == 1
        assert f"{rule} error:" in capsys.readouterr().out
    example = os.path.join(REPO, "examples", "unreported_checkpoint_job.py")
    assert main(["doctor", example]) == 1
    assert "checkpoint-not-reported error" in capsys.readouterr().out


def test_the_near_misses_of_both_errors_exit_zero(tmp_path, capsys):
    """The corpus' near_miss_* functions alone (input weights, a report of the directory, a
    serialisation into memory): no error, so doctor exits 0."""
    parts = []
    for name in ("unreported_checkpoint.py", "fixed_restore.py"):
        tree = ast.parse(open(os.path.join(CORPUS, name)).read())
        parts += [ast.unparse(n) for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                  or (isinstance(n, ast.FunctionDef) and n.name.startswith("near_miss_"))]
    (tmp_path / "near.py").write_text("\n\n".join(parts) + "\n")
    found = analyse([str(tmp_path)])
    assert {f.rule for f in found} == {"no-restore"}  # the pretrained-only job: a warning, not a restore
    assert main(["doctor", str(tmp_path / "near.py")]) == 0


def test_human_output_names_file_line_rule_severity_then_why_fix_and_a_summary(capsys):
    path = os.path.join(CORPUS, "failure_config.py")
    main(["doctor", path])
    out = capsys.readouterr().out.splitlines()
    assert out[0] == (f"{path}:12: max-failures-default error: FailureConfig() leaves max_failures "
                      "at its default 0: no worker failure is retried")
    assert out[1].startswith("    why: ") and out[2].startswith("    fix: ")
    assert out[-1] == "11 findings (7 errors, 2 warnings, 2 info) in 1 of 1 file"
    assert len(out) == 1 + 3 * 11


def test_json_is_a_list_of_findings(capsys):
    assert main(["doctor", "--json", os.path.join(CORPUS, "datasets.py")]) == 1
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) == 2
    for item in data:
        assert set(item) == {"file", "line", "col", "rule", "severity", "message", "why", "fix"}
        assert item["rule"] == "dataset-shard-without-datasets" and item["severity"] == "error"
        assert isinstance(item["line"], int) and isinstance(item["col"], int) and item["col"] >= 1
    assert main(["doctor", "--json", os.path.join(CORPUS, "ok_lightning.py")]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_a_file_that_does_not_parse_is_one_finding(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("def f(:\n")
    binary = tmp_path / "binary.py"
    binary.write_bytes(b"\x00\xff\xfe garbage")
    found = analyse([str(tmp_path)])
    assert [(f.file, f.rule) for f in found] == [(str(bad), "syntax"), (str(binary), "syntax")]
    assert main(["doctor", str(tmp_path)]) == 1
    assert "Traceback" not in capsys.readouterr().err


def test_folders_are_walked_for_python_files(tmp_path):
    (tmp_path / "pkg" / "sub").mkdir(parents=True)
    (tmp_path / ".hidden").mkdir()
    script = "from ray.train import FailureConfig\nFailureConfig()\n"
    for rel in ("a.py", "pkg/b.py", "pkg/sub/c.py", ".hidden/d.py", "pkg/notes.txt"):
        (tmp_path / rel).write_text(script)
    files = sorted(os.path.relpath(f.file, tmp_path) for f in analyse([str(tmp_path)]))
    assert files == ["a.py", os.path.join("pkg", "b.py"), os.path.join("pkg", "sub", "c.py")]


def test_names_resolve_through_imports_only(tmp_path):
    code = ("import ray.train as rt\nfrom ray.train import FailureConfig as FC\n"
            "def FailureConfig(): pass\n"          # the user's own, not Ray's
            "FailureConfig()\n"
            "rt.FailureConfig()\n"                 # line 5
            "FC(max_failures=0)\n")                # line 6
    (tmp_path / "names.py").write_text(code)
    assert [(f.line, f.rule) for f in analyse([str(tmp_path)])] == [
        (5, "max-failures-default"), (6, "max-failures-default")]


def test_list_rules_prints_every_rule_with_its_severity():
    r = run_cli("doctor", "--list-rules", timeout=60)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert [l.split()[0] for l in lines] == list(RULES)
    for line, rule in zip(lines, RULES.values()):
        assert line.split()[1] == rule.severity and len(line.split()) > 3


def test_the_cli_runs_doctor_in_a_child_process():
    path = os.path.join(CORPUS, "v1_api.py")
    r = run_cli("doctor", path, timeout=60)
    n = len(expected(path))
    assert r.returncode == 1 and r.stdout.splitlines()[-1] == f"{n} findings ({n} errors) in 1 of 1 file"


def test_the_doctor_imports_only_the_standard_library_and_harness_errors():
    """It must run where Ray is not installed, and never import the user's code."""
    paths = glob.glob(os.path.join(REPO, "harness", "doctor", "*.py"))
    assert paths
    for path in paths:
        for node in ast.walk(ast.parse(open(path).read())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                assert (name.partition(".")[0] in sys.stdlib_module_names
                        or name in ("ftharness.errors", "ftharness.releases",   # both plain data
                                    "ftharness.inputs")   # the bounded reader: the standard library only
                        or name.startswith("ftharness.harness.doctor")
                        or (name == "ftharness" and "releases" in ast.unparse(node))), f"{path}: imports {name}"
