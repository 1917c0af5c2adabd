"""The judge's controls: real, correct runs of every job shape users bring, recorded on the
oldest and the newest supported release where the job runs there (scripts/record_controls.py
writes tests/data/controls/<shape>-<fault>-<ray>/: history.jsonl, scenario.yaml, summary.json
and the job's modules). Judged again from the history alone (`ftharness check`'s route,
reports.judgement.rejudge), each must get the verdict its row names, with every fault landed:
a rule that assumes of every job what only the reference job does (every rank reports a
checkpoint, every report's digest is new, rows are recorded) turns one of these into a false
alarm. The edited histories of the mutation suite are the judge's adversaries; these are its
controls. Pure: no Ray."""

import os

import pytest

from ftharness.history.records import read_events
from ftharness.reports.judgement import rejudge

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")
CONTROLS = os.path.join(DATA, "controls")
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the files a control folder may hold besides the job's own modules (*.py)
KEPT = {"history.jsonl", "scenario.yaml", "summary.json"}
#: every control folder together, on disk (histories are kept whole: they are what is judged)
MAX_BYTES = 3 * 1024 * 1024

# folder (under tests/data), job shape, release, fault kinds, the verdict it must get
TABLE = [
    # the reference workload: tests/data's own recorded runs on the newest release, and the oldest's
    ("kill-worker", "reference", "2.60.0", ["kill_worker"], "PASS"),
    ("preempt-node", "reference", "2.60.0", ["preempt_node"], "PASS"),
    ("controls/reference-kill-worker-2.51.1", "reference", "2.51.1", ["kill_worker"], "PASS"),
    # 2.51 has no preemption budget: the matrix cell expects the release's own outcome (failed, charged
    # to max_failures: 0), and the run must show exactly that
    ("controls/reference-preempt-node-2.51.1", "reference", "2.51.1", ["preempt_node"], "PASS"),
    # Lightning as Ray's guide writes it (prepare_trainer, RayTrainReportCallback): rank 0 writes the files.
    # The frameworks' preempt-node examples are recorded on 2.60 only (on 2.51 they would fail by policy)
    ("controls/lightning-kill-worker-2.60.0", "lightning", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/lightning-preempt-node-2.60.0", "lightning", "2.60.0", ["preempt_node"], "PASS"),
    ("controls/lightning-kill-worker-2.51.1", "lightning", "2.51.1", ["kill_worker"], "PASS"),
    ("controls/transformers-kill-worker-2.60.0", "transformers", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/transformers-kill-worker-2.51.1", "transformers", "2.51.1", ["kill_worker"], "PASS"),
    # XGBoost and LightGBM: the callback reports the final model again after the last round
    ("controls/xgboost-kill-worker-2.60.0", "xgboost", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/xgboost-preempt-node-2.60.0", "xgboost", "2.60.0", ["preempt_node"], "PASS"),
    ("controls/xgboost-kill-worker-2.51.1", "xgboost", "2.51.1", ["kill_worker"], "PASS"),
    ("controls/lightgbm-kill-worker-2.60.0", "lightgbm", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/lightgbm-kill-worker-2.51.1", "lightgbm", "2.51.1", ["kill_worker"], "PASS"),
    # TorchTrainer fed by Ray Data (get_dataset_shard, rows recorded through workload.row_id)
    ("controls/torch-data-kill-worker-2.60.0", "torch-data", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/torch-data-kill-worker-2.51.1", "torch-data", "2.51.1", ["kill_worker"], "PASS"),
    # elastic num_workers [1, 3], rank 0 alone checkpoints; elastic needs 2.55+, so 2.60 only
    ("controls/elastic-kill-node-2.60.0", "elastic", "2.60.0", ["kill_node"], "PASS"),
    # every rank writes its own shard of one checkpoint (FSDP2 + torch.distributed.checkpoint)
    ("controls/dcp-kill-worker-2.60.0", "dcp", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/dcp-kill-worker-2.51.1", "dcp", "2.51.1", ["kill_worker"], "PASS"),
    # DDP where only rank 0 reports a checkpoint, the other ranks metrics only (checkpoint=None)
    ("controls/rank0-checkpoint-kill-worker-2.60.0", "rank0-checkpoint", "2.60.0", ["kill_worker"], "PASS"),
    ("controls/rank0-checkpoint-kill-worker-2.51.1", "rank0-checkpoint", "2.51.1", ["kill_worker"], "PASS"),
    # the mistake the harness exists to show: a job that never reports a checkpoint
    ("controls/unreported-checkpoint-kill-worker-2.60.0", "unreported-checkpoint", "2.60.0", ["kill_worker"], "FAIL"),
]
#: tests/data's reference runs, recorded before run_start carried `ray_version`
PREDATE = {"kill-worker", "preempt-node"}
RECORDED = [row for row in TABLE if os.path.isfile(os.path.join(DATA, row[0], "history.jsonl"))]


def _id(row):
    return f"{row[1]}-{'+'.join(row[3])}-{row[2]}"


def control_folders():
    return sorted(d for d in os.listdir(CONTROLS) if os.path.isdir(os.path.join(CONTROLS, d))) \
        if os.path.isdir(CONTROLS) else []


@pytest.mark.parametrize("row", RECORDED, ids=[_id(r) for r in RECORDED])
def test_a_correct_real_run_gets_its_verdict(row):
    folder, shape, release, kinds, verdict = row
    path = os.path.join(DATA, folder)
    summary = rejudge(path)
    why = (summary.get("mismatches"), summary.get("inconclusive"))
    assert summary["verdict"] == verdict, (folder, why)
    # every fault the scenario asked for was injected and landed, on evidence
    assert [f["kind"] for f in summary["faults"]] == kinds, summary["faults"]
    assert all(f["landed"] for f in summary["faults"]), [(f["kind"], f.get("evidence")) for f in summary["faults"]]
    assert summary["history"]["complete"], summary["history"].get("problems")
    # the history ran on the release the row names (tests/data's two reference runs predate the
    # field: they were recorded on 2.60.0, the release their histories are judged by)
    start = next(e for e in read_events(path) if e.get("kind") == "run_start")
    assert start.get("ray_version", "2.60.0" if folder in PREDATE else None) == release, folder
    statuses = {n: p["status"] for n, p in summary["properties"].items()}
    if verdict == "PASS":
        assert not summary.get("inconclusive") and not summary.get("mismatches"), why
        assert "failed" not in statuses.values(), statuses
    else:   # the unreported-checkpoint mistake fails bounded_lost_work, and for that reason only
        assert statuses.get("bounded_lost_work") == "failed", statuses
        assert [n for n, s in statuses.items() if s == "failed"] == ["bounded_lost_work"], statuses


def test_the_table_names_every_control_folder():
    """A recorded control no row names is judged by nobody; a row whose folder is missing on the
    newest release is a shape nobody recorded (rows of the oldest release may wait for a recording)."""
    named = {row[0].split("/", 1)[1] for row in TABLE if row[0].startswith("controls/")}
    assert set(control_folders()) <= named, set(control_folders()) - named
    newest = [row[0] for row in TABLE if row[2] == "2.60.0" and row not in RECORDED]
    assert not newest, newest


def test_every_job_shape_of_the_examples_has_a_control():
    """Every scenario shipped under examples/ has a recorded control of its job and fault."""
    import yaml

    recorded = set()
    for row in RECORDED:
        with open(os.path.join(DATA, row[0], "scenario.yaml")) as f:
            recorded.add(yaml.safe_load(f)["name"])
    for name in sorted(os.listdir(os.path.join(REPO, "examples"))):
        if name.endswith(".yaml"):
            with open(os.path.join(REPO, "examples", name)) as f:
                assert yaml.safe_load(f)["name"] in recorded, name


def test_control_folders_hold_only_what_is_judged_and_stay_small():
    total = 0
    for d in control_folders():
        for f in os.listdir(os.path.join(CONTROLS, d)):
            assert f in KEPT or f.endswith(".py"), (d, f)    # no storage/, logs/, report
            total += os.path.getsize(os.path.join(CONTROLS, d, f))
    assert total <= MAX_BYTES, total


def test_sources_list_every_passing_control():
    """tests/data/controls/SOURCES.txt: the folders other tools take as recorded sources (the
    mutation engine edits them; every mutant of a source must not PASS, so a source must PASS):
    every PASS control of the table, one a line, relative to the repository."""
    with open(os.path.join(CONTROLS, "SOURCES.txt")) as f:
        listed = [ln.strip() for ln in f if ln.strip() and not ln.startswith("#")]
    want = sorted(f"tests/data/{row[0]}" for row in RECORDED if row[4] == "PASS" and row[0].startswith("controls/"))
    assert sorted(listed) == want
    assert all(os.path.isfile(os.path.join(REPO, p, "history.jsonl")) for p in listed)
