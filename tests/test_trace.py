"""The Chrome-trace export of a recorded history (pure)."""

import json
import os

from ftharness.history.records import read_events
from ftharness.reports.trace import chrome_trace, write_trace

DATA = os.path.join(os.path.dirname(__file__), "data")


def test_a_recorded_kill_shows_attempts_steps_failure_and_fault():
    events = read_events(os.path.join(DATA, "kill-worker"))
    trace = chrome_trace(events)["traceEvents"]
    spans = [e for e in trace if e["ph"] == "X"]
    # every span is well formed: non-negative, inside the run
    assert spans and all(e["dur"] >= 0 and e["ts"] >= 0 for e in spans)
    attempts = [e for e in spans if e["cat"] == "attempt"]
    assert len({e["args"]["attempt_id"] for e in attempts}) == 2            # killed attempt + its restart
    assert any("no worker_end" in e["name"] for e in attempts)              # the killed worker's span says so
    steps = [e for e in spans if e["cat"] == "step"]
    assert len(steps) == sum(1 for e in events if e["kind"] == "step")
    instants = {e["cat"] for e in trace if e["ph"] == "i"}
    assert {"fault_injected", "failure"} <= instants
    names = {e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "process_name"}
    assert "Train controller" in names and sum(n.startswith("node ") for n in names) >= 2


def test_empty_history_gives_an_empty_trace():
    assert chrome_trace([])["traceEvents"] == []


def test_write_trace_is_valid_json(tmp_path):
    path = write_trace(os.path.join(DATA, "kill-worker"), str(tmp_path / "t.json"))
    assert json.load(open(path))["traceEvents"]
