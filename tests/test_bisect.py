"""`ftharness bisect`: the search (pure, with a fake probe) and its input (one line, exit 2);
the real-cluster test runs it on two releases (`full`)."""

import json
import os
import subprocess
import sys

import pytest

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.harness.matrix.bisect import judge, parse_range, search, signature

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EVERY = list(releases.ALL_RELEASES)


def row(verdict="PASS", outcome="succeeded", **budgets):
    return {"verdict": verdict, "summary": {"outcome": outcome, "budgets": budgets}}


def fake(first_changed: str, flaky=(), repeat=2):
    """A probe: before `first_changed` a failed run charging max_failures, from it a success
    charging the preemption budget; releases in `flaky` disagree between their repeats."""
    calls = []

    def probe(ray):
        calls.append(ray)
        new = releases.parse(ray) >= releases.parse(first_changed)
        one = row("PASS", "succeeded", preemption=1) if new else row("PASS", "failed", worker_group=1)
        rows = [one] * repeat
        if ray in flaky:
            rows = [row("PASS", "failed", worker_group=1), row("PASS", "succeeded", preemption=1)]
        return judge(ray, rows)

    return probe, calls


def test_search_finds_the_first_changed_release_in_log_probes():
    probe, calls = fake("2.58.0")
    res = search(EVERY, probe, say=lambda m: None)
    assert (res.boundary, res.last_same) == ("2.58.0", "2.57.1")
    assert len(calls) <= 2 + 5 and calls[:2] == ["2.51.0", "2.60.0"]
    assert "first change at Ray 2.58.0" in res.sentence()


def test_a_flaky_probe_stops_the_search_and_says_where_the_change_lies():
    probe, calls = fake("2.58.0", flaky=("2.55.0",))
    lines = []
    res = search(EVERY, probe, say=lines.append)
    assert res.flaky == "2.55.0" and res.boundary is None
    assert res.interval == ("2.51.0", "2.60.0")
    assert "2.55.0: flaky, its runs disagree" in res.sentence() and "FLAKY" in lines[-1]


def test_a_flaky_probe_deeper_in_narrows_the_interval():
    probe, _ = fake("2.58.0", flaky=("2.58.0",))
    res = search(EVERY, probe, say=lambda m: None)
    assert res.flaky == "2.58.0" and res.interval == ("2.57.0", "2.60.0")


def test_a_range_with_no_change_probes_only_its_ends():
    probe, calls = fake("2.58.0")
    res = search(parse_range("2.51..2.57"), probe, say=lambda m: None)
    assert res.boundary is None and calls == ["2.51.0", "2.57.1"]
    assert res.sentence().startswith("bisect: no change from Ray 2.51.0 to 2.57.1")


def test_a_probe_that_could_not_run_stops_the_search():
    def probe(ray):
        return judge(ray, [{"verdict": "REFUSED", "error": "another Ray cluster runs here", "summary": None}])

    res = search(EVERY, probe, say=lambda m: None)
    assert res.flaky == "2.51.0" and "did not judge the scenario (REFUSED: another Ray" in res.sentence()


def test_signature_is_verdict_outcome_and_charged_budgets():
    assert signature(row("FAIL", "failed", worker_group=1, preemption=0)) == ("FAIL", "failed", (("worker_group", 1),))
    assert judge("2.60.0", [row(), row("FAIL")]).flaky


def test_range_parsing():
    assert parse_range(None) == EVERY and len(EVERY) == 18
    assert parse_range("2.56..2.58") == ["2.56.0", "2.56.1", "2.57.0", "2.57.1", "2.58.0", "2.58.1"]
    assert parse_range("2.57.1..2.60.0") == ["2.57.1", "2.58.0", "2.58.1", "2.59.0", "2.60.0"]
    for bad, msg in (("2.50.1..2.60.0", "2.50.1 is not a supported release"),
                     ("2.57.2..2.60.0", "2.57.2 is not a supported release"),
                     ("2.60.0..2.51.0", "is not older than"), ("2.57", "expected A..B")):
        with pytest.raises(ScenarioError, match=msg):
            parse_range(bad)


@pytest.mark.parametrize("argv, text", [
    (["--ray", "2.49.0..2.60.0"], "--ray: 2.49.0 is not a supported release"),
    (["--repeat", "0"], "--repeat: 0; allowed: 1 to 100"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, argv, text):
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "bisect",
                        os.path.join(ROOT, "scenarios", "known", "spot-reclaim-defaults.yaml"), *argv,
                        "--out", str(tmp_path / "b")], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0, r.stderr
    assert r.stderr.startswith("ftharness: error: " + text)
    assert not (tmp_path / "b").exists()


def test_a_missing_scenario_is_one_line(tmp_path):
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "bisect", str(tmp_path / "nope.yaml")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stderr.strip() == f"ftharness: error: {tmp_path / 'nope.yaml'}: no such scenario file"


@pytest.mark.slow
@pytest.mark.full
def test_bisect_on_two_releases_finds_the_preemption_budget(tmp_path):
    """Real clusters: the spot reclaim with max_failures 0 fails on 2.57.1 (the preempted death is
    charged to max_failures) and recovers on 2.58.0 (max_preemption_failures, default -1)."""
    out = tmp_path / "b"
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "bisect",
                        os.path.join(ROOT, "scenarios", "known", "spot-reclaim-defaults.yaml"),
                        "--ray", "2.57.1..2.58.0", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    result = json.loads((out / "bisect.json").read_text())
    assert result["boundary"] == "2.58.0" and result["last_same"] == "2.57.1"
    sigs = {p["ray"]: p["signature"] for p in result["probes"]}
    assert sigs["2.57.1"][1] == "failed" and sigs["2.58.0"][1] == "succeeded"
    assert (out / "matrix.html").is_file() and (out / "cells.jsonl").is_file()


def test_identical_patch_releases_are_skipped_and_said_so():
    from ftharness.harness.matrix.bisect import collapse, skipped_lines

    probed, skipped = collapse(EVERY)
    # one release per minor (2.59.0's ray/train is 2.58.1's): 9 of 18 probed
    assert probed == ["2.51.0", "2.52.0", "2.53.0", "2.54.0", "2.55.0", "2.56.0", "2.57.0", "2.58.0", "2.60.0"]
    assert skipped["2.59.0"] == "ray/train identical to 2.58.0's" and skipped["2.51.2"].endswith("2.51.0's")
    assert set(probed) | set(skipped) == set(EVERY) and not set(probed) & set(skipped)
    lines = skipped_lines(skipped)
    assert any(ln.startswith("bisect: skipped Ray 2.51.1, 2.51.2: ray/train identical to 2.51.0's") for ln in lines)
    assert all("ftharness matrix" in ln for ln in lines)


def test_a_ray_data_workload_probes_the_patches_whose_ray_data_changed():
    from ftharness.harness.matrix.bisect import DATA_DIFFERS, collapse

    probed, skipped = collapse(EVERY, uses_data=True)
    for a, b in DATA_DIFFERS:
        assert b in probed, b
    assert "2.51.1" in skipped and "2.52.1" in skipped and "2.55.1" in skipped
    assert skipped["2.52.1"] == "ray/train and ray/data identical to 2.52.0's"


def test_skipping_keeps_the_range_ends_and_every_minor_boundary():
    from ftharness.harness.matrix.bisect import SAME_TRAIN, collapse

    probed, _ = collapse(parse_range("2.51.1..2.57.1"))
    assert probed[0] == "2.51.1" and probed[-1] == "2.57.0"
    assert all(a.rsplit(".", 1)[0] == b.rsplit(".", 1)[0] or (a, b) == ("2.58.1", "2.59.0") for a, b in SAME_TRAIN)
    # the search over the probed releases finds the same boundary as over all of them
    for first in ("2.53.0", "2.58.0", "2.60.0"):
        probe, _ = fake(first)
        assert search(collapse(EVERY)[0], probe, say=lambda m: None).boundary == first
