"""One judgement everywhere: `check`, `report`, summary.json, JUnit and the
HTML page show the same statuses for the same folder (ftharness.reports.judgement),
`check --json`, and summary.json's published JSON Schema. No Ray cluster."""

import json
import os
import xml.etree.ElementTree as ET

import jsonschema
import pytest

from ftharness.reports.frames import Frames
from ftharness.reports.html import write_report
from ftharness.reports.judgement import folder_statuses, judged_summary
from ftharness.reports.junit import property_verdicts, write_junit
from test_reports_cli import kill, make_results
from conftest import REPO, run_cli as _run_cli

DATA = os.path.join(os.path.dirname(__file__), "data")
SCHEMA = os.path.join(REPO, "reports", "summary.schema.json")
RECORDED = sorted(os.path.join(DATA, d) for d in os.listdir(DATA)
                  if os.path.isfile(os.path.join(DATA, d, "summary.json")))


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("judged")
    return [make_results(root / "kill", "kill", [kill()]),
            make_results(root / "slow", "slow", [kill(2.0)], None, {"properties": ["recovers"], "recovery_bound_s": 0.5}),
            # recovers fails on its default bound (a declared bound with its property left out is refused)
            make_results(root / "unasked", "unasked", [kill(400.0)], None,
                         {"properties": ["budget_accounting"]}),
            make_results(root / "pinned", "pinned", [kill()], None,
                         {"properties": ["budget_accounting"],
                          "violations": [{"property": "exactly_once_restore", "reason": "digest mismatch"}]}),
            make_results(root / "surprise", "surprise", [kill()], {"max_failures": 0}, {"outcome": "succeeded"})]


def run_cli(*args):
    """The CLI in a child; PYTHONSAFEPATH keeps the checkout's folder off sys.path, as -P does here."""
    return _run_cli(*args, env={"PYTHONSAFEPATH": "1"})


def check_json(folder):
    done = run_cli("check", "--json", folder)
    assert done.returncode in (0, 1, 3), done.stderr
    return json.loads(done.stdout), done.returncode


def shown_everywhere(folder, tmp_path):
    """{property: status} as check --json, JUnit, the frames behind the page and the page show it."""
    from_check, rc = check_json(folder)
    check = {p["property"]: p["status"] for p in from_check["properties"]}
    junit = ET.parse(write_junit([folder], tmp_path / "j.xml")).getroot()
    as_junit = {}
    for case in junit.iter("testcase"):
        if case.get("name") == "verdict":
            continue
        tag = next((c.tag for c in case if c.tag in ("failure", "error")), None)
        as_junit[case.get("name")] = {"failure": "FAIL", "error": "INCONCLUSIVE", None: "PASS"}[tag]
    frames = property_verdicts(Frames.load([folder]))
    page = open(write_report([folder], tmp_path / "page"), encoding="utf-8").read()
    return check, as_junit, dict(zip(frames["property"], frames["verdict"])), page, from_check, rc


# ---------------------------------------------------------- what was seen (2)
def test_check_and_report_agree_on_the_recorded_kill_worker_run(tmp_path):
    """Seen: `check tests/data/kill-worker` printed six PASS lines while `report`
    on the same folder said "5 skipped" and NOT JUDGED."""
    folder = os.path.join(DATA, "kill-worker")
    check, junit, frames, page, judged, rc = shown_everywhere(folder, tmp_path)
    assert rc == 0 and judged["verdict"] == "PASS"
    assert check == junit == frames and set(check.values()) == {"PASS"} and len(check) >= 5
    assert "NOT JUDGED" not in page and "<skipped" not in (tmp_path / "j.xml").read_text()
    text = run_cli("check", folder).stdout
    assert [line.split()[0] for line in text.splitlines()[:len(check)]] == ["PASS"] * len(check)


def test_check_report_junit_and_page_agree_on_every_kind_of_run(folders, tmp_path):
    for i, folder in enumerate(folders):
        check, junit, frames, page, judged, rc = shown_everywhere(folder, tmp_path / str(i))
        assert check == junit == frames, folder
        assert judged["verdict"] == folder_statuses(folder)["verdict"] == judged_summary(folder)["verdict"]
        assert rc == {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}[judged["verdict"]]
        for name, status in check.items():
            assert f"<td>{name}</td><td>{status}</td>" in page.replace("\n", ""), (folder, name)


def test_an_edited_summary_json_changes_no_output(folders, tmp_path):
    """summary.json is an output: a FAIL folder whose summary.json was edited to PASS is
    still FAIL in check, JUnit, the frames and the page, and the edit is named."""
    import shutil

    folder = tmp_path / "edited"
    shutil.copytree(folders[1], folder)     # "slow": recovers over its 0.5 s bound, FAIL
    path = folder / "summary.json"
    summary = json.loads(path.read_text())
    assert summary["verdict"] == "FAIL"
    for v in summary["properties"].values():
        v.update(status="passed", passed=True)
    path.write_text(json.dumps({**summary, "verdict": "PASS", "mismatches": [], "matches_expectation": True}))
    check, junit, frames, page, judged, rc = shown_everywhere(str(folder), tmp_path / "shown")
    assert rc == 1 and judged["verdict"] == "FAIL" and check == junit == frames and check["recovers"] == "FAIL"
    assert judged_summary(str(folder))["summary_disagrees"] == "summary.json says PASS, the history judges FAIL"


def test_a_recorded_pass_that_cannot_be_judged_again_is_inconclusive(folders, tmp_path):
    """A folder whose scenario.yaml no longer parses: no history can back summary.json's PASS,
    so the outputs show INCONCLUSIVE and say why (a FAIL is shown as recorded)."""
    import shutil

    folder = tmp_path / "unreadable"
    shutil.copytree(folders[0], folder)    # "kill": PASS
    (folder / "scenario.yaml").write_text("name: [x\n")
    judged = judged_summary(str(folder))
    assert judged["verdict"] == "INCONCLUSIVE" and "cannot be judged again" in judged["summary_disagrees"]
    assert folder_statuses(str(folder))["verdict"] == "INCONCLUSIVE"
    shutil.copytree(folders[1], tmp_path / "failed")   # "slow": FAIL stays FAIL
    (tmp_path / "failed" / "scenario.yaml").write_text("name: [x\n")
    assert judged_summary(str(tmp_path / "failed"))["verdict"] == "FAIL"


def test_check_json_names_unasked_failures_and_faults(folders):
    judged, rc = check_json(folders[2])
    assert rc == 0 and judged["verdict"] == "PASS"
    assert [u["property"] for u in judged["unasked_failures"]] == ["recovers"]
    assert "recovers" not in {p["property"] for p in judged["properties"]}
    assert [(f["kind"], f["status"]) for f in judged["faults"]] == [("kill_worker", "landed")]
    text = run_cli("check", folders[2]).stdout
    assert "WARNING recovers: failed, but the scenario did not ask for it" in text


# -------------------------------------------------------- summary.json schema
def test_every_summary_validates_against_the_published_schema(folders):
    schema = json.load(open(SCHEMA))
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$id"].endswith("summary.schema.json")
    validator = jsonschema.Draft202012Validator(schema)
    for folder in folders + RECORDED:
        for summary in (json.load(open(os.path.join(folder, "summary.json"))), judged_summary(folder)):
            errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(summary)]
            assert not errors, (folder, errors[:3])
    bad = {**json.load(open(os.path.join(folders[0], "summary.json"))), "verdict": "MAYBE"}
    assert list(validator.iter_errors(bad)), "a verdict outside PASS/FAIL/INCONCLUSIVE/ERROR must not validate"


def test_every_schema_field_says_what_it_is():
    schema = json.load(open(SCHEMA))
    missing = [k for k, v in schema["properties"].items() if "description" not in v and "$ref" not in v
               and k not in ("storage_path", "resume_of")]
    assert not missing, missing
