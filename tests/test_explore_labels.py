"""explore says which pass each example belongs to: its line reads `coverage` for the coverage
pass, `search` and `shrink` for Hypothesis's (the phase its runner is in), `confirm` for a
repeat; the terminal's and the page's "examples A-B: the coverage pass" give the pass's real
range, naming a confirming repeat that fell inside it (issue 51). A fake executor, no cluster."""

import json
import os
import re

from ftharness.harness.run.explore import Explorer
from ftharness.reports.explore import coverage_pass, page_html, terminal_text
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import load_scenario

REF = load_scenario(os.path.join(os.path.dirname(__file__), "..", "scenarios", "catalog", "default.yaml"))
LINE = re.compile(r"^explore \[(\d+)\] (\w+): ")


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class Executor:
    """Each run takes 30 fake seconds; a schedule holding `bad` fails `recovers` (a one-fault
    gap: found by the coverage pass, it is repeated at once)."""

    def __init__(self, clock, bad):
        self.clock, self.bad = clock, bad

    def run(self, scenario, folder):
        self.clock.t += 30.0
        os.makedirs(folder, exist_ok=True)
        kinds = [f.kind for f in scenario.faults]
        bad = self.bad in kinds
        self.last = {"verdict": "FAIL" if bad else "PASS", "outcome": "succeeded", "error_type": None,
                     "properties": {"recovers": {"status": "failed" if bad else "passed"}},
                     "mismatches": ["property recovers failed: no recovery"] if bad else [], "inconclusive": [],
                     "faults": [{"landed": True} for _ in kinds]}
        return self.last

    def rejudge(self, folder, outcome):
        return dict(self.last)


def explore(tmp_path, bad, budget_s=1500, **kw):
    clock, lines = Clock(), []
    exp = Explorer(REF, Executor(clock, bad), str(tmp_path / "out"), budget_s, seed=3, clock=clock,
                   say=lines.append, ray_version="2.60.0", **kw)
    result = exp.explore()
    labels = {int(m.group(1)): m.group(2) for m in map(LINE.match, lines) if m}
    return result, labels, json.load(open(tmp_path / "out" / "explore.json"))


def test_each_line_names_its_pass_and_the_header_the_pass_s_real_range(tmp_path):
    result, labels, data = explore(tmp_path, bad="kill_node")
    by_index = {e.index: e for e in result.examples}
    assert set(labels) == set(by_index)                       # one line per example run
    assert set(labels.values()) <= {"coverage", "search", "shrink", "confirm"}
    first = result.first_pass
    assert 2 < first <= len(es.first_schedules(REF, es.supported(REF, "2.60.0")))
    # the coverage pass found kill_node's gap and repeated it at once: a confirm inside the pass
    repeat = next(i for i, e in sorted(by_index.items()) if e.purpose == "confirm")
    covered = [i for i, label in sorted(labels.items()) if label == "coverage"]
    assert len(covered) == first and covered[0] == 1 and covered[0] < repeat < covered[-1]
    assert labels[repeat] == "confirm"
    assert all(labels[i] == "confirm" for i, e in by_index.items() if e.purpose == "confirm")
    assert all(labels[i] in ("search", "shrink") for i, e in by_index.items()
               if e.purpose == "search" and i > covered[-1])
    head = f"examples 1-{covered[-1]} ({repeat} a confirming repeat): the coverage pass"
    assert head in terminal_text(data).splitlines()[1]
    page = page_html(data)
    assert f"Examples 1-{covered[-1]} ({repeat} a confirming repeat): the coverage pass" in page
    assert page.count("<td>coverage</td>") == first


def test_hypothesis_s_shrinking_is_said_as_such(tmp_path):
    """Without the coverage pass the search finds the gap itself and shrinks it: the examples
    Hypothesis runs while shrinking say `shrink`, none before the first failure of the search."""
    result, labels, _ = explore(tmp_path, bad="kill_node", budget_s=3000, cover_first=False)
    order = sorted(labels)
    first_fail = next(e.index for e in result.examples if e.status == "FAIL")
    assert "coverage" not in labels.values()
    shrunk = [i for i in order if labels[i] == "shrink"]
    assert shrunk and min(shrunk) > first_fail
    assert all(labels[i] == "search" for i in order if i <= first_fail)


def test_the_header_of_a_later_session_starts_at_its_own_first_example():
    """explore.json's examples of session 2 follow session 1's; the pass is counted in its own."""
    def ex(i, purpose="search", session=2):
        return {"index": i, "purpose": purpose, "session": session}

    data = {"session": 2, "first_pass": 3,
            "examples": [ex(i, session=1) for i in range(1, 6)] + [ex(6), ex(7, "confirm"), ex(8), ex(9), ex(10)]}
    assert coverage_pass(data) == "examples 6-9 (7 a confirming repeat)"
    assert coverage_pass(dict(data, first_pass=1)) == "example 6"
    assert coverage_pass(dict(data, first_pass=0)) == ""
