"""What ships to the workers is bounded by what is copied (ftharness.harness.run.usercode, issue 49
item 7) and carries the job's declared data (`workload.files`, issue 51 item 2): real files,
real symlinks, real copies; after every refusal nothing is left in the temp folders."""

import json
import os
import time

import pytest

JOB = ("from pathlib import Path\n\nimport yaml\n\nHERE = Path(__file__).parent\n\n\n"
       "def train(config):\n    pass\n")


def _scenario(folder, workload):
    from ftharness.scenarios.schema import load_scenario

    (folder / "s.yaml").write_text(f"name: s\nworkload: {{entrypoint: 'job:train', {workload}}}\n")
    return load_scenario(str(folder / "s.yaml"))


def _home(tmp_path, job=JOB):
    home = tmp_path / "home"
    home.mkdir()
    (home / "job.py").write_text(job)
    return home


@pytest.fixture
def temp(tmp_path, monkeypatch):
    """A temp dir of its own for the code under test: what it leaves there is seen."""
    import tempfile

    folder = tmp_path / "tmpdir"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _one_line(error, *words):
    text = str(error)
    assert "\n" not in text and len(text) < 400, text
    for w in words:
        assert w in text, text


def _staged(scenario, dest, replay=False):
    from ftharness.harness.run.usercode import ship

    ship(scenario, str(dest), replay=replay)
    return sorted(os.path.relpath(os.path.join(d, n), dest) for d, ds, fs in os.walk(dest) for n in fs + ds)


# ------------------------------------------------------------------ links and loops
def test_two_links_to_dot_inside_a_package_are_a_loop_refused_at_once(tmp_path, temp):
    """The issue's case: `pkg/a -> .` and `pkg/b -> .` measured 28 bytes and copied past 1 GB."""
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import copy_items, shipment, Rules

    home = _home(tmp_path)
    (home / "pkg").mkdir()
    (home / "pkg" / "__init__.py").write_text("")
    os.symlink(".", home / "pkg" / "a")
    os.symlink(".", home / "pkg" / "b")
    s = _scenario(home, "working_dir: .")
    t0 = time.monotonic()
    with pytest.raises(ScenarioError) as e:
        shipment(s)
    assert time.monotonic() - t0 < 5
    _one_line(e.value, "workload.working_dir:", "symlink loop", "pkg/a")
    dest = temp / "dest"
    with pytest.raises(ScenarioError, match="symlink loop"):   # the copy itself refuses it too
        copy_items([(str(home / "pkg"), "pkg", "workload")], str(dest), str(home), Rules())
    assert os.listdir(temp) == []


def test_a_link_to_an_ancestor_deeper_down_is_a_loop(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import check_size

    pkg = tmp_path / "pkg" / "sub" / "deeper"
    pkg.mkdir(parents=True)
    os.symlink("../..", pkg / "up")
    with pytest.raises(ScenarioError, match="symlink loop"):
        check_size([str(tmp_path / "pkg")])


def test_a_link_out_of_the_scenario_folder_is_refused_and_nothing_is_left(tmp_path, temp):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import copy_items, Rules

    home = _home(tmp_path)
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "credentials").write_text("aws_secret_access_key = x\n")
    (home / "pkg").mkdir()
    (home / "pkg" / "__init__.py").write_text("x = 1\n")
    (home / "pkg" / "zz").mkdir()
    (home / "pkg" / "zz" / "data.txt").write_text("x")
    os.symlink(tmp_path / "outside", home / "pkg" / "zz" / "creds")
    dest = temp / "dest"
    with pytest.raises(ScenarioError) as e:
        copy_items([(str(home / "pkg"), "pkg", "workload")], str(dest), str(home), Rules())
    _one_line(e.value, "symlink out of the scenario's folder", "creds")
    assert not dest.exists() and os.listdir(temp) == []   # pkg/__init__.py was copied first: removed


def test_a_link_inside_the_folder_ships_what_it_points_at_and_a_dangling_one_nothing(tmp_path):
    home = _home(tmp_path)
    (home / "shared").mkdir()
    (home / "shared" / "vocab.txt").write_text("a b c\n")
    (home / "code").mkdir()
    (home / "code" / "job.py").write_text(JOB)
    os.symlink("../shared", home / "code" / "shared")
    os.symlink("nowhere@host.123", home / "code" / ".#job.py")   # an editor's lock file
    s = _scenario(home, "working_dir: code")
    got = _staged(s, tmp_path / "dest")
    assert got == ["job.py", "shared", os.path.join("shared", "vocab.txt")]
    assert not os.path.islink(tmp_path / "dest" / "shared")   # a copy, never a link the upload would follow


def test_a_fifo_is_refused_never_read(tmp_path, temp):
    from ftharness.errors import ScenarioError

    home = _home(tmp_path)
    (home / "code").mkdir()
    (home / "code" / "job.py").write_text(JOB)
    os.mkfifo(home / "code" / "pipe")
    s = _scenario(home, "working_dir: code")
    with pytest.raises(ScenarioError, match="not a regular file or folder"):
        _staged(s, temp / "dest")
    assert os.listdir(temp) == []


# ------------------------------------------------------------------ credentials
CREDENTIALS = [".netrc", "id_rsa", "id_ed25519.pub", ".aws/credentials", ".ssh/config", "server.pem", "tls.key",
               ".env", ".env.local", ".pypirc", ".docker/config.json", ".kube/config", "credentials.json",
               ".npmrc", ".gnupg/pubring.kbx", "pkg/.netrc", "pkg/deploy/id_ecdsa"]


def test_credential_files_and_folders_never_ship_from_a_working_dir(tmp_path):
    home = _home(tmp_path)
    code = home / "code"
    for rel in CREDENTIALS + ["job.py", "id_map.py", "pkg/__init__.py", "pkg/model.py", "data/rows.csv"]:
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text(JOB if rel == "job.py" else "x\n")
    s = _scenario(home, "working_dir: code")
    got = _staged(s, tmp_path / "dest")
    assert got == ["data", os.path.join("data", "rows.csv"), "id_map.py", "job.py", "pkg",
                   os.path.join("pkg", "__init__.py"), os.path.join("pkg", "deploy"), os.path.join("pkg", "model.py")]


def test_ship_include_forces_a_name_and_ship_exclude_adds_one(tmp_path):
    from ftharness.harness.run.usercode import units

    home = _home(tmp_path)
    code = home / "code"
    for rel in ("job.py", "build/__init__.py", "weights.ckpt", "pkg/__init__.py", "pkg/old.ckpt", ".netrc"):
        (code / rel).parent.mkdir(parents=True, exist_ok=True)
        (code / rel).write_text("x\n")
    s = _scenario(home, "working_dir: code, ship_include: [build], ship_exclude: ['*.ckpt']")
    assert sorted(os.path.basename(p) for p in units(s)) == ["build", "job.py", "pkg"]
    got = _staged(s, tmp_path / "dest")
    assert got == ["build", os.path.join("build", "__init__.py"), "job.py", "pkg", os.path.join("pkg", "__init__.py")]


@pytest.mark.parametrize("workload, field", [
    ("ship_include: ['a/b']", "workload.ship_include"), ("ship_exclude: ['']", "workload.ship_exclude"),
    ("ship_exclude: [x], ship_include: [x]", "workload.ship_include"),
    ("files: ['../x']", "workload.files"), ("files: ['/etc/passwd']", "workload.files"),
    ("files: ['configs/../../x']", "workload.files"), ("files: ['~/.aws']", "workload.files")])
def test_bad_ship_fields_are_one_line_naming_the_field(tmp_path, workload, field):
    from ftharness.errors import ScenarioError

    with pytest.raises(ScenarioError) as e:
        _scenario(_home(tmp_path), workload)
    _one_line(e.value, field)


def test_the_reference_workload_takes_no_files(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.scenarios.schema import parse_scenario

    with pytest.raises(ScenarioError, match="only for an entrypoint workload"):
        parse_scenario({"name": "r", "workload": {"files": ["x"]}}, base_dir=str(tmp_path))


# ------------------------------------------------------------------ bounds, counted as copied
def test_the_byte_bound_is_hit_on_the_copy_one_line_naming_the_field_and_the_bound(tmp_path, temp):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import copy_items, Rules

    (tmp_path / "data").mkdir()
    for i in range(5):
        (tmp_path / "data" / f"part{i}.bin").write_bytes(b"\0" * 3000)
    dest = temp / "dest"
    with pytest.raises(ScenarioError) as e:
        copy_items([(str(tmp_path / "data"), "data", "workload.files")], str(dest), str(tmp_path), Rules(),
                   max_bytes=10_000)
    _one_line(e.value, "workload.files:", "passed 10,000 bytes", "at most 10,000 bytes", "counted as copied")
    assert os.listdir(temp) == []


def test_the_entry_bound_is_hit_on_the_copy(tmp_path, temp):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import copy_items, Rules

    (tmp_path / "many").mkdir()
    for i in range(30):
        (tmp_path / "many" / f"m{i}.py").write_text("")
    with pytest.raises(ScenarioError) as e:
        copy_items([(str(tmp_path / "many"), "many", "workload.working_dir")], str(temp / "d"), str(tmp_path), Rules(),
                   max_entries=20)
    _one_line(e.value, "workload.working_dir:", "passed 20 files and folders", "at most 20")
    assert os.listdir(temp) == []


def test_a_refused_run_leaves_no_staging_folder(tmp_path, temp):
    """runtime_env and --submit's working dir stage in the temp dir: a refusal removes it."""
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.submit import working_dir
    from ftharness.harness.run.usercode import runtime_env

    home = _home(tmp_path)
    (home / "code").mkdir()
    (home / "code" / "job.py").write_text(JOB)
    os.symlink(".", home / "code" / "again")
    s = _scenario(home, "working_dir: code")
    for call in (runtime_env, working_dir):
        with pytest.raises(ScenarioError, match="symlink loop"):
            call(s)
        assert os.listdir(temp) == [], call


# ------------------------------------------------------------------ workload.files
def _data_home(tmp_path):
    home = _home(tmp_path)
    for rel in ("configs/x.yaml", "configs/y.yaml", "configs/.hidden.yaml", "configs/notes.txt",
                "data/a/rows.csv", "data/b/rows.csv", "data/.venv/lib.py", "data/secret.pem", "big/skip.bin"):
        (home / rel).parent.mkdir(parents=True, exist_ok=True)
        (home / rel).write_text("k: 1\n")
    return home


def test_files_globs_ship_beside_the_code_and_leave_out_what_never_ships(tmp_path):
    from ftharness.harness.run.usercode import shipment

    home = _data_home(tmp_path)
    s = _scenario(home, "files: ['configs/*.yaml', 'data/**/*.csv', data/a]")
    s_items = {rel: field for _src, rel, field in shipment(s)}
    assert s_items == {"job.py": "workload", os.path.join("configs", "x.yaml"): "workload.files",
                       os.path.join("configs", "y.yaml"): "workload.files", os.path.join("data", "a"): "workload.files",
                       os.path.join("data", "b", "rows.csv"): "workload.files"}   # data/a/rows.csv: in data/a
    got = _staged(s, tmp_path / "dest")
    assert got == ["configs", os.path.join("configs", "x.yaml"), os.path.join("configs", "y.yaml"), "data",
                   os.path.join("data", "a"), os.path.join("data", "a", "rows.csv"), os.path.join("data", "b"),
                   os.path.join("data", "b", "rows.csv"), "job.py"]


@pytest.mark.parametrize("pattern, words", [
    ("configs/missing.yaml", ["nothing beside the scenario matches it"]),
    ("nowhere/*.csv", ["nothing beside the scenario matches it"]),
    ("data/secret.pem", ["never shipped", "workload.ship_include"]),
    ("out-link/x", ["symlink out of the scenario's folder"]),
    ("out-file", ["symlink out of the scenario's folder"])])
def test_files_that_name_nothing_or_leave_the_folder_are_refused(tmp_path, pattern, words):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import declared_files

    home = _data_home(tmp_path)
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x").write_text("secret")
    os.symlink(tmp_path / "elsewhere", home / "out-link")
    os.symlink(tmp_path / "elsewhere" / "x", home / "out-file")
    s = _scenario(home, f"files: ['{pattern}']")
    with pytest.raises(ScenarioError) as e:
        declared_files(s)
    _one_line(e.value, "workload.files:", pattern, *words)


def test_files_outside_the_declared_working_dir_are_refused(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.usercode import declared_files

    home = _data_home(tmp_path)
    (home / "code").mkdir()
    (home / "code" / "job.py").write_text(JOB)
    (home / "code" / "configs").mkdir()
    (home / "code" / "configs" / "z.yaml").write_text("z: 1\n")
    assert declared_files(_scenario(home, "working_dir: code, files: ['code/configs/*.yaml']")) == \
        [str(home / "code" / "configs" / "z.yaml")]
    with pytest.raises(ScenarioError) as e:
        declared_files(_scenario(home, "working_dir: code, files: [configs/x.yaml]"))
    _one_line(e.value, "workload.files:", "outside workload.working_dir (code)")


def test_validate_refuses_a_declared_file_that_is_not_there(tmp_path):
    import subprocess
    import sys

    home = _data_home(tmp_path)
    (home / "s.yaml").write_text("name: s\nworkload: {entrypoint: 'job:train', files: [configs/train.yaml]}\n")
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "validate", str(home / "s.yaml")],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 2 and "workload.files: configs/train.yaml: nothing beside the scenario" in r.stderr, r.stderr
    (home / "s.yaml").write_text("name: s\nworkload: {entrypoint: 'job:train', files: [configs/x.yaml]}\n")
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "validate", str(home / "s.yaml")],
                       capture_output=True, text=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------ every folder a replay runs from
def test_submit_working_dir_carries_the_files_laid_out_as_the_folder(tmp_path):
    import shutil

    from ftharness.harness.run.submit import working_dir
    from ftharness.scenarios.schema import load_scenario

    home = _data_home(tmp_path)
    (home / "code").mkdir()
    (home / "code" / "job.py").write_text(JOB)
    (home / "code" / "configs").mkdir()
    (home / "code" / "configs" / "z.yaml").write_text("z: 1\n")
    (home / "code" / ".netrc").write_text("machine x password y\n")
    s = _scenario(home, "working_dir: code, files: ['code/configs/z.yaml']")
    wd = working_dir(s)
    try:
        got = sorted(os.path.relpath(os.path.join(d, n), wd) for d, ds, fs in os.walk(wd) for n in fs)
        assert got == [os.path.join("code", "configs", "z.yaml"), os.path.join("code", "job.py"), "scenario.yaml"]
        again = load_scenario(os.path.join(wd, "scenario.yaml"))   # the head's run finds the same files
        from ftharness.harness.run.usercode import declared_files

        assert declared_files(again) == [os.path.join(wd, "code", "configs", "z.yaml")]
    finally:
        shutil.rmtree(wd)


def test_an_explore_finding_folder_gets_the_code_and_the_files(tmp_path):
    from types import SimpleNamespace

    from ftharness.harness.run.explore import Explorer
    from ftharness.scenarios.schema import load_scenario

    home = _data_home(tmp_path)
    (home / "helpers.py").write_text("X = 1\n")
    base = _scenario(home, "files: ['configs/x.yaml', data]")
    out = tmp_path / "out"
    (out / "findings").mkdir(parents=True)
    said = []
    fake = SimpleNamespace(base=base, out=str(out), say=said.append)
    Explorer._copy_modules(fake, str(out / "findings"))
    got = sorted(os.path.relpath(os.path.join(d, n), out / "findings")
                 for d, ds, fs in os.walk(out / "findings") for n in fs)
    assert got == [os.path.join("configs", "x.yaml"), os.path.join("data", "a", "rows.csv"),
                   os.path.join("data", "b", "rows.csv"), "job.py"], said
    assert not said
    (out / "findings" / "finding-x.yaml").write_text((home / "s.yaml").read_text())
    from ftharness.harness.run.usercode import shipment

    replayed = load_scenario(str(out / "findings" / "finding-x.yaml"))
    assert sorted(rel for _s, rel, _f in shipment(replayed)) == [os.path.join("configs", "x.yaml"), "data", "job.py"]


def test_a_matrix_cell_ships_the_files_of_the_scenarios_folder(tmp_path):
    """A cell's scenario.yaml lives in the matrix folder; its run is given --scenario-dir (the
    scenario's own folder), where the files are found (harness/matrix/runner.py)."""
    from ftharness.harness.run.usercode import declared_files
    from ftharness.scenarios.schema import load_scenario, parse_scenario, scenario_data

    home = _data_home(tmp_path)
    cell = tmp_path / "matrix" / "cells" / "c1"
    cell.mkdir(parents=True)
    (cell / "scenario.yaml").write_text("name: s\nworkload: {entrypoint: 'job:train', files: [configs/x.yaml]}\n")
    copy = load_scenario(str(cell / "scenario.yaml"))   # loads: the files are looked up when shipped
    s = parse_scenario(scenario_data(copy), base_dir=str(home))   # as cmd_run does with --scenario-dir
    assert declared_files(s) == [str(home / "configs" / "x.yaml")]


# ------------------------------------------------------------------ --resume's own storage
def test_resume_refuses_a_storage_link_out_of_the_folder(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.runner import check_resume
    from ftharness.scenarios.schema import parse_scenario

    s = parse_scenario({"name": "s", "workload": {"steps": 6}}, base_dir=str(tmp_path))
    prev = tmp_path / "prev"
    prev.mkdir()
    (tmp_path / "victim").mkdir()
    (prev / "summary.json").write_text(json.dumps({"run_name": "s-1", "storage_path": str(prev / "storage")}))
    os.symlink(tmp_path / "victim", prev / "storage")
    with pytest.raises(ScenarioError) as e:
        check_resume(str(prev), s)
    _one_line(e.value, "--resume", "storage/ is a symlink out of the folder")
    os.unlink(prev / "storage")
    (prev / "storage").mkdir()
    assert check_resume(str(prev), s) == os.path.realpath(prev / "storage")


# ------------------------------------------------------------------ a real run
HELPERS = """from pathlib import Path

import yaml

HERE = Path(__file__).parent   # on a worker: the shipped package, never the worker's cwd


def load_config():
    with open(HERE / "configs" / "x.yaml") as f:
        return yaml.safe_load(f)
"""

SHIPPED_JOB = """import os
import tempfile
import time

import helpers
from helpers import load_config


def train(config):
    import ray.train

    # the helper runs on the worker from the shipped package (this module goes by value: a name
    # bound here, `from helpers import HERE`, would keep the driver's path)
    assert os.path.realpath(helpers.HERE) != os.path.realpath(config["home"]), helpers.HERE
    settings = load_config()
    start = 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            start = int(open(os.path.join(d, "step")).read())
    for step in range(start, settings["steps"]):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "step"), "w") as f:
                f.write(str(step + 1))
            ray.train.report({"loss": settings["lr"] / (step + 1), "step": step + 1},
                             checkpoint=ray.train.Checkpoint.from_directory(d))
        time.sleep(0.2)
"""


@pytest.mark.cluster
def test_a_job_reads_its_config_shipped_by_workload_files(ftharness_run, tmp_path):
    """The job's config reaches the workers only through workload.files: the helper module that
    reads it is imported on the worker from the shipped package, not from the scenario's folder,
    and again by the restarted group after a worker is killed (a node's first use of the package
    once removed it under the other nodes' workers: usercode.runtime_env)."""
    home = tmp_path / "home"
    (home / "configs").mkdir(parents=True)
    (home / "configs" / "x.yaml").write_text("lr: 0.5\nsteps: 5\n")
    (home / "helpers.py").write_text(HELPERS)
    (home / "job.py").write_text(SHIPPED_JOB)
    (home / "s.yaml").write_text(
        "name: ship-files\ncluster: {nodes: 3, cpus_per_node: 1}\n"
        f"workload: {{entrypoint: 'job:train', files: [configs/x.yaml], num_workers: 2, "
        f"train_loop_config: {{home: '{home}'}}}}\n"
        "failure_config: {max_failures: 1}\n"
        "faults:\n  - {kind: kill_worker, target: {rank: 1}, at: {step: 2}}\n")
    s = ftharness_run(str(home / "s.yaml"))
    assert s["verdict"] == "PASS", (s.get("error"), s["mismatches"], s["inconclusive"])
    assert s["outcome"] == "succeeded"
