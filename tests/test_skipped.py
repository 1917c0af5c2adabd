"""A non-root CI runner and the scenarios that need root (network namespaces): a folder's
such scenario is SKIPPED with its reason, one line each on the terminal, in JUnit (valid
against junit-10.xsd) and in the report; the suite is never refused whole (exit 2). A
scenario file named alone is still refused, as `run` refuses it. The host's lack is made
by `netns.unavailable` answering as it does for a non-root user (the real unprivileged
run is in docs/ci.md and the closing note of issue 39)."""

import os
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO
from ftharness.harness.frontends.cli import main
from test_junit import validate_junit
from test_reports_cli import kill, make_results

CATALOG = Path(REPO) / "scenarios" / "catalog"


@pytest.fixture
def non_root(monkeypatch):
    from ftharness.harness.cluster import netns

    monkeypatch.setattr(netns, "unavailable", lambda: "network namespaces need root")


@pytest.fixture
def folder(tmp_path):
    d = tmp_path / "chaos"
    d.mkdir()
    for name in ("network-partition.yaml", "network-degrade.yaml"):
        shutil.copy(CATALOG / name, d / name)
    return d


def test_validate_of_a_folder_skips_what_needs_root_and_exits_0(non_root, folder, capsys):
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    skipped = [ln for ln in out if ln.startswith("SKIPPED ")]
    assert len(skipped) == 2 and all("network namespaces need root" in ln for ln in skipped), out
    assert main(["validate", str(folder / "network-partition.yaml")]) == 2   # named alone: refused as run does


def test_a_suite_of_only_root_scenarios_skips_them_all_and_writes_junit_and_report(non_root, folder, tmp_path,
                                                                                   capsys):
    out = tmp_path / "suite"
    assert main(["suite", str(folder), "--out", str(out), "--quiet"]) == 0
    printed = capsys.readouterr().out
    lines = [ln for ln in printed.splitlines() if ln.startswith("SKIPPED ")]
    assert lines == ["SKIPPED network-degrade: cluster.network: namespaces: network namespaces need root (this host; "
                     "run it as root where nftables is)",
                     "SKIPPED network-partition: cluster.network: namespaces: network namespaces need root (this "
                     "host; run it as root where nftables is)"], printed
    assert "0 passed, 0 failed, 0 inconclusive, 0 errors, 2 skipped" in printed
    root = ET.parse(out / "junit.xml").getroot()
    _schema_valid(out / "junit.xml")
    cases = root.findall("testsuite/testcase")
    assert len(cases) == 2 and all(c.find("skipped") is not None for c in cases)
    assert "network namespaces need root" in cases[0].find("skipped").get("message")
    page = (out / "report.html").read_text()
    assert "<strong>SKIPPED</strong>" in page and "network-partition: SKIPPED" in page


def test_junit_and_report_hold_the_runs_and_the_skipped_ones(tmp_path):
    from ftharness.reports import skipped as skips
    from ftharness.reports.html import write_report
    from ftharness.reports.junit import write_junit

    suite = tmp_path / "suite"
    make_results(suite / "kill", "kill", [kill()])
    skips.write(str(suite), [{"scenario": "network-partition", "file": "/x/network-partition.yaml",
                              "reason": "cluster.network: namespaces: network namespaces need root"}])
    root = validate_junit(write_junit([suite], tmp_path / "junit.xml"))
    assert root.get("tests") == str(sum(int(s.get("tests")) for s in root.findall("testsuite")))
    assert [s.get("skipped") for s in root.findall("testsuite")][-1] == "1"
    assert root.get("disabled") == "1"   # the file's skipped count (junit-10.xsd: no `skipped` on <testsuites>)
    files = [s.get("file") for s in root.findall("testsuite")]
    assert files == [os.path.join("suite", "kill", "scenario.yaml"),
                     os.path.relpath("/x/network-partition.yaml", str(tmp_path))], files   # one form for both
    page = open(write_report([suite], tmp_path / "report"), encoding="utf-8").read()
    assert "1 SKIPPED" in page and "network-partition: SKIPPED" in page


def _schema_valid(path):
    from test_junit import _schema

    _schema().validate(str(path))
