"""Verdicts against each scenario's `expect`, and the same as JUnit XML for CI.

The verdict tables are shared with the HTML report, so a CI dashboard and the
report never disagree about what passed. Expectations come from the folder's
scenario.yaml, read as plain YAML (not validated): an old or hand-edited
results folder still reports.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from typing import Any, Dict, Iterable, Optional

import pandas as pd
import yaml

from reports.frames import Frames, PathLike, missing

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
        return "skipped", explanation or "not judged"
    if expected == "violation":
        return ("ok", f"known violation: {explanation}") if not passed else \
            ("failure", f"held, but the scenario pins a known violation of it: {explanation}")
    if passed:
        return "ok", explanation
    return ("failure", explanation) if expected == "pass" else ("skipped", f"not expected: {explanation}")


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


def _case(suite: ET.Element, classname: str, name: str, status: str, message: str,
          seconds: Any = None) -> None:
    case = ET.SubElement(suite, "testcase", classname=classname, name=name,
                         time=f"{0.0 if missing(seconds) else float(seconds):.3f}")
    if status == "failure":
        ET.SubElement(case, "failure", message=message.splitlines()[0] if message else "", type="mismatch").text = message
    elif status == "error":
        ET.SubElement(case, "error", message=message.splitlines()[0] if message else "", type="internal").text = message
    elif status == "skipped":
        ET.SubElement(case, "skipped", message=message)
    elif message:
        ET.SubElement(case, "system-out").text = message


def junit_tree(frames: Frames) -> ET.ElementTree:
    """One testsuite: a testcase per scenario (its outcome) and one per
    scenario and property."""
    outcomes, props = outcome_verdicts(frames), property_verdicts(frames)
    suite = ET.Element("testsuite", name="ftharness")
    for o in outcomes.to_dict("records"):
        _case(suite, o["label"], "verdict", o["status"],
              f"{o['verdict']}: {o['message']}" if o["message"] else f"{o['verdict']}: outcome {o['outcome']}",
              o["wall_time_s"])
        for p in props[props["results"] == o["results"]].to_dict("records"):
            _case(suite, o["label"], p["property"], p["status"], p["message"])
    statuses = list(outcomes["status"]) + list(props["status"]) if len(outcomes) else []
    suite.set("tests", str(len(outcomes) + len(props)))
    suite.set("failures", str(statuses.count("failure")))
    suite.set("errors", str(statuses.count("error")))
    suite.set("skipped", str(statuses.count("skipped")))
    root = ET.Element("testsuites")
    root.append(suite)
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
