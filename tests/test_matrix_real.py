"""`ftharness matrix` for real (`make test-full`): cells are real `ftharness run`s on real embedded clusters.

- one cell on the installed release, end to end (run, cells.jsonl, report);
- one scenario per fault family on the oldest and the newest
  supported release; the oldest runs in an environment the matrix builds (uv or pip from the
  registry), so this lane needs the package registry.
"""

import json
import os
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, ray_clusters, run_cli
from ftharness import releases

CATALOG = os.path.join(REPO, "scenarios", "catalog")

pytestmark = [pytest.mark.slow]


def _cells(out):
    with open(os.path.join(out, "cells.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.mark.full   # the core lane's `ftharness run` of kill-worker is test_reports_logs'; the matrix's own
#                    logic (cells, JUnit, report) is tested on recorded cells in tests/test_matrix.py
@pytest.mark.ftharness_exclusive   # its cell starts its own cluster: the shared one stops first (one at a time)
def test_one_cell_on_the_installed_release_end_to_end(ftharness_exclusive, tmp_path):
    before = ray_clusters()
    out = str(tmp_path / "m")
    r = run_cli("matrix", os.path.join(CATALOG, "kill-worker.yaml"), "--out", out, timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    (row,) = _cells(out)
    assert row["verdict"] == "PASS" and row["ray"] == releases.installed()
    summary = row["summary"]
    assert summary["versions"]["ray"] == releases.installed() and summary["budgets"]["worker_group"] == 1
    run_dir = os.path.join(out, row["results"])
    with open(os.path.join(run_dir, "history.jsonl")) as f:
        start = next(json.loads(line) for line in f if '"run_start"' in line)
    assert start["ray_version"] == releases.installed()
    suite = ET.parse(os.path.join(out, "junit.xml")).getroot().find("testsuite")
    assert suite.get("tests") == "1" and suite.get("failures") == "0"
    assert os.path.isfile(os.path.join(out, "matrix.html")) and os.path.isfile(os.path.join(out, "matrix.csv"))
    assert ray_clusters() <= before, "a cell left a Ray cluster behind"


FAMILIES = ["kill-worker", "crash-worker", "hang-worker", "kill-node", "preempt-node", "partition-node",
            "corrupt-checkpoint", "storage-errors", "starve-resources", "kill-controller"]


@pytest.mark.full
@pytest.mark.ftharness_exclusive
@pytest.mark.parametrize("name", FAMILIES)
def test_each_fault_family_on_the_oldest_and_newest_release(ftharness_exclusive, tmp_path, name):
    out = str(tmp_path / "m")
    r = run_cli("matrix", os.path.join(CATALOG, f"{name}.yaml"), "--ray", f"{releases.OLDEST},{releases.NEWEST}",
                "--out", out, timeout=3000)
    rows = {row["ray"]: row for row in _cells(out)}
    assert set(rows) == {releases.OLDEST, releases.NEWEST}, r.stdout[-2000:]
    for ray, row in rows.items():
        assert row["verdict"] == "PASS", (ray, row.get("notes"), (row.get("summary") or {}).get("mismatches"),
                                          (row.get("summary") or {}).get("inconclusive"), row.get("error"))
    assert r.returncode == 0
    if name == "preempt-node":   # the change the release table predicts, seen for real
        old, new = rows[releases.OLDEST]["summary"], rows[releases.NEWEST]["summary"]
        assert old["outcome"] == "failed" and old["budgets"].get("preemption", 0) == 0
        assert new["outcome"] == "succeeded" and new["budgets"]["preemption"] == 1
