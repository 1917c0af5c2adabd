"""Users' jobs as scenario input (pure): trainer and datasets fields, the example
scenarios, the doctor probe's scenario, and refusals before a cluster starts."""

import glob
import os

import pytest

from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli import main
from ftharness.harness.run.probe import KILL_AFTER, probe_scenario
from ftharness.scenarios.schema import load_scenario, parse_scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(ROOT, "examples", "*.yaml"))))
def test_example_scenarios_are_valid_user_jobs(path):
    sc = load_scenario(path)
    assert sc.workload.kind == "entrypoint" and sc.faults
    module = sc.workload.entrypoint.split(":")[0]
    assert os.path.exists(os.path.join(ROOT, "examples", module + ".py"))


def test_trainer_and_datasets_belong_to_entrypoint_jobs():
    sc = parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "trainer": "xgboost", "datasets": "m:d"}},
                        source="t")
    assert (sc.workload.trainer, sc.workload.datasets) == ("xgboost", "m:d")
    with pytest.raises(ScenarioError, match="trainer"):
        parse_scenario({"name": "x", "workload": {"trainer": "xgboost"}}, source="t")
    with pytest.raises(ScenarioError, match="datasets"):
        parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "datasets": "nocolon"}}, source="t")
    with pytest.raises(ScenarioError, match="trainer"):
        parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "trainer": "tensorflow"}}, source="t")


def test_probe_scenario_kills_rank_1_after_a_few_reports_with_one_retry():
    sc = probe_scenario("examples.xgboost_job:train_func", "xgboost", "examples.xgboost_job:datasets", {"rounds": 5})
    assert sc.failure_config.max_failures == 1
    assert [(f.kind, f.target.rank, f.at.step) for f in sc.faults] == [("kill_worker", 1, KILL_AFTER)]
    assert sc.workload.train_loop_config == {"rounds": 5}
    with pytest.raises(ScenarioError, match="entrypoint"):
        probe_scenario("no_colon")


def test_doctor_run_refuses_an_entrypoint_that_does_not_import_before_any_cluster(tmp_path, capsys):
    out = tmp_path / "probe"
    assert main(["doctor", "--run", "no_such_module_xyz:f", "--out", str(out)]) == 2
    assert "cannot import 'no_such_module_xyz'" in capsys.readouterr().err
    assert not out.exists()
    assert main(["doctor", "--run", "m:f", "--config", "[1]"]) == 2
    assert main(["doctor", "--run", "m:f", "--config", "{bad"]) == 2


def test_row_ids_of_every_batch_format():
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import torch

    from ftharness.harness.job.rows import ids_of

    assert ids_of({"id": np.array([3, 4])}, "id") == [3, 4]
    assert ids_of({"id": torch.tensor([5, 6])}, "id") == [5, 6]
    assert ids_of(pd.DataFrame({"id": [7, 8], "x": [0, 0]}), "id") == [7, 8]
    assert ids_of(pa.table({"id": [9, 10]}), "id") == [9, 10]
    assert ids_of({"id": 11, "x": 1.0}, "id") == [11]          # one row (iter_rows)


def test_recorded_shard_counts_each_pass_as_an_epoch_and_passes_the_rest_through():
    from ftharness.harness.job.rows import RecordedShard

    class Shard:
        other = "kept"

        def iter_batches(self, **kw):
            yield {"id": [0, 1]}
            yield {"id": [2]}

        def iter_rows(self):
            yield {"id": 0}

    seen, epochs = [], []

    def new_pass():
        epochs.append(len(epochs))
        return epochs[-1]

    shard = RecordedShard(Shard(), "id", new_pass, lambda ids, ep: seen.append((ep, ids)))
    assert shard.other == "kept"
    assert list(shard.iter_batches(batch_size=2)) == [{"id": [0, 1]}, {"id": [2]}]
    assert list(shard.iter_rows()) == [{"id": 0}]
    assert seen == [(0, [0, 1]), (0, [2]), (1, [0])]


def test_row_id_needs_datasets_and_makes_shard_reassignment_expected():
    from ftharness.scenarios.verdict import expected_properties

    with pytest.raises(ScenarioError, match="row_id"):
        parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "row_id": "id"}}, source="t")
    base = {"name": "x", "workload": {"entrypoint": "m:f", "datasets": "m:d"},
            "failure_config": {"max_failures": 1},
            "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}}]}
    assert "shard_reassignment" not in expected_properties(parse_scenario(base, source="t"))
    with_ids = dict(base, workload=dict(base["workload"], row_id="id"))
    assert "shard_reassignment" in expected_properties(parse_scenario(with_ids, source="t"))


# ------------------------------------------------------------------ workload.dataset_config
def test_dataset_config_is_a_module_function_of_an_entrypoint_job_with_datasets():
    w = {"entrypoint": "m:f", "datasets": "m:d", "dataset_config": "m:c"}
    assert parse_scenario({"name": "x", "workload": w}, source="t").workload.dataset_config == "m:c"
    refusals = [
        ({"entrypoint": "m:f", "datasets": "m:d", "dataset_config": "nocolon"},
         "t: workload.dataset_config: must be 'module:function' (returning a ray.train.DataConfig)"),
        ({"entrypoint": "m:f", "dataset_config": "m:c"},
         "t: workload.dataset_config: configures the trainer's datasets; give workload.datasets too"),
        ({"dataset_config": "m:c"}, "t: workload: trainer, datasets, dataset_config, row_id: only for an "
                                    "entrypoint workload"),
    ]
    for workload, message in refusals:
        with pytest.raises(ScenarioError) as e:
            parse_scenario({"name": "x", "workload": workload}, source="t")
        assert str(e.value).startswith(message) and "\n" not in str(e.value), str(e.value)


def example_scenario(tmp_path, **workload):
    """The torch-data example's workload, with `workload` changed, as a scenario in examples/."""
    sc = load_scenario(os.path.join(ROOT, "examples", "torch-data-kill-worker.yaml"))
    return sc.model_copy(update={"workload": sc.workload.model_copy(update=workload)})


def test_a_dataset_config_that_does_not_resolve_is_refused_before_any_cluster(tmp_path, monkeypatch):
    from ftharness.harness.run import runner

    def no_cluster(*a, **k):
        raise AssertionError("a cluster was opened")

    monkeypatch.setattr(runner, "open_cluster", no_cluster)
    for ref, message in [("no_such_module_xyz:c", "workload.dataset_config: cannot import 'no_such_module_xyz'"),
                         ("torch_data_job:nope", "workload.dataset_config: 'torch_data_job' has no function 'nope'")]:
        sc = example_scenario(tmp_path, dataset_config=ref)
        with pytest.raises(ScenarioError, match=message):
            runner.run_scenario(sc, runner.RunOptions(out_dir=str(tmp_path / "out")))
    assert not (tmp_path / "out").exists()


def test_the_example_dataset_config_splits_only_train_and_reaches_the_fit_task(tmp_path):
    import ray.train

    from ftharness.harness.cluster.ray_private import datasets_to_split
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner, resolve_dataset_config_fn

    sc = load_scenario(os.path.join(ROOT, "examples", "torch-data-kill-worker.yaml"))
    config = resolve_dataset_config_fn(sc)()
    assert isinstance(config, ray.train.DataConfig)
    assert datasets_to_split(config) == ["train"]                 # "val" is read whole by every rank
    assert datasets_to_split(None) is None and datasets_to_split(ray.train.DataConfig()) is None

    class Cluster:
        def train_env(self):
            return {}

    runner = ScenarioRunner(sc, Cluster(), RunOptions(out_dir=str(tmp_path / "out")))
    runner.dataset_config_fn = resolve_dataset_config_fn(sc)
    spec = runner._fit_spec(lambda: None, use_gpu=False)
    assert spec["dataset_config_fn"] is runner.dataset_config_fn
    assert spec["dataset_config_ref"] == "torch_data_job:dataset_config"


def test_a_dataset_config_function_that_returns_no_data_config_fails_the_run_with_its_name():
    from ftharness.harness.run.fit_task import _fit_task

    spec = {"train_env": {}, "failure_config": {}, "data": "resumable", "datasets_fn": None,
            "dataset_config_fn": lambda: {"x": 1},
            "dataset_config_ref": "m:c"}
    out = _fit_task._function(spec)          # returns before any trainer (or Ray) is made
    assert out == {"outcome": "failed", "error_type": "TypeError",
                   "error": "workload.dataset_config: m:c returned dict, not a ray.train.DataConfig"}


# ------------------------------------------------------------------ get_dataset_shard, noted and recorded
def test_get_dataset_shard_hands_the_dataset_name_to_the_instrumentation(monkeypatch):
    from types import SimpleNamespace

    from ftharness.harness.cluster import ray_private as rp

    class Utils:
        def report(self, metrics, checkpoint=None):
            return None

        def get_dataset_shard(self, dataset_info):
            return f"shard of {dataset_info.dataset_name}"

    utils = Utils()
    monkeypatch.setattr(rp, "train_fn_utils", lambda: utils)
    seen = []
    undo = rp.wrap_train_fn_utils(lambda m, c: None, lambda m, c: None,
                                  lambda shard, name: seen.append((shard, name)) or shard)
    assert utils.get_dataset_shard(SimpleNamespace(dataset_name="val", world_rank=1)) == "shard of val"
    assert seen == [("shard of val", "val")]
    undo()
    assert utils.get_dataset_shard(SimpleNamespace(dataset_name="val", world_rank=1)) == "shard of val"
    assert len(seen) == 1


def recorder(row_id=None, row_datasets=None):
    """A WorkerRecorder without Ray: only what on_dataset_shard uses."""
    from ftharness.harness.job.instrument import WorkerRecorder

    rec = object.__new__(WorkerRecorder)
    rec.row_id, rec.row_datasets, rec.shards, rec.rows, rec.epoch = row_id, row_datasets, set(), [], -1
    rec.events = []
    rec.emit = lambda kind, **fields: rec.events.append(dict(fields, kind=kind))
    return rec


def test_split_datasets_are_recorded_unsplit_ones_only_noted():
    from ftharness.harness.job.rows import RecordedShard

    rec = recorder("id", ["train"])
    assert isinstance(rec.on_dataset_shard("train-shard", "train"), RecordedShard)
    assert rec.on_dataset_shard("val-shard", "val") == "val-shard"     # every rank reads all of it
    rec.on_dataset_shard("train-shard", "train")                         # asked again: noted once
    assert rec.events == [{"kind": "dataset_shard", "dataset": "train", "row_id": "id"},
                          {"kind": "dataset_shard", "dataset": "val", "row_id": None}]
    assert isinstance(recorder("id").on_dataset_shard("s", "val"), RecordedShard)   # no DataConfig: all split
    plain = recorder()
    assert plain.on_dataset_shard("s", "train") == "s"
    assert plain.events == [{"kind": "dataset_shard", "dataset": "train", "row_id": None}]
    assert plain.on_dataset_shard(None, "train") is None and len(plain.events) == 1


# ------------------------------------------------------------------ shard_reassignment says how to judge a job
def user_job_history(dataset_shard=True):
    """A user job killed once, as recorded without workload.row_id: no rows; with
    `dataset_shard`, each rank's first get_dataset_shard("train") noted."""
    from ftharness.scenarios.reference_data import WorkloadConfig
    from ftharness.scenarios.synthetic import Fault, Plan, generate

    syn = generate(Plan(WorkloadConfig(steps=6, batch_size=4, checkpoint_every=2), num_workers=2,
                        failure_config={"max_failures": 1}, faults=[Fault("worker_group", after_steps=3)]))
    events = [{k: v for k, v in e.items() if k not in ("rows", "n_rows", "epoch")} for e in syn.events]
    if dataset_shard:
        starts = [i for i, e in enumerate(events) if e["kind"] == "worker_start"]
        for i in reversed(starts):
            events.insert(i + 1, dict(events[i], kind="dataset_shard", dataset="train", row_id=None))
        for seq, e in enumerate(events, 1):
            e["seq"] = seq
    return events


def test_a_user_job_that_read_ray_data_without_row_ids_is_told_how_to_get_it_judged():
    from ftharness.scenarios.properties import CHECKS

    check = CHECKS["shard_reassignment"]
    r = check(user_job_history(), {"workload": None, "data": None})
    assert r.status == "not_judged"
    assert r.explanation == ("not judged: no step recorded the rows it consumed: the job read train through "
                             "get_dataset_shard, but no row-id column is configured; set `workload.row_id: "
                             "COLUMN` (a column of workload.datasets holding each row's id) to record the rows "
                             "each rank reads and judge this")
    # given workload.datasets, but no get_dataset_shard was noted: the scenario says it
    r = check(user_job_history(False), {"workload": None, "data": "ray_data"})
    assert "the job is given workload.datasets, but no row-id column is configured; set `workload.row_id: " \
           "COLUMN`" in r.explanation
    # a job without Ray Data: nothing to enable
    r = check(user_job_history(False), {"workload": None, "data": None})
    assert r.explanation == "not judged: no step recorded the rows it consumed"


def test_the_verdict_of_a_ray_data_job_without_row_id_names_workload_row_id():
    from ftharness.scenarios.verdict import evaluate

    sc = parse_scenario({"name": "x", "workload": {"entrypoint": "m:f", "datasets": "m:d"},
                         "failure_config": {"max_failures": 1},
                         "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 3}}]}, source="t")
    s = evaluate(sc, user_job_history(), {"outcome": "succeeded", "error_type": None, "error": None})
    sr = s["properties"]["shard_reassignment"]
    assert sr["status"] == "not_judged" and "set `workload.row_id: COLUMN`" in sr["explanation"]
    assert "shard_reassignment" not in s["expected_properties"]       # it does not make the run inconclusive


def test_the_fit_task_takes_its_runs_ray_train_settings_out_of_the_process_after_the_fit(monkeypatch):
    """Ray reuses the fit task's process for the next run of a suite: a setting one scenario
    makes (cluster.train_env) must not reach the next scenario's fit."""
    from ftharness.harness.run.fit_task import _fit_task

    monkeypatch.delenv("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", raising=False)
    monkeypatch.setenv("RAY_TRAIN_HEALTH_CHECK_INTERVAL_S", "2")
    seen = {}

    def config():
        seen.update({k: os.environ.get(k) for k in ("RAY_TRAIN_COLLECTIVE_TIMEOUT_S",
                                                      "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S")})
        return {"x": 1}

    spec = {"train_env": {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "5", "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25"},
            "failure_config": {}, "data": "resumable", "datasets_fn": None,
            "dataset_config_fn": config, "dataset_config_ref": "m:c"}
    assert _fit_task._function(spec)["outcome"] == "failed"
    assert seen == {"RAY_TRAIN_COLLECTIVE_TIMEOUT_S": "5", "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25"}
    assert "RAY_TRAIN_COLLECTIVE_TIMEOUT_S" not in os.environ
    assert os.environ["RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"] == "2"
