"""Verdicts against each scenario's `expect`, and the same as JUnit XML for CI.

The verdict tables are shared with the HTML report, so a CI dashboard and the
report never disagree about what passed. Expectations come from the folder's
scenario.yaml, read as plain YAML (not validated): an old or hand-edited
results folder still reports.

The XML is the shape CI tools render (Jenkins, GitLab, GitHub test reporters):
<testsuites> with one <testsuite> per scenario, its start time, duration,
counts and <properties> (versions, profile, folder); INCONCLUSIVE and
not-judged are <skipped>, so nothing unproven shows as passed.
"""

from __future__ import annotations

import datetime
import os
import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, Optional

import pandas as pd
import yaml

from ftharness.reports.frames import Frames, PathLike, missing

SCENARIO_FILE = "scenario.yaml"
VERDICT_COLUMNS = ["results", "label", "scenario", "property", "passed", "expected", "status",
                   "explanation", "message"]


def expectations(results: str) -> Dict[str, Any]:
    """The `expect` section of the folder's scenario.yaml ({} without one)."""
    path = os.path.join(results, SCENARIO_FILE)
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return (yaml.safe_load(f) or {}).get("expect") or {}


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
    """One row per folder: the outcome (and error type) against expect."""
    names, rows = labels(frames.scenarios), []
    for s in frames.scenarios.to_dict("records"):
        expect = expectations(s["results"])
        want, got = expect.get("outcome", "succeeded"), s.get("outcome")
        problems = [] if got == want else [f"outcome {got or 'not recorded'} (expected {want})"]
        if expect.get("error_type") and s.get("error_type") != expect["error_type"]:
            problems.append(f"error_type {s.get('error_type')} (expected {expect['error_type']})")
        verdict = None if missing(s.get("verdict")) else str(s["verdict"])
        status = {"PASS": "ok", "FAIL": "failure", "INCONCLUSIVE": "skipped", "ERROR": "error"}.get(
            verdict, "ok" if not problems else "failure")
        reasons = [str(r) for key in ("mismatches", "inconclusive") for r in _as_list(s.get(key))]
        if verdict == "ERROR" and not missing(s.get("internal_error")):
            reasons.append(str(s["internal_error"]))
        rows.append({"results": s["results"], "label": names[s["results"]], "scenario": s.get("scenario"),
                     "outcome": got, "expected": want, "ok": status == "ok", "verdict": verdict or
                     ("PASS" if status == "ok" else "FAIL"), "status": status,
                     "message": "; ".join(reasons or problems), "wall_time_s": s.get("wall_time_s")})
    return pd.DataFrame(rows)


def _as_list(v: Any) -> list:
    if isinstance(v, (list, tuple)):
        return list(v)
    if hasattr(v, "tolist"):
        return list(v.tolist())
    return [] if missing(v) or v in ("", "[]") else [v]


def pinned(expect: Dict[str, Any]) -> list:
    """Property names pinned in expect.violations ({property, reason} or a bare name)."""
    return [v.get("property") if isinstance(v, dict) else v for v in expect.get("violations") or []]


def _property_status(passed: Optional[bool], expected: Optional[str], explanation: str):
    """(status, message): `failure` when the verdict is not the expected one,
    `skipped` for a failed property the scenario did not ask about."""
    if passed is None:  # not judged: unknown, never a pass nor a failure
        return "skipped", f"not judged: {explanation}" if explanation else "not judged"
    if expected == "violation":
        return ("ok", f"known violation: {explanation}") if not passed else \
            ("failure", f"held, but the scenario pins a known violation of it: {explanation}")
    if passed:
        return "ok", explanation
    return ("failure", f"expected to hold, failed: {explanation}") if expected == "pass" else \
        ("skipped", f"not expected: {explanation}")


def property_verdicts(frames: Frames) -> pd.DataFrame:
    """One row per folder and property, with what expect asked of it
    (`pass`, `violation` or None); an expected property missing from the
    summary is a row too."""
    names, rows = labels(frames.scenarios), []
    props = frames.properties
    for s in frames.scenarios.to_dict("records"):
        expect = expectations(s["results"])
        wanted = {**{p: "pass" for p in expect.get("properties") or []},
                  **{p: "violation" for p in pinned(expect)}}
        found = {r["property"]: r for r in props[props["results"] == s["results"]].to_dict("records")}
        for name in list(found) + [p for p in wanted if p not in found]:
            r = found.get(name, {})
            passed = None if missing(r.get("passed")) else bool(r["passed"])
            explanation = "" if missing(r.get("explanation")) else str(r["explanation"])
            status, message = _property_status(passed, wanted.get(name), explanation)
            rows.append({"results": s["results"], "label": names[s["results"]], "scenario": s.get("scenario"),
                         "property": name, "passed": passed, "expected": wanted.get(name),
                         "status": status, "explanation": explanation, "message": message})
    return pd.DataFrame(rows, columns=VERDICT_COLUMNS)


#: <property> name -> its column in the scenarios frame (summary.json flattened)
SUITE_PROPERTIES = {"ray.version": "versions.ray", "torch.version": "versions.torch",
                    "python.version": "versions.python", "ftharness.version": "versions.ftharness",
                    "cluster.profile": "settings.profile", "cluster.address": "settings.address",
                    "results_dir": "results_dir"}
#: ISO 8601 to the second, UTC, without a zone suffix: the form the Ant/Jenkins
#: JUnit schema (xs:dateTime pattern) accepts, which the other CI tools read too
TIMESTAMP = "%Y-%m-%dT%H:%M:%S"
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
    elif status == "error":
        ET.SubElement(case, "error", message=first, type="internal").text = message
    elif status == "skipped":
        ET.SubElement(case, "skipped", message=first)
    elif message:
        ET.SubElement(case, "system-out").text = message


def _started(scenario: Dict[str, Any]) -> str:
    """When the run started (its first run_start); a folder without a history
    falls back to the time its files were last written."""
    t = scenario.get("t_run_start")
    if missing(t):
        t = os.path.getmtime(scenario["results"])
    return datetime.datetime.fromtimestamp(float(t), datetime.timezone.utc).strftime(TIMESTAMP)


def _properties(suite: ET.Element, scenario: Dict[str, Any]) -> None:
    """Versions, profile and folder, so a CI failure says what it ran on."""
    props = ET.SubElement(suite, "properties")
    values = {**{name: scenario.get(col) for name, col in SUITE_PROPERTIES.items()},
              "results_dir": scenario.get("results_dir") or os.path.abspath(scenario["results"])}
    for name, value in values.items():
        if not missing(value) and value != "":
            ET.SubElement(props, "property", name=name, value=xml_text(str(value)))


def _count(element: ET.Element, statuses: list, seconds: float) -> None:
    for key, n in zip(COUNTS, (len(statuses), *(statuses.count(s) for s in ("failure", "error", "skipped")))):
        element.set(key, str(n))
    element.set("time", f"{seconds:.3f}")


def _suite(root: ET.Element, scenario: Dict[str, Any], outcome: Dict[str, Any], props: pd.DataFrame) -> list:
    """One <testsuite> per scenario: its verdict and each property as test
    cases; returns their statuses."""
    seconds = 0.0 if missing(outcome["wall_time_s"]) else float(outcome["wall_time_s"])
    suite = ET.SubElement(root, "testsuite", name=xml_text(outcome["label"]), timestamp=_started(scenario))
    _properties(suite, scenario)
    message = outcome["message"] or f"outcome {outcome['outcome']}"
    _case(suite, outcome["label"], "verdict", outcome["status"], f"{outcome['verdict']}: {message}", seconds)
    mine = props[props["results"] == outcome["results"]].to_dict("records")
    for p in mine:
        _case(suite, outcome["label"], p["property"], p["status"], p["message"])
    statuses = [outcome["status"]] + [p["status"] for p in mine]
    _count(suite, statuses, seconds)
    # the counts go first, as CI tools show them
    suite.attrib = {k: suite.attrib[k] for k in ("name", *COUNTS, "time", "timestamp")}
    return statuses


def junit_tree(frames: Frames) -> ET.ElementTree:
    """<testsuites> with one <testsuite> per scenario: a testcase for its
    verdict and one per property. INCONCLUSIVE and not-judged are skipped,
    never passed nor failed; a failure quotes the property's explanation."""
    outcomes, props = outcome_verdicts(frames), property_verdicts(frames)
    root = ET.Element("testsuites", name="ftharness")
    by_folder = {s["results"]: s for s in frames.scenarios.to_dict("records")}
    statuses, seconds = [], 0.0
    for o in outcomes.to_dict("records"):
        statuses += _suite(root, by_folder[o["results"]], o, props)
        seconds += 0.0 if missing(o["wall_time_s"]) else float(o["wall_time_s"])
    _count(root, statuses, seconds)
    return ET.ElementTree(root)


def write_junit(results_paths: Iterable[PathLike], path: PathLike) -> str:
    """JUnit XML of the results folders under `results_paths`; returns `path`."""
    tree = junit_tree(Frames.load(results_paths))
    ET.indent(tree)
    folder = os.path.dirname(os.fspath(path))
    if folder:
        os.makedirs(folder, exist_ok=True)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return os.fspath(path)
