"""`ftharness init` (pure, no Ray): the files it writes are docs/ci.md's own layout and recipes, the
scenario passes `validate`, and bad input is one line, exit 2, with nothing written."""

import os
import re

import pytest

from conftest import REPO, run_cli

from ftharness.harness.frontends import starter
from ftharness.harness.frontends.cli import main

CI_PAGE = os.path.join(REPO, "docs", "ci.md")
JOB = "def train_func(config):\n    pass\n"


def recipe(heading):
    """The first ```yml block under a heading of docs/ci.md: a CI recipe."""
    text = open(CI_PAGE).read()
    return re.search(r"```yml\n(.*?)```", text[text.index(f"\n{heading}\n"):], re.S).group(1)


def shown_scenario():
    """The starter scenario as docs/ci.md shows it."""
    return next(b for b in re.findall(r"```yaml\n(.*?)```", open(CI_PAGE).read(), re.S)
                if b.startswith("# A starter chaos scenario"))


def tree(root):
    """Every file under root (relative), with its text: what a refusal must leave as it was."""
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            out[os.path.relpath(p, root)] = open(p).read()
    return out


def test_default_writes_the_reference_scenario_and_the_docs_github_recipe(tmp_path):
    r = run_cli("init", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[:2] == ["wrote chaos/kill-worker.yaml", "wrote .github/workflows/chaos.yml"]
    assert sorted(tree(tmp_path)) == [".github/workflows/chaos.yml", "chaos/kill-worker.yaml"]
    assert (tmp_path / ".github/workflows/chaos.yml").read_text() == recipe("## GitHub Actions")
    scenario = (tmp_path / "chaos/kill-worker.yaml").read_text()
    assert "entrypoint" not in scenario and "kind: kill_worker" in scenario
    v = run_cli("validate", "chaos", cwd=tmp_path)
    assert v.returncode == 0 and v.stdout.strip() == "ok chaos/kill-worker.yaml", v.stdout + v.stderr


def test_a_train_function_in_the_folder_and_the_docs_gitlab_recipe(tmp_path):
    (tmp_path / "chaos").mkdir()
    (tmp_path / "chaos/job.py").write_text(JOB)
    r = run_cli("init", "--train", "job:train_func", "--ci", "gitlab", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "chaos/job.py").read_text() == JOB   # the folder's other files stay
    assert (tmp_path / ".gitlab-ci.yml").read_text() == recipe("## GitLab CI")
    scenario = (tmp_path / "chaos/kill-worker.yaml").read_text()
    assert scenario == shown_scenario()   # what docs/ci.md shows
    v = run_cli("validate", "chaos", cwd=tmp_path)
    assert v.returncode == 0, v.stdout + v.stderr


def test_an_installed_module_and_a_nested_folder(tmp_path):
    pkg = tmp_path / "site" / "yourpkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(JOB)
    env = {"PYTHONPATH": str(tmp_path / "site")}
    r = run_cli("init", "ml/chaos", "--train", "yourpkg.train:train_func", cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    ci = (tmp_path / ".github/workflows/chaos.yml").read_text()
    assert "run: ftharness validate ml/chaos\n" in ci and "ftharness suite ml/chaos --out" in ci
    assert ci.count("ml/chaos") == 3 and "results/chaos" in ci   # only the scenarios' folder changes
    assert "entrypoint: yourpkg.train:train_func" in (tmp_path / "ml/chaos/kill-worker.yaml").read_text()
    v = run_cli("validate", "ml/chaos", cwd=tmp_path, env=env)
    assert v.returncode == 0, v.stdout + v.stderr


def test_a_refusal_is_one_line_exit_2_and_writes_nothing(tmp_path):
    r = run_cli("init", "--train", "nosuchmodule:train_func", cwd=tmp_path)
    assert r.returncode == 2 and r.stdout == ""
    [line] = r.stderr.splitlines()
    assert line.startswith("ftharness: error: --train: no module named 'nosuchmodule' in ")
    assert line.endswith("chaos or on the Python path")
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("setup, argv, field", [
    ({}, ["--train", "job"], "--train: 'job' must be 'module:function'"),
    ({"chaos/job.py": JOB}, ["--train", "job:nope"], "has no function 'nope'"),
    ({}, ["--train", "job:f" + "x" * 300], "--train: 305 characters, at most 200"),
    ({}, ["--ci", "circle"], "argument --ci: invalid choice: 'circle'"),
    ({"chaos": "a file"}, [], "DIR chaos: is a file, not a folder"),
    ({}, ["../elsewhere"], "DIR ../elsewhere: outside the current folder"),
    ({}, ["my chaos"], "DIR my chaos: a CI file names it in a shell line"),
    ({"chaos/kill-worker.yaml": "mine\n"}, [], "chaos/kill-worker.yaml: already exists; --force overwrites it"),
    ({".gitlab-ci.yml": "mine\n"}, ["--ci", "gitlab"], ".gitlab-ci.yml: already exists; --force overwrites it"),
])
def test_bad_input_is_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, setup, argv, field):
    for path, text in setup.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    before = tree(tmp_path)
    monkeypatch.chdir(tmp_path)
    try:
        code = main(["init", *argv])
    except SystemExit as e:   # argparse's refusals
        code = e.code
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and len(err) == 1 and field in err[0], err
    assert tree(tmp_path) == before and sorted(os.listdir(tmp_path)) == sorted(
        {p.split("/")[0] for p in setup})


def test_force_overwrites_and_without_a_ci_file_any_folder_goes(tmp_path, monkeypatch, capsys):
    repo = tmp_path / "repo"
    (repo / "chaos").mkdir(parents=True)
    (repo / "chaos/kill-worker.yaml").write_text("mine\n")
    monkeypatch.chdir(repo)
    assert main(["init", "--force"]) == 0
    assert (repo / "chaos/kill-worker.yaml").read_text().startswith("# A starter chaos scenario")
    assert main(["init", "../outside", "--ci", "none"]) == 0   # no CI file: no repository root to be inside
    assert os.listdir(tmp_path / "outside") == ["kill-worker.yaml"]
    assert "wrote ../outside/kill-worker.yaml" in capsys.readouterr().out


@pytest.mark.parametrize("error", [OSError(28, "No space left on device"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_write_leaves_nothing_new(tmp_path, monkeypatch, error):
    files = starter.plan(str(tmp_path / "a" / "chaos"), None, "github", False, root=str(tmp_path))
    real, calls = os.replace, []

    def replace_once(src, dst):   # the second file cannot be moved in: the first must go again
        calls.append(dst)
        if len(calls) == 2:
            raise error
        real(src, dst)

    monkeypatch.setattr(os, "replace", replace_once)
    with pytest.raises(type(error)):
        starter.write(files)
    assert os.listdir(tmp_path) == [] and len(calls) == 2
