"""The self-consistent operators that take a field's value from elsewhere: transplants.

A part of the mutation engine (`consistent_mutants` in reports/mutation.py uses them): a field's
value replaced by the value the same field holds in another event of this history, or by an
identity or path of another recorded run, with the equivalence rule (`fresh-name`) for the values
a correct run could also have drawn. Pure.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from ftharness.reports.mutation_clocks import _run_id
from ftharness.reports.mutation_parts import (STRUCTURE, TIME_FIELDS, Event, Mutant, Path, _alternatives,
                                              _equivalence, _leaves, _name, _pools, _result_metrics, _role, _set)


#: fields the foreign transplant takes from another recorded run: identities and paths of that run
FOREIGN_FIELDS = frozenset({"path", "checkpoint", "restored_checkpoint", "node_id", "attempt_id", "digest",
                            "storage_path", "actor_id"})
#: events of a foreign-transplanted field per (kind, field): the first, the middle and the last
FOREIGN_PER_FIELD = 3


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
