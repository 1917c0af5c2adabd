"""The controls of the mutation engine: correct-but-odd histories that must still PASS.

A part of the mutation engine (reports/mutation.py re-exports `controls`): clock jitter, a run a day
later, interleavings of different emitters, ranks' own metrics, a duplicated state report, a name
changed everywhere it occurs, one node's clock 0.1 s off. A control that does not PASS is a false
alarm of the judge. Pure.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any, Dict, Iterator, List

from ftharness.reports.mutation_clocks import _merge, _node_emitters, _shifted
from ftharness.reports.mutation_parts import TIME_FIELDS, Event, Mutant, _leaves, _name, _set


#: the largest clock difference the jitter control adds (seconds)
JITTER_S = 0.002


#: the largest clock skew between hosts the skew control adds to one node's processes (seconds)
SKEW_S = 0.1


# ------------------------------------------------------------------------------- controls
def controls(source: str, events: List[Event], seed: int = 0) -> Iterator[Mutant]:
    """Correct-but-odd histories: every one must PASS."""
    rng = random.Random(seed)
    for n in range(3):   # clock jitter: each reading moved by up to 2 ms, each emitter's order kept
        out = copy.deepcopy(events)
        last: Dict[Any, float] = {}
        for e in out:
            d = rng.uniform(-JITTER_S, JITTER_S)
            for k in TIME_FIELDS:
                if isinstance(e.get(k), (int, float)) and not isinstance(e.get(k), bool):
                    e[k] += d
            em = e.get("emitter")
            if isinstance(e.get("t"), float) and em in last and e["t"] < last[em]:
                e["t"] = last[em]
            if isinstance(e.get("t"), float):
                last[em] = e["t"]
        yield Mutant(source, "control-jitter", "*", "t", f"seed {seed}-{n}", out, control=True)
    day = copy.deepcopy(events)   # the same run a day later: every clock reading, deadlines too
    for e in day:
        for path, v in list(_leaves(e)):
            if _name(path) in TIME_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool):
                _set(e, path, v + 86_400.0)
            elif _name(path) == "deadline_ms" and isinstance(v, int):
                _set(e, path, v + 86_400_000)
    yield Mutant(source, "control-shift-day", "*", "t", "+1 day", day, control=True)
    for n in range(3):   # interleavings: adjacent events of different emitters arrive the other way round
        out = copy.deepcopy(events)
        pairs = [i for i in range(len(out) - 1) if out[i].get("emitter") != out[i + 1].get("emitter")]
        for i in sorted(rng.sample(pairs, min(len(pairs), 8))):
            if out[i].get("emitter") != out[i + 1].get("emitter"):
                out[i], out[i + 1] = out[i + 1], out[i]
        yield Mutant(source, "control-interleave", "*", "seq", f"seed {seed}-{n}", out, control=True)
    ranks = copy.deepcopy(events)   # ranks other than 0 report their own values (e.g. their shard's loss)
    for e in ranks:
        if e.get("kind") == "report" and e.get("rank") not in (0, None) and isinstance(e.get("metrics"), dict):
            e["metrics"] = {k: (v * 1.5 + 1.0 if isinstance(v, float) else v) for k, v in e["metrics"].items()}
    if ranks != events:
        yield Mutant(source, "control-rank-metrics", "report", "metrics", "ranks > 0 differ", ranks, control=True)
    states = [i for i, e in enumerate(events) if e.get("kind") == "controller_state"]
    if states:
        i = states[len(states) // 2]
        out = copy.deepcopy(events[:i + 1] + [events[i]] + events[i + 1:])
        yield Mutant(source, "control-duplicate-state", "controller_state", "*", f"#{i}", out, control=True)
    yield from _consistent_controls(source, events)


def _renamed(value: Any, old: str, new: str) -> Any:
    """`value` with every string in it (at any depth, record fields too) having `old` replaced by `new`."""
    if isinstance(value, str):
        return value.replace(old, new)
    if isinstance(value, dict):
        return {k: _renamed(v, old, new) for k, v in value.items()}
    if isinstance(value, list):
        return [_renamed(v, old, new) for v in value]
    return value


def _consistent_controls(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Correct histories the self-consistent operators come close to: a name changed everywhere it
    occurs (an attempt id, a checkpoint folder, a node id, a worker's pid: names are arbitrary, so a
    run that drew other names records this), and one node's processes on a clock 0.1 s off the
    others' (hosts' clocks differ; the judge compares readings of two processes with 2 s of slack)."""
    ids = [e.get("attempt_id") for e in events if e.get("kind") == "attempt_start"]
    hexes = [a for a in ids if isinstance(a, str) and len(a) >= 16]
    if hexes:
        a = hexes[-1]
        out = [_renamed(e, a, a[::-1]) for e in events]
        yield Mutant(source, "control-rename", "*", "attempt_id", f"{a[:8]} -> {a[::-1][:8]}", out, control=True)
    names = [e.get("checkpoint") for e in events if e.get("kind") == "checkpoint_registered"]
    names = [n for n in names if isinstance(n, str) and n[-1:].isdigit()]
    if names:
        n = names[len(names) // 2]
        new = n[:-1] + str((int(n[-1]) + 1) % 10)
        if all(new not in json.dumps(e) for e in events):
            out = [_renamed(e, n, new) for e in events]
            yield Mutant(source, "control-rename", "*", "checkpoint", f"{n[-8:]} -> {new[-8:]}", out, control=True)
    nodes = [n for n in _node_emitters(events) if isinstance(n, str) and len(n) >= 16]
    if nodes:
        n = nodes[0]
        out = [_renamed(e, n, n[::-1]) for e in events]
        yield Mutant(source, "control-rename", "*", "node_id", f"{n[:8]} -> {n[::-1][:8]}", out, control=True)
    workers = [e for e in events if e.get("source") == "worker" and isinstance(e.get("pid"), int)
               and str(e.get("emitter", "")).startswith(f"worker-{e.get('pid')}-")]
    if workers:
        pid = workers[-1]["pid"]
        new_pid = pid + 100_000
        if all(str(new_pid) not in json.dumps(e) for e in events):
            out = []
            for e in events:
                e = _renamed(e, f"-{pid}-", f"-{new_pid}-")
                e = _renamed(e, f"pid={pid}", f"pid={new_pid}")
                out.append(_repid(e, pid, new_pid))
            yield Mutant(source, "control-rename", "*", "pid", f"{pid} -> {new_pid}", out, control=True)
    node_ems = [ems for ems in _node_emitters(events).values()]
    if node_ems:
        members = set(max(node_ems, key=len))
        for d in (-SKEW_S, SKEW_S):
            mine = [_shifted(e, d) for e in events if e.get("emitter") in members]
            out = _merge([copy.deepcopy(e) for e in events if e.get("emitter") not in members], mine)
            yield Mutant(source, "control-skew-node", "node", "t", f"{d:+g}s", out, control=True)


def _repid(value: Any, pid: int, new: int, key: str = "") -> Any:
    """`value` with every field named pid that holds `pid` (at any depth) holding `new`."""
    if isinstance(value, dict):
        return {k: _repid(v, pid, new, k) for k, v in value.items()}
    if isinstance(value, list):
        return [_repid(v, pid, new, key) for v in value]
    if key == "pid" and value == pid and not isinstance(value, bool):
        return new
    return value
