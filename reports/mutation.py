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

The engine's parts, one module each: `mutation_parts.py` (a mutant, the fields, the equivalence
rules), `mutation_clocks.py` (processes and their clocks), `mutation_single.py` (the single-field
operators), `mutation_moves.py`, `mutation_pairs.py` and `mutation_transplants.py` (the
self-consistent operators), `mutation_controls.py`, `mutation_judging.py` (a mutant judged, a reason's
rule code) and `mutation_score.py` (the figures). This module runs a campaign over them and
re-exports what callers import.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
from collections import defaultdict
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from ftharness.reports.mutation_clocks import _merge, _run_id, _set_in_place
from ftharness.reports.mutation_controls import controls
from ftharness.reports.mutation_judging import (GENERIC, Outcome, field_key, is_generic, judge, killer, load,
                                                reason_code, reason_codes, write)
from ftharness.reports.mutation_moves import _moves, _shifts, _splices
from ftharness.reports.mutation_pairs import _pairs
from ftharness.reports.mutation_parts import EQUIVALENCE, Event, Mutant, _in_place
from ftharness.reports.mutation_score import Score
from ftharness.reports.mutation_single import mutants
from ftharness.reports.mutation_transplants import _field_leaves, _norm, _same_field_pool, _transplants

#: what other modules and the tests import from here: the engine's public names, some private helpers
#: the tests call, kept from before the split
__all__ = ["Mutant", "Outcome", "Score", "EQUIVALENCE", "GENERIC", "CONSISTENT_OPERATORS", "load", "write", "judge",
           "mutants", "consistent_mutants", "all_mutants", "controls", "killer", "reason_code", "reason_codes",
           "is_generic", "field_key", "run", "sources_list", "_in_place", "_set_in_place", "_merge", "_shifts",
           "_run_id", "_same_field_pool", "_field_leaves", "_norm"]

# -------------------------------------------------------------- self-consistent operators
# These edit a history so that it stays consistent with itself: every process's clock runs
# forwards, its events keep naming one pid, rank and attempt, the numbering has no hole, the file
# is sealed again. So the generic rules (clock order within a process, parse, seal, types) cannot
# be what refuses them: only a rule about what a fact *means* can.


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


def sources_list(path: str) -> List[str]:
    """The folders a SOURCES.txt lists (one a line, relative to the repository that holds `path`'s
    tests/ folder; blank lines and # comments skipped), those that exist."""
    if not os.path.exists(path):
        return []
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(path)))))
    from ftharness.inputs import read_input

    out = []
    for line in read_input(path, "sources_list").splitlines():   # the one reader: a regular file, 1 MiB
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
