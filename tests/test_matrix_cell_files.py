"""A matrix cell's folder is a replay's folder (issue 51): beside `cells/<id>/scenario.yaml` it
holds the job's modules (the entrypoint's and the neighbours it imports) and its declared
`workload.files`, laid out as the scenario's folder, copied as explore findings and `run
--submit` copy them (usercode.ship, replay); never an undeclared data file or a credential
file, never over the cell's own files. The cell's interpreter is a stand-in that exits 0: no
cluster starts."""

import importlib.util
import os

import yaml

from ftharness.harness.matrix.axes import Cell
from ftharness.harness.matrix.runner import MatrixOptions, run_cell
from ftharness.harness.run.usercode import declared_files
from ftharness.scenarios.schema import load_scenario


def job_folder(root, job, helpers, working_dir=None):
    """A user's chaos folder: `job` imports `helpers`, whose load_config reads configs/train.yaml
    beside itself; a data file, a note nobody declared and a credential file."""
    code = root / working_dir if working_dir else root
    (code / "configs").mkdir(parents=True)
    (code / "data").mkdir()
    (code / f"{job}.py").write_text(f"import {helpers}\n\n\ndef train_func(config):\n"
                                    f"    return {helpers}.load_config()\n")
    (code / f"{helpers}.py").write_text(
        "from pathlib import Path\n\nimport yaml\n\nHERE = Path(__file__).parent\n\n\n"
        "def load_config(path=HERE / 'configs' / 'train.yaml'):\n    with open(path) as f:\n"
        "        return yaml.safe_load(f)\n")
    (code / "configs" / "train.yaml").write_text("lr: 0.01\nsteps: 6\n")
    (code / "data" / "a.csv").write_text("x\n1\n")
    (code / "data" / "b.csv").write_text("x\n2\n")
    (code / "notes.txt").write_text("not declared\n")
    (code / ".env").write_text("TOKEN=sEcReT\n")
    prefix = f"{working_dir}/" if working_dir else ""
    data = {"name": "mine", "cluster": {"nodes": 3, "cpus_per_node": 1},
            "workload": {"entrypoint": f"{job}:train_func", "num_workers": 2,
                         "files": [f"{prefix}configs/train.yaml", f"{prefix}data/*.csv"],
                         **({"working_dir": working_dir} if working_dir else {})},
            "failure_config": {"max_failures": 1},
            "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 3}}]}
    source = root / "kill-worker.yaml"
    source.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(source), data


def stand_in(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    return str(fake)


def files_under(folder):
    return sorted(os.path.relpath(os.path.join(here, n), folder) for here, _, names in os.walk(folder) for n in names)


def test_a_cell_folder_holds_the_job_s_modules_and_declared_files_and_replays_from_them(tmp_path):
    source, data = job_folder(tmp_path / "repo", "mcf_job_a", "mcf_helpers_a")
    cell = Cell("mine", source, "2.60.0", {}, 1, data)
    said = []
    run_cell(cell, stand_in(tmp_path), MatrixOptions(out_dir=str(tmp_path / "m"), say=said.append))
    folder = tmp_path / "m" / "cells" / cell.cell_id
    assert files_under(folder) == ["configs/train.yaml", "data/a.csv", "data/b.csv", "log.txt",
                                   "mcf_helpers_a.py", "mcf_job_a.py", "scenario.yaml"], said
    assert not [line for line in said if "warning" in line]
    # the replay: the cell's scenario finds its declared files beside it, and the copied module
    # reads the copied config, not the user's
    replay = load_scenario(str(folder / "scenario.yaml"))
    assert [os.path.relpath(p, folder) for p in declared_files(replay)] == [
        "configs/train.yaml", "data/a.csv", "data/b.csv"]
    (tmp_path / "repo" / "configs" / "train.yaml").write_text("lr: 99\n")
    spec = importlib.util.spec_from_file_location("mcf_replayed", folder / "mcf_helpers_a.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.load_config() == {"lr": 0.01, "steps": 6}


def test_a_working_dir_keeps_its_place_and_the_cell_s_own_files_are_never_replaced(tmp_path):
    source, data = job_folder(tmp_path / "repo", "mcf_job_b", "mcf_helpers_b", working_dir="code")
    (tmp_path / "repo" / "code" / "log.txt").write_text("the user's own log\n")
    data["workload"]["files"].append("code/log.txt")
    cell = Cell("mine", source, "2.60.0", {}, 1, data)
    said = []
    run_cell(cell, stand_in(tmp_path), MatrixOptions(out_dir=str(tmp_path / "m"), say=said.append))
    folder = tmp_path / "m" / "cells" / cell.cell_id
    shipped = [p for p in files_under(folder) if p.startswith("code/")]
    assert shipped == ["code/configs/train.yaml", "code/data/a.csv", "code/data/b.csv", "code/log.txt",
                       "code/mcf_helpers_b.py", "code/mcf_job_b.py", "code/notes.txt"]   # a working_dir ships whole
    assert not any(".env" in p for p in files_under(folder))
    assert yaml.safe_load((folder / "scenario.yaml").read_text())["name"] == "mine"


def test_a_name_the_cell_uses_is_kept_and_said(tmp_path):
    source, data = job_folder(tmp_path / "repo", "mcf_job_c", "mcf_helpers_c")
    (tmp_path / "repo" / "scenario.yaml").write_text("name: the user's\n")
    data["workload"]["files"].append("scenario.yaml")
    cell = Cell("mine", source, "2.60.0", {}, 1, data)
    said = []
    run_cell(cell, stand_in(tmp_path), MatrixOptions(out_dir=str(tmp_path / "m"), say=said.append))
    folder = tmp_path / "m" / "cells" / cell.cell_id
    assert yaml.safe_load((folder / "scenario.yaml").read_text())["name"] == "mine"
    assert any("scenario.yaml of the job not copied" in line for line in said), said


def test_the_reference_workload_ships_nothing(tmp_path):
    source = tmp_path / "ref.yaml"
    data = {"name": "ref", "workload": {"num_workers": 2, "steps": 6}}
    source.write_text(yaml.safe_dump(data))
    (tmp_path / "stray.py").write_text("x = 1\n")
    cell = Cell("ref", str(source), "2.60.0", {}, 1, data)
    run_cell(cell, stand_in(tmp_path), MatrixOptions(out_dir=str(tmp_path / "m"), say=lambda _: None))
    assert files_under(tmp_path / "m" / "cells" / cell.cell_id) == ["log.txt", "scenario.yaml"]
