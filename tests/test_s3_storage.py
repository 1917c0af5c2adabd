"""Checkpoint storage on a real S3 endpoint (moto's server on loopback, pyarrow's
S3FileSystem as Ray Train uses it): the endpoint itself, the scenario rules,
and a worker kill restored from S3 on the shared cluster."""

import os
import socket

import pytest
import yaml

from ftharness.errors import ScenarioError
from ftharness.history.records import read_events
from ftharness.harness.run.guard import check_existing
from ftharness.harness.run.runner import storage_location
from ftharness.harness.run.collect import catalog_dir
from ftharness.scenarios.schema import parse_scenario

pytest.importorskip("moto")


def listening(endpoint):
    host, port = endpoint.split(":")
    try:
        socket.create_connection((host, int(port)), timeout=0.5).close()
        return True
    except OSError:
        return False


def test_endpoint_serves_a_bucket_and_stops():
    import pickle

    from ftharness.harness.cluster.s3 import BUCKET, S3Endpoint

    s3 = S3Endpoint().start()
    try:
        fs = pickle.loads(pickle.dumps(s3.filesystem()))     # as Ray ships it to the workers
        with fs.open_output_stream(f"{BUCKET}/run/x.bin") as f:
            f.write(b"\x00\x01")
        assert fs.open_input_stream(f"{BUCKET}/run/x.bin").read() == b"\x00\x01"
    finally:
        s3.close()
    assert not listening(s3.endpoint) and s3.proc is None


def test_storage_rules():
    assert storage_location("s3://bucket/x") == "s3://bucket/x"          # a URI stays a URI
    assert storage_location("rel/dir").startswith("/")
    for kind in ("corrupt_checkpoint", "storage_errors"):       # both act through any pyarrow filesystem
        parse_scenario({"name": "x", "cluster": {"storage": "s3"}, "failure_config": {"max_failures": 1},
                        "faults": [{"kind": kind, "at": {"step": 2}}]}, source="t")
    with pytest.raises(ScenarioError, match="cluster.storage"):
        parse_scenario({"name": "x", "cluster": {"storage": "s3", "address": "127.0.0.1:1"}}, source="t")
    sc = parse_scenario({"name": "x", "cluster": {"storage": "s3"}}, source="t")
    with pytest.raises(ScenarioError, match="storage_path: s3://"):
        check_existing(sc, "127.0.0.1:1", "--address", allow_destructive=True)


@pytest.mark.full
@pytest.mark.cluster
def test_worker_kill_restores_from_s3(ftharness_run):
    s = ftharness_run({
        "name": "s3-kill-worker", "cluster": {"storage": "s3"},
        "workload": {"num_workers": 2, "steps": 10, "checkpoint_every": 2},
        "failure_config": {"max_failures": 1},
        "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}],
    })
    assert s["verdict"] == "PASS", (s["mismatches"], s["inconclusive"])
    assert s["storage_path"].startswith("s3://ftharness")
    events = read_events(s["results_dir"])
    registered = [e["path"] for e in events if e["kind"] == "checkpoint_registered"]
    assert registered and all(p.startswith("ftharness/") for p in registered), registered
    restores = [e for e in events if e["kind"] == "worker_start" and e.get("restored_checkpoint")]
    assert restores and all(e["restored_intact"] is True for e in restores), restores
    endpoint = s["storage_path"].split("http://")[1].split(",")[0]
    assert not listening(endpoint)                                       # stopped with the run


def on_s3(name):
    """A catalog scenario with its checkpoints in the loopback S3 bucket."""
    with open(os.path.join(catalog_dir(), f"{name}.yaml")) as f:
        data = yaml.safe_load(f)
    return dict(data, name=f"s3-{name}", cluster=dict(data.get("cluster") or {}, storage="s3"))


def landed_run(ftharness_run, name):
    s = ftharness_run(on_s3(name))
    assert all(f["landed"] for f in s["faults"]), [(f["kind"], f["status"], f["evidence"]) for f in s["faults"]]
    assert s["history"]["complete"], s["history"]["problems"]
    assert s["matches_expectation"], (s["mismatches"], s["inconclusive"])
    assert s["storage_path"].startswith("s3://ftharness")
    return s, read_events(s["results_dir"])


def injected(events, kind):
    hits = [e for e in events if e["kind"] == "fault_injected" and e["fault_kind"] == kind]
    assert hits, [e for e in events if e["kind"] == "fault_skipped"]
    return hits[0]["target_hit"]


@pytest.mark.full
@pytest.mark.cluster
def test_corrupted_checkpoint_in_s3_is_restored_silently(ftharness_run):
    """The catalog's corrupt-checkpoint with storage in S3: the object is damaged in the
    bucket, and the restart restores it with a digest mismatch, as on local disk."""
    s, ev = landed_run(ftharness_run, "corrupt-checkpoint")
    hit = injected(ev, "corrupt_checkpoint")
    assert hit["filesystem"] == "s3" and hit["path"].startswith("ftharness/"), hit
    assert hit["sha256_before"] != hit["sha256_after"]
    restored = [e for e in ev if e["kind"] == "worker_start" and e["restored_checkpoint"]]
    assert restored and all(e["restored_checkpoint"] == hit["checkpoint"] for e in restored)
    assert all(e["restored_intact"] is False for e in restored)
    assert "digest mismatch" in s["properties"]["exactly_once_restore"]["explanation"]


@pytest.mark.cluster
def test_checkpoint_upload_errors_to_s3_fail_the_attempt(ftharness_run):
    """The catalog's storage-errors with storage in S3: torn uploads to the bucket fail the
    attempt (charged to max_failures), and the retry after the window succeeds."""
    s, ev = landed_run(ftharness_run, "storage-errors")
    hit = injected(ev, "storage_errors")
    assert hit["ops"] == ["write"] and hit["filesystem"] == "s3"
    assert hit["path"] == "ftharness/.ftharness-storage-chaos.json"
    assert "injected partial write" in [e for e in ev if e["kind"] == "worker_error"][0]["error"]
    assert [(e["budget"], e["decision"]) for e in ev if e["kind"] == "failure"][0] == ("worker_group", "RETRY")
