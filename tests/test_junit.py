"""JUnit XML as CI reads it: every file ftharness writes is valid against
Jenkins' junit-10.xsd (tests/data/junit-10.xsd, the schema pytest's own output
is held to), INCONCLUSIVE is an error, nothing neither asked nor judged is a
test, and the figures CI trends are <property> values. No Ray cluster."""

import datetime
import json
import math
import os
import re
import xml.etree.ElementTree as ET

import pytest

from ftharness.reports.junit import write_junit
from ftharness.scenarios.properties import OPT_IN, PROPERTIES
from test_reports_cli import kill, make_results, unland

XSD = os.path.join(os.path.dirname(__file__), "data", "junit-10.xsd")
DATA = os.path.join(os.path.dirname(__file__), "data")
JUNIT_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")
#: a case's outcome element -> the count attribute of its suite
OUTCOMES = {"failure": "failures", "error": "errors", "skipped": "skipped"}


def _schema():
    xmlschema = pytest.importorskip("xmlschema", reason="pip install xmlschema (the test extra)")
    return xmlschema.XMLSchema(XSD)


def _int(element, key):
    value = element.get(key)
    assert value is not None and value.isdigit(), f"<{element.tag}> {key}={value!r} is not a count"
    return int(value)


def validate_junit(path):
    """Valid against junit-10.xsd, and the counts CI shows match the cases: each
    suite named, with a timestamp (no zone), a time and counts; each case with
    a classname, a time and at most one failure or error, with a message and a
    type. Returns the root."""
    _schema().validate(str(path))
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites" and root.findall("testsuite")
    totals = dict.fromkeys(("tests", "failures", "errors"), 0)
    for suite in root:
        assert suite.get("name")
        assert JUNIT_TIMESTAMP.fullmatch(suite.get("timestamp") or ""), suite.get("timestamp")
        assert math.isfinite(float(suite.get("time")))
        counts = dict.fromkeys(("tests", "failures", "errors", "skipped"), 0)
        for case in suite.findall("testcase"):
            assert case.get("name") and case.get("classname")
            found = [c for c in case if c.tag in OUTCOMES]
            assert len(found) <= 1, f"{case.get('name')}: more than one outcome"
            counts["tests"] += 1
            for c in found:
                counts[OUTCOMES[c.tag]] += 1
                assert c.get("message") is not None and c.get("type")
        for key, n in counts.items():
            assert _int(suite, key) == n, f"{suite.get('name')}: {key}"
        for key in totals:
            totals[key] += counts[key]
    for key, n in totals.items():
        assert _int(root, key) == n, f"testsuites: {key}"
    return root


def cases_of(root):
    return {(c.get("classname"), c.get("name")): c for c in root.iter("testcase")}


def status(case):
    for tag in ("failure", "error", "skipped"):
        found = case.find(tag)
        if found is not None:
            return tag if tag != "error" else f"error:{found.get('type')}"
    return "ok"


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """Five folders: a clean kill, a run that fails as expected, one that fails
    unexpectedly, one that recovers slower than its bound, and one pinning a
    violation that does not happen."""
    root = tmp_path_factory.mktemp("suite")
    make_results(root / "kill", "kill", [kill()])
    make_results(root / "out-of-budget", "out-of-budget", [kill(), kill()], {"max_failures": 1},
                 {"outcome": "failed", "properties": ["budget_accounting"]})
    make_results(root / "surprise", "surprise", [kill()], {"max_failures": 0}, {"outcome": "succeeded"})
    make_results(root / "slow", "slow", [kill(2.0)], None, {"properties": ["recovers"], "recovery_bound_s": 0.5})
    make_results(root / "pinned", "pinned", [kill()], None,
                 {"properties": ["budget_accounting"],
                  "violations": [{"property": "exactly_once_restore", "reason": "digest mismatch"}]})
    return root


# ---------------------------------------------------------- what was seen (1)
def test_junit_of_the_recorded_kill_worker_run_is_valid_against_junit_10_xsd(tmp_path):
    """Seen: `'skipped' attribute not allowed` on <testsuites>."""
    validate_junit(write_junit([os.path.join(DATA, "kill-worker")], tmp_path / "junit.xml"))


def test_a_property_neither_asked_nor_judged_is_not_a_test_and_nothing_is_doubled(tmp_path):
    """Seen: every PASS run carried a permanent skip ("not judged: not judged: ...")."""
    root = validate_junit(write_junit([os.path.join(DATA, "kill-worker")], tmp_path / "junit.xml"))
    cases = cases_of(root)
    assert ("kill-worker", "monotonic_counters") not in cases       # not asked, nothing to judge
    assert all(status(c) == "ok" for c in cases.values()), {k: status(c) for k, c in cases.items()}
    text = (tmp_path / "junit.xml").read_text()
    assert "not judged: not judged" not in text and "<skipped" not in text


def test_inconclusive_is_an_error_of_type_inconclusive_never_a_skip(tmp_path):
    """Seen: INCONCLUSIVE written as <skipped>, so CI showed "0 failed" while the job exited 3."""
    def unknown_restore(events):   # the kill hit nothing, and no restart's digests were read
        unland(events)
        for e in events:
            if e.get("kind") == "worker_start" and e.get("restored_checkpoint"):
                e["restored_intact"] = None

    folder = make_results(tmp_path / "runs" / "unlanded", "unlanded", [kill()], edit=unknown_restore)
    root = validate_junit(write_junit([folder], tmp_path / "junit.xml"))
    (ts,) = root.findall("testsuite")
    cases = cases_of(root)
    verdict = cases[("unlanded", "verdict")]
    assert status(verdict) == "error:inconclusive" and "did not land" in verdict.find("error").get("message")
    restore = cases[("unlanded", "exactly_once_restore")]
    assert status(restore) == "error:inconclusive" and "digests were not read" in restore.find("error").text
    assert restore.find("error").text.count("judged") <= 1
    assert int(ts.get("failures")) == 0 and int(ts.get("errors")) >= 2 and int(root.get("errors")) >= 2
    assert int(ts.get("skipped")) == 0


def test_a_failed_property_not_asked_is_a_warning_not_a_skip(tmp_path):
    """Seen: a failed property that was not asked sat among the skips."""
    # recovers fails on its default bound (a declared bound with its property left out is refused)
    folder = make_results(tmp_path / "unasked", "unasked", [kill(400.0)], None,
                          {"properties": ["budget_accounting"]})
    root = validate_junit(write_junit([folder], tmp_path / "junit.xml"))
    (ts,) = root.findall("testsuite")
    summary = json.loads((tmp_path / "unasked" / "summary.json").read_text())
    failed = {n for n, v in summary["properties"].items()
              if v["status"] == "failed" and n not in summary["expected_properties"]}
    assert failed, "the fixture should fail a property it did not ask for"
    names = {c.get("name") for c in ts.iter("testcase")}
    assert not failed & names
    out = ts.find("system-out").text
    assert all(f"warning: property {n} failed, but the scenario did not ask for it" in out for n in failed)


# --------------------------------------------------------------- what to build
def test_junit_has_a_suite_per_scenario_and_a_case_per_property_shown(suite, tmp_path):
    root = validate_junit(write_junit([suite], tmp_path / "out" / "junit.xml"))
    suites = {ts.get("name"): ts for ts in root.findall("testsuite")}
    assert sorted(suites) == ["kill", "out-of-budget", "pinned", "slow", "surprise"]
    cases = cases_of(root)
    shown = [p for p in PROPERTIES if p not in OPT_IN]   # an opt-in property not asked is not shown
    assert {n for (c, n) in cases if c == "kill"} == {"verdict", *shown}
    assert all(status(cases[("kill", n)]) == "ok" for n in ("verdict", *shown))
    assert status(cases[("out-of-budget", "verdict")]) == "ok"
    assert status(cases[("surprise", "verdict")]) == "failure"
    assert "outcome failed (expected succeeded)" in cases[("surprise", "verdict")].find("failure").text
    summary = json.loads((suite / "slow" / "summary.json").read_text())
    explanation = summary["properties"]["recovers"]["explanation"]
    failure = cases[("slow", "recovers")].find("failure")
    assert "0.5" in explanation and explanation in failure.get("message") and explanation in failure.text
    assert int(suites["slow"].get("failures")) == 2
    pinned = cases[("pinned", "exactly_once_restore")].find("failure")
    assert "pins a known violation" in pinned.text
    assert "the gap may have closed" in cases[("pinned", "verdict")].find("failure").text
    assert sum(status(c) == "failure" for c in cases.values()) == int(root.get("failures")) == 5


def test_junit_suite_carries_start_time_duration_versions_file_and_trend_figures(tmp_path):
    folder = make_results(tmp_path / "runs" / "kill", "kill", [kill()])
    path = tmp_path / "runs" / "kill" / "summary.json"
    summary = json.loads(path.read_text())
    summary.update(wall_time_s=12.5, results_dir="/data/results/kill",
                   versions={"ray": "2.60.0", "torch": "2.13.0+cpu", "python": "3.11.9", "ftharness": "0.4.0"},
                   settings={"profile": "fast", "address": "embedded"})
    path.write_text(json.dumps(summary))
    (ts,) = validate_junit(write_junit([folder], tmp_path / "junit.xml")).findall("testsuite")
    start = min(e["t"] for e in map(json.loads, (tmp_path / "runs" / "kill" / "history.jsonl").open())
                if e["kind"] == "run_start")
    assert ts.get("timestamp") == datetime.datetime.fromtimestamp(start, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%S")
    assert ts.get("time") == "12.500"
    assert ts.get("file") == os.path.join("runs", "kill", "scenario.yaml")   # relative to the JUnit file's folder
    props = {p.get("name"): p.get("value") for p in ts.find("properties")}
    assert {k: props[k] for k in ("ray.version", "torch.version", "python.version", "ftharness.version",
                                  "cluster.profile", "cluster.address", "results_dir")} == {
        "ray.version": "2.60.0", "torch.version": "2.13.0+cpu", "python.version": "3.11.9",
        "ftharness.version": "0.4.0", "cluster.profile": "fast", "cluster.address": "embedded",
        "results_dir": os.path.join("runs", "kill")}   # the folder read, relative: not where it was written
    assert float(props["ftharness.recovery_s.max"]) == pytest.approx(2.0, abs=0.05)
    assert props["ftharness.lost_steps"] == "1"
    assert 0 < float(props["ftharness.goodput"]) <= 1


def test_every_junit_file_ftharness_writes_is_valid(suite, tmp_path, monkeypatch):
    """report --junit, and the junit.xml of run and suite (their runners
    replaced by synthetic folders: the CLI around them runs as for real)."""
    from ftharness.harness.frontends.cli import main
    from test_reports_cli import fake_run

    assert main(["report", str(suite), "--out", str(tmp_path / "rep"), "--junit", str(tmp_path / "j.xml")]) == 0
    validate_junit(tmp_path / "j.xml")
    fake_run(monkeypatch, "runner", "run_scenario")
    assert main(["run", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    validate_junit(tmp_path / "run" / "junit.xml")
    fake_run(monkeypatch, "suite", "run_suite")
    assert main(["suite", "--out", str(tmp_path / "suite"), "--quiet"]) == 0
    validate_junit(tmp_path / "suite" / "junit.xml")
    for name in os.listdir(DATA):
        folder = os.path.join(DATA, name)
        if os.path.isfile(os.path.join(folder, "summary.json")):
            validate_junit(write_junit([folder], tmp_path / f"{name}.xml"))


def test_the_matrix_junit_is_valid_too(tmp_path):
    """`ftharness matrix` writes junit.xml as well: the same schema holds it."""
    from ftharness.reports.matrix import write_junit as matrix_junit

    def cell(verdict, judged=True):
        return {"scenario": "kill-worker", "config": f"ray {verdict}", "verdict": verdict, "judged": judged,
                "errors": ["no env"], "outcome": "succeeded", "charged": {"worker_group": 1}, "error_type": None,
                "notes": ["a note"], "ray": "2.60.0", "recovery_median_s": 2.5, "lost_steps": 1, "goodput": 0.9}

    path = tmp_path / "junit.xml"
    matrix_junit([cell("PASS"), cell("FAIL"), cell("INCONCLUSIVE"), cell("ERROR", judged=False)], [], str(path))
    root = validate_junit(path)
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "1", "2")
