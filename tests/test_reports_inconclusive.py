"""An INCONCLUSIVE run reads as such on the report (no "outcome nan", no "matches
expectation: no", no recovery band where its recovery was not judged), and every fault
is labelled above its mark on the timeline. Recorded runs (tests/data), no cluster."""

import os
import re
import shutil

import pytest

from conftest import REPO
from ftharness.reports.html import write_report

DATA = os.path.join(REPO, "tests", "data", "kill-worker")


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("inconclusive")
    shutil.copytree(DATA, root / "suite" / "whole")
    cut = root / "suite" / "no-outcome"
    shutil.copytree(DATA, cut)
    lines = (cut / "history.jsonl").read_text().splitlines(keepends=True)
    (cut / "history.jsonl").write_text("".join(ln for ln in lines if '"kind": "run_end"' not in ln))
    (cut / "summary.json").unlink()   # a run killed before its summary
    path = write_report([root / "suite"], root / "report", page_name="report.html", data_dir="report-data")
    return open(path, encoding="utf-8").read()



def test_an_inconclusive_run_says_so_and_never_nan(page):
    assert "outcome nan" not in page and ">nan<" not in page
    assert "outcome not recorded (expected succeeded)" in page
    row = re.search(r"<tr class=\"unknown\">(.*?)</tr>", page, re.S).group(1)
    assert "INCONCLUSIVE" in row and "inconclusive" in row and ">no<" not in row


def test_no_recovery_band_where_the_recovery_was_not_judged(page):
    runs = page.split('<div class="scenario"')[1:]
    whole = next(r for r in runs if "/whole" in r.split(">")[0])
    cut = next(r for r in runs if "/no-outcome" in r.split(">")[0])
    assert whole.count('<rect class="recovery"') == 1
    assert cut.count('<rect class="recovery"') == 0 and "no recovery band: the run" in cut and "recovery was not judged" in cut


def test_each_fault_is_labelled_above_its_mark(page):
    labels = re.findall(r'<text class="fault-label" x="([0-9.]+)" y="[0-9.]+" data-t="([0-9.]+)"[^>]*>([^<]*)', page)
    assert len(labels) == 2 and all(text == "#0 kill_worker" for _, _, text in labels)
