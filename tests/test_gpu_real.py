"""The GPU fault kinds for real. collective_hang on CPU: rank 1 stalls before step 4 while
rank 0 blocks in the step's gloo all-reduce until the 5 s collective timeout; Ray charges
the group's failure to max_failures and the run recovers. The catalog's GPU scenarios run
only where CUDA is (scripts/gpu-check.sh runs them with the CUDA build of torch)."""

import os

import pytest
import torch

from ftharness.harness.run.collect import catalog_dir

pytestmark = pytest.mark.cluster


def test_collective_hang_on_gloo_is_ended_by_the_collective_timeout_and_charged(ftharness_run):
    s = ftharness_run({
        "name": "collective-hang-cpu",
        "workload": {"num_workers": 2, "steps": 10, "checkpoint_every": 2, "collective_timeout_s": 5},
        "failure_config": {"max_failures": 1},
        "faults": [{"kind": "collective_hang", "target": {"rank": 1}, "at": {"step": 4}}],
        "expect": {"outcome": "succeeded"},
    })
    assert s["verdict"] == "PASS", (s["mismatches"], s["inconclusive"])
    (f,) = s["faults"]
    assert f["landed"] and f["expected_budget"] == "worker_group", f
    assert "rank 0 raised" in f["evidence"] and "Timed out" in f["evidence"], f["evidence"]
    assert s["budgets"]["worker_group"] == 1
    g = s["gpu"]
    assert g["devices"] == ["cpu"] and g["backend"] == "gloo"
    (r,) = g["recoveries"]
    assert r["fault_kind"] == "collective_hang" and r["pg_backend"] == "gloo" and r["pg_setup_s"] >= 0


@pytest.mark.slow
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA (scripts/gpu-check.sh runs it)")
@pytest.mark.parametrize("name", ["gpu-kill-worker", "gpu-cuda-error"])
def test_gpu_catalog_scenario_on_its_own_cluster(tmp_path, name):
    import json
    import subprocess
    import sys

    out = tmp_path / "out"
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness.harness.frontends.cli", "run",
                        os.path.join(catalog_dir(), f"{name}.yaml"), "--out", str(out), "--quiet"],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=600)
    s = json.loads((out / "summary.json").read_text())
    assert r.returncode == 0 and s["verdict"] == "PASS", (r.stdout[-2000:], s.get("mismatches"))
    assert all(d.startswith("cuda") for d in s["gpu"]["devices"]) and s["gpu"]["backend"] == "nccl"
