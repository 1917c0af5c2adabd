"""corrupt_checkpoint and storage_errors over any pyarrow filesystem, on a real S3
endpoint (moto's server on loopback, no Ray): the chaos filesystem over S3 fails
the configured operations and counts its hits in the bucket, the storage_errors
fault switches it on and off through a control object, and a checkpoint object
damaged in the bucket no longer matches the digests its ranks reported, as the
worker-side checker (ftharness.harness.job.instrument.restored_intact) sees it. The same
fault code on local disk is checked alongside."""

import hashlib
import json
import os
import pickle
import random
import shutil
import time

import pyarrow.fs as pafs
import pytest

from ftharness.faults import make_fault
from ftharness.faults.base import FaultContext, join_storage, resolve_storage
from ftharness.faults.storage import CONTROL_FILE, HITS_DIR, chaos_filesystem, read_hits
from ftharness.errors import FaultSkipped
from ftharness.history.records import marker_name
from ftharness.harness.job.instrument import digest_of, file_hashes, restored_intact

pytest.importorskip("moto")

RUN = "ftharness/run-1"          # the run's folder in the bucket, as the runner lays it out


@pytest.fixture(scope="module")
def endpoint():
    from ftharness.harness.cluster.s3 import S3Endpoint

    s3 = S3Endpoint().start()
    try:
        yield s3
    finally:
        s3.close()


@pytest.fixture
def s3(endpoint):
    """The endpoint's filesystem, the bucket emptied for each test."""
    fs = endpoint.filesystem()
    fs.delete_dir_contents("ftharness", missing_dir_ok=True)
    return fs


def put(fs, path, data):
    with fs.open_output_stream(path) as f:
        f.write(data)


def get(fs, path):
    with fs.open_input_stream(path) as f:
        return f.read()


def control(fs, root, **c):
    put(fs, f"{root}/{CONTROL_FILE}", json.dumps(c).encode())
    time.sleep(0.15)   # the handler re-reads its control every 0.1 s


# ------------------------------------------------------------------ the chaos filesystem over S3
def test_chaos_over_s3_fails_matching_writes_and_counts_the_hits(s3):
    fs = chaos_filesystem("ftharness", s3)
    assert fs.type_name == "py::ftharness-chaos+s3"
    put(fs, f"{RUN}/before.bin", b"x" * 100)                          # no control: passthrough
    control(s3, "ftharness", id="c1", ops=["write"], path_glob="*/checkpoint_*", error_rate=1.0)
    with pytest.raises(OSError, match="injected write error"):
        put(fs, f"{RUN}/checkpoint_000001/model.pt", b"y" * 100)
    put(fs, f"{RUN}/other.bin", b"z")                                  # not matching the glob
    assert get(fs, f"{RUN}/before.bin") == b"x" * 100                  # reads are not in ops
    assert [i.type for i in s3.get_file_info([f"{RUN}/checkpoint_000001/model.pt"])] == [pafs.FileType.NotFound]
    hits = read_hits(s3, "ftharness", "c1")
    assert hits["errors_returned"] == 1 and hits["delays"] == 0
    assert hits["first"]["op"] == "write" and hits["first"]["path"].endswith("checkpoint_000001/model.pt")
    assert read_hits(s3, "ftharness", "another-injection") == {"errors_returned": 0, "delays": 0, "first": None}
    s3.delete_file(f"ftharness/{CONTROL_FILE}")                        # heal
    time.sleep(0.15)
    put(fs, f"{RUN}/checkpoint_000001/model.pt", b"y" * 100)
    assert read_hits(s3, "ftharness", "c1")["errors_returned"] == 1


def test_torn_object_on_s3_through_ray_s_upload_path(s3, tmp_path):
    """pyarrow.fs.copy_files into the chaos filesystem, as Ray Train uploads a checkpoint
    (threads on: the chaos filesystem is no S3FileSystem to Ray)."""
    local = tmp_path / "ckpt"
    local.mkdir()
    (local / "model.pt").write_bytes(bytes(range(256)) * 8)
    fs = chaos_filesystem("ftharness", s3)
    control(s3, "ftharness", id="c2", ops=["write"], error_rate=1.0, partial=True)
    with pytest.raises(OSError, match="injected partial write"):
        pafs.copy_files(str(local), f"{RUN}/checkpoint_000002", source_filesystem=pafs.LocalFileSystem(),
                        destination_filesystem=fs, chunk_size=64 * 1024 * 1024, use_threads=True)
    torn = get(s3, f"{RUN}/checkpoint_000002/model.pt")
    assert 0 < len(torn) < 2048 and torn == (bytes(range(256)) * 8)[: len(torn)]
    assert read_hits(s3, "ftharness", "c2")["errors_returned"] >= 1


def test_latency_and_read_errors_over_s3(s3):
    put(s3, f"{RUN}/f", b"1")
    fs = chaos_filesystem("ftharness", s3)
    control(s3, "ftharness", id="c3", ops=["read"], error_rate=0.0, latency_s=0.3)
    t = time.time()
    assert get(fs, f"{RUN}/f") == b"1"
    assert time.time() - t >= 0.3
    control(s3, "ftharness", id="c4", ops=["read", "list"], error_rate=1.0)
    with pytest.raises(OSError, match="injected read error"):
        get(fs, f"{RUN}/f")
    with pytest.raises(OSError, match="injected list error"):
        fs.get_file_info(pafs.FileSelector(RUN))
    assert read_hits(s3, "ftharness", "c3") == {"errors_returned": 0, "delays": 1,
                                                "first": read_hits(s3, "ftharness", "c3")["first"]}
    assert read_hits(s3, "ftharness", "c4")["errors_returned"] == 2


def test_the_chaos_filesystem_pickles_with_its_s3_inside(s3):
    fs = pickle.loads(pickle.dumps(chaos_filesystem("ftharness", s3)))   # as Ray ships it to the workers
    assert isinstance(fs, pafs.PyFileSystem) and fs.type_name == "py::ftharness-chaos+s3"
    put(fs, f"{RUN}/p", b"ok")
    assert get(s3, f"{RUN}/p") == b"ok"
    assert fs.handler.root == "ftharness" and fs.handler.fs.type_name == "s3"


def test_hits_are_counted_per_process_and_summed(tmp_path):
    """Each handler copy (each process) keeps its own hits file; read_hits sums them."""
    root = str(tmp_path)
    local = pafs.LocalFileSystem()
    a, b = chaos_filesystem(root), pickle.loads(pickle.dumps(chaos_filesystem(root)))
    control(local, root, id="c5", ops=["mkdir"], error_rate=1.0)
    for fs in (a, b, a):
        with pytest.raises(OSError):
            fs.create_dir(f"{root}/d")
    assert len(os.listdir(tmp_path / HITS_DIR / "c5")) == 2
    assert read_hits(local, root, "c5")["errors_returned"] == 3


# ------------------------------------------------------------------ the storage_errors fault
class Recorder:
    def __init__(self):
        self.scheduled, self.recorded = [], []

    def schedule(self, delay_s, fn, label, kind="fault_action"):
        self.scheduled.append(fn)

    def record(self, label, detail):
        self.recorded.append((label, detail))


def fault_ctx(storage_dir, storage_fs=None, history_path="/nonexistent", **kw):
    r = Recorder()
    return FaultContext(cluster=None, agents=None, members=[], storage_dir=storage_dir, history_path=history_path,
                        rng=random.Random(0), schedule=r.schedule, record=r.record, storage_fs=storage_fs, **kw), r


def test_storage_errors_fault_over_s3_injects_watches_and_heals(s3):
    fault = make_fault(0, {"kind": "storage_errors", "ops": ["write"], "path_glob": "*/checkpoint_*",
                           "error_rate": 1.0, "at": {"step": 3}})
    ctx, rec = fault_ctx(RUN, s3)
    hit = fault.inject(ctx)
    assert hit["path"] == f"ftharness/{CONTROL_FILE}" and hit["filesystem"] == "s3" and hit["ops"] == ["write"]
    assert json.loads(get(s3, hit["path"]))["id"] == hit["id"]
    ray_fs = chaos_filesystem("ftharness", s3)      # what the runner hands Ray Train
    rec.scheduled.pop()()                           # the watch polls: nothing reached Ray yet
    assert not rec.recorded and rec.scheduled       # ... and polls again
    time.sleep(0.15)
    with pytest.raises(OSError, match="injected write error"):
        put(ray_fs, f"{RUN}/checkpoint_000003/model.pt", b"w")
    rec.scheduled.pop()()
    label, detail = rec.recorded[0]
    assert label == "storage fault 0 reached the job" and detail["errors_returned"] == 1
    healed = fault.heal(ctx)
    assert healed["how"] == "control file removed" and healed["errors_returned"] == 1
    assert s3.get_file_info(hit["path"]).type == pafs.FileType.NotFound
    time.sleep(0.15)
    put(ray_fs, f"{RUN}/checkpoint_000003/model.pt", b"w")     # healed: writes go through


def test_storage_errors_fault_on_an_s3_uri(endpoint, s3, monkeypatch):
    """A storage_path given as a URI (an existing cluster's s3://...): resolved as Ray Train does."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ftharness")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ftharness")
    uri = f"s3://ftharness/base?endpoint_override={endpoint.endpoint}&scheme=http&region=us-east-1"
    fs, path = resolve_storage(uri)
    assert (fs.type_name, path) == ("s3", "ftharness/base")
    fault = make_fault(1, {"kind": "storage_errors", "at": {"step": 3}})
    run_dir = join_storage(uri, "run-2")           # as the runner hands it to the injector
    assert run_dir == f"s3://ftharness/base/run-2?endpoint_override={endpoint.endpoint}&scheme=http&region=us-east-1"
    ctx, _ = fault_ctx(run_dir)
    hit = fault.inject(ctx)
    assert hit["path"] == f"ftharness/base/{CONTROL_FILE}" and s3.get_file_info(hit["path"]).type == pafs.FileType.File
    fault.heal(ctx)
    assert s3.get_file_info(hit["path"]).type == pafs.FileType.NotFound


def test_join_storage_keeps_a_uri_s_query_at_the_end():
    assert join_storage("/data/ckpt", "run") == "/data/ckpt/run"
    assert join_storage("s3://b/x/", "run") == "s3://b/x/run"
    assert join_storage("s3://b", "run") == "s3://b/run"
    assert join_storage("gs://b/x?project=p", "run") == "gs://b/x/run?project=p"


# ------------------------------------------------------------------ corrupt_checkpoint
def history(tmp_path, paths):
    """A history with checkpoint_registered events for `paths`."""
    p = tmp_path / "history.jsonl"
    with open(p, "w") as f:
        for i, path in enumerate(paths, 1):
            f.write(json.dumps({"seq": i, "t": time.time(), "kind": "checkpoint_registered", "path": path,
                                "checkpoint": path.rstrip("/").split("/")[-1]}) + "\n")
    return str(p)


def make_checkpoint(tmp_path, name, rank=0):
    """A checkpoint folder as a rank writes it: files, and the marker with their digests."""
    d = tmp_path / "local" / name
    d.mkdir(parents=True)
    (d / "model.pt").write_bytes(bytes(random.Random(name).randrange(256) for _ in range(4096)))
    (d / "extra.json").write_text('{"step": 1}')
    hashes = file_hashes(str(d))
    marker = {"step": 1, "attempt": 1, "rank": rank, "digest": digest_of(hashes), "files": hashes}
    (d / marker_name(rank)).write_text(json.dumps(marker))
    return d, marker


def upload(s3, local_dir, path):
    pafs.copy_files(str(local_dir), path, source_filesystem=pafs.LocalFileSystem(), destination_filesystem=s3)


def checkpoint(s3, path):
    from ray.train import Checkpoint        # only the class: nothing of Ray starts

    return Checkpoint(path, filesystem=s3)


def test_bitflip_of_an_s3_checkpoint_breaks_its_digest(s3, tmp_path):
    names = ["checkpoint_000001", "checkpoint_000002", "checkpoint_000003"]
    markers = {}
    for n in names:
        d, markers[n] = make_checkpoint(tmp_path, n)
        upload(s3, d, f"{RUN}/{n}")
    target = f"{RUN}/checkpoint_000002"
    assert restored_intact(checkpoint(s3, target), [markers["checkpoint_000002"]]) is True
    original = get(s3, f"{target}/model.pt")
    s3.delete_dir(f"{RUN}/checkpoint_000003")        # retention took the newest registered one
    fault = make_fault(0, {"kind": "corrupt_checkpoint", "which": "latest", "how": "bitflip", "at": {"step": 3}})
    ctx, _ = fault_ctx(RUN, s3, history_path=history(tmp_path, [f"{RUN}/{n}" for n in names]))
    hit = fault.inject(ctx)
    assert hit["checkpoint"] == "checkpoint_000002" and hit["filesystem"] == "s3"
    assert hit["path"] == f"{target}/model.pt" and hit["how"] == "bitflip"     # the largest file, not the marker
    damaged = get(s3, hit["path"])
    assert len(damaged) == len(original) == hit["size"]
    assert [i for i in range(len(original)) if original[i] != damaged[i]] == [hit["offset"]] == [2048]
    assert hit["sha256_before"] == hashlib.sha256(original).hexdigest() != hit["sha256_after"]
    assert hit["sha256_after"] == hashlib.sha256(damaged).hexdigest()
    assert restored_intact(checkpoint(s3, target), [markers["checkpoint_000002"]]) is False   # the checker sees it


@pytest.mark.parametrize("how, which", [("truncate", "oldest"), ("delete_file", "index 1"),
                                        ("delete_dir", "index -1"), ("snapshot", "latest")])
def test_other_damage_on_s3(s3, tmp_path, how, which):
    names = ["checkpoint_000001", "checkpoint_000002"]
    markers = {}
    for n in names:
        d, markers[n] = make_checkpoint(tmp_path, n)
        upload(s3, d, f"{RUN}/{n}")
    put(s3, f"{RUN}/checkpoint_manager_snapshot.json", b'{"checkpoints": [1, 2]}')
    fault = make_fault(0, {"kind": "corrupt_checkpoint", "which": which, "how": how, "at": {"step": 3}})
    ctx, _ = fault_ctx(RUN, s3, history_path=history(tmp_path, [f"{RUN}/{n}" for n in names]))
    hit = fault.inject(ctx)
    assert hit["how"] == how and hit["filesystem"] == "s3"
    if how == "snapshot":
        assert hit["path"] == f"{RUN}/checkpoint_manager_snapshot.json" and hit["new_size"] == hit["size"] // 2
        assert len(get(s3, hit["path"])) == hit["new_size"]
        return
    name = {"oldest": names[0], "index 1": names[1], "index -1": names[1]}[which]
    assert hit["checkpoint"] == name
    intact = restored_intact(checkpoint(s3, f"{RUN}/{name}"), [markers[name]]) if how != "delete_dir" else None
    if how == "truncate":
        assert len(get(s3, hit["path"])) == hit["new_size"] == 2048 and intact is False
    elif how == "delete_file":
        assert s3.get_file_info(hit["path"]).type == pafs.FileType.NotFound and intact is False
        assert hit["sha256_before"]
    else:
        assert hit["path"] == f"{RUN}/{name}"
        assert s3.get_file_info(pafs.FileSelector(f"{RUN}/{name}", allow_not_found=True)) == []


def test_corrupt_checkpoint_on_s3_skips_what_it_cannot_damage(s3, tmp_path):
    fault = make_fault(0, {"kind": "corrupt_checkpoint", "at": {"step": 3}})
    ctx, _ = fault_ctx(RUN, s3, history_path=history(tmp_path, []))
    with pytest.raises(FaultSkipped, match="no registered checkpoint exists yet"):
        fault.inject(ctx)
    ctx, _ = fault_ctx(RUN, s3, history_path=history(tmp_path, [f"{RUN}/checkpoint_000009"]))
    with pytest.raises(FaultSkipped, match="none of the 1 registered checkpoints is still retained"):
        fault.inject(ctx)
    outside = "ftharness/another-run/checkpoint_000001"
    put(s3, f"{outside}/model.pt", b"m")
    put(s3, f"{RUN}/checkpoint_000001/model.pt", b"m")   # same name inside the run: still not the one registered
    ctx, _ = fault_ctx(RUN, s3, history_path=history(tmp_path, [outside]))
    with pytest.raises(FaultSkipped, match="is outside the run's storage"):
        fault.inject(ctx)
    snap = make_fault(0, {"kind": "corrupt_checkpoint", "how": "snapshot", "at": {"step": 3}})
    with pytest.raises(FaultSkipped, match="no checkpoint snapshot yet"):
        snap.inject(fault_ctx(RUN, s3, history_path=history(tmp_path, []))[0])


def test_bitflip_on_local_disk_is_unchanged(tmp_path):
    """The same code on local disk (storage_fs None): damage in place, same evidence."""
    run = tmp_path / "storage" / "run-1"
    d, marker = make_checkpoint(tmp_path, "checkpoint_000001")
    shutil.copytree(d, run / "checkpoint_000001")
    original = (run / "checkpoint_000001" / "model.pt").read_bytes()
    fault = make_fault(0, {"kind": "corrupt_checkpoint", "at": {"step": 3}})
    ctx, _ = fault_ctx(str(run), history_path=history(tmp_path, [str(run / "checkpoint_000001")]))
    hit = fault.inject(ctx)
    assert hit["path"] == str(run / "checkpoint_000001" / "model.pt") and hit["filesystem"] == "local"
    damaged = (run / "checkpoint_000001" / "model.pt").read_bytes()
    assert [i for i in range(len(original)) if original[i] != damaged[i]] == [hit["offset"]]
    from ray.train import Checkpoint

    assert restored_intact(Checkpoint(str(run / "checkpoint_000001")), [marker]) is False


# ------------------------------------------------------------------ what the runner hands Ray Train
def test_runner_wraps_the_run_s_own_filesystem_for_storage_errors(s3, tmp_path, endpoint, monkeypatch):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner
    from ftharness.scenarios.schema import parse_scenario

    def runner(**workload):
        sc = parse_scenario({"name": "x", "workload": workload, "failure_config": {"max_failures": 1},
                             "faults": [{"kind": "storage_errors", "at": {"step": 2}}]})
        return ScenarioRunner(sc, None, RunOptions(out_dir=str(tmp_path / "out")))

    local = runner()
    path, fs = local.storage_for_ray()
    assert path == str(tmp_path / "out" / "storage") and fs.type_name == "py::ftharness-chaos+local"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "ftharness")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "ftharness")
    uri = runner(storage_path=f"s3://ftharness/base?endpoint_override={endpoint.endpoint}&scheme=http")
    path, fs = uri.storage_for_ray()
    assert path == "ftharness/base" and fs.type_name == "py::ftharness-chaos+s3"
    bucket = runner()
    bucket.storage_filesystem, bucket.storage_path = s3, "ftharness"      # cluster.storage: s3
    path, fs = bucket.storage_for_ray()
    assert path == "ftharness" and fs.type_name == "py::ftharness-chaos+s3"
    bad = runner(storage_path="nosuchscheme://x/y")
    with pytest.raises(Exception, match="workload.storage_path: nosuchscheme://x/y cannot be opened"):
        bad.storage_for_ray()


def test_the_restore_check_reads_a_remote_checkpoint_in_a_folder_of_its_own(tmp_path):
    """as_directory's temporary folder is shared by every process on the host that opens the same
    checkpoint, and the last one out removes it: the check must neither use it nor leave one."""
    from ray.train import Checkpoint

    d, marker = make_checkpoint(tmp_path, "checkpoint_000001")
    remote = pafs.SubTreeFileSystem(str(tmp_path / "local"), pafs.LocalFileSystem())   # not LocalFileSystem
    ckpt = Checkpoint("checkpoint_000001", filesystem=remote)
    shared = ckpt._get_temporary_checkpoint_dir()
    assert restored_intact(ckpt, [marker]) is True
    assert not os.path.exists(shared)
    # another rank reading the checkpoint: the shared folder is its, and the check leaves it alone
    os.makedirs(shared)
    open(shared + ".del_lock_another_rank", "w").close()
    try:
        (d / "model.pt").write_bytes(b"changed")
        assert restored_intact(ckpt, [marker]) is False
        assert os.listdir(shared) == []
    finally:
        shutil.rmtree(shared, ignore_errors=True)
        os.remove(shared + ".del_lock_another_rank")
