"""`ftharness matrix` without running a cluster: axes and cells, each release's expectation,
the report (frames, bootstrap, changes, CSV, JUnit, HTML), bad input (pure)."""

import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

import pytest
import yaml

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.harness.matrix import axes, cells
from ftharness.reports import matrix as report
from ftharness.scenarios.schema import scenario_json_schema

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CATALOG = os.path.join(ROOT, "scenarios", "catalog")
SCHEMA = scenario_json_schema()


def _catalog(name):
    with open(os.path.join(CATALOG, f"{name}.yaml")) as f:
        return yaml.safe_load(f)


# ------------------------------------------------------------------------------------ axes
def test_releases_all_minors_and_order():
    assert axes.parse_releases("all") == list(releases.SUPPORTED)
    assert axes.parse_releases("2.60.0,2.57,2.51.2,2.57.1") == ["2.51.2", "2.57.1", "2.60.0"]
    assert axes.parse_releases("2.55.0") == ["2.55.0"]      # another patch of a supported minor
    assert axes.parse_releases(None) == [releases.installed()]


@pytest.mark.parametrize("bad", ["2.50.0", "2.61.0", "3.0", "latest", "2.57.x", ",", "all,2.60.0"])
def test_an_unknown_release_is_refused(bad):
    with pytest.raises(ScenarioError, match="--ray"):
        axes.parse_releases(bad)


def test_set_axes_parse_yaml_values_and_lists():
    a = axes.parse_sets(["workload.checkpoint_every=1,5,10", "workload.num_workers=[1,2],2"], "ray,torchrun", SCHEMA)
    assert a[0] == axes.Axis("workload.checkpoint_every", (1, 5, 10))
    assert a[1].values == ([1, 2], 2)
    assert a[2] == axes.Axis("workload.runtime", ("ray_train", "torchrun"))


@pytest.mark.parametrize("item,msg", [
    ("workload.nosuch=1", "no such scenario field"),
    ("nosuch.field=1", "no such scenario field"),
    ("workload.checkpoint_every", "expected PATH=VALUE"),
    ("=1", "expected PATH=VALUE"),
    ("faults.0.kind=kill_node", "not the scenario's"),
    ("expect.outcome=failed", "not the scenario's"),
    ("workload.runtime=torchrun", "use --runtime"),
    ("workload.steps=[1,", "YAML"),
])
def test_a_bad_axis_is_one_line(item, msg):
    with pytest.raises(ScenarioError, match=msg):
        axes.parse_sets([item], None, SCHEMA)


def test_unknown_runtime_and_repeated_axis():
    with pytest.raises(ScenarioError, match="--runtime"):
        axes.parse_sets([], "ray,mpi", SCHEMA)
    with pytest.raises(ScenarioError, match="given twice"):
        axes.parse_sets(["workload.steps=5", "workload.steps=6"], None, SCHEMA)


def test_schema_paths_follow_refs():
    for path in ("cluster.storage", "failure_config.max_failures", "workload.checkpoint_every", "timeout_s"):
        assert axes.schema_has(path, SCHEMA), path
    assert not axes.schema_has("cluster.storage.x", SCHEMA)


def test_expand_groups_by_release_and_counts_repeats():
    data = _catalog("kill-worker")
    ax = axes.parse_sets(["workload.checkpoint_every=1,2"], None, SCHEMA)
    cs = axes.expand([("kill-worker", "k.yaml", data)], ["2.51.2", "2.60.0"], ax, 3)
    assert len(cs) == 12 and [c.ray for c in cs[:6]] == ["2.51.2"] * 6
    assert cs[0].data["workload"]["checkpoint_every"] == 1 and data["workload"]["checkpoint_every"] == 2
    assert len({c.cell_id for c in cs}) == 12 and len({c.config for c in cs}) == 4
    with pytest.raises(ScenarioError, match="--repeat"):
        axes.expand([("k", "k.yaml", data)], ["2.60.0"], [], 0)
    with pytest.raises(ScenarioError, match="cells"):
        axes.expand([("k", "k.yaml", data)] * 30, list(releases.SUPPORTED), ax, 5)


# ------------------------------------------------------------------------------------ cells
@pytest.mark.parametrize("version", [v for v in releases.SUPPORTED if releases.parse(v) < (2, 58, 0)])
def test_preempt_node_before_2_58_is_expected_to_fail_as_its_policy_says(version):
    data, notes = cells.for_release(_catalog("preempt-node"), version)
    assert data["failure_config"] == {"max_failures": 0, "controller_failure_limit": 0}
    assert data["expect"]["outcome"] == "failed" and data["expect"]["error_type"] == "WorkerGroupError"
    assert "recovers" not in data["expect"]["properties"]
    assert any("charged to max_failures (count 1, limit 0)" in n for n in notes)


@pytest.mark.parametrize("name", ["preempt-node", "kill-worker", "kill-node", "default", "preempt-node-early"])
def test_the_newest_release_runs_the_scenario_as_written(name):
    data = _catalog(name)
    assert cells.for_release(data, releases.NEWEST) == (data, [])


def test_an_early_reclaim_is_a_worker_group_failure_on_every_release():
    for v in releases.SUPPORTED:
        data, _ = cells.for_release(_catalog("preempt-node-early"), v)
        assert data["expect"]["outcome"] == "succeeded"


def test_faults_without_a_known_class_keep_the_expectation():
    assert cells.fault_classes([{"kind": "corrupt_checkpoint"}]) is None
    data = _catalog("corrupt-checkpoint")
    assert cells.for_release(data, "2.51.2")[0]["expect"] == data["expect"]


# ------------------------------------------------------------------------------------ report
def _row(scenario, ray, verdict, outcome, charged, rec, repeat=1, notes=(), lost=2.0, settings=None):
    summary = {"outcome": outcome, "error_type": None if outcome == "succeeded" else "WorkerGroupError",
               "attempts": 2, "budgets": charged, "recovery_times_s": [rec] if rec is not None else [],
               "run_metrics": {"lost_steps": lost, "ettr": 0.1,
                               "recovery_parts_mean_s": {p: 1.0 for p in report.PARTS}},
               "properties": {"budget_accounting": {"status": "passed"}}}
    settings = settings or {}
    cfg = " ".join([f"ray={ray}"] + [f"{k}={v}" for k, v in sorted(settings.items())])
    return {"cell": f"{scenario}-{ray}-{cfg}-{repeat}", "scenario": scenario, "ray": ray, "settings": settings,
            "config": cfg, "repeat": repeat, "notes": list(notes), "verdict": verdict, "summary": summary,
            "results": f"cells/{scenario}-{ray}-{repeat}/run"}


def test_bootstrap_is_seeded_and_has_no_interval_from_one_sample():
    assert report.bootstrap([5.0]) == (5.0, None, None)
    med, lo, hi = report.bootstrap([1.0, 2.0, 3.0, 10.0])
    assert med == 2.5 and lo <= med <= hi and (med, lo, hi) == report.bootstrap([1.0, 2.0, 3.0, 10.0])
    assert report.bootstrap([]) == (None, None, None)


def test_changes_name_the_budget_and_outcome_between_adjacent_releases():
    rows = [_row("preempt-node", "2.57.1", "PASS", "failed", {"worker_group": 1}, None,
                 notes=["expect.outcome: failed on Ray 2.57.1, as its policy says: ..."]),
            _row("preempt-node", "2.58.1", "PASS", "succeeded", {"preemption": 1}, 12.0),
            _row("preempt-node", "2.60.0", "PASS", "succeeded", {"preemption": 1}, 11.0),
            _row("kill-worker", "2.57.1", "PASS", "succeeded", {"worker_group": 1}, 9.0),
            _row("kill-worker", "2.58.1", "PASS", "succeeded", {"worker_group": 1}, 9.5)]
    cs = report.configs([report.cell_facts(r) for r in rows])
    chg = report.changes(cs)
    assert len(chg) == 1, chg          # kill-worker and 2.58.1 -> 2.60.0 behave alike
    s = chg[0]["sentence"]
    assert s.startswith("preempt-node: on 2.57.1 the failure was charged to max_failures (1) and the run failed")
    assert "on 2.58.1 the failure was charged to max_preemption_failures (1) and the run recovered" in s
    assert chg[0]["as_policy_says"]


def test_a_change_of_what_the_controller_s_constructor_raised_is_a_change_and_is_named():
    """resume-missing-checkpoint on 2.55.1 and 2.56.0: fit() raised ActorDiedError on both; the
    controller's constructor raised TypeError on one and the refusal on the other."""
    rows = [_row("resume", "2.55.1", "FAIL", "failed", {}, None), _row("resume", "2.56.0", "PASS", "failed", {}, None)]
    for r, cause in zip(rows, ("TypeError", "CheckpointManagerInitializationError")):
        r["summary"].update(error_type="ActorDiedError", error_cause=cause)
    rows[1]["verdict"] = "FAIL"    # the same verdict on both: only the cause differs
    [chg] = report.changes(report.configs([report.cell_facts(r) for r in rows]))
    assert "the run failed (ActorDiedError: its constructor raised TypeError)" in chg["sentence"]
    assert "its constructor raised CheckpointManagerInitializationError" in chg["sentence"]


def test_a_verdict_change_is_never_called_policy_and_other_axes_compare_too():
    rows = [_row("k", "2.60.0", "PASS", "succeeded", {"worker_group": 1}, 9.0, settings={"workload.checkpoint_every": 1}),
            _row("k", "2.60.0", "FAIL", "succeeded", {"worker_group": 1}, 9.0, settings={"workload.checkpoint_every": 5})]
    chg = report.changes(report.configs([report.cell_facts(r) for r in rows]))
    assert [c["axis"] for c in chg] == ["workload.checkpoint_every"] and not chg[0]["as_policy_says"]


def test_repeats_pool_into_one_cell_with_an_interval_and_unjudged_runs_are_not_pooled():
    rows = [_row("k", "2.60.0", "PASS", "succeeded", {"worker_group": 1}, r, repeat=i)
            for i, r in enumerate([8.0, 9.0, 10.0], 1)]
    rows.append({**_row("k", "2.60.0", "ERROR", None, {}, None, repeat=4), "summary": None, "error": "boom"})
    (c,) = report.configs([report.cell_facts(r) for r in rows])
    assert (c["runs"], c["judged"], c["recovery_median_s"]) == (4, 3, 9.0)
    assert c["recovery_low_s"] is not None and c["verdict"] == "ERROR" and c["errors"] == ["boom"]


def test_report_files_are_written_and_junit_parses(tmp_path):
    rows = [_row("preempt-node", "2.57.1", "PASS", "failed", {"worker_group": 1}, None),
            _row("preempt-node", "2.58.1", "FAIL", "succeeded", {"preemption": 1}, 12.0),
            {**_row("elastic", "2.54.1", "N/A", None, {}, None), "summary": None, "error": "needs 2.55"}]
    with open(tmp_path / "cells.jsonl", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    out = report.write_report(str(tmp_path))
    assert len(out["configs"]) == 3
    for name in ("matrix.html", "matrix.csv", "junit.xml", "changes.json", "recovery.png"):
        assert (tmp_path / name).is_file(), name
    suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("3", "1", "1")
    page = (tmp_path / "matrix.html").read_text()
    assert "preempt-node: on 2.57.1" in page and "needs 2.55" in page


# ------------------------------------------------------------------------------------ command
def _matrix(*args, cwd):
    return subprocess.run([sys.executable, "-m", "ftharness", "matrix", *args], capture_output=True, text=True,
                          cwd=cwd, timeout=120)


@pytest.mark.parametrize("args,field", [
    (["--ray", "2.49.0"], "--ray"),
    (["--set", "workload.bogus=1,2"], "--set workload.bogus"),
    (["--set", "workload.checkpoint_every=0"], "workload.checkpoint_every"),
    (["--repeat", "0"], "--repeat"),
    (["--runtime", "slurm"], "--runtime"),
    (["nosuch.yaml"], "nosuch.yaml"),
])
def test_bad_input_is_one_line_exit_2_before_anything_starts(tmp_path, args, field):
    out = tmp_path / "m"
    r = _matrix(os.path.join(CATALOG, "kill-worker.yaml"), *args, "--out", str(out), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and field in lines[0] and "Traceback" not in r.stderr and len(lines[0]) <= 300
    assert not out.exists()


def test_dry_run_lists_the_cells_and_na_ones(tmp_path):
    r = _matrix(os.path.join(CATALOG, "elastic-shrink.yaml"), os.path.join(CATALOG, "kill-worker.yaml"),
                "--ray", "2.54,2.60", "--dry-run", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert "4 cell(s)" in r.stdout and r.stdout.count("N/A") == 1 and "elastic-shrink--ray-2.54.1--r1" in r.stdout


# ---------------------------------------------------------------------- secrets (issue 24)
def test_a_cell_file_row_and_folder_name_never_hold_credentials(tmp_path):
    """A storage_path with credentials: the cell runs with them, but cells/<id>/scenario.yaml,
    cells.jsonl's row and the cell's folder name show ***, and the private copy the cell ran
    from is gone when it ends. The "interpreter" is a stand-in that records what it was given."""
    from ftharness.harness.matrix.runner import MatrixOptions, run_cell

    secret = "s3://AKIAXYZ:sEcReT@127.0.0.1:9000/bucket"
    data = _catalog("kill-worker")
    ax = axes.parse_sets([f"workload.storage_path={secret}"], None, SCHEMA)
    (cell,) = axes.expand([("kill-worker", os.path.join(CATALOG, "kill-worker.yaml"), data)], ["2.60.0"], ax, 1)
    seen = tmp_path / "seen.yaml"
    fake = tmp_path / "python"
    # the argument after `run` is the scenario file the cell runs
    fake.write_text("#!/bin/sh\n" 'while [ "$1" != run ]; do shift; done; shift\n'
                    f'cp "$1" {seen}; ls -ld "$(dirname "$1")" > {seen}.mode; exit 0\n')
    fake.chmod(0o755)
    row = run_cell(cell, str(fake), MatrixOptions(out_dir=str(tmp_path / "m"), say=lambda _: None))
    assert yaml.safe_load(seen.read_text())["workload"]["storage_path"] == secret   # the run got them
    assert (tmp_path / f"{seen.name}.mode").read_text().startswith("drwx------")
    shown = tmp_path / "m" / "cells" / cell.cell_id / "scenario.yaml"
    assert yaml.safe_load(shown.read_text())["workload"]["storage_path"] == "s3://***@127.0.0.1:9000/bucket"
    assert "sEcReT" not in json.dumps(row) and "sEcReT" not in cell.cell_id and "AKIAXYZ" not in cell.config
    private = [p for p in os.listdir(tempfile.gettempdir()) if p.startswith("ftharness-cell-")]
    assert private == [], private
    other = axes.parse_sets([f"workload.storage_path={secret.replace('sEcReT', 'other')}"], None, SCHEMA)
    (twin,) = axes.expand([("kill-worker", os.path.join(CATALOG, "kill-worker.yaml"), data)], ["2.60.0"], other, 1)
    assert twin.cell_id != cell.cell_id and twin.config != cell.config   # two folders, two configurations
    assert "other" not in twin.cell_id + twin.config and "sEcReT" not in cell.config


def test_releases_before_2_55_get_pandas_below_3():
    """Ray Data before 2.55 reads pandas.errors.SettingWithCopyWarning unguarded (pandas 3 removed it):
    every Ray Data job died on 2.51-2.54 in an environment that resolved pandas 3 (the 2.51.1 controls)."""
    from ftharness.harness.matrix.envs import release_pins

    assert release_pins("2.51.1") == release_pins("2.54.0") == ["pandas<3"]
    assert release_pins("2.55.0") == release_pins("2.60.0") == []
