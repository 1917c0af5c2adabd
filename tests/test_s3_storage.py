"""Checkpoint storage on a real S3 endpoint (moto's server on loopback, pyarrow's
S3FileSystem as Ray Train uses it): the endpoint itself, the scenario rules,
and a worker kill restored from S3 on the shared cluster."""

import socket

import pytest

from harness.errors import ScenarioError
from harness.history.records import read_events
from harness.run.guard import check_existing
from harness.run.runner import storage_location
from scenarios.schema import parse_scenario

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

    from harness.cluster.s3 import BUCKET, S3Endpoint

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
    with pytest.raises(ScenarioError, match="faults\\[0\\].kind: corrupt_checkpoint"):
        parse_scenario({"name": "x", "cluster": {"storage": "s3"}, "failure_config": {"max_failures": 1},
                        "faults": [{"kind": "corrupt_checkpoint", "at": {"step": 2}}]}, source="t")
    with pytest.raises(ScenarioError, match="cluster.storage"):
        parse_scenario({"name": "x", "cluster": {"storage": "s3", "address": "127.0.0.1:1"}}, source="t")
    sc = parse_scenario({"name": "x", "cluster": {"storage": "s3"}}, source="t")
    with pytest.raises(ScenarioError, match="storage_path: s3://"):
        check_existing(sc, "127.0.0.1:1", "--address", allow_destructive=True)


@pytest.mark.cluster
def test_worker_kill_restores_from_s3(run_scenario):
    s = run_scenario({
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
