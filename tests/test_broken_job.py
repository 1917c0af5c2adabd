"""A job that cannot train is named first (scenarios/job_error.py): a user's job that opens
`configs/train.yaml` relative to the working directory, which Ray Train V2 changes on the workers,
so every attempt fails before its first step. Its run was recorded into
tests/data/broken-job/run (the job and its scenario: tests/data/broken-job/job); the pure tests
judge that history, and one real run (cluster lane) runs the job again.

What every output must say: the verdict line names the job's error (its last line) and the file
and line of the user's code, before the faults that never fired; the page's banner and JUnit's
message lead with it; no property says PASS on a run with no steps."""

import json
import os
import shutil
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, run_cli
from ftharness.scenarios import job_error as je

DATA = os.path.join(REPO, "tests", "data", "broken-job")
RUN = os.path.join(DATA, "run")
JOB = os.path.join(DATA, "job")
ERROR_LINE = "FileNotFoundError: [Errno 2] No such file or directory: 'configs/train.yaml'"
WHERE = "job.py:9, in load_config"


def events():
    with open(os.path.join(RUN, "history.jsonl")) as f:
        return [json.loads(line) for line in f if line.strip()]


# ------------------------------------------------------------------ the judgement
def test_the_recorded_run_is_a_job_that_cannot_train():
    job = je.job_error(events(), {"outcome": "failed"})
    assert job is not None
    assert job["error"] == ERROR_LINE
    assert job["before_first_step"] and job["in_user_code"] and job["attempts"] == 2
    assert job["file"].endswith("job.py") and job["line"] == 9 and job["function"] == "load_config"
    assert job["reason"].startswith("the job cannot train: every attempt (2) failed before its first step: ")
    assert job["reason"].endswith(f"{WHERE})")


def test_a_run_that_succeeded_or_whose_errors_a_fault_caused_names_no_job_error():
    assert je.job_error(events(), {"outcome": "succeeded"}) is None
    for name in ("kill-worker", "elastic-shrink", "partition-unregistered", "start-timeout-254",
                 "torchrun-kill-worker", "resume-missing-260", "kill-controller-unresumed", "preempt-node"):
        with open(os.path.join(REPO, "tests", "data", name, "history.jsonl")) as f:
            evs = [json.loads(line) for line in f if line.strip()]
        assert je.job_error(evs, {"outcome": "failed"}) is None, name   # the reference job: never "theirs"


def test_an_error_raised_by_ftharness_under_the_users_code_is_not_theirs():
    """crash_worker raises from ftharness's hook inside ray.train.report: a fault, not the job."""
    evs = events()
    own = os.path.join(REPO, "harness", "job", "instrument.py")
    for e in evs:
        if e.get("kind") == "worker_error":
            e["traceback"] = e["traceback"].replace(
                "FileNotFoundError", f'  File "{own}", line 1, in crash_point\n    raise InjectedCrash()\n'
                                     f"FileNotFoundError", 1)
    assert je.job_error(evs, {"outcome": "failed"}) is None


def test_an_error_in_the_users_code_after_steps_is_named_when_no_fault_hit_that_attempt():
    tb = ('Traceback (most recent call last):\n  File "/x/ftharness/harness/job/instrument.py", line 303, in wrapped\n'
          '    out = train_fn(config)\n  File "/home/me/chaos/job.py", line 20, in train_func\n'
          '    value = batch["label"]\nKeyError: \'label\'\n')
    evs = [{"kind": "attempt_start", "attempt_id": "a", "t": 1.0},
           {"kind": "step", "attempt_id": "a", "step": 1, "rank": 0, "t": 2.0},
           {"kind": "worker_error", "attempt_id": "a", "rank": 0, "step": 1, "t": 3.0, "error_type": "KeyError",
            "error": "'label'", "traceback": tb}]
    job = je.job_error(evs, {"outcome": "failed"})
    assert job["reason"] == ("the job's own code failed after step 1, with no fault in that attempt: "
                             "KeyError: 'label' (job.py:20, in train_func)")
    hit = evs[:2] + [{"kind": "fault_injected", "t": 2.5, "fault": 0}] + evs[2:]
    assert je.job_error(hit, {"outcome": "failed"}) is None     # a fault in that attempt may explain it


def test_a_shipped_file_is_shown_relative_to_the_folder_ray_shipped():
    assert je.shown_path("/tmp/ray/session_1/runtime_resources/working_dir_files/_ray_pkg_0a1b2c/sub/job.py") \
        == "sub/job.py"


def test_triggers_read_as_a_person_writes_them():
    assert je.trigger_text({"step": 4, "nth": 1, "hold": True}) == "after step 4"
    assert je.trigger_text({"step": 4, "rank": 1, "nth": 2, "hold": False}) == \
        "after step 4 on rank 1 (its 2nd time), without holding the worker"
    assert je.trigger_text({"time_s": 12.5, "nth": 1, "hold": True}) == "12.5 s after training started"
    assert je.trigger_text({"event": "checkpoint_registered", "nth": 3}) == "at the 3rd checkpoint_registered"
    assert je.evidence_text("never fired (trigger {'step': 3, 'nth': 1, 'hold': True})") == \
        "never fired (trigger: after step 3)"


# ------------------------------------------------------------------ every output
def test_check_puts_the_jobs_error_on_the_verdict_line_then_the_faults_that_never_fired():
    r = run_cli("check", RUN)
    assert r.returncode == 3, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    verdict = next(i for i, line in enumerate(lines) if line.startswith("INCONCLUSIVE broken-job"))
    assert lines[verdict].startswith("INCONCLUSIVE broken-job: the job cannot train: every attempt (2) failed "
                                     "before its first step: " + ERROR_LINE), lines[verdict]
    assert WHERE in lines[verdict]
    assert lines[verdict + 1] == "  ? fault 0 (kill_worker) did not land: never fired (trigger: after step 3)"
    assert sum("the job cannot train" in line for line in lines) == 1   # said once, not again as a reason


def test_no_property_passes_on_a_run_with_no_steps():
    r = run_cli("check", RUN, "--json")
    judged = json.loads(r.stdout)
    shown = {p["property"]: p for p in judged["properties"]}
    assert shown["exactly_once_restore"]["status"] == "INCONCLUSIVE"
    assert "no step was recorded" in shown["exactly_once_restore"]["message"]
    assert judged["reasons"][0].startswith("the job cannot train")


def test_the_page_banner_and_junit_lead_with_the_jobs_error(tmp_path):
    out = tmp_path / "report"
    r = run_cli("report", RUN, "--out", str(out), "--junit", str(tmp_path / "junit.xml"))
    assert r.returncode == 0, r.stderr
    page = (out / "index.html").read_text()
    banner = page[page.index('id="verdict"'):page.index('<nav id="toc"')]
    assert '<strong class="job-error">the job cannot train: every attempt (2)' in banner
    assert banner.index("the job cannot train") < banner.index("fault 0 (kill_worker) did not land")
    assert "No such file or directory: &#39;configs/train.yaml&#39;" in banner and WHERE in banner
    assert "after step 3" in page and "nth 1" not in page
    case = ET.parse(tmp_path / "junit.xml").getroot().find(".//testcase[@name='verdict']")
    error = case.find("error")
    assert error is not None and error.get("type") == "inconclusive"
    assert error.get("message").startswith("INCONCLUSIVE: the job cannot train: every attempt (2) failed before "
                                           "its first step: " + ERROR_LINE)
    assert WHERE in error.get("message")


def test_the_summary_records_the_jobs_error_and_validates(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    from ftharness.reports.judgement import judged_summary

    summary = judged_summary(RUN)
    assert summary["job_error"]["error"] == ERROR_LINE and summary["job_error"]["line"] == 9
    schema = json.load(open(os.path.join(REPO, "reports", "summary.schema.json")))
    errors = [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(summary)]
    assert not errors, errors


# ------------------------------------------------------------------ a real run
@pytest.mark.slow
@pytest.mark.full   # (per merge, the recorded run above is judged; this records it again, about a minute)
@pytest.mark.ftharness_exclusive   # `ftharness run` starts its own cluster: the shared one stops first
def test_a_real_run_of_the_broken_job_says_so_first(ftharness_exclusive, tmp_path):
    """The job run again on an embedded cluster (under the host's Ray lock in CI): the terminal's
    verdict line names the missing file and job.py:9, exit 3, and JUnit's message leads with it."""
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    out = tmp_path / "results"
    r = run_cli("run", str(job / "scenario.yaml"), "--out", str(out), "--quiet", timeout=600, cwd=str(tmp_path))
    assert r.returncode == 3, r.stdout[-3000:] + r.stderr[-3000:]
    first = next(line for line in r.stdout.splitlines() if line.startswith("INCONCLUSIVE broken-job"))
    assert first.startswith("INCONCLUSIVE broken-job: the job cannot train:") and ERROR_LINE in first, first
    assert "job/job.py:9, in load_config" in first, first
    message = ET.parse(out / "junit.xml").getroot().find(".//testcase[@name='verdict']/error").get("message")
    assert message.startswith("INCONCLUSIVE: the job cannot train:") and "job.py:9, in load_config" in message
