"""The docs' claims about the outputs, checked against what the outputs contain (issue 51): what
docs/reports.md and docs/ci.md say of JUnit and the page, what docs/tutorial/own-job.md says of
where Ray Train V2's workers run, and what docs/chaostoolkit.md and docs/pytest.md promise. Each
test quotes the claim it checks, so a doc that changes its claim fails here until the output does."""

import inspect
import os
import re
import xml.etree.ElementTree as ET

import pytest

from conftest import REPO, run_cli

DOCS = os.path.join(REPO, "docs")
BROKEN = os.path.join(REPO, "tests", "data", "broken-job", "run")


def doc(name):
    with open(os.path.join(DOCS, name), encoding="utf-8") as f:
        return " ".join(f.read().split())     # one line: a claim may wrap


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """The page and JUnit of a recorded PASS (kill-worker) and a recorded broken job."""
    tmp = tmp_path_factory.mktemp("claims")
    r = run_cli("report", os.path.join(REPO, "tests", "data", "kill-worker"), BROKEN, "--out", str(tmp / "report"),
                "--junit", str(tmp / "report" / "junit.xml"))
    assert r.returncode == 0, r.stderr
    page = (tmp / "report" / "index.html").read_text(encoding="utf-8")
    return {"page": page, "junit": ET.parse(tmp / "report" / "junit.xml").getroot(), "tmp": tmp}


def test_inconclusive_is_an_error_in_junit_never_skipped(outputs):
    claim = 'INCONCLUSIVE, and a property that was not judged, are an `<error type="inconclusive">`'
    assert claim in doc("reports.md")
    assert "INCONCLUSIVE is an `<error type=\"inconclusive\">`" in doc("ci.md")
    assert "are `skipped`, never passed" not in doc("reports.md")     # the old, wrong claim
    broken = next(s for s in outputs["junit"].findall("testsuite") if s.get("name") == "broken-job")
    verdict = broken.find("testcase[@name='verdict']")
    assert verdict.find("error").get("type") == "inconclusive" and verdict.find("skipped") is None
    unjudged = broken.find("testcase[@name='exactly_once_restore']")
    assert unjudged.find("error").get("type") == "inconclusive" and unjudged.find("skipped") is None


def test_the_verdicts_message_leads_with_the_jobs_own_error(outputs):
    assert "The verdict's message leads with a job's own error when it could not train" in doc("reports.md")
    broken = next(s for s in outputs["junit"].findall("testsuite") if s.get("name") == "broken-job")
    message = broken.find("testcase[@name='verdict']/error").get("message")
    assert message.startswith("INCONCLUSIVE: the job cannot train:") and "job.py:9, in load_config" in message
    banner = outputs["page"][outputs["page"].index('id="verdict"'):outputs["page"].index('<nav id="toc"')]
    assert '<strong class="job-error">the job cannot train' in banner
    assert "(`the job cannot train: ... (job.py:9, in load_config)`)" in doc("reports.md")


def test_junit_paths_are_relative_to_its_folder_and_skipped_counts_as_disabled(outputs):
    assert "Every path in the file (a suite's `file`, its `results_dir`) is relative to the folder" in doc("reports.md")
    assert "`<testsuites>` counts those in `disabled`" in doc("reports.md")
    root = outputs["junit"]
    for suite in root.findall("testsuite"):
        assert not os.path.isabs(suite.get("file")), suite.get("file")
        props = {p.get("name"): p.get("value") for p in suite.find("properties")}
        assert not os.path.isabs(props["results_dir"]), props["results_dir"]
        assert os.path.isfile(os.path.join(outputs["tmp"], "report", suite.get("file")))
    assert root.get("disabled") == "0" and "skipped" not in root.attrib


def test_the_timeline_zooms_with_a_modifier_and_the_wheel_alone_scrolls(outputs):
    claim = "Ctrl (or Cmd, or Alt) and the mouse wheel on a timeline zoom the time axis around the pointer"
    assert claim in doc("reports.md") and "the wheel alone scrolls the page past it" in doc("reports.md")
    assert "scroll on a timeline to zoom" not in doc("reports.md")
    js = open(os.path.join(REPO, "reports", "templates", "report.js")).read()
    assert "if (!(evt.ctrlKey || evt.metaKey || evt.altKey)) return;" in js
    assert "reset zoom" in outputs["page"]


def test_triggers_charts_and_the_advice_are_as_the_page_describes(outputs):
    from ftharness.reports.html import MIN_CHART_POINTS

    text = doc("reports.md")
    assert "The faults table gives each trigger as you write it (`after step 4`)" in text
    assert f"drawn from {MIN_CHART_POINTS} recoveries on" in text
    page = outputs["page"]
    assert "after step 5" in page and "nth 1" not in page and "hold True" not in page
    assert "1 recovery(ies): too few for a chart" in page            # one recovery: no one-dot chart
    assert "folded away under one line" in text
    advice = page[page.index('id="advice"'):page.index('id="properties"')]
    assert advice.count("<details") == 1 and "<details open" not in advice


def test_where_workers_run_is_what_ray_train_does():
    """docs/tutorial/own-job.md: workers run in `<Ray's session folder>/artifacts/<run name>`,
    set by Ray Train V2 before the train function starts, unless RAY_CHDIR_TO_TRIAL_DIR=0."""
    text = doc(os.path.join("tutorial", "own-job.md"))
    assert "`<Ray's session folder>/artifacts/<run name>`" in text
    assert "HERE = Path(__file__).parent" in open(os.path.join(DOCS, "tutorial", "own-job.md")).read()
    assert "`RAY_CHDIR_TO_TRIAL_DIR=0`" in text
    from ray.train import constants
    from ray.train.v2._internal.callbacks import working_dir_setup
    from ray.train.v2.api import data_parallel_trainer

    assert "os.chdir(local_working_directory)" in inspect.getsource(working_dir_setup)
    assert re.search(r'get_session_dir_path\(\),\s*"artifacts"', inspect.getsource(constants._get_ray_train_session_dir))
    assert "env_bool(RAY_CHDIR_TO_TRIAL_DIR, True)" in inspect.getsource(data_parallel_trainer)
    ci = doc("ci.md")
    assert "Resolve files against `Path(__file__).parent`" in ci


def test_an_experiment_beside_scenarios_validates_as_docs_chaostoolkit_says(tmp_path):
    text = doc("chaostoolkit.md")
    assert "(Chaos Toolkit experiment)`" in text
    folder = tmp_path / "chaos"
    folder.mkdir()
    block = re.search(r"This is `chaos/survives-a-kill.yaml`.*?```yaml\n(.*?)```",
                      open(os.path.join(DOCS, "chaostoolkit.md")).read(), re.S).group(1)
    (folder / "survives-a-kill.yaml").write_text(block)
    (folder / "job.py").write_text("def train_func(config):\n    pass\n")
    r = run_cli("validate", ".", cwd=str(folder))
    assert r.returncode == 0 and "ok ./survives-a-kill.yaml (Chaos Toolkit experiment)" in r.stdout, r.stdout + r.stderr
    r = run_cli("validate", "chaos", cwd=str(tmp_path))   # from elsewhere: the entrypoint is not found, said so
    assert r.returncode == 2 and "no module named 'job'" in r.stderr, r.stdout + r.stderr


def test_a_journal_of_a_run_that_never_started_is_not_a_fail(tmp_path):
    import json

    assert "says `INCONCLUSIVE` with `the run never started: <cause>`, exit 3" in doc("chaostoolkit.md")
    journal = tmp_path / "journal.json"
    journal.write_text(json.dumps({"experiment": {"title": "mine"}, "status": "interrupted", "steady_states": {},
                                   "ftharness": {"results_dir": None,
                                                 "not_started": "workload.entrypoint: no module named 'job'"}}))
    r = run_cli("verdict", str(journal))
    assert r.returncode == 3, r.stdout + r.stderr
    assert r.stdout.splitlines()[:2] == ["INCONCLUSIVE mine",
                                         "  - the run never started: workload.entrypoint: no module named 'job'"]
    journal.write_text(json.dumps({"experiment": {"title": "mine"}, "status": "aborted", "steady_states": {}}))
    r = run_cli("verdict", str(journal))
    assert r.returncode == 3 and "the run never started" in r.stdout, r.stdout


def test_the_pytest_plugin_never_writes_into_a_folder_that_holds_a_run(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.frontends.pytest_plugin import fresh_folder, refuse_run_folder

    assert "never writes into them" in doc("pytest.md")
    (tmp_path / "run1").mkdir()
    (tmp_path / "run1" / "history.jsonl").write_text("{}\n")
    (tmp_path / "run2").mkdir()                       # empty: usable
    counter = {"n": 0}
    assert fresh_folder(str(tmp_path), "run", counter) == str(tmp_path / "run2")
    (tmp_path / "run2" / "summary.json").write_text("{}")
    assert fresh_folder(str(tmp_path), "run", counter) == str(tmp_path / "run3")
    with pytest.raises(ScenarioError, match="run1: already holds a run"):
        refuse_run_folder(str(tmp_path / "run1"))
