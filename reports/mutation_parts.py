"""What every mutation operator shares: a mutant, the fields it may edit, the equivalence rules.

A part of the mutation engine (reports/mutation.py re-exports its names): the record's structural
fields, the written equivalence rules and the field classes they cover, a history's leaves (path,
scalar) and the values each role holds, so that each operator module edits by the same rules. Pure.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Tuple


Event = Dict[str, Any]
Path = Tuple[Any, ...]

#: fields that make up the record itself, not a fact of the run: edited by the structural operators only
STRUCTURE = frozenset({"seq", "eseq", "emitter", "kind", "source", "run", "fit_index", "run_name", "scenario"})
#: free text no rule reads: changing it changes no fact (equivalence rule "text")
TEXT = frozenset({"error", "action", "message", "description", "traceback", "status_detail", "local_path",
                  "reason", "waited_for", "hold", "resume_of"})
#: numbers a person reads and no property judges unless a scenario names them (`expect.monotonic`): the
#: reference job's loss, how long a hold lasted (equivalence rule "unjudged-metric")
UNJUDGED = frozenset({"loss", "held_s", "param_checksum", "n_rows"})
#: kinds whose exact duplicate is the same fact told twice (equivalence rule "idempotent-duplicate")
IDEMPOTENT = frozenset({"controller_state", "landing_hold"})
#: kinds that carry no fact a rule needs (equivalence rule "informational-kind")
INFORMATIONAL = frozenset({"landing_hold"})
#: (kind, top-level field) whose values no rule reads: a report's metrics besides its step (the reference
#: job's running sums are judged at the end, in run_end's return value), the error class names a
#: controller state repeats from its failure (equivalence rule "unjudged-metric")
UNJUDGED_PATHS = {("report", "metrics"), ("controller_state", "worker_failures"), ("checkpoint_registered", "how")}
#: metrics that are the step itself: judged
STEP_METRICS = frozenset({"step", "ftharness_step"})
#: the equivalence rules, each with why a mutant it covers is a history a correct run could also write
EQUIVALENCE = {
    "text": "free text no rule reads (an error message, an action's wording, a local path)",
    "unjudged-metric": "a number no property judges unless a scenario names it (the loss, a report's running "
                       "sums: the final ones are judged in run_end's return value)",
    "idempotent-duplicate": "the same state report told twice (a controller state, a landing hold)",
    "informational-kind": "an event no rule needs (landing_hold: how long the injector held a returning job)",
    "arrival-order": "events of different emitters arriving in the other order, their clock readings kept "
                     "(across processes only the clocks order events)",
    "in-place": "a clock reading (or every reading of one process or node) moved without passing any other "
                "event's: every order relation stays, only a duration changes",
    "fresh-name": "another run's value put in place of a worker's actor id, or of the digest of a checkpoint "
                  "no rank restored, held nowhere else in the history: Ray gives each worker a fresh actor id "
                  "(any unique one is as valid), and a digest is read only when its files are read back",
    "free-field": "a field the field map declares free (history/fields.py: read by no rule, with its reason, "
                  "e.g. Ray's settings shown on the page, a worker's process-group warm-up time)",
    "group-lag": "a worker's start (alone) moved before its group's record by less than 10 s, still after its "
                 "attempt's start (within the 2 s two hosts' clocks may differ by): the controller records the "
                 "group after it started the workers, and a busy one records it late (the judge's TOL_GROUP)",
}
#: field name -> the role its values play, so another valid value can come from any field of that role
ROLE = {"restored_checkpoint": "checkpoint", "restored_step": "step", "world_size": "world_size",
        "num_workers": "world_size", "attempt": "attempt", "agent": "agent"}
#: time fields (seconds) and how far the time operator moves them
TIME_FIELDS = frozenset({"t", "t_done", "t_requested"})
TIME_SHIFTS = (-600.0, -30.0, -3.0, 3.0, 30.0, 600.0)


@dataclass
class Mutant:
    """One edit of one history: what it did, the events it left, and how it is written."""

    source: str
    operator: str
    kind: str
    field: str
    what: str
    events: List[Event]
    renumber: bool = True          # False: the emitters' numbering keeps a hole (an event lost in transit)
    stale_seal: bool = False       # the file was edited after history_end sealed it
    control: bool = False          # a correct-but-odd history: must PASS
    equivalent: Optional[str] = None   # the equivalence rule that makes it a correct history, if any

    @property
    def name(self) -> str:
        return f"{self.source}:{self.operator}:{self.kind}.{self.field}:{self.what}"


def _leaves(value: Any, path: Path = (), depth: int = 0) -> Iterator[Tuple[Path, Any]]:
    """(path, scalar) of every leaf of an event, through dicts and lists of dicts (3 levels)."""
    if isinstance(value, dict) and depth < 3:
        for k, v in value.items():
            if depth == 0 and k in STRUCTURE:
                continue
            yield from _leaves(v, path + (k,), depth + 1)
    elif isinstance(value, list) and depth < 3 and value and all(isinstance(x, dict) for x in value):
        for i, v in enumerate(value):
            yield from _leaves(v, path + (i,), depth + 1)
    elif not isinstance(value, (dict, list)):
        yield path, value


def _name(path: Path) -> str:
    return next((p for p in reversed(path) if isinstance(p, str)), "")


def _role(path: Path) -> str:
    name = _name(path)
    return ROLE.get(name, name)


def _get(e: Event, path: Path) -> Any:
    for p in path:
        e = e[p]
    return e


def _set(e: Event, path: Path, value: Any) -> None:
    for p in path[:-1]:
        e = e[p]
    e[path[-1]] = value


def _pools(events: List[Event]) -> Dict[str, List[Any]]:
    """role -> the distinct hashable values the history holds for it, in a fixed order."""
    seen: Dict[str, Dict[Any, None]] = defaultdict(dict)
    for e in events:
        for path, v in _leaves(e):
            if v is not None and not isinstance(v, float):
                try:
                    seen[_role(path)][v] = None
                except TypeError:
                    pass
    return {r: sorted(vs, key=lambda x: (type(x).__name__, str(x))) for r, vs in seen.items()}


def _unjudged(kind: str, path: Path) -> bool:
    """A field no rule reads: the paths of UNJUDGED_PATHS (but the step), and how a run_end's agent
    ended or a non-killing fault action was done (text for a person)."""
    if kind == "run_end" and path[:1] == ("agents",) and _name(path) == "how":
        return True
    return bool(path) and (kind, path[0]) in UNJUDGED_PATHS and _name(path) not in STEP_METRICS


def _result_metrics(events: List[Event]) -> set:
    """Indices of the events whose metrics the judge compares (model rule `result`): a succeeded fit's
    run_end and rank 0's report of that fit's last registered checkpoint (Ray's Result.metrics). An
    edit of their metrics is no unjudged metric."""
    out = set()
    for i, e in enumerate(events):
        if e.get("kind") != "run_end" or e.get("outcome") != "succeeded":
            continue
        out.add(i)
        fit = e.get("fit_index")
        regs = [r for r in events[:i] if r.get("kind") == "checkpoint_registered" and r.get("fit_index", fit) == fit]
        if regs:
            name = regs[-1].get("checkpoint")
            out |= {j for j, r in enumerate(events[:i]) if r.get("kind") == "report" and r.get("rank") == 0
                    and r.get("checkpoint") == name}
    return out


def _in_place(times: List[float], old: float, new: float) -> bool:
    """Whether moving one event's time from `old` to `new` keeps it between the same two other
    events in the order of time (every order relation of the history stays; only a duration changes)."""
    below_old = bisect.bisect_left(times, old)
    below_new = bisect.bisect_left(times, new) - (1 if new > old else 0)
    above_old = len(times) - bisect.bisect_right(times, old)
    above_new = len(times) - bisect.bisect_right(times, new) - (1 if new < old else 0)
    return below_old == below_new and above_old == above_new


def _alternatives(value: Any, role: str, pools: Dict[str, List[Any]]) -> List[Any]:
    """Up to two other valid values for a field: the neighbours of `value` among the values the
    history holds for its role, else one of the same type nearby."""
    pool = [v for v in pools.get(role, []) if v != value and type(v) is type(value)]
    if pool:
        ordered = sorted(pool, key=lambda v: (abs(v - value) if isinstance(v, int) and isinstance(value, int)
                                              else 0, str(v)))
        return ordered[:2]
    if isinstance(value, bool):
        return [not value]
    if isinstance(value, int):
        return [value + 1] + ([value - 1] if value > 0 else [])
    if isinstance(value, float):
        return [value * 2 + 1.0]
    if value is None and role in pools and pools[role]:
        return [pools[role][0]]
    return []


def _equivalence(kind: str, path: Path) -> Optional[str]:
    name = _name(path)
    return ("text" if name in TEXT else "unjudged-metric" if name in UNJUDGED or _unjudged(kind, path)
            else "informational-kind" if kind in INFORMATIONAL else "free-field" if _free(kind, path) else None)


def _free(kind: str, path: Path) -> bool:
    """Whether the field map (history/fields.py) declares the field free: no rule reads it, with the
    reason an edit cannot change a verdict (a figure shown on a page, an echo of a judged fact)."""
    from ftharness.history import fields

    text = ""
    for p in path:
        text += "[]" if isinstance(p, int) else (("." if text else "") + str(p))
    return isinstance(fields.lookup(kind, text), fields.Free)
