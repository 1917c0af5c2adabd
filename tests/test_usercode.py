"""A user's job of several modules reaches the workers (ftharness.harness.run.usercode):
what ships, what never does, the size bound, and real runs on the shared cluster."""

import os
import subprocess
import sys

import pytest

from conftest import REPO

DATA = os.path.join(REPO, "tests", "data")
MULTI = os.path.join(DATA, "multimodule", "scenario.yaml")
UNSHIPPABLE = os.path.join(DATA, "unshippable", "scenario.yaml")


def _scenario(tmp_path, text):
    from ftharness.scenarios.schema import load_scenario

    (tmp_path / "s.yaml").write_text(text)
    return load_scenario(str(tmp_path / "s.yaml"))


def test_ships_what_the_job_imports_and_never_the_rest():
    from ftharness.harness.run.runner import resolve_train_fn
    from ftharness.harness.run.usercode import units
    from ftharness.scenarios.schema import load_scenario

    s = load_scenario(MULTI)
    resolve_train_fn(s)   # imports trainjob, which imports mm_helpers and mmpkg
    assert sorted(os.path.basename(p) for p in units(s)) == ["mm_helpers.py", "mmpkg", "trainjob.py"]


def test_a_declared_working_dir_ships_whole_less_the_exclusions(tmp_path):
    from ftharness.harness.run.runner import resolve_train_fn
    from ftharness.harness.run.usercode import stage, units

    code = tmp_path / "code"
    for d in ("pkg", ".venv/lib", ".git", "results/run1", "__pycache__", "data"):
        (code / d).mkdir(parents=True)
    (code / "pkg" / "__init__.py").write_text("")
    (code / "job_wd.py").write_text("import pkg\n\ndef train(config):\n    pass\n")
    (code / "data" / "rows.csv").write_text("1\n")
    (code / "results" / "run1" / "summary.json").write_text("{}")
    (code / ".venv" / "lib" / "big.so").write_text("x")
    s = _scenario(tmp_path, "name: wd\nworkload: {entrypoint: 'job_wd:train', working_dir: code}\n")
    resolve_train_fn(s)   # imported from the code root, not the scenario's folder
    shipped = units(s)
    assert sorted(os.path.basename(p) for p in shipped) == ["data", "job_wd.py", "pkg"]
    dest = tmp_path / "staged"
    dest.mkdir()
    stage(shipped, str(dest))
    assert sorted(os.listdir(dest)) == ["data", "job_wd.py", "pkg"]


def test_a_results_folder_is_never_shipped(tmp_path):
    from ftharness.harness.run.usercode import excluded

    (tmp_path / "out").mkdir()
    assert not excluded("out", str(tmp_path / "out"))
    (tmp_path / "out" / "history.jsonl").write_text("")
    assert excluded("out", str(tmp_path / "out"))
    assert excluded("venv", str(tmp_path / "venv")) and excluded("x.egg-info", str(tmp_path / "x"))


def test_too_much_code_is_refused_in_one_line_naming_the_largest(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import check_size

    (tmp_path / "small.py").write_text("x = 1\n")
    (tmp_path / "weights").mkdir()
    (tmp_path / "weights" / "w.bin").write_bytes(b"\0" * 3000)
    assert check_size([str(tmp_path / "small.py")], limit=2000) == 6
    with pytest.raises(ScenarioError, match=r"weights alone") as e:
        check_size([str(tmp_path / "small.py"), str(tmp_path / "weights")], limit=2000)
    assert "\n" not in str(e.value)


def test_an_import_failure_is_named_and_other_errors_are_not_mine(tmp_path):
    from ftharness.harness.run.usercode import import_refusal

    s = _scenario(tmp_path, "name: x\nworkload: {entrypoint: 'j:train'}\n")
    why = import_refusal(RuntimeError("...ModuleNotFoundError: No module named 'vendored_helper'\n..."), s)
    assert why.startswith("workload.entrypoint: the workers cannot import 'vendored_helper'") and "\n" not in why
    assert import_refusal(RuntimeError("CUDA out of memory"), s) is None


@pytest.mark.cluster
@pytest.mark.full   # (per merge, the Transformers and LightGBM examples ship their job by the same route)
def test_a_job_of_several_modules_runs_on_the_workers(ftharness_run, tmp_path):
    """A package with submodules (one imported only on the workers) and a sibling module;
    a worker killed and restarted imports them again."""
    s = ftharness_run(MULTI)
    assert s["verdict"] == "PASS", (s.get("error"), s["mismatches"], s["inconclusive"])
    assert s["outcome"] == "succeeded"


@pytest.mark.cluster
def test_a_job_the_workers_cannot_import_is_refused_naming_the_module(ftharness_run, tmp_path):
    from ftharness.errors import ScenarioError

    out = tmp_path / "out"
    with pytest.raises(ScenarioError, match=r"the workers cannot import 'vendored_helper'"):
        ftharness_run(UNSHIPPABLE, out=str(out))
    assert not (out / "history.jsonl").exists() and not (out / "summary.json").exists()


@pytest.mark.slow
@pytest.mark.full
def test_the_cli_says_one_line_and_exits_2_for_a_job_the_workers_cannot_import(tmp_path):
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness.harness.frontends.cli", "run", UNSHIPPABLE,
                        "--out", str(tmp_path / "out"), "--quiet"],
                       capture_output=True, text=True, timeout=600, cwd=str(tmp_path))
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("ftharness: error")]
    assert r.returncode == 2, r.stderr[-2000:]
    assert len(lines) == 1 and "vendored_helper" in lines[0], r.stderr[-2000:]
