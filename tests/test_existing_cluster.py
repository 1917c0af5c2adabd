"""`ftharness run --address` against a cluster an operator started with
`ray start`: the run works and the cluster is left running and intact."""

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO, run_cli

pytestmark = [pytest.mark.exclusive_ray, pytest.mark.slow]

RAY = os.path.join(os.path.dirname(sys.executable), "ray")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive_nodes(address):
    code = ("import ray; ray.init(address=%r, logging_level='ERROR'); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))" % address)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return int(out.stdout.strip().splitlines()[-1])


@pytest.fixture
def operator_cluster(exclusive_ray):
    temp = tempfile.mkdtemp(prefix="fth-op-", dir="/tmp")
    port = free_port()
    address = f"127.0.0.1:{port}"
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
    try:
        subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=0", f"--temp-dir={temp}",
                        "--include-dashboard=false", "--disable-usage-stats"],
                       check=True, capture_output=True, env=env, timeout=120)
        for _ in range(2):
            subprocess.run([RAY, "start", f"--address={address}", "--num-cpus=1"],
                           check=True, capture_output=True, env=env, timeout=120)
        deadline = time.time() + 60
        while alive_nodes(address) < 3 and time.time() < deadline:
            time.sleep(1)
        yield address
    finally:
        subprocess.run([RAY, "stop", "--force"], capture_output=True, timeout=120)
        shutil.rmtree(temp, ignore_errors=True)


def test_run_on_operator_cluster_leaves_it_intact(operator_cluster, tmp_path):
    """The default scenario (a worker is killed) on a cluster ftharness did not start."""
    assert alive_nodes(operator_cluster) == 3
    out = tmp_path / "res"
    refused = run_cli("run", "--address", operator_cluster, "--out", str(out), timeout=120)
    assert refused.returncode == 2 and "--allow-destructive" in refused.stderr
    r = run_cli("run", "--address", operator_cluster, "--out", str(out), "--steps", "10", "--quiet",
                "--allow-destructive", timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS default" in r.stdout and (out / "summary.json").exists()
    assert alive_nodes(operator_cluster) == 3


def test_unreachable_address_is_one_line(exclusive_ray, tmp_path):
    r = run_cli("run", "--address", f"127.0.0.1:{free_port()}", "--out", str(tmp_path / "x"), timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("ftharness:")]
    assert len(lines) == 1 and "--address" in lines[0] and "Traceback" not in r.stderr
