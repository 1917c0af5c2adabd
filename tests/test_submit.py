"""`ftharness run --submit`: the harness as a Ray Job on a cluster an operator started
(`ray start` with its dashboard), results brought back; and the refusals, which
never contact a cluster."""

import json
import os

import pytest

from conftest import REPO, run_cli
from ftharness.harness.run.submit import BEGIN, END, dashboard_url, pack, unpack, visible
from test_existing_cluster import alive_nodes, free_port, started_cluster


# ------------------------------------------------------------------ pure
def test_dashboard_address_forms():
    assert dashboard_url("10.0.0.5:8265") == "http://10.0.0.5:8265"
    assert dashboard_url("https://ray.example:443/") == "https://ray.example:443"
    for bad, why in (("ray://10.0.0.5:10001", "not a Ray Client one"), ("s3://x", "allowed: http://"),
                     ("", "names no host"), ("http://", "names no host")):
        with pytest.raises(Exception, match=why):
            dashboard_url(bad)


def test_results_travel_in_the_log_without_checkpoints(tmp_path):
    res = tmp_path / "res"
    (res / "storage" / "checkpoint_1").mkdir(parents=True)
    (res / "storage" / "checkpoint_1" / "state.pt").write_bytes(b"x" * 1000)
    (res / "summary.json").write_text('{"verdict": "PASS"}')
    (res / "history.jsonl").write_text('{"seq": 1}\n')
    log = f"progress line\n{BEGIN}\n{pack(str(res))}\n{END}\nlast line\n"
    assert visible(log) == "progress line\n\nlast line\n"
    out = tmp_path / "back"
    assert unpack(log, str(out))
    assert sorted(os.listdir(out)) == ["history.jsonl", "summary.json"]
    assert not unpack("no results here", str(tmp_path / "none"))


@pytest.mark.parametrize("args, field", [
    (["--address", "127.0.0.1:6379"], "--address: not with --submit"),
    (["--resume", "results/x"], "--resume: not with --submit"),
    ([], "--allow-destructive"),
])
def test_submit_refusals_are_one_line_before_anything_is_sent(tmp_path, args, field):
    r = run_cli("run", "--submit", "127.0.0.1:1", "--out", str(tmp_path / "r"), *args, timeout=120)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and field in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "r").exists()


def test_submit_to_nothing_is_one_line(tmp_path):
    r = run_cli("run", "--submit", f"127.0.0.1:{free_port()}", "--allow-destructive", "--out",
                str(tmp_path / "r"), timeout=120)
    assert r.returncode == 2 and "--submit" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "r").exists()


# ------------------------------------------------------------------ real
@pytest.fixture
def operator_cluster_with_dashboard(ftharness_exclusive):
    dash = free_port()
    with started_cluster(dashboard_port=dash) as address:
        yield address, f"http://127.0.0.1:{dash}"


@pytest.mark.exclusive_ray
@pytest.mark.slow
@pytest.mark.full
def test_submitted_run_brings_its_results_back_and_leaves_the_cluster_intact(
        operator_cluster_with_dashboard, tmp_path, write_scenario):
    gcs, url = operator_cluster_with_dashboard
    scenario = write_scenario("""
name: submitted
workload: {num_workers: 2, steps: 8, checkpoint_every: 2}
failure_config: {max_failures: 1}
faults: [{kind: kill_worker, target: {rank: 1}, at: {step: 3}}]
expect: {outcome: succeeded, properties: [exactly_once_restore, budget_accounting, recovers]}
""")
    out = tmp_path / "res"
    r = run_cli("run", scenario, "--submit", url, "--allow-destructive", "--out", str(out), "--quiet",
                timeout=600, cwd=REPO)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "submitted submitted to " in r.stderr and "PASS submitted" in r.stdout
    assert BEGIN not in r.stderr + r.stdout                      # the blob is not shown
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "PASS" and summary["attempts"] == 2
    assert summary["settings"]["address"] == "auto"             # the job ran on the cluster itself
    assert (out / "history.jsonl").exists() and (out / "report.html").exists()
    assert not (out / "storage").exists()                       # checkpoints do not travel
    from ray.job_submission import JobSubmissionClient

    jobs = [j for j in JobSubmissionClient(url).list_jobs() if j.submission_id]   # not the drivers
    assert [str(j.status).split(".")[-1] for j in jobs] == ["SUCCEEDED"]
    assert alive_nodes(gcs) == 3


@pytest.mark.exclusive_ray
@pytest.mark.slow
@pytest.mark.full
def test_a_job_of_several_modules_runs_on_an_existing_cluster_by_address_and_by_submit(
        operator_cluster_with_dashboard, tmp_path):
    """The multi-module job (a package with submodules, a sibling module; tests/test_usercode.py)
    on a cluster an operator started, run from another folder so that nothing but what
    ftharness ships can give the workers its modules: through --address, then --submit."""
    gcs, url = operator_cluster_with_dashboard
    multi = os.path.join(REPO, "tests", "data", "multimodule", "scenario.yaml")
    for route, args in (("address", ["--address", gcs]), ("submit", ["--submit", url])):
        out = tmp_path / route
        r = run_cli("run", multi, *args, "--allow-destructive", "--out", str(out), "--quiet",
                    timeout=600, cwd=str(tmp_path))
        assert r.returncode == 0, (route, r.stdout[-2000:], r.stderr[-3000:])
        summary = json.loads((out / "summary.json").read_text())
        assert summary["verdict"] == "PASS" and summary["outcome"] == "succeeded", (route, summary["mismatches"])
        assert summary["attempts"] == 2, route                   # the restarted workers imported it again
    assert alive_nodes(gcs) == 3
