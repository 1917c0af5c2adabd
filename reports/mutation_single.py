"""The single-field mutation operators: delete, duplicate, reorder, retime, revalue, swap, edit after the seal.

A part of the mutation engine (reports/mutation.py re-exports `mutants`): each mutant edits one event
or one field of a history, systematically over every event and field, and names the equivalence rule
that makes it a correct history where one does. Pure.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Dict, Iterator, List

from ftharness.reports.mutation_parts import (IDEMPOTENT, INFORMATIONAL, TIME_FIELDS, TIME_SHIFTS, Event, Mutant,
                                              _alternatives, _equivalence, _in_place, _leaves, _name, _pools,
                                              _result_metrics, _role, _set)


# ------------------------------------------------------------------------------ operators
def mutants(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Every mutant of one history, in a fixed order."""
    pools = _pools(events)
    result_metrics = _result_metrics(events)
    emitters = [e.get("emitter") for e in events]
    times = sorted(e["t"] for e in events if isinstance(e.get("t"), (int, float)))
    for i, e in enumerate(events):
        kind = e.get("kind", "?")
        rest = events[:i] + events[i + 1:]
        yield Mutant(source, "delete", kind, "*", f"#{i}", copy.deepcopy(rest),
                     equivalent="informational-kind" if kind in INFORMATIONAL else None)
        yield Mutant(source, "delete-in-transit", kind, "*", f"#{i}", copy.deepcopy(rest), renumber=False)
        dup = copy.deepcopy(events[:i + 1] + [e] + events[i + 1:])
        yield Mutant(source, "duplicate", kind, "*", f"#{i}", dup,
                     equivalent="idempotent-duplicate" if kind in IDEMPOTENT else None)
        # move in order: the event recorded 1 or 3 places later (its clock reading kept)
        for k in (1, 3):
            j = i + k
            if j < len(events):
                moved = copy.deepcopy(rest[:j] + [e] + rest[j:])
                crossed = {emitters[x] for x in range(i + 1, j + 1)}
                same = e.get("emitter") in crossed
                yield Mutant(source, "reorder", kind, "*", f"#{i}+{k}", moved,
                             equivalent="informational-kind" if kind in INFORMATIONAL else
                             None if same else "arrival-order")
        # move in time
        for path, v in _leaves(e):
            if _name(path) in TIME_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool):
                for d in TIME_SHIFTS:
                    out = copy.deepcopy(events)
                    _set(out[i], path, v + d)
                    rule = "informational-kind" if kind in INFORMATIONAL else \
                        "in-place" if path == ("t",) and _in_place(times, v, v + d) else None
                    yield Mutant(source, "retime", kind, ".".join(map(str, path)), f"#{i}{d:+g}s", out,
                                 equivalent=rule)
            elif _name(path) == "deadline_ms" and isinstance(v, int):
                for d in (-60_000, -3_000, 3_000, 60_000):
                    out = copy.deepcopy(events)
                    _set(out[i], path, v + d)
                    yield Mutant(source, "retime", kind, ".".join(map(str, path)), f"#{i}{d:+d}ms", out)
        # change a value to another valid one
        for path, v in _leaves(e):
            name = _name(path)
            if name in TIME_FIELDS or name == "deadline_ms":
                continue
            for alt in _alternatives(v, _role(path), pools):
                out = copy.deepcopy(events)
                _set(out[i], path, alt)
                rule = None if i in result_metrics and path[:1] == ("metrics",) else _equivalence(kind, path)
                yield Mutant(source, "revalue", kind, ".".join(map(str, path)), f"#{i}={str(alt)[:24]}", out,
                             equivalent=rule)
    yield from _swaps(source, events)
    yield Mutant(source, "edit-after-seal", "step", "loss", "stale seal", copy.deepcopy(events), stale_seal=True)


#: roles whose values two events may exchange
SWAP_ROLES = ("rank", "attempt_id", "node_id", "pid", "agent", "step", "checkpoint")


def _swaps(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Two events of one kind exchange a role's value (rank 0's step recorded as rank 1's and
    the other way round): one swap per kind and role, between its first two differing events."""
    for role in SWAP_ROLES:
        by_kind: Dict[str, List[int]] = defaultdict(list)
        for i, e in enumerate(events):
            if role in e and e[role] is not None:
                by_kind[e.get("kind", "?")].append(i)
        for kind, idx in by_kind.items():
            pair = next(((a, b) for a in idx for b in idx if a < b and events[a][role] != events[b][role]), None)
            if pair is None:
                continue
            a, b = pair
            out = copy.deepcopy(events)
            out[a][role], out[b][role] = events[b][role], events[a][role]
            yield Mutant(source, "swap", kind, role, f"#{a}<->#{b}", out)
