"""The HTML report: its structure (stdlib html.parser) and, where Chromium is
installed (scripts/setup-browser.sh), what a browser actually draws. Synthetic
results folders; no Ray cluster."""

import os
import re
import subprocess
from html.parser import HTMLParser

import pytest
from PIL import Image

from reports.frames import Frames
from reports.html import write_report
from scenarios.properties import PROPERTIES
from test_reports_cli import kill, make_results

CHROMIUM = "/usr/bin/chromium"
SCENARIOS = ("kill", "twice", "out-of-budget")


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """index.html over a suite of three runs: one kill, two kills, and a run
    that exhausts its budget (expected to fail)."""
    root = tmp_path_factory.mktemp("report")
    make_results(root / "suite" / "kill", "kill", [kill(2.0)])
    make_results(root / "suite" / "twice", "twice", [kill(1.0), kill(3.0)])
    make_results(root / "suite" / "out-of-budget", "out-of-budget", [kill(), kill()], {"max_failures": 1},
                 {"outcome": "failed", "properties": ["budget_accounting"]})
    return write_report([root / "suite"], root / "out")


class Outline(HTMLParser):
    """What the tests look for: elements by id and class, rows per table
    class, svg elements per timeline, and the text of every cell."""

    def __init__(self):
        super().__init__()
        self.ids, self.classes, self.rows, self.svgs, self.cells = set(), [], {}, {}, []
        self.table = self.timeline = None
        self.in_cell = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.ids.add(a.get("id"))
        self.classes += (a.get("class") or "").split()
        if tag == "table":
            self.table = a.get("class")
        elif tag == "tr" and self.table:
            self.rows[self.table] = self.rows.get(self.table, 0) + 1
        elif tag == "div" and "timeline" in (a.get("class") or ""):
            self.timeline = a["id"]
        elif tag == "svg" and self.timeline:
            self.svgs[self.timeline] = self.svgs.get(self.timeline, 0) + 1
        self.in_cell = tag == "td"

    def handle_endtag(self, tag):
        if tag == "table":
            self.table = None
        elif tag == "div":
            self.timeline = None

    def handle_data(self, data):
        if self.in_cell:
            self.cells.append(data)


def outline(path):
    parser = Outline()
    with open(path, encoding="utf-8") as f:
        parser.feed(f.read())
    return parser


def test_report_has_summary_properties_timelines_and_recovery(report):
    o = outline(report)
    assert {"summary", "properties", "timelines", "recovery", "advice", "data"} <= o.ids
    assert o.rows["summary"] == 1 + len(SCENARIOS)                     # header + one per scenario
    assert o.rows["properties"] == 1 + len(SCENARIOS) * len(PROPERTIES)
    assert o.svgs == {f"timeline-{name}": 1 for name in SCENARIOS}
    assert o.classes.count("timeline") == len(SCENARIOS)
    assert {"kill", "twice", "out-of-budget", "failed", "PASS"} <= set(o.cells)
    # the rows of the recovery table: one per fault that was retried or raised
    assert o.rows["recovery"] == 1 + 5
    text = open(report, encoding="utf-8").read()
    assert "Extrapolated, not measured" in text
    assert not re.search(r'(src|href)="(https?:)?//|<script|<link', text), "the report must be self-contained"


def test_frames_are_written_beside_the_report(report):
    out = os.path.dirname(report)
    for name in Frames.names():
        assert os.path.getsize(os.path.join(out, f"{name}.csv")) > 0
        assert os.path.getsize(os.path.join(out, f"{name}.parquet")) > 0


@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="no Chromium; scripts/setup-browser.sh installs it")
def test_chromium_renders_the_report(report, tmp_path):
    png = tmp_path / "report.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                    "--disable-background-networking", "--disable-component-update", "--disable-sync",
                    f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={png}", "--window-size=1400,2000",
                    f"file://{report}"], capture_output=True, timeout=60, check=True)
    assert png.stat().st_size > 20_000
    image = Image.open(png).convert("L")
    assert image.size == (1400, 2000)
    assert image.getextrema()[1] - image.getextrema()[0] > 200     # not one colour
    # the summary table sits under the title, left of the middle: text is dark pixels there
    region = image.crop((20, 90, 700, 300))
    dark = sum(region.histogram()[:80])
    assert dark > 500, f"only {dark} dark pixels where the summary table should be"
