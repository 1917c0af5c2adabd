"""One judgement of a results folder, for every output that shows it.

`check`, `report`, summary.json, JUnit and the HTML page all show the
statuses `statuses(summary, pins)` gives, so they can never disagree about
the same folder. `judged_summary(folder)` is the summary they read: the
judgement of the folder's history by ftharness.scenarios.verdict.evaluate (what
the runner wrote summary.json with), summary.json filling in only what the
history does not judge, so an edited summary.json changes no status.

Statuses: PASS, FAIL, INCONCLUSIVE (and ERROR for the verdict of a run whose
harness broke). A property is shown when it was asked (expect.properties, the
default set, or a pinned violation) or when it was judged and held; one that
was neither asked nor judged is left out; a failed property the scenario did
not ask for is not a verdict but a warning (`unasked_failures`).
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional

from ftharness.errors import ScenarioError
from ftharness.history.columns import non_steps

PASS, FAIL, INCONCLUSIVE, ERROR = "PASS", "FAIL", "INCONCLUSIVE", "ERROR"
SCENARIO_FILE, SUMMARY_FILE = "scenario.yaml", "summary.json"


def _read_json(path: str) -> Dict[str, Any]:
    """A JSON object of the folder, {} for anything else (bounded: regular files only, 64 MiB)."""
    from ftharness.history.records import read_json_file

    data = read_json_file(path)
    return data if isinstance(data, dict) else {}


def scenario_history_mismatch(scenario, events: List[Dict[str, Any]]) -> Optional[str]:
    """Where the history's own record of its faults contradicts scenario.yaml, or None:
    another scenario.yaml swapped in would relabel what was injected."""
    for e in non_steps(events):
        kind = e.get("kind")
        if kind in ("fault_injected", "fault_skipped") and type(e.get("fault")) is int:
            i, recorded = e["fault"], e.get("fault_kind")
            if isinstance(recorded, str) and 0 <= i < len(scenario.faults) and scenario.faults[i].kind != recorded:
                return f"fault {i} is {scenario.faults[i].kind} in scenario.yaml, {recorded[:40]} in the history"
    return None


def scenario_data(results: str) -> Dict[str, Any]:
    """The folder's scenario.yaml as plain YAML ({} without a readable one), read as a
    scenario is (ftharness.inputs.read_input, kind scenario_copy: a regular file, not under
    /proc, /sys or /dev, never waited on, at most MAX_SCENARIO_BYTES; then the scenario
    loader with its depth and size limits), so a hostile file in a handed folder is never read whole."""
    from ftharness.inputs import read_input
    from ftharness.scenarios.schema import load_yaml_text

    path = os.path.join(results, SCENARIO_FILE)
    if not os.path.exists(path):
        return {}
    try:
        return read_input(path, "scenario_copy", parse_yaml=load_yaml_text)
    except ScenarioError:   # refused by the reader or the loader (InputRefused is one)
        return {}


def expectations(results: str) -> Dict[str, Any]:
    """The `expect` section of the folder's scenario.yaml ({} without one), so a
    hand-edited folder still reports."""
    expect = scenario_data(results).get("expect")
    return expect if isinstance(expect, dict) else {}


def pinned(expect: Dict[str, Any]) -> List[str]:
    """Property names pinned in expect.violations ({property, reason} or a bare name)."""
    return [v.get("property") if isinstance(v, dict) else v for v in expect.get("violations") or []]


def _outcome_from_history(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The last fit()'s outcome as its run_end recorded it (return value, metrics, all of it)."""
    ends = [e for e in non_steps(events) if e.get("kind") == "run_end"]
    last = ends[-1] if ends else {}
    keep = ("outcome", "error", "error_type", "error_cause", "return_value", "metrics", "checkpoint", "agents")
    return {k: last.get(k) for k in keep if k in last or k in ("outcome", "error", "error_type", "return_value")}


def rejudge(results: str) -> Dict[str, Any]:
    """The verdict of `results` judged again from its history alone (`ftharness check`):
    the outcome, final state, failure_config, runtime and injected faults are the
    history's (summary.json is an output, never read); scenario.yaml gives only the
    expectations, and where it says other than the history the verdict names it.
    A scenario.yaml that names another scenario than the one the history ran (a file of
    another scenario swapped in: ftharness.history.agreement.scenario_problem) and a fault
    record the verdict cannot attribute (no kind, an index that is no count:
    fault_record_problems) make it INCONCLUSIVE, never a PASS, in every output.
    Raises ScenarioError when scenario.yaml is not a valid scenario (a `name` that is no
    string names the scenario the history ran: `own_name_refusal`)."""
    from ftharness.history.agreement import fault_record_problems, recorded, scenario_problem
    from ftharness.history.records import read_history
    from ftharness.scenarios.schema import load_scenario
    from ftharness.scenarios.verdict import evaluate

    rec = recorded(results)
    refusal = own_name_refusal(results, rec)
    if refusal:
        raise ScenarioError(refusal)
    scenario = load_scenario(os.path.join(results, SCENARIO_FILE))
    read = read_history(results)
    mismatch = scenario_history_mismatch(scenario, read.events)
    if mismatch:
        raise ScenarioError(f"scenario.yaml does not match the history ({mismatch}); a results folder is "
                            f"judged with the scenario it ran")
    summary = evaluate(scenario, read.events, _outcome_from_history(read.events), read.problems)
    renamed = scenario_problem(scenario.name, rec)
    no_pass_on(summary, ([renamed] if renamed else []) + fault_record_problems(rec))
    summary["unasked_failures"] = unasked_failures(summary, pinned(expectations(results)))
    return summary


def own_name_refusal(results: str, rec=None) -> Optional[str]:
    """The refusal of a folder whose scenario.yaml has a `name` that is no string (`name: 7`),
    naming what the history ran, or None. Such a file is no valid scenario, so it cannot be
    judged (`check`: exit 2; report, JUnit, compare: a recorded PASS becomes INCONCLUSIVE);
    the line says which scenario the folder ran. `rec`: ftharness.history.agreement.recorded
    of the folder, read here when not given."""
    from ftharness.history.agreement import recorded, scenario_problem

    data = scenario_data(results)
    if "name" not in data or isinstance(data["name"], str):
        return None
    return scenario_problem(data["name"], rec if rec is not None else recorded(results)) or (
        f"scenario.yaml: name: {str(data['name'])[:40]} is a {type(data['name']).__name__}, no scenario name")


def no_pass_on(summary: Dict[str, Any], problems: List[str]) -> None:
    """`problems` of the record (damage the verdict cannot attribute) named as inconclusive
    in `summary`; a PASS becomes INCONCLUSIVE: no evidence, no pass."""
    if not problems:
        return
    if summary.get("verdict") == PASS:
        summary["verdict"], summary["matches_expectation"] = INCONCLUSIVE, False
    known = list(summary.get("inconclusive") or [])
    summary["inconclusive"] = known + [p for p in problems if p not in known]


def judged_summary(results: str) -> Dict[str, Any]:
    """The summary every output shows for `results`: the judgement `rejudge` gives from
    the history (the only input of a verdict; summary.json is an output, so an edited
    one cannot change what the report, JUnit or `compare` show), with what else
    summary.json recorded filled in. Where summary.json's verdict differs, the
    difference is named (`summary_disagrees`). A harness ERROR stays an ERROR (it is
    the run's own record that its harness broke); a folder that cannot be re-judged keeps
    what it recorded, except that a recorded PASS becomes INCONCLUSIVE: a PASS no history
    can back is no evidence."""
    recorded = _read_json(os.path.join(results, SUMMARY_FILE))
    if recorded.get("verdict") == ERROR:
        return recorded
    try:
        fresh = rejudge(results)
    except Exception as e:  # noqa: BLE001 - no valid scenario.yaml or history: nothing re-judges it
        if recorded.get("verdict") != PASS:
            return recorded
        why = (str(e).strip().splitlines() or [type(e).__name__])[0][:200]
        return {**recorded, "verdict": INCONCLUSIVE, "matches_expectation": False,
                "summary_disagrees": f"summary.json says PASS, but the history cannot be judged again ({why})",
                "inconclusive": list(recorded.get("inconclusive") or []) + [
                    f"the recorded PASS cannot be judged again from the history: {why}"]}
    out = {**recorded, **fresh, "rejudged": sorted(set(fresh) - set(recorded))}
    said = recorded.get("verdict")
    if said is not None and said != fresh.get("verdict"):
        out["summary_disagrees"] = (f"summary.json says {str(said)[:40]}, the history judges "
                                    f"{fresh.get('verdict')}")
    return out


def unasked_failures(summary: Dict[str, Any], pins: List[str] = ()) -> List[Dict[str, str]]:
    """Failed properties the scenario did not ask for: {property, explanation}.
    The runner's own list when summary.json has one."""
    if isinstance(summary.get("unasked_failures"), list):
        return [dict(u) for u in summary["unasked_failures"] if isinstance(u, dict)]
    asked = set(summary.get("expected_properties") or []) | set(pins)
    return [{"property": name, "explanation": str((v or {}).get("explanation") or "")}
            for name, v in (summary.get("properties") or {}).items()
            if name not in asked and _passed(v) is False]


def _passed(v: Any) -> Optional[bool]:
    """True, False, or None (not judged), from a property verdict of any age."""
    if not isinstance(v, dict):
        return None
    status = v.get("status")
    if status in ("passed", "failed", "not_judged"):
        return {"passed": True, "failed": False, "not_judged": None}[status]
    p = v.get("passed")
    return None if p is None or p != p else bool(p)


def property_statuses(summary: Dict[str, Any], pins: List[str] = ()) -> List[Dict[str, Any]]:
    """One row per property shown: {property, asked ('pass', 'violation' or
    None), passed, status (PASS/FAIL/INCONCLUSIVE), explanation, message}."""
    props = summary.get("properties") or {}
    asked: Dict[str, str] = {p: "pass" for p in summary.get("expected_properties") or []}
    asked.update({p: "violation" for p in pins if p})
    mismatches = [str(m) for m in summary.get("mismatches") or []]
    rows = []
    for name in list(props) + [p for p in asked if p not in props]:
        v = props.get(name)
        passed = _passed(v)
        explanation = str((v or {}).get("explanation") or ("not recorded" if v is None else ""))
        want = asked.get(name)
        if want is None:
            if passed is not True:
                continue            # not asked and not judged: left out; not asked and failed: a warning
            status, message = PASS, f"held (not asked): {explanation}"
        elif passed is None:
            why = explanation[len("not judged: "):] if explanation.startswith("not judged: ") else explanation
            status, message = INCONCLUSIVE, f"could not be judged: {why}"
        elif want == "violation":
            other = any(m.startswith(f"property {name} failed for a reason that is not pinned") for m in mismatches)
            if passed:
                status, message = FAIL, f"held, but the scenario pins a known violation of it: {explanation}"
            elif other:
                status, message = FAIL, f"failed for a reason that is not pinned: {explanation}"
            else:
                status, message = PASS, f"known violation: {explanation}"
        else:
            status, message = (PASS, explanation) if passed else (FAIL, f"expected to hold, failed: {explanation}")
        rows.append({"property": name, "asked": want, "passed": passed, "status": status,
                     "explanation": explanation, "message": message})
    return rows


def verdict_status(summary: Dict[str, Any], expect: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """{verdict, reasons}: the run's verdict as recorded (or judged again); a
    summary without one (hand-made) is judged on its outcome against expect."""
    expect = expect or {}
    reasons = [str(r) for key in ("mismatches", "inconclusive") for r in summary.get(key) or []]
    if summary.get("verdict") in (PASS, FAIL, INCONCLUSIVE, ERROR):
        verdict = summary["verdict"]
        if verdict == ERROR and summary.get("internal_error"):
            reasons.append(str(summary["internal_error"]))
        return {"verdict": verdict, "reasons": reasons}
    want, got = expect.get("outcome", "succeeded"), summary.get("outcome")
    problems = [] if got == want else [f"outcome {got or 'not recorded'} (expected {want})"]
    if expect.get("error_type") and summary.get("error_type") != expect["error_type"]:
        problems.append(f"error_type {summary.get('error_type')} (expected {expect['error_type']})")
    return {"verdict": FAIL if problems else INCONCLUSIVE if got is None else PASS, "reasons": reasons or problems}


def statuses(summary: Dict[str, Any], pins: List[str] = (), expect: Optional[Dict[str, Any]] = None
             ) -> Dict[str, Any]:
    """Everything an output shows of one run: {verdict, reasons, properties,
    unasked_failures}. The one function behind check, report, JUnit and HTML."""
    return {**verdict_status(summary, expect), "properties": property_statuses(summary, pins),
            "unasked_failures": unasked_failures(summary, pins)}


def folder_statuses(results: str) -> Dict[str, Any]:
    """`statuses` of a results folder, from `judged_summary`."""
    expect = expectations(results)
    return statuses(judged_summary(results), pinned(expect), expect)
