"""Verdicts against each scenario's `expect`, and the same as JUnit XML for CI.

The statuses come from ftharness.reports.judgement, the one function behind
`check`, the HTML report and this file, so a CI dashboard, the page and the
terminal never disagree about what passed.

The XML is valid against Jenkins' junit-10.xsd (tests/data/junit-10.xsd), the
schema pytest's own output is held to, and is what CI tools render (Jenkins,
GitLab, GitHub test reporters): <testsuites> with one <testsuite> per scenario
(its start time, duration, counts, the scenario's file as `file`) and
<properties> (versions, profile, folder, and recovery time, lost steps and
goodput, for CI to trend). INCONCLUSIVE is <error type="inconclusive">, so a job
that exits 3 never shows "0 failed"; a property neither asked nor judged is
left out; a failed property the scenario did not ask for is a warning in the
suite's <system-out>, not a test.
"""

from __future__ import annotations

import datetime
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, List

import pandas as pd

from ftharness.reports.frames import Frames, PathLike, missing
from ftharness.reports.judgement import (ERROR, FAIL, INCONCLUSIVE, PASS, SCENARIO_FILE, expectations,
                                         folder_statuses, pinned)

__all__ = ["SCENARIO_FILE", "expectations", "pinned", "labels", "outcome_verdicts", "property_verdicts",
           "junit_tree", "write_junit"]
VERDICT_COLUMNS = ["results", "label", "scenario", "property", "passed", "expected", "verdict", "status",
                   "explanation", "message"]
#: a judgement's status -> the JUnit outcome of its test case
JUNIT_STATUS = {PASS: "ok", FAIL: "failure", INCONCLUSIVE: "inconclusive", ERROR: "error"}


def labels(scenarios: pd.DataFrame) -> pd.Series:
    """results folder -> display name: the scenario; when two folders ran
    the same one, the parent folder is added (a suite's name), or else the path."""
    results = scenarios["results"].astype(str)
    base = scenarios["scenario"].fillna("").astype(str)
    base = base.where(base != "", results.map(os.path.basename))
    name = base.copy()
    for where in (lambda r: os.path.basename(os.path.dirname(os.path.abspath(r))), str):
        dup = name.duplicated(keep=False)
        name[dup] = base[dup] + " (" + results[dup].map(where) + ")"
    return pd.Series(name.values, index=results.values)


def outcome_verdicts(frames: Frames) -> pd.DataFrame:
    """One row per folder: its verdict (ftharness.reports.judgement), the
    JUnit status and the reasons; `unasked` lists the unasked failures."""
    names, rows = labels(frames.scenarios), []
    for s in frames.scenarios.to_dict("records"):
        judged = folder_statuses(s["results"])
        verdict = judged["verdict"]
        rows.append({"results": s["results"], "label": names[s["results"]], "scenario": s.get("scenario"),
                     "outcome": s.get("outcome"), "expected": expectations(s["results"]).get("outcome", "succeeded"),
                     "ok": verdict == PASS, "verdict": verdict, "status": JUNIT_STATUS[verdict],
                     "message": "; ".join(judged["reasons"]), "wall_time_s": s.get("wall_time_s"),
                     "unasked": judged["unasked_failures"]})
    return pd.DataFrame(rows)


def _as_list(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        return list(v)
    if hasattr(v, "tolist"):
        return list(v.tolist())
    return [] if missing(v) or v in ("", "[]") else [v]


def property_verdicts(frames: Frames) -> pd.DataFrame:
    """One row per folder and property shown (ftharness.reports.judgement):
    what expect asked of it (`pass`, `violation` or None), its verdict and
    JUnit status."""
    names, rows = labels(frames.scenarios), []
    for s in frames.scenarios.to_dict("records"):
        for p in folder_statuses(s["results"])["properties"]:
            rows.append({"results": s["results"], "label": names[s["results"]], "scenario": s.get("scenario"),
                         "property": p["property"], "passed": p["passed"], "expected": p["asked"],
                         "verdict": p["status"], "status": JUNIT_STATUS[p["status"]],
                         "explanation": p["explanation"], "message": p["message"]})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


#: <property> name -> its column in the scenarios frame (summary.json flattened)
SUITE_PROPERTIES = {"ray.version": "versions.ray", "torch.version": "versions.torch",
                    "python.version": "versions.python", "ftharness.version": "versions.ftharness",
                    "cluster.profile": "settings.profile", "cluster.address": "settings.address",
                    "results_dir": "results_dir"}
#: ISO 8601 to the second, UTC, without a zone suffix: the form the Ant/Jenkins
#: JUnit schema (xs:dateTime pattern) accepts, which the other CI tools read too
TIMESTAMP = "%Y-%m-%dT%H:%M:%S"
#: <property> name -> its figure in the scenarios frame: what CI trends
FIGURES = {"ftharness.recovery_s.mean": "metrics.mean_recovery_s", "ftharness.recovery_s.max": "metrics.max_recovery_s",
           "ftharness.lost_steps": "metrics.lost_steps", "ftharness.goodput": "metrics.ettr"}
COUNTS = ("tests", "failures", "errors", "skipped")
ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    """Without the control characters XML 1.0 forbids: ElementTree writes them
    as they are, and a CI tool then cannot parse the file at all."""
    return ILLEGAL_XML.sub("\ufffd", text)


def _case(suite: ET.Element, classname: str, name: str, status: str, message: str,
          seconds: Any = None) -> None:
    message = xml_text(message)
    case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                         time=f"{0.0 if missing(seconds) else float(seconds):.3f}")
    first = message.splitlines()[0] if message else ""
    if status == "failure":
        ET.SubElement(case, "failure", message=first, type="mismatch").text = message
    elif status == "inconclusive":   # unknown is not a pass: CI counts it as an error
        ET.SubElement(case, "error", message=first, type="inconclusive").text = message
    elif status == "error":
        ET.SubElement(case, "error", message=first, type="internal").text = message
    elif message:
        ET.SubElement(case, "system-out").text = message


def _started(scenario: Dict[str, Any]) -> str:
    """When the run started (its first run_start); a folder without a history
    falls back to the time its files were last written."""
    t = scenario.get("t_run_start")
    if missing(t):
        t = os.path.getmtime(scenario["results"])
    return datetime.datetime.fromtimestamp(float(t), datetime.timezone.utc).strftime(TIMESTAMP)


def _figure(value: Any) -> Any:
    """A number as CI trends it (None when missing or not a number)."""
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if f != f else f"{f:.6g}"


def _properties(suite: ET.Element, scenario: Dict[str, Any]) -> None:
    """Versions, profile and folder, so a CI failure says what it ran on; the
    run's recovery time, lost steps and goodput, so CI can trend them."""
    props = ET.SubElement(suite, "properties")
    values = {**{name: scenario.get(col) for name, col in SUITE_PROPERTIES.items()},
              # the folder these results were read from (write_junit makes it relative to the file's own)
              "results_dir": os.path.abspath(scenario["results"])}
    values.update({name: _figure(scenario.get(col)) for name, col in FIGURES.items()})
    for name, value in values.items():
        if not missing(value) and value != "":
            ET.SubElement(props, "property", name=name, value=xml_text(str(value)))


def _count(element: ET.Element, statuses: List[str], seconds: float, skipped: bool = True) -> None:
    """tests, failures, errors (INCONCLUSIVE counts as one) and, where the
    schema allows it (<testsuite>, not <testsuites>), skipped: always 0."""
    element.set("tests", str(len(statuses)))
    element.set("failures", str(statuses.count("failure")))
    element.set("errors", str(sum(s in ("error", "inconclusive") for s in statuses)))
    if skipped:
        element.set("skipped", "0")
    element.set("time", f"{seconds:.3f}")


def _warnings(outcome: Dict[str, Any]) -> List[str]:
    return [f"warning: property {u.get('property')} failed, but the scenario did not ask for it: "
            f"{u.get('explanation') or ''}".rstrip(": ") for u in outcome.get("unasked") or []]


def _suite(root: ET.Element, scenario: Dict[str, Any], outcome: Dict[str, Any], props: pd.DataFrame) -> list:
    """One <testsuite> per scenario: its verdict and each property shown as
    test cases, unasked failures as warnings; returns the cases' statuses."""
    seconds = 0.0 if missing(outcome["wall_time_s"]) else float(outcome["wall_time_s"])
    suite = ET.SubElement(root, "testsuite", name=xml_text(outcome["label"]), timestamp=_started(scenario))
    _properties(suite, scenario)
    message = outcome["message"] or f"outcome {outcome['outcome']}"
    _case(suite, outcome["label"], "verdict", outcome["status"], f"{outcome['verdict']}: {message}", seconds)
    mine = props[props["results"] == outcome["results"]].to_dict("records")
    for p in mine:
        _case(suite, outcome["label"], p["property"], p["status"], p["message"])
    warnings = _warnings(outcome)
    if warnings:
        ET.SubElement(suite, "system-out").text = xml_text("\n".join(warnings))
    statuses = [outcome["status"]] + [p["status"] for p in mine]
    _count(suite, statuses, seconds)
    scenario_file = os.path.join(os.path.abspath(scenario["results"]), SCENARIO_FILE)
    if os.path.isfile(scenario_file):
        suite.set("file", scenario_file)
    # the counts go first, as CI tools show them
    suite.attrib = {k: suite.attrib[k] for k in ("name", *COUNTS, "time", "timestamp", "file") if k in suite.attrib}
    return statuses


def junit_tree(frames: Frames) -> ET.ElementTree:
    """<testsuites> with one <testsuite> per scenario: a testcase for its
    verdict and one per property shown. INCONCLUSIVE is an error, never a
    pass nor a skip; a failure quotes the property's explanation."""
    outcomes, props = outcome_verdicts(frames), property_verdicts(frames)
    root = ET.Element("testsuites", name="ftharness")
    by_folder = {s["results"]: s for s in frames.scenarios.to_dict("records")}
    statuses, seconds = [], 0.0
    for o in outcomes.to_dict("records"):
        statuses += _suite(root, by_folder[o["results"]], o, props)
        seconds += 0.0 if missing(o["wall_time_s"]) else float(o["wall_time_s"])
    _count(root, statuses, seconds, skipped=False)
    return ET.ElementTree(root)


def relative_paths(root: ET.Element, folder: str) -> None:
    """Every path of the file (a suite's `file`, its `results_dir` property) relative to `folder`,
    the one the JUnit file is written in (the suite's root): the same form for runs and skipped
    scenarios, and a results folder that is moved or archived whole keeps them right."""
    base = os.path.abspath(folder)

    def rel(value: str) -> str:
        return os.path.relpath(value, base) if os.path.isabs(value) else value

    for suite in root.iter("testsuite"):
        if suite.get("file"):
            suite.set("file", rel(suite.get("file")))
        for prop in suite.iter("property"):
            if prop.get("name") == "results_dir" and prop.get("value"):
                prop.set("value", rel(prop.get("value")))


def write_junit(results_paths: Iterable[PathLike], path: PathLike) -> str:
    """JUnit XML of the results folders under `results_paths`, and a <skipped> test case for
    each scenario this host could not run (ftharness.reports.skipped); returns `path`."""
    from ftharness.reports import skipped as skips

    paths = [results_paths] if isinstance(results_paths, (str, os.PathLike)) else list(results_paths)
    skipped = skips.read(paths)
    try:
        tree = junit_tree(Frames.load(paths))
    except FileNotFoundError:
        if not skipped:
            raise
        tree = ET.ElementTree(ET.Element("testsuites", name="ftharness"))
        _count(tree.getroot(), [], 0.0, skipped=False)
    root = tree.getroot()
    skips.junit_suites(root, skipped, xml_text)
    root.set("tests", str(int(root.get("tests", "0")) + len(skipped)))
    # the skipped count of the whole file: junit-10.xsd has no `skipped` on <testsuites>, its
    # `disabled` counts the tests that did not run (each <testsuite> has its own `skipped`)
    root.set("disabled", str(len(skipped)))
    root.attrib = {k: root.attrib[k] for k in ("name", "tests", "failures", "errors", "disabled", "time")
                   if k in root.attrib}
    folder = os.path.dirname(os.fspath(path))
    relative_paths(root, folder or os.curdir)
    ET.indent(tree)
    if folder:
        os.makedirs(folder, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return os.fspath(path)
