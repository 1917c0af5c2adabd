"""Scenarios a suite skipped because this host lacks what they need (root and nftables for
`cluster.network: namespaces`), with the reason: one line each on the terminal, a
<skipped> test case in JUnit and a line in the report, never an exit 2 for the whole suite.

The suite writes them to SKIPPED_FILE in its folder; the report and JUnit read them back.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from html import escape
from typing import Any, Callable, Dict, Iterable, List

SKIPPED_FILE = "skipped.json"


def write(folder: str, entries: List[Dict[str, str]]) -> None:
    """SKIPPED_FILE in `folder` ({scenario, file, reason} each); nothing when none."""
    if not entries:
        return
    import datetime

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")   # JUnit's form, UTC
    entries = [{**e, "timestamp": e.get("timestamp") or now} for e in entries]
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, SKIPPED_FILE), "w") as f:
        json.dump(entries, f, indent=2)


def read(paths: Iterable[Any]) -> List[Dict[str, str]]:
    """The skipped scenarios recorded in the given folders (a suite, or its rounds' parent)."""
    from ftharness.history.records import read_json_file

    out: List[Dict[str, str]] = []
    seen = set()
    for p in paths:
        p = os.fspath(p)
        for folder in (p, os.path.dirname(os.path.abspath(p))):
            path = os.path.join(folder, SKIPPED_FILE)
            if path in seen or not os.path.isfile(path):
                continue
            seen.add(path)
            data = read_json_file(path)   # bounded: a regular file, at most 64 MiB; None otherwise
            out += [e for e in data if isinstance(e, dict) and isinstance(e.get("scenario"), str)] \
                if isinstance(data, list) else []
    return out


def line(entry: Dict[str, str]) -> str:
    """The terminal's line for one."""
    return f"SKIPPED {entry['scenario']}: {entry.get('reason', '')}"


def junit_suites(root: ET.Element, entries: List[Dict[str, str]], xml_text: Callable[[str], str]) -> int:
    """One <testsuite> per skipped scenario, its test case <skipped> with the reason; returns
    how many were added. `xml_text`: junit's cleaner of text XML 1.0 forbids."""
    for e in entries:
        suite = ET.SubElement(root, "testsuite", name=xml_text(e["scenario"]), tests="1", failures="0",
                              errors="0", skipped="1", time="0.000", timestamp=xml_text(e.get("timestamp") or ""))
        if e.get("file"):
            suite.set("file", xml_text(e["file"]))
        case = ET.SubElement(suite, "testcase", classname=xml_text(e["scenario"]), name="verdict", time="0.000")
        ET.SubElement(case, "skipped", message=xml_text(e.get("reason", "")), type="host")
    return len(entries)


def html(entries: List[Dict[str, str]]) -> str:
    """The report's list of them."""
    if not entries:
        return ""
    items = "".join(f"<li>{escape(e['scenario'])}: SKIPPED — {escape(e.get('reason', ''))}</li>" for e in entries)
    return f'<ul class="reasons skipped">{items}</ul>'
