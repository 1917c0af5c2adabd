"""The mutation engine: how good are the verdicts, measured on real histories.

Operators edit a recorded history the way a wrong run (or an attacker) would have
written it, systematically over every event and field: delete, delete in transit
(the numbering keeps the hole), duplicate, move in order, move in time, change a
value to another valid one (one seen elsewhere in the history for the same role:
another rank, attempt, node, pid, checkpoint, step, budget...), swap a role's
values between two events, and edit after the seal. Each mutant is re-sealed
(except the in-transit and after-seal ones) so that only the rules decide, and is
judged through the route `ftharness check` takes (`rejudge` of a results folder).

Beside these single-field edits, the self-consistent operators (`consistent_mutants`)
edit a history so that it still agrees with itself: every process's clock runs forwards,
its events name one pid, rank and attempt, the numbering has no hole. Shift every event
of one process (or of one node's processes) by a constant; splice events of another
recorded run in, with its run id kept or rewritten to this run's; move an event (alone or
with its neighbours) across an attempt's start, a group's shutdown or its own death, placed
by its new time; change two or more facts together so that they agree with each other but
not with the rest (a failure's budget and counts, a report's step and its metrics' step, a
registration's step and its reports', a restore's checkpoint and step, a group's size and
its attempt's num_workers, the victim recorded at a kill, ...); relabel a whole process; take
another value of the same field from elsewhere in the history, or from another run. So the
generic rules (a process's clock order, parse, seal, numbering, types: `GENERIC`) cannot be
what refuses them.

Every mutant is either *equivalent* by a written rule (`EQUIVALENCE`: the edit
changes nothing a correct run could not also have recorded) or must not PASS.
Controls (`controls`: clock jitter, a run shifted by a day, interleavings of
events from different emitters, a duplicated controller state report, a name changed
everywhere it occurs, one node's clock 0.1 s off) are correct-but-odd histories that must
still PASS. `Score` gives the kill rate, the rule code that refused each mutant first
(`killer`: `model:<rule>`, a property, `landing`, `history`...), the kill rate by a semantic
rule with the generic ones set aside, per operator, per rule and per edited field, and the
survivors grouped into classes, for `benchmarks/mutation_score.py` and the tests.
"""

from __future__ import annotations

import bisect
import copy
import json
import os
import random
import shutil
import tempfile
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ftharness.history.records import read_history, sealed_lines

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
#: the largest clock difference the jitter control adds (seconds)
JITTER_S = 0.002


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


@dataclass
class Outcome:
    mutant: Mutant
    verdict: str
    killer: str                    # the rule code that refused it first (`reason_code`), "-" for a PASS
    reasons: List[str] = field(default_factory=list)
    codes: List[str] = field(default_factory=list)   # the rule code of every reason, in order

    @property
    def semantic_killer(self) -> Optional[str]:
        """The first semantic rule that refused it (None: none did; generic rules only, or a PASS)."""
        return next((c for c in self.codes if not is_generic(c)), None)


# ------------------------------------------------------------------------------- reading
def load(folder: str) -> Tuple[List[Event], str]:
    """(events without history_end, scenario.yaml text) of a recorded results folder."""
    read = read_history(folder)
    if read.problems:
        raise ValueError(f"{folder}: the recorded history is not intact ({read.problems[0]})")
    events = [copy.deepcopy(e) for e in read.events if e.get("kind") != "history_end"]
    with open(os.path.join(folder, "scenario.yaml")) as f:
        return events, f.read()


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


# -------------------------------------------------------------- self-consistent operators
# These edit a history so that it stays consistent with itself: every process's clock runs
# forwards, its events keep naming one pid, rank and attempt, the numbering has no hole, the file
# is sealed again. So the generic rules (clock order within a process, parse, seal, types) cannot
# be what refuses them: only a rule about what a fact *means* can.

#: seconds the move-across operator puts an event past its boundary (more than TOL_CROSS, 2 s: a
#: correct run on hosts whose clocks differ by up to that much records no such order)
ACROSS_S = (3.0, 8.0, 30.0)
#: seconds the move-across operator moves an event together with the rest of its process
ACROSS_TAIL_S = (8.0,)
#: seconds the controller may record a worker group after its workers started running (the judge's
#: history.causal.TOL_GROUP: a busy controller records the group late)
GROUP_LAG_S = 10.0
#: seconds two processes' clock readings may disagree (the judge's history.causal.TOL_CROSS: hosts' clocks)
CROSS_TOL_S = 2.0
#: how many events of its process the tail move takes along
TAIL_EVENTS = 3
#: how many other recorded runs each history takes spliced events from
SPLICE_OTHERS = 3
#: fields the foreign transplant takes from another recorded run: identities and paths of that run
FOREIGN_FIELDS = frozenset({"path", "checkpoint", "restored_checkpoint", "node_id", "attempt_id", "digest",
                            "storage_path", "actor_id"})
#: events of a foreign-transplanted field per (kind, field): the first, the middle and the last
FOREIGN_PER_FIELD = 3
#: budgets of a failure's `counts` and the failure_config setting that limits each
BUDGET_LIMIT = {"worker_group": "max_failures", "preemption": "max_preemption_failures",
                "controller": "controller_failure_limit"}
#: error types a failure may be recorded with (besides those the history holds)
ERROR_TYPES = ("WorkerGroupError", "PreemptionError", "ControllerError", "WorkerGroupStartupTimeoutError")
#: the largest clock skew between hosts the skew control adds to one node's processes (seconds)
SKEW_S = 0.1


def _t(e: Event) -> Optional[float]:
    v = e.get("t")
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _shifted(e: Event, d: float, deadlines: bool = True) -> Event:
    """A copy of `e` with every clock reading it holds (t, t_done, t_requested, at any depth; its
    deadlines in ms with `deadlines`) moved by `d` seconds: one process's clock moved by a constant."""
    out = copy.deepcopy(e)
    for path, v in list(_leaves(out)):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            continue
        if _name(path) in TIME_FIELDS:
            _set(out, path, v + d)
        elif deadlines and _name(path) == "deadline_ms" and isinstance(v, int):
            _set(out, path, v + int(round(d * 1000)))
    return out


def _merge(base: List[Event], ins: List[Event]) -> List[Event]:
    """`ins` placed into `base` by their clock readings, as a recorder that appends in arrival order
    would have written them: each event of `ins` goes before the first event of `base` that is later
    than it; the order within `base`, and each emitter's order within `ins`, is kept (so a process
    whose clock runs forwards still runs forwards in the file)."""
    times = [_t(e) for e in base]

    def pos(t: Optional[float]) -> int:
        if t is None:
            return len(base)
        for j, bt in enumerate(times):
            if bt is not None and bt > t:
                return j
        return len(base)

    placed: List[Tuple[int, int, Event]] = []
    last: Dict[Any, int] = {}
    for n, e in enumerate(ins):
        p = pos(_t(e))
        em = e.get("emitter")
        p = max(p, last.get(em, 0))
        last[em] = p
        placed.append((p, n, e))
    placed.sort(key=lambda x: (x[0], x[1]))
    out: List[Event] = []
    k = 0
    for j, b in enumerate(base):
        while k < len(placed) and placed[k][0] <= j:
            out.append(placed[k][2])
            k += 1
        out.append(b)
    out.extend(p[2] for p in placed[k:])
    return out


def _set_in_place(others: List[float], moves: Sequence[Tuple[float, float]]) -> bool:
    """Whether moving a set of clock readings (old -> new) passes no other event's reading (`others`,
    sorted): every order relation with the rest of the history stays; only durations change."""
    return all(bisect.bisect_left(others, a) == bisect.bisect_left(others, b)
               and bisect.bisect_right(others, a) == bisect.bisect_right(others, b) for a, b in moves)


def _emitters(events: List[Event]) -> List[Any]:
    return list(dict.fromkeys(e.get("emitter") for e in events if e.get("emitter")))


def _source_of(events: List[Event]) -> str:
    return next((str(e.get("source")) for e in events if e.get("source")), "?")


def _run_id(events: List[Event]) -> Any:
    return next((e.get("run") for e in events if e.get("kind") == "run_start"),
                next((e.get("run") for e in events if e.get("run")), None))


def consistent_mutants(source: str, events: List[Event],
                       others: Sequence[Tuple[str, List[Event]]] = ()) -> Iterator[Mutant]:
    """Every self-consistent mutant of one history, in a fixed order (`others`: (name, events) of
    other recorded runs, for the splices and the foreign transplants)."""
    yield from _shifts(source, events)
    yield from _splices(source, events, others)
    yield from _moves(source, events)
    yield from _pairs(source, events)
    yield from _transplants(source, events, others)


def all_mutants(source: str, events: List[Event],
                others: Sequence[Tuple[str, List[Event]]] = ()) -> Iterator[Mutant]:
    """The single-field mutants (`mutants`) and the self-consistent ones (`consistent_mutants`)."""
    yield from mutants(source, events)
    yield from consistent_mutants(source, events, others)


#: the operators `consistent_mutants` uses (for filters and tables)
CONSISTENT_OPERATORS = ("shift-process", "shift-node", "splice", "splice-as-own", "move-across",
                        "move-across-tail", "pair", "relabel", "transplant", "transplant-foreign")


# -- shift every event of one process (or of one node) by a constant
def _node_emitters(events: List[Event]) -> Dict[Any, List[Any]]:
    """node id -> the emitters whose events carry that node_id (a node's processes), in order."""
    out: Dict[Any, Dict[Any, None]] = defaultdict(dict)
    for e in events:
        if e.get("emitter") and isinstance(e.get("node_id"), str):
            out[e["node_id"]][e["emitter"]] = None
    return {n: list(ems) for n, ems in out.items()}


def _shift_group(source: str, operator: str, kind: str, label: str, events: List[Event],
                 members: set) -> Iterator[Mutant]:
    mine = [e for e in events if e.get("emitter") in members]
    rest = [e for e in events if e.get("emitter") not in members]
    others = sorted(t for t in map(_t, rest) if t is not None)
    for d in TIME_SHIFTS:
        moved = [_shifted(e, d) for e in mine]
        out = _merge(copy.deepcopy(rest), moved)
        moves = [(t, t + d) for t in map(_t, mine) if t is not None]
        rule = ("informational-kind" if all(e.get("kind") in INFORMATIONAL for e in mine)
                else "in-place" if _set_in_place(others, moves) else None)
        yield Mutant(source, operator, kind, "t", f"{label}{d:+g}s", out, equivalent=rule)


def _shifts(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Every event of one process moved in time by a constant (its own order kept), and every event of
    one node's processes likewise (nodes with one process are the process shift already)."""
    for em in _emitters(events):
        mine = [e for e in events if e.get("emitter") == em]
        yield from _shift_group(source, "shift-process", f"process:{_source_of(mine)}", str(em), events, {em})
    for node, ems in _node_emitters(events).items():
        if len(ems) > 1:
            yield from _shift_group(source, "shift-node", "node", str(node)[:12], events, set(ems))


# -- splice events of another recorded run
def _splices(source: str, events: List[Event], others: Sequence[Tuple[str, List[Event]]]) -> Iterator[Mutant]:
    """Events of another recorded run inserted into this one at the same point of the run (their
    clocks moved by the difference of the two runs' starts, so each spliced process runs forwards),
    with their run id kept (`splice`) or rewritten to this run's (`splice-as-own`): every spliced
    process whole, and one event of each kind. Emitter names that collide get a suffix, and the
    numbering is made contiguous when written (`write` renumbers)."""
    t0 = next((t for t in map(_t, events) if t is not None), 0.0)
    mine = set(_emitters(events))
    run_id = _run_id(events)
    for name, theirs in list(others)[:SPLICE_OTHERS]:
        if _run_id(theirs) == run_id:
            continue
        off = t0 - next((t for t in map(_t, theirs) if t is not None), 0.0)
        rename = {em: (f"{em}-spliced" if em in mine else em) for em in _emitters(theirs)}

        def bring(evs: List[Event], own: bool) -> List[Event]:
            out = []
            for e in evs:
                e = _shifted(e, off)
                if e.get("emitter") in rename:
                    e["emitter"] = rename[e["emitter"]]
                if own:
                    e["run"] = run_id
                out.append(e)
            return out

        for em in _emitters(theirs):
            evs = [e for e in theirs if e.get("emitter") == em]
            for own in (False, True):
                out = _merge(copy.deepcopy(events), bring(evs, own))
                yield Mutant(source, "splice-as-own" if own else "splice", f"process:{_source_of(evs)}", "*",
                             f"{name}:{em}", out,
                             equivalent="informational-kind" if own and all(
                                 e.get("kind") in INFORMATIONAL for e in evs) else None)
        by_kind: Dict[str, List[int]] = defaultdict(list)
        for i, e in enumerate(theirs):
            by_kind[e.get("kind", "?")].append(i)
        for kind, idx in by_kind.items():
            i = idx[len(idx) // 2]
            for own in (False, True):
                out = _merge(copy.deepcopy(events), bring([theirs[i]], own))
                yield Mutant(source, "splice-as-own" if own else "splice", kind, "*", f"{name}#{i}", out,
                             equivalent="informational-kind" if own and kind in INFORMATIONAL else None)


# -- move an event across an attempt boundary, a shutdown or its own death, clocks kept monotonic
def _boundaries(events: List[Event]) -> Dict[Any, List[Tuple[str, int, int]]]:
    """emitter -> (label, boundary event index, +1 later / -1 earlier): the events a process's event
    must not be moved across. A worker of attempt A: its group's shutdown, the next attempt's start
    and the fault that killed it or its node (later); A's start, A's group and the previous attempt's
    shutdown (earlier). A controller's failure: the next attempt's start (later) and the fault before
    it (earlier); its registration: its attempt's shutdown (later)."""
    out: Dict[Any, List[Tuple[str, int, int]]] = defaultdict(list)
    starts = [i for i, e in enumerate(events) if e.get("kind") == "attempt_start"]
    groups = [i for i, e in enumerate(events) if e.get("kind") == "worker_group_started"]
    downs = [i for i, e in enumerate(events) if e.get("kind") == "worker_group_shutdown"]
    faults = [i for i, e in enumerate(events) if e.get("kind") in ("fault_injected", "fault_action")]

    def t(i: int) -> float:
        return _t(events[i]) or 0.0

    def kills(i: int, pid: Any, node: Any) -> bool:
        e = events[i]
        hit = e.get("target_hit") if isinstance(e.get("target_hit"), dict) else {}
        detail = e.get("detail") if isinstance(e.get("detail"), dict) else {}
        how = str(hit.get("how") or detail.get("how") or "")
        if e.get("kind") == "fault_injected" and pid is not None and hit.get("pid") == pid and "KILL" in how:
            return True
        node_hit = hit.get("node_id") if e.get("kind") == "fault_injected" else detail.get("node_id")
        return node is not None and node_hit == node and ("remove" in how or "SIGKILL" in how)

    for em in _emitters(events):
        idx = [i for i, e in enumerate(events) if e.get("emitter") == em]
        first = events[idx[0]]
        src = first.get("source")
        if src == "worker":
            a, pid, node = first.get("attempt_id"), first.get("pid"), first.get("node_id")
            t_first, t_last = t(idx[0]), t(idx[-1])
            out[em] += [("worker_group_shutdown", i, +1) for i in downs if events[i].get("attempt_id") == a][:1]
            nxt = next((i for i in starts if events[i].get("attempt_id") != a and t(i) > t_first), None)
            if nxt is not None:
                out[em].append(("next attempt_start", nxt, +1))
            death = next((i for i in faults if kills(i, pid, node) and t(i) <= t_last + 600), None)
            if death is not None:
                out[em].append(("death", death, +1))
            out[em] += [("attempt_start", i, -1) for i in starts if events[i].get("attempt_id") == a][:1]
            out[em] += [("worker_group_started", i, -1) for i in groups if events[i].get("attempt_id") == a][:1]
            before = [i for i in downs if events[i].get("attempt_id") != a and t(i) < t_first]
            if before:
                out[em].append(("previous worker_group_shutdown", before[-1], -1))
    return out


def _lag_rule(events: List[Event], i: int, label: str, side: int, d: float, new_t: float) -> Optional[str]:
    """The equivalence rule of a move across a boundary, if any: a worker's start (alone, not its steps)
    moved before its group's record by less than GROUP_LAG_S, still after its attempt's start
    ("group-lag")."""
    e = events[i]
    if label != "worker_group_started" or side > 0 or d >= GROUP_LAG_S or e.get("kind") != "worker_start":
        return None
    start = next((_t(x) for x in events if x.get("kind") == "attempt_start"
                  and x.get("attempt_id") == e.get("attempt_id")), None)
    return "group-lag" if start is not None and new_t >= start - CROSS_TOL_S else None


def _moves(source: str, events: List[Event]) -> Iterator[Mutant]:
    """A process's event nearest to a boundary moved to the boundary's other side by `ACROSS_S`
    (placed in the file by its new time, so its process's clock still runs forwards), alone
    (`move-across`) or with every later (earlier) event of its process (`move-across-tail`)."""
    bounds = _boundaries(events)

    def emit(i: int, label: str, b: int, side: int, idx: List[int]) -> Iterator[Mutant]:
        e, tb = events[i], _t(events[b])
        te = _t(e)
        if tb is None or te is None:
            return
        for d in ACROSS_S:
            delta = tb + side * d - te
            rest = events[:i] + events[i + 1:]
            out = _merge(copy.deepcopy(rest), [_shifted(e, delta, deadlines=False)])
            yield Mutant(source, "move-across", e.get("kind", "?"), label, f"#{i}{side * d:+g}s past #{b}", out,
                         equivalent=_lag_rule(events, i, label, side, d, te + delta))
        # with its neighbours: the last (first) TAIL_EVENTS events of its process on this side, moved
        # together so that the nearest of them lands past the boundary by the same distance
        near = [j for j in idx if ((_t(events[j]) or 0.0) < tb if side > 0 else (_t(events[j]) or 0.0) > tb)]
        block = near[-TAIL_EVENTS:] if side > 0 else near[:TAIL_EVENTS]
        if len(block) > 1:
            anchor = _t(events[block[0] if side > 0 else block[-1]])
            for d in ACROSS_TAIL_S:
                if anchor is None:
                    break
                delta = tb + side * d - anchor
                moved = set(block)
                keep = [x for j, x in enumerate(events) if j not in moved]
                out = _merge(copy.deepcopy(keep), [_shifted(events[j], delta, deadlines=False) for j in block])
                yield Mutant(source, "move-across-tail", e.get("kind", "?"), label,
                             f"#{block[0]}..#{block[-1]}{side * d:+g}s past #{b}", out)

    for em, bs in bounds.items():
        idx = [i for i, e in enumerate(events) if e.get("emitter") == em]
        for label, b, side in bs:
            tb = _t(events[b])
            if tb is None:
                continue
            if side > 0:
                cand = [i for i in idx if (_t(events[i]) or 0.0) < tb]
                if cand:
                    yield from emit(cand[-1], label, b, side, idx)
            else:
                cand = [i for i in idx if (_t(events[i]) or 0.0) > tb]
                if cand:
                    yield from emit(cand[0], label, b, side, idx)
    # the controller's decisions: a failure after the next attempt started, or before its fault was done;
    # a registration after its attempt's group was shut down
    starts = [i for i, e in enumerate(events) if e.get("kind") == "attempt_start"]
    for i, e in enumerate(events):
        if e.get("source") != "controller" or _t(e) is None:
            continue
        if e.get("kind") == "failure":
            nxt = next((j for j in starts if j > i and events[j].get("emitter") == e.get("emitter")), None)
            if nxt is not None:
                yield from _move_one(source, events, i, "next attempt_start", nxt, +1)
            fault = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") in ("fault_injected", "fault_action")
                          and _t(events[j]) is not None and _t(events[j]) <= _t(e)), None)
            if fault is not None:
                yield from _move_one(source, events, i, "fault", fault, -1)
        elif e.get("kind") == "checkpoint_registered":
            down = next((j for j, x in enumerate(events) if j > i and x.get("kind") == "worker_group_shutdown"
                         and x.get("attempt_id") == e.get("attempt_id")), None)
            last = down is not None and not any(x.get("kind") == "checkpoint_registered"
                                                and x.get("attempt_id") == e.get("attempt_id")
                                                for x in events[i + 1:down])
            if last:   # the attempt's last registration (the nearest to its shutdown)
                yield from _move_one(source, events, i, "worker_group_shutdown", down, +1)


def _move_one(source: str, events: List[Event], i: int, label: str, b: int, side: int) -> Iterator[Mutant]:
    e, tb, te = events[i], _t(events[b]), _t(events[i])
    if tb is None or te is None:
        return
    for d in ACROSS_S:
        rest = events[:i] + events[i + 1:]
        out = _merge(copy.deepcopy(rest), [_shifted(e, tb + side * d - te, deadlines=False)])
        yield Mutant(source, "move-across", e.get("kind", "?"), label, f"#{i}{side * d:+g}s past #{b}", out)


# -- two facts changed together: each agrees with the other, not with the rest
def _failure_config(events: List[Event]) -> Dict[str, Any]:
    rs = next((e for e in events if e.get("kind") == "run_start"), {})
    fc = rs.get("failure_config")
    return fc if isinstance(fc, dict) else {}


def _pairs(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Two (or more) facts edited together so that they agree with each other, but not with the rest
    of the history: a failure's budget and its counts (and every later failure's), its count and
    counts, a report's step and its metrics' step, a registration's step and its reports', a restore's
    checkpoint and step, a group's world size and its attempt's num_workers, the victim recorded at a
    kill as another worker of the attempt, an error type on the failure and its controller state, the
    outcome and its error type, a drain deadline and the derived lateness of the kill, a registration
    named as another checkpoint (its path too). Relabels (`relabel`): every event of one worker
    process moved to another attempt, or to another rank."""
    fc = _failure_config(events)
    fails = [i for i, e in enumerate(events) if e.get("kind") == "failure" and isinstance(e.get("counts"), dict)]
    for i in fails:
        e = events[i]
        b = e.get("budget")
        later = [j for j in fails if j >= i and events[j].get("fit_index") == e.get("fit_index")]
        for b2 in e["counts"]:
            if b2 == b or b not in e["counts"]:
                continue
            out = copy.deepcopy(events)
            for j in later:
                c = out[j]["counts"]
                if isinstance(c.get(b), int) and isinstance(c.get(b2), int):
                    c[b] -= 1
                    c[b2] += 1
            out[i]["budget"] = b2
            out[i]["count"] = out[i]["counts"][b2]
            if isinstance(fc.get(BUDGET_LIMIT.get(b2, "")), int):
                out[i]["limit"] = fc[BUDGET_LIMIT[b2]]
            for j in later[1:]:
                if out[j].get("budget") in (b, b2):
                    out[j]["count"] = out[j]["counts"][out[j]["budget"]]
            yield Mutant(source, "pair", "failure", "budget+counts", f"#{i}={b2}", out)
        if isinstance(e.get("count"), int) and isinstance(e["counts"].get(b), int):
            for with_limit in (False, True):
                out = copy.deepcopy(events)
                for j in later:
                    if isinstance(out[j]["counts"].get(b), int):
                        out[j]["counts"][b] += 1
                    if out[j].get("budget") == b and isinstance(out[j].get("count"), int):
                        out[j]["count"] += 1
                        if with_limit and isinstance(out[j].get("limit"), int):
                            out[j]["limit"] += 1
                yield Mutant(source, "pair", "failure", "count+counts" + ("+limit" if with_limit else ""),
                             f"#{i}+1", out)
    for i, e in enumerate(events):
        kind = e.get("kind")
        if kind == "report" and isinstance(e.get("step"), int):
            for d in (1, -1):
                s = e["step"] + d
                if s < 0:
                    continue
                out = copy.deepcopy(events)
                out[i]["step"] = s
                for k in STEP_METRICS:
                    if isinstance(out[i].get("metrics"), dict) and k in out[i]["metrics"]:
                        out[i]["metrics"][k] = s
                yield Mutant(source, "pair", "report", "step+metrics.step", f"#{i}{d:+d}", out)
        elif kind == "checkpoint_registered" and isinstance(e.get("step"), int):
            name = e.get("checkpoint")
            for d in (1, -1):
                s = e["step"] + d
                for written in (False, True):
                    out = copy.deepcopy(events)
                    out[i]["step"] = s
                    for x in out:
                        same = x.get("attempt_id") == e.get("attempt_id") and x.get("step") == e["step"]
                        if x.get("kind") == "report" and same and (x.get("checkpoint") == name or x.get("checkpoint")):
                            x["step"] = s
                            for k in STEP_METRICS:
                                if isinstance(x.get("metrics"), dict) and k in x["metrics"]:
                                    x["metrics"][k] = s
                        elif written and x.get("kind") == "checkpoint_written" and same:
                            x["step"] = s
                    yield Mutant(source, "pair", "checkpoint_registered",
                                 "step+report.step" + ("+written.step" if written else ""), f"#{i}{d:+d}", out)
    registered = [(e.get("checkpoint"), e.get("step")) for e in events if e.get("kind") == "checkpoint_registered"]
    starts = [i for i, e in enumerate(events) if e.get("kind") == "worker_start" and e.get("restored_checkpoint")]
    for i in starts:
        e = events[i]
        alts = [r for r in registered if r[0] != e["restored_checkpoint"]]
        here = next((n for n, r in enumerate(registered) if r[0] == e["restored_checkpoint"]), len(registered))
        alts = sorted(alts, key=lambda r: abs(registered.index(r) - here))[:2]
        for name, step in alts:
            for every in (False, True):
                out = copy.deepcopy(events)
                for j in ([x for x in starts if events[x].get("attempt_id") == e.get("attempt_id")] if every else [i]):
                    out[j]["restored_checkpoint"], out[j]["restored_step"] = name, step
                yield Mutant(source, "pair", "worker_start",
                             "restored_checkpoint+restored_step" + ("(every rank)" if every else ""),
                             f"#{i}={str(name)[-10:]}", out)
    for i, e in enumerate(events):
        if e.get("kind") != "worker_group_started" or not isinstance(e.get("world_size"), int):
            continue
        a = e.get("attempt_id")
        st = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") == "attempt_start"
                   and events[j].get("attempt_id") == a), None)
        for workers_too in (False, True):
            out = copy.deepcopy(events)
            out[i]["world_size"] += 1
            if st is not None and isinstance(out[st].get("num_workers"), int):
                out[st]["num_workers"] += 1
            if workers_too:
                for x in out:
                    if x.get("source") == "worker" and x.get("attempt_id") == a \
                            and isinstance(x.get("world_size"), int):
                        x["world_size"] += 1
            yield Mutant(source, "pair", "worker_group_started",
                         "world_size+num_workers" + ("+workers.world_size" if workers_too else ""), f"#{i}+1", out)
    for i, e in enumerate(events):
        hit = e.get("target_hit")
        if e.get("kind") != "fault_injected" or not isinstance(hit, dict) or "pid" not in hit or "rank" not in hit:
            continue
        group = next((x for x in events if x.get("kind") == "worker_group_started"
                      and x.get("attempt_id") == (hit.get("attempt_id") or x.get("attempt_id"))
                      and any(w.get("pid") == hit["pid"] for w in x.get("workers") or [] if isinstance(w, dict))), None)
        if group is None:
            continue
        for w in group.get("workers") or []:
            if not isinstance(w, dict) or w.get("pid") == hit["pid"]:
                continue
            for asked_too in (False, True):
                out = copy.deepcopy(events)
                h = out[i]["target_hit"]
                for k in ("pid", "rank", "node_id", "actor_id"):
                    if k in h and k in w:
                        h[k] = w[k]
                if asked_too and isinstance(out[i].get("target_asked"), dict) and "rank" in out[i]["target_asked"]:
                    out[i]["target_asked"]["rank"] = w.get("rank")
                yield Mutant(source, "pair", "fault_injected",
                             "target_hit(pid,rank,node)" + ("+target_asked.rank" if asked_too else ""),
                             f"#{i}=rank {w.get('rank')}", out)
            break
    types = list(dict.fromkeys([e.get("error_type") for e in events if isinstance(e.get("error_type"), str)]
                               + list(ERROR_TYPES)))
    for i in fails:
        e = events[i]
        for alt in [x for x in types if x != e.get("error_type")][:2]:
            out = copy.deepcopy(events)
            out[i]["error_type"] = alt
            state = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") == "controller_state"
                          and events[j].get("error_type") == e.get("error_type")
                          and events[j].get("attempt_id") == e.get("attempt_id")), None)
            if state is not None:
                out[state]["error_type"] = alt
            yield Mutant(source, "pair", "failure", "error_type+controller_state.error_type", f"#{i}={alt}", out)
    for i, e in enumerate(events):
        if e.get("kind") != "run_end" or e.get("outcome") not in ("succeeded", "failed"):
            continue
        out = copy.deepcopy(events)
        if e["outcome"] == "succeeded":
            last = next((x for x in reversed(events[:i]) if x.get("kind") == "failure"), {})
            out[i]["outcome"], out[i]["error_type"] = "failed", last.get("error_type") or ERROR_TYPES[0]
        else:
            out[i]["outcome"], out[i]["error_type"], out[i]["error"] = "succeeded", None, None
        yield Mutant(source, "pair", "run_end", "outcome+error_type", f"#{i}={out[i]['outcome']}", out)
    for i, e in enumerate(events):
        hit = e.get("target_hit")
        if e.get("kind") != "fault_injected" or not isinstance(hit, dict) \
                or not isinstance(hit.get("deadline_ms"), int):
            continue
        node = hit.get("node_id")
        for d_ms in (-60_000, -3_000, 3_000, 60_000):
            out = copy.deepcopy(events)
            out[i]["target_hit"]["deadline_ms"] += d_ms
            if isinstance(hit.get("kill_in_s"), (int, float)):
                out[i]["target_hit"]["kill_in_s"] = hit["kill_in_s"] + d_ms / 1000.0
            for x in out:
                det = x.get("detail")
                if x.get("kind") == "fault_action" and isinstance(det, dict) and det.get("node_id") == node \
                        and isinstance(det.get("ms_after_deadline"), (int, float)):
                    det["ms_after_deadline"] = round(det["ms_after_deadline"] - d_ms, 1)
            yield Mutant(source, "pair", "fault_injected", "deadline_ms+kill_in_s+ms_after_deadline",
                         f"#{i}{d_ms:+d}ms", out)
    regs = [i for i, e in enumerate(events) if e.get("kind") == "checkpoint_registered" and e.get("checkpoint")]
    for n, i in enumerate(regs[1:], 1):
        e, prev = events[i], events[regs[n - 1]]
        out = copy.deepcopy(events)
        out[i]["checkpoint"] = prev["checkpoint"]
        if isinstance(e.get("path"), str) and isinstance(prev.get("path"), str):
            out[i]["path"] = prev["path"]
        yield Mutant(source, "pair", "checkpoint_registered", "checkpoint+path", f"#{i}=#{regs[n - 1]}", out)
    yield from _relabels(source, events)


def _relabels(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Every event of one worker process relabeled as a process of another attempt (attempt and
    attempt_id), or of another rank of its attempt: the process agrees with itself, not with its group."""
    attempts = list(dict.fromkeys((e.get("attempt"), e.get("attempt_id")) for e in events
                                  if e.get("source") == "worker" and e.get("attempt_id") is not None))
    for em in _emitters(events):
        mine = [i for i, e in enumerate(events) if e.get("emitter") == em]
        first = events[mine[0]]
        if first.get("source") != "worker" or first.get("attempt_id") is None:
            continue
        here = (first.get("attempt"), first.get("attempt_id"))
        for other in [a for a in attempts if a != here][:2]:
            out = copy.deepcopy(events)
            for i in mine:
                if "attempt" in out[i]:
                    out[i]["attempt"] = other[0]
                out[i]["attempt_id"] = other[1]
            yield Mutant(source, "relabel", "process:worker", "attempt+attempt_id", f"{em}={other[1]}", out)
        ranks = sorted({e.get("rank") for e in events if e.get("source") == "worker"
                        and e.get("attempt_id") == here[1] and isinstance(e.get("rank"), int)})
        for r in [r for r in ranks if r != first.get("rank")][:1]:
            out = copy.deepcopy(events)
            for i in mine:
                out[i]["rank"] = r
            yield Mutant(source, "relabel", "process:worker", "rank", f"{em}={r}", out)


# -- another valid value of the same field, from elsewhere in this history or from another run
def _norm(path: Path) -> str:
    return ".".join("[]" if isinstance(p, int) else str(p) for p in path)


def _field_leaves(value: Any, path: Path = (), depth: int = 0) -> Iterator[Tuple[Path, Any]]:
    """Like `_leaves`, but a list of scalars (a rank list, a step's rows) is one leaf."""
    if isinstance(value, dict) and depth < 4:
        for k, v in value.items():
            if depth == 0 and k in STRUCTURE:
                continue
            yield from _field_leaves(v, path + (k,), depth + 1)
    elif isinstance(value, list) and depth < 4 and value and all(isinstance(x, dict) for x in value):
        for i, v in enumerate(value):
            yield from _field_leaves(v, path + (i,), depth + 1)
    elif isinstance(value, list):
        if all(not isinstance(x, (dict, list)) for x in value):
            yield path, value
    elif not isinstance(value, dict):
        yield path, value


def _short(v: Any) -> str:
    """A value as a mutant's name shows it: whole when short, else its last 20 characters (where names
    of checkpoints and paths differ)."""
    s = str(v)
    return s if len(s) <= 24 else "..." + s[-20:]


def _freeze(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _same_field_pool(events: List[Event]) -> Dict[Tuple[str, str], List[Tuple[int, Any]]]:
    """(kind, field path with list indices as []) -> (event index, value) of every occurrence."""
    pool: Dict[Tuple[str, str], List[Tuple[int, Any]]] = defaultdict(list)
    for i, e in enumerate(events):
        for path, v in _field_leaves(e):
            pool[(e.get("kind", "?"), _norm(path))].append((i, v))
    return pool


def _fresh_name(events: List[Event], i: int, path: Path, alt: Any) -> Optional[str]:
    """`fresh-name` where another run's value, put in place of a name this history holds once, is
    itself held nowhere else in it: a new worker actor id (Ray gives each worker a fresh one, and
    any unique id is as valid), or the digest of a checkpoint no rank restored (digests are read
    only when files are read back, and each report names its own)."""
    name = _name(path)
    if any(alt == v for e in events for _, v in _leaves(e)):
        return None
    if name == "actor_id":
        return "fresh-name"
    if name == "digest" and events[i].get("kind") == "report":
        ckpt = events[i].get("checkpoint")
        restored = any(e.get("kind") == "worker_start" and e.get("restored_checkpoint") == ckpt for e in events)
        return None if restored else "fresh-name"
    return None


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


def _transplants(source: str, events: List[Event], others: Sequence[Tuple[str, List[Event]]]) -> Iterator[Mutant]:
    """A field's value replaced by the value the same field (same kind, same path under nested dicts
    and lists: target_hit.pid, detail.node_id, workers[].pid, counts.preemption, a step's rows, a
    rank list) holds in the nearest other event of this history that differs (before and after it):
    `transplant`; the same for identities and paths taken from another recorded run (a registration
    under another run's folder, a node of another cluster): `transplant-foreign`. Clock readings are
    left to the move operators; a value `revalue` already tries is not tried again."""
    pool = _same_field_pool(events)
    role_pools = _pools(events)
    result_metrics = _result_metrics(events)
    for i, e in enumerate(events):
        kind = e.get("kind", "?")
        for path, v in _field_leaves(e):
            name = _name(path)
            if name in TIME_FIELDS or name == "deadline_ms":
                continue
            tried = ({_freeze(x) for x in _alternatives(v, _role(path), role_pools)}
                     if not isinstance(v, list) else set())
            occ = pool[(kind, _norm(path))]
            before = [x for j, x in reversed(occ) if j < i and _freeze(x) != _freeze(v)]
            after = [x for j, x in occ if j > i and _freeze(x) != _freeze(v)]
            seen = set()
            for alt in (before[:1] + after[:1]):
                key = _freeze(alt)
                if key in tried or key in seen:
                    continue
                seen.add(key)
                out = copy.deepcopy(events)
                _set(out[i], path, copy.deepcopy(alt))
                yield Mutant(source, "transplant", kind, _norm(path), f"#{i}={_short(alt)}", out,
                             equivalent=None if i in result_metrics and path[:1] == ("metrics",)
                             else _equivalence(kind, path))
    run_id = _run_id(events)
    for name_other, theirs in list(others)[:1]:
        if _run_id(theirs) == run_id:
            continue
        foreign = _same_field_pool(theirs)
        by_field: Dict[Tuple[str, str], List[Tuple[int, Path, Any]]] = defaultdict(list)
        for i, e in enumerate(events):
            for path, v in _field_leaves(e):
                if _name(path) in FOREIGN_FIELDS and isinstance(v, str):
                    by_field[(e.get("kind", "?"), _norm(path))].append((i, path, v))
        for key, occ in by_field.items():
            alts = [x for _, x in foreign.get(key, []) if isinstance(x, str)]
            if not alts:
                alts = [x for (k, f), xs in foreign.items() if f.split(".")[-1] == key[1].split(".")[-1]
                        for _, x in xs if isinstance(x, str)]
            if not alts:
                continue
            picks = sorted({0, len(occ) // 2, len(occ) - 1})[:FOREIGN_PER_FIELD]
            for n in picks:
                i, path, v = occ[n]
                alt = alts[min(n, len(alts) - 1)]
                if alt == v:
                    continue
                out = copy.deepcopy(events)
                _set(out[i], path, alt)
                yield Mutant(source, "transplant-foreign", key[0], key[1], f"#{i}={name_other}:{alt[-16:]}", out,
                             equivalent=_equivalence(key[0], path) or _fresh_name(events, i, path, alt))


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


# -------------------------------------------------------------------------------- judging
def write(m: Mutant, scenario_text: str, folder: str) -> str:
    """The mutant as a results folder (history.jsonl, scenario.yaml)."""
    os.makedirs(folder, exist_ok=True)
    if m.renumber:
        lines = _renumbered(m.events)
    else:
        lines = sealed_lines(m.events, renumber=True)
    if m.stale_seal:
        body = [json.loads(x) for x in lines[:-1]]
        steps = [e for e in body if e.get("kind") == "step"] or body
        steps[0]["loss"] = -1.0
        lines = [json.dumps(e).encode() for e in body] + lines[-1:]
    with open(os.path.join(folder, "history.jsonl"), "wb") as f:
        f.write(b"".join(x + b"\n" for x in lines))
    with open(os.path.join(folder, "scenario.yaml"), "w") as f:
        f.write(scenario_text)
    return folder


def _renumbered(events: List[Event]) -> List[bytes]:
    """Sealed lines in which each emitter's numbering follows the file (as if recorded so)."""
    eseq: Counter = Counter()
    out = []
    for e in events:
        e = dict(e)
        if e.get("emitter"):
            eseq[e["emitter"]] += 1
            e["eseq"] = eseq[e["emitter"]]
        out.append(e)
    return sealed_lines(out, renumber=True)


def judge(m: Mutant, scenario_text: str, folder: str) -> Outcome:
    """The mutant judged as `ftharness check` judges a results folder. A folder `check` refuses
    (scenario.yaml does not match the history: exit 2) is REFUSED; an internal error is ERROR
    (neither is a PASS; an error is counted as killed by nothing semantic)."""
    from ftharness.errors import ScenarioError
    from ftharness.reports.judgement import rejudge

    shutil.rmtree(folder, ignore_errors=True)
    try:
        summary = rejudge(write(m, scenario_text, folder))
    except ScenarioError as e:
        summary = {"verdict": "REFUSED", "inconclusive": [f"refused: {e}"]}
    except Exception as e:   # an internal error of the judge: named, never a PASS, never a semantic kill
        summary = {"verdict": "ERROR", "inconclusive": [f"error: {type(e).__name__}: {str(e)[:200]}"]}
    reasons = list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or [])
    codes = reason_codes(summary)
    return Outcome(m, summary.get("verdict"), codes[0] if codes else "-", reasons, codes)


#: the generic rules: what refuses a history that disagrees with itself as a record (a process's clock
#: running backwards, a line that does not parse, a seal or numbering that does not match, a value of the
#: wrong type, a record that cannot be read as a run, one process's events naming different pids, ranks or
#: attempts), whatever the facts mean. Every other reason (the other model rules, every property, a
#: fault's landing, the outcome, the recorded settings and release) is semantic.
GENERIC = frozenset({"history", "model:clock", "model:odd-value", "model:unreadable", "model:emitter",
                     "fault-record", "error"})


def reason_code(text: str) -> str:
    """The rule a reason of a verdict names: `model:<rule>` for the causal model's findings, the
    property's name, `landing`, `outcome`, `history` (the record's integrity: parse, seal, numbering),
    `release`, `recorded` (a recorded setting that differs from the scenario's), `scenario`, `job-error`
    (the job's own code failed with no fault), `other` for a reason no prefix here names."""
    if text.startswith("history:"):
        return "history"
    if text.startswith("model: the history could not be read"):
        return "model:unreadable"
    if text.startswith("model: "):
        return "model:" + text[len("model: "):].split(":", 1)[0].strip()
    if text.startswith("fault record seq"):
        return "fault-record"
    if text.startswith("fault(s) ") or text.startswith("the scenario's faults differ") \
            or text.startswith("the run recorded") or text.startswith("the run's ") \
            or text.startswith("the run trained to a deadline"):
        return "recorded"
    if text.startswith("fault "):
        return "landing"
    if text.startswith("pinned property "):
        return text.split()[2]
    if text.startswith("property "):
        return text.split()[1]
    if text.startswith("outcome") or text.startswith("error_type"):
        return "outcome"
    if text.startswith("release:"):
        return "release"
    if text.startswith("scenario.yaml names") or text.startswith("refused:"):
        return "scenario"
    if text.startswith("the soak"):
        return "soak"
    if text.startswith("the job's own code"):
        return "job-error"
    if text.startswith("error:"):
        return "error"
    return "other"


def reason_codes(summary: Dict[str, Any]) -> List[str]:
    """The rule code of every reason of a verdict, the mismatches (FAIL) first ([] for a PASS)."""
    if summary.get("verdict") == "PASS":
        return []
    return [reason_code(t) for t in list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or [])]


def killer(summary: Dict[str, Any]) -> str:
    """What refused a history first, as a rule code (`reason_code`: `model:clock`, `model:registration`,
    a property's name, `landing`, `history`, `outcome`...; "-" for a PASS)."""
    codes = reason_codes(summary)
    return codes[0] if codes else ("-" if summary.get("verdict") == "PASS" else "other")


def is_generic(code: str) -> bool:
    return code in GENERIC


def field_key(kind: str, fld: str) -> str:
    """kind.field of an edit, list indices written [] (workers.0.pid -> worker_group_started.workers[].pid)."""
    return f"{kind}." + ".".join("[]" if p.isdigit() else p for p in str(fld).split("."))


@dataclass
class Score:
    outcomes: List[Outcome]
    took_s: float = 0.0
    sample: Optional[Dict[str, Any]] = None

    def _of(self, pred: Callable[[Outcome], bool]) -> List[Outcome]:
        return [o for o in self.outcomes if pred(o)]

    @property
    def controls(self) -> List[Outcome]:
        return self._of(lambda o: o.mutant.control)

    @property
    def controls_wrong(self) -> List[Outcome]:
        return self._of(lambda o: o.mutant.control and o.verdict != "PASS")

    @property
    def equivalent(self) -> List[Outcome]:
        return self._of(lambda o: not o.mutant.control and o.mutant.equivalent is not None)

    @property
    def judged(self) -> List[Outcome]:
        """The non-equivalent mutants: each must not PASS."""
        return self._of(lambda o: not o.mutant.control and o.mutant.equivalent is None)

    @property
    def survivors(self) -> List[Outcome]:
        return [o for o in self.judged if o.verdict == "PASS"]

    @property
    def killed(self) -> List[Outcome]:
        return [o for o in self.judged if o.verdict != "PASS"]

    @property
    def semantic_killed(self) -> List[Outcome]:
        """Killed with at least one semantic reason."""
        return [o for o in self.killed if o.semantic_killer is not None]

    @property
    def generic_only(self) -> List[Outcome]:
        """Killed by generic reasons only (the record disagreeing with itself, nothing about what it means)."""
        return [o for o in self.killed if o.semantic_killer is None]

    @property
    def kill_rate(self) -> float:
        judged = self.judged
        return (len(judged) - len(self.survivors)) / len(judged) if judged else 1.0

    @property
    def semantic_rate(self) -> float:
        """The share of the non-equivalent mutants that a semantic rule refuses."""
        judged = self.judged
        return len(self.semantic_killed) / len(judged) if judged else 1.0

    def by_killer(self) -> Counter:
        """The first reason of each kill, generic rules included."""
        return Counter(o.killer for o in self.killed)

    def by_rule(self) -> Counter:
        """The first *semantic* reason of each kill (the generic rules set aside)."""
        return Counter(o.semantic_killer for o in self.semantic_killed)

    def by_generic(self) -> Counter:
        """The first reason of each kill that only generic rules refused."""
        return Counter(o.killer for o in self.generic_only)

    def _rows(self, key: Callable[[Outcome], str]) -> List[Tuple[str, int, int, int, int, int]]:
        rows: Dict[str, List[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for o in self.judged:
            r = rows[key(o)]
            r[0] += 1
            r[1] += o.verdict != "PASS"
            r[2] += o.verdict != "PASS" and o.semantic_killer is not None
            r[3] += o.verdict != "PASS" and o.semantic_killer is None
        return [(k, n, kd, s, g, n - kd) for k, (n, kd, s, g) in sorted(rows.items())]

    def table(self) -> List[Tuple[str, int, int, int, int, int]]:
        """(operator, judged, killed, killed by a semantic rule, killed by generic rules only, surviving)."""
        return self._rows(lambda o: o.mutant.operator)

    def by_field(self) -> List[Tuple[str, int, int, int, int, int]]:
        """As `table`, per edited kind.field (list indices as [])."""
        return self._rows(lambda o: field_key(o.mutant.kind, o.mutant.field))

    def by_kind(self) -> List[Tuple[str, int, int]]:
        """(event kind, judged, surviving) per edited kind."""
        return [(k, n, s) for k, n, _, _, _, s in self._rows(lambda o: o.mutant.kind)]

    def classes(self) -> List[Dict[str, Any]]:
        """The survivors grouped by operator x kind x field, largest first, each with its examples."""
        groups: Dict[Tuple[str, str, str], List[Outcome]] = defaultdict(list)
        for o in self.survivors:
            groups[(o.mutant.operator, o.mutant.kind, o.mutant.field)].append(o)
        return [{"operator": op, "kind": kind, "field": fld, "count": len(os_),
                 "sources": sorted({o.mutant.source for o in os_}),
                 "examples": [o.mutant.name for o in os_[:3]]}
                for (op, kind, fld), os_ in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0]))]

    def generic_only_classes(self) -> List[Dict[str, Any]]:
        """The generic-only kills grouped by operator x kind x field (what no semantic rule reads)."""
        groups: Dict[Tuple[str, str, str], List[Outcome]] = defaultdict(list)
        for o in self.generic_only:
            groups[(o.mutant.operator, o.mutant.kind, o.mutant.field)].append(o)
        return [{"operator": op, "kind": kind, "field": fld, "count": len(os_),
                 "killers": dict(Counter(o.killer for o in os_)), "examples": [o.mutant.name for o in os_[:2]]}
                for (op, kind, fld), os_ in sorted(groups.items(), key=lambda x: (-len(x[1]), x[0]))]

    def to_json(self) -> Dict[str, Any]:
        judged, killed = self.judged, self.killed
        cols = ("judged", "killed", "semantic", "generic_only", "surviving")
        return {
            "took_s": round(self.took_s, 1),
            "sample": self.sample,
            "generic_rules": sorted(GENERIC),
            "totals": {
                "mutants": len(self.outcomes) - len(self.controls),
                "equivalent": len(self.equivalent),
                "equivalent_by_rule": dict(Counter(o.mutant.equivalent for o in self.equivalent).most_common()),
                "equivalent_but_refused": sum(o.verdict != "PASS" for o in self.equivalent),
                "judged": len(judged), "killed": len(killed), "surviving": len(self.survivors),
                "semantic_killed": len(self.semantic_killed), "generic_only": len(self.generic_only),
                "kill_rate": round(self.kill_rate, 4), "semantic_rate": round(self.semantic_rate, 4),
                # the same rate with one process's identity rule (model:emitter) counted as semantic
                "semantic_rate_emitter_semantic": round(
                    sum(1 for o in killed if any(not is_generic(c) or c == "model:emitter" for c in o.codes))
                    / len(judged), 4) if judged else 1.0,
                "verdicts": dict(Counter(o.verdict for o in judged)),
                "controls": len(self.controls), "controls_wrong": len(self.controls_wrong),
            },
            "first_killer": dict(self.by_killer().most_common()),
            "per_rule": dict(self.by_rule().most_common()),
            "generic_only_by_killer": dict(self.by_generic().most_common()),
            "per_operator": {r[0]: dict(zip(cols, r[1:])) for r in self.table()},
            "per_field": {r[0]: dict(zip(cols, r[1:])) for r in self.by_field()},
            "survivor_classes": self.classes(),
            "generic_only_classes": self.generic_only_classes(),
            "survivors": [o.mutant.name for o in self.survivors],
            "controls_wrong": [{"name": o.mutant.name, "verdict": o.verdict, "reasons": o.reasons[:3]}
                               for o in self.controls_wrong],
            "other_reasons": sorted({r[:160] for o in self.outcomes for r, c in zip(o.reasons, o.codes)
                                     if c == "other"})[:30],
            "equivalent_refused": [{"name": o.mutant.name, "rule": o.mutant.equivalent, "verdict": o.verdict,
                                    "killer": o.killer} for o in self.equivalent if o.verdict != "PASS"][:200],
        }


def sources_list(path: str) -> List[str]:
    """The folders a SOURCES.txt lists (one a line, relative to the repository that holds `path`'s
    tests/ folder; blank lines and # comments skipped), those that exist."""
    if not os.path.exists(path):
        return []
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path)))))
    out = []
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if line:
                folder = line if os.path.isabs(line) else os.path.join(root, line)
                if os.path.exists(os.path.join(folder, "history.jsonl")):
                    out.append(folder)
    return out


def _draw(ms: List[Mutant], sample: Optional[int], per_operator: Optional[int], rng: random.Random) -> List[Mutant]:
    if per_operator is not None:
        by_op: Dict[str, List[Mutant]] = defaultdict(list)
        for m in ms:
            by_op[m.operator].append(m)
        ms = [m for op in sorted(by_op) for m in
              (rng.sample(by_op[op], per_operator) if len(by_op[op]) > per_operator else by_op[op])]
    if sample is not None and len(ms) > sample:
        ms = rng.sample(ms, sample)
    return ms


def _judge_all(args: Tuple[List[Mutant], str]) -> List[Outcome]:
    ms, text = args
    tmp = tempfile.mkdtemp(prefix="ftharness-mutants-")
    try:
        return [judge(m, text, os.path.join(tmp, "m")) for m in ms]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run(folders: Sequence[str], sample: Optional[int] = None, seed: int = 0,
        progress: Optional[Callable[[int, int], None]] = None, consistent: bool = True,
        single: bool = True, per_operator: Optional[int] = None, operators: Optional[Sequence[str]] = None,
        jobs: int = 1, with_controls: bool = True) -> Score:
    """Judge every mutant and control of the recorded histories in `folders`. `sample`: at most that
    many non-control mutants per history, drawn with `seed`; `per_operator`: at most that many per
    operator per history (drawn first); `single` / `consistent`: the single-field operators
    (`mutants`) and the self-consistent ones (`consistent_mutants`, which splice from the other
    folders); `operators`: only these; `jobs`: processes judging in parallel; `with_controls`: the
    controls of each history too."""
    import time

    t0 = time.time()
    loaded = []
    for folder in folders:
        events, text = load(folder)
        loaded.append((os.path.basename(os.path.normpath(folder)), events, text))
    batches: List[Tuple[List[Mutant], str]] = []
    for n, (source, events, text) in enumerate(loaded):
        others = [(s, ev) for s, ev, _ in loaded[n + 1:] + loaded[:n]]
        ms: List[Mutant] = []
        if single:
            ms += list(mutants(source, events))
        if consistent:
            ms += list(consistent_mutants(source, events, others))
        if operators:
            ms = [m for m in ms if m.operator in operators]
        ms = _draw(ms, sample, per_operator, random.Random(seed))
        if with_controls:
            ms += list(controls(source, events, seed))
        batches.append((ms, text))
    total = sum(len(b[0]) for b in batches)
    outcomes: List[Outcome] = []
    if jobs > 1:
        import multiprocessing

        chunks = [(ms[k:k + 50], text) for ms, text in batches for k in range(0, len(ms), 50)]
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            for got in pool.imap(_judge_all, chunks):
                outcomes += got
                if progress is not None:
                    progress(len(outcomes), total)
    else:
        for ms, text in batches:
            tmp = tempfile.mkdtemp(prefix="ftharness-mutants-")
            try:
                for m in ms:
                    outcomes.append(judge(m, text, os.path.join(tmp, "m")))
                    if progress is not None:
                        progress(len(outcomes), total)
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
    return Score(outcomes, took_s=time.time() - t0,
                 sample={"per_history": sample, "per_operator": per_operator, "seed": seed,
                         "operators": list(operators) if operators else None, "single": single,
                         "consistent": consistent, "folders": [s for s, _, _ in loaded]})
