"""The mutation engine: how good are the verdicts, measured on real histories.

Operators edit a recorded history the way a wrong run (or an attacker) would have
written it, systematically over every event and field: delete, delete in transit
(the numbering keeps the hole), duplicate, move in order, move in time, change a
value to another valid one (one seen elsewhere in the history for the same role:
another rank, attempt, node, pid, checkpoint, step, budget...), swap a role's
values between two events, and edit after the seal. Each mutant is re-sealed
(except the in-transit and after-seal ones) so that only the rules decide, and is
judged through the route `ftharness check` takes (`rejudge` of a results folder).

Every mutant is either *equivalent* by a written rule (`EQUIVALENCE`: the edit
changes nothing a correct run could not also have recorded) or must not PASS.
Controls (`controls`: clock jitter, a run shifted by a day, interleavings of
events from different emitters, a duplicated controller state report) are
correct-but-odd histories that must still PASS. `score` gives the kill rate per
property (which part of the judgement refused each mutant first) and the
survivors, for `benchmarks/mutation_score.py` and the tests.
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
    "in-place": "a clock reading moved without passing any other event's: every order relation stays, "
                "only a duration changes",
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
    killer: str                    # what refused it first: a property, "landing", "integrity", "model", "outcome"
    reasons: List[str] = field(default_factory=list)


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
                rule = ("text" if name in TEXT else "unjudged-metric" if name in UNJUDGED or _unjudged(kind, path)
                        else "informational-kind" if kind in INFORMATIONAL else None)
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
    from ftharness.reports.judgement import rejudge

    shutil.rmtree(folder, ignore_errors=True)
    summary = rejudge(write(m, scenario_text, folder))
    reasons = list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or [])
    return Outcome(m, summary.get("verdict"), killer(summary), reasons)


def killer(summary: Dict[str, Any]) -> str:
    """What refused a history first: the model's consistency findings, the history's integrity,
    a fault's landing, a property, or the outcome ("-" for a PASS)."""
    if summary.get("verdict") == "PASS":
        return "-"
    for text in list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or []):
        if text.startswith("history:"):
            return "integrity"
        if text.startswith("model:"):
            return "model"
        if text.startswith("fault "):
            return "landing"
        if text.startswith("property ") or text.startswith("pinned property "):
            return text.split()[1] if not text.startswith("pinned") else text.split()[2]
        if text.startswith("outcome") or text.startswith("error_type"):
            return "outcome"
    return "other"


@dataclass
class Score:
    outcomes: List[Outcome]

    def _of(self, pred: Callable[[Outcome], bool]) -> List[Outcome]:
        return [o for o in self.outcomes if pred(o)]

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
    def kill_rate(self) -> float:
        judged = self.judged
        return (len(judged) - len(self.survivors)) / len(judged) if judged else 1.0

    def by_killer(self) -> Counter:
        return Counter(o.killer for o in self.judged if o.verdict != "PASS")

    def table(self) -> List[Tuple[str, int, int, int]]:
        """(operator, judged, killed, surviving) per operator."""
        rows: Dict[str, List[int]] = defaultdict(lambda: [0, 0])
        for o in self.judged:
            rows[o.mutant.operator][0] += 1
            rows[o.mutant.operator][1] += o.verdict != "PASS"
        return [(op, n, k, n - k) for op, (n, k) in sorted(rows.items())]

    def by_kind(self) -> List[Tuple[str, int, int]]:
        """(event kind, judged, surviving) per edited kind."""
        rows: Dict[str, List[int]] = defaultdict(lambda: [0, 0])
        for o in self.judged:
            rows[o.mutant.kind][0] += 1
            rows[o.mutant.kind][1] += o.verdict == "PASS"
        return [(k, n, s) for k, (n, s) in sorted(rows.items())]


def run(folders: Sequence[str], sample: Optional[int] = None, seed: int = 0,
        progress: Optional[Callable[[int, int], None]] = None) -> Score:
    """Judge every mutant and control of the recorded histories in `folders` (`sample`: at most
    that many non-control mutants per history, drawn with `seed`)."""
    outcomes: List[Outcome] = []
    tmp = tempfile.mkdtemp(prefix="ftharness-mutants-")
    try:
        for folder in folders:
            events, text = load(folder)
            source = os.path.basename(os.path.normpath(folder))
            ms = list(mutants(source, events))
            if sample is not None and len(ms) > sample:
                ms = random.Random(seed).sample(ms, sample)
            ms += list(controls(source, events, seed))
            for n, m in enumerate(ms):
                outcomes.append(judge(m, text, os.path.join(tmp, "m")))
                if progress is not None:
                    progress(n + 1, len(ms))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Score(outcomes)
