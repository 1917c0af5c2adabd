"""`ftharness --version`, `list` and `trace` (no cluster)."""

import json
import os
import subprocess

from conftest import FTHARNESS

from ftharness.faults import FAULT_KINDS
from ftharness.scenarios.properties import PROPERTIES

DATA = os.path.join(os.path.dirname(__file__), "data")


def cli(*args):
    return subprocess.run([*FTHARNESS, *args], capture_output=True, text=True, timeout=120)


def test_version_names_ftharness_and_ray():
    r = cli("--version")
    assert r.returncode == 0 and r.stdout.startswith("ftharness ") and "ray 2.60" in r.stdout


def test_list_names_every_kind_property_and_catalog_scenario():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    for name in (*FAULT_KINDS, *PROPERTIES, "kill-worker", "default"):
        line = next((l for l in r.stdout.splitlines() if l.split() and l.split()[0] == name), None)
        assert line and len(line.split()) > 1, f"{name} is not listed with a description"
    assert "arguments: target, graceful" in r.stdout        # kill_worker's own spec
    assert "arguments: which, how" in r.stdout             # corrupt_checkpoint takes no target


def test_trace_writes_a_chrome_trace_and_refuses_a_non_results_folder(tmp_path):
    out = tmp_path / "trace.json"
    r = cli("trace", os.path.join(DATA, "kill-worker"), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert json.load(open(out))["traceEvents"]
    r = cli("trace", str(tmp_path))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no history.jsonl" in r.stderr
