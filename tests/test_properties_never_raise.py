"""No rule decides by crashing: every property, the causal model and the verdict, run over
recorded histories whose fields were given odd values (a step as a string, a world size smaller
than the ranks, a rank as a float, None, NaN, nested junk), return a result and never raise; the
odd values are named as damage by the model (INCONCLUSIVE), never decided by a caught crash."""

import copy
import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ftharness.history import causal
from ftharness.history.model import History
from ftharness.history.records import read_history
from ftharness.scenarios.properties import CHECKS

DATA = os.path.join(os.path.dirname(__file__), "data")
SOURCES = ("kill-worker", "preempt-node", "torchrun-kill-worker", "torchrun-kill-node")
EVENTS = {s: [e for e in read_history(os.path.join(DATA, s)).events if e["kind"] != "history_end"] for s in SOURCES}
#: the fields the rules read, and odd values for them
FIELDS = ("step", "rank", "world_size", "t", "attempt_id", "pid", "restored_step", "restored_checkpoint",
          "checkpoint", "count", "limit", "budget", "decision", "error_type", "node_id", "t_done", "fault",
          "workers", "metrics", "rows", "target_hit", "return_value", "outcome", "epoch", "digest", "counts",
          "restored_intact", "cur", "prev", "trigger", "failure_config", "workload", "fit_index", "num_workers")
ODD = st.one_of(st.none(), st.text(max_size=5), st.integers(-3, 10**12), st.floats(allow_nan=True),
                st.just(float("nan")), st.just(float("inf")), st.booleans(),
                st.lists(st.integers(-2, 5), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@st.composite
def damaged(draw):
    source = draw(st.sampled_from(SOURCES))
    events = copy.deepcopy(EVENTS[source])
    for _ in range(draw(st.integers(1, 6))):
        e = draw(st.sampled_from(events))
        name = draw(st.sampled_from(FIELDS))
        e[name] = draw(ODD)
    return source, events


def _context(source):
    torchrun = source.startswith("torchrun")
    return {"runtime": "torchrun" if torchrun else "ray_train", "outcome": "succeeded",
            "failure_config": {"max_failures": 1, "max_preemption_failures": 1, "controller_failure_limit": 0},
            "workload": {"steps": 12, "checkpoint_every": 2, "batch_size": 32}, "monotonic": ["count"],
            "checkpoint_every": 2, "declared": causal.Declared(runtime="torchrun" if torchrun else "ray_train")}


@settings(max_examples=int(os.environ.get("FTHARNESS_FUZZ_EXAMPLES", "60")), deadline=None, derandomize=True,
          suppress_health_check=list(HealthCheck))
@given(damaged())
def test_no_property_raises_on_odd_values(case):
    source, events = case
    context = _context(source)
    damage = causal.type_damage(events)                           # odd values: named as damage
    clean = causal.well_typed(events)
    assert len(clean) < len(events) or not damage
    model = causal.build(History(clean), context["declared"])     # never raises
    assert all(isinstance(f, causal.Finding) for f in model.findings)
    for name, check in CHECKS.items():
        h = History(clean)
        result = check(h, dict(context))      # raises -> the test fails: no rule may decide by crashing
        assert result.status in ("passed", "failed", "not_judged"), (name, result)


def test_odd_values_are_named_damage():
    events = copy.deepcopy(EVENTS["kill-worker"])
    step = next(e for e in events if e["kind"] == "step")
    step["step"] = "five"
    ws = next(e for e in events if e["kind"] == "worker_start")
    ws["world_size"] = 1   # smaller than the ranks of its group
    found = causal.type_damage(events) + causal.build(History(causal.well_typed(events))).findings
    assert any(f.code == "odd-value" and "'five'" in f.text for f in found), found
    assert any(f.code == "process" and "world size 1" in f.text for f in found), found
    assert all(f.blame == causal.RECORDS for f in found if f.code == "odd-value")
