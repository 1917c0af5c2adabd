"""`ftharness run --address` against a cluster an operator started with
`ray start`: the run works and the cluster is left running and intact."""

import contextlib
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


@contextlib.contextmanager
def started_cluster(dashboard_port=None):
    """A head and two 1-CPU workers started with `ray start`, as an operator would; `ray stop`
    after. With `dashboard_port`, the head serves the dashboard (the Jobs API) there."""
    temp = tempfile.mkdtemp(prefix="fth-op-", dir="/tmp")
    port = free_port()
    address = f"127.0.0.1:{port}"
    # a submitted job's entrypoint runs `python` from the cluster's PATH: this venv's
    env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0",
           "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")}
    dashboard = (["--include-dashboard=true", "--dashboard-host=127.0.0.1", f"--dashboard-port={dashboard_port}"]
                 if dashboard_port else ["--include-dashboard=false"])
    try:
        subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=0", f"--temp-dir={temp}",
                        *dashboard, "--disable-usage-stats"], check=True, capture_output=True, env=env, timeout=120)
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


@pytest.fixture
def operator_cluster(ftharness_exclusive):
    with started_cluster() as address:
        yield address


def head_of(address):
    code = ("import ray; ray.init(address=%r, logging_level='ERROR'); "
            "print([n['NodeID'] for n in ray.nodes() if 'node:__internal_head__' in n['Resources']][0])" % address)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return out.stdout.strip().splitlines()[-1]


@pytest.mark.full
def test_run_on_operator_cluster_leaves_it_intact(operator_cluster, tmp_path, write_scenario):
    """The default scenario (a worker is killed) on a cluster ftharness did not start:
    refused without --allow-destructive from every address source, replace refused,
    the GCS head found and recorded, and the cluster left as it was."""
    import json

    assert alive_nodes(operator_cluster) == 3
    out = tmp_path / "res"
    refused = run_cli("run", "--address", operator_cluster, "--out", str(out), timeout=120)
    assert refused.returncode == 2 and "--address" in refused.stderr and "--allow-destructive" in refused.stderr
    by_env = run_cli("run", "--out", str(out), timeout=120, env={"RAY_ADDRESS": operator_cluster})
    assert by_env.returncode == 2 and "RAY_ADDRESS" in by_env.stderr and "--allow-destructive" in by_env.stderr
    in_file = write_scenario(f"""
name: addressed
cluster: {{address: "{operator_cluster}"}}
workload: {{num_workers: 2, steps: 8}}
failure_config: {{max_failures: 1}}
faults: [{{kind: kill_worker, target: {{rank: 1}}, at: {{step: 3}}}}]
""")
    by_file = run_cli("run", in_file, "--out", str(out), timeout=120)
    assert by_file.returncode == 2 and "cluster.address" in by_file.stderr
    replace = run_cli("run", "scenarios/catalog/kill-node.yaml", "--address", operator_cluster,
                      "--allow-destructive", "--out", str(out), timeout=120)
    assert replace.returncode == 2 and "faults[0].replace" in replace.stderr, replace.stderr
    assert not (out / "summary.json").exists() and alive_nodes(operator_cluster) == 3

    r = run_cli("run", "--address", operator_cluster, "--out", str(out), "--steps", "10", "--quiet",
                "--allow-destructive", timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS default" in r.stdout and (out / "summary.json").exists()
    settings = json.loads((out / "summary.json").read_text())["settings"]
    assert settings["address"] == operator_cluster and settings["address_source"] == "--address"
    assert settings["head_node_id"] == head_of(operator_cluster)
    assert "Ray Core settings are the running cluster's own" in settings["profile"]
    assert alive_nodes(operator_cluster) == 3


def test_unreachable_address_is_one_line(ftharness_exclusive, tmp_path):
    r = run_cli("run", "--address", f"127.0.0.1:{free_port()}", "--out", str(tmp_path / "x"), timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = [l for l in r.stderr.splitlines() if l.startswith("ftharness:")]
    assert len(lines) == 1 and "--address" in lines[0] and "Traceback" not in r.stderr
