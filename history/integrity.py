"""Whether a history is complete: the `seq` run, each emitter's `eseq` run, and the manifest
of its `history_end` (counts per emitter, the lines before it, their digest and its own seal).

Pure, no Ray. A history with any problem named here cannot support a PASS (docs/verdicts.md:
INCONCLUSIVE); history/records.py reads a file and asks these checks. Gaps are found from the
sorted numbers, never by building the range up to the largest one (a `seq` of 10**12 costs
nothing), and a long history's columns (ftharness.history.columns) are checked without
turning them back into dicts.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from typing import Any, Dict, Iterable, List, Optional

import numpy as np

NO_END = "no history_end: the run did not close its history (crash or kill of the harness)"


def _integrity_in_order(events) -> Optional[List[str]]:
    """`integrity_problems(events)` for a history whose seqs are 1, 2, 3 ... in
    file order (a whole one, as written), in one pass; None for any other."""
    if not events:
        return None
    from ftharness.history.columns import Events

    if isinstance(events, Events):
        return _integrity_in_order_columns(events)
    seqs = [e.get("seq") for e in events]
    if seqs != list(range(1, len(seqs) + 1)):
        return None
    emitted = [(i, e.get("emitter"), e.get("eseq")) for i, e in enumerate(events) if "emitter" in e]
    by_emitter: Dict[str, List[Any]] = {}
    for _, emitter, eseq in emitted:
        if emitter is not None:
            if type(emitter) is not str:
                return None
            by_emitter.setdefault(emitter, []).append(eseq)
    problems: List[str] = []
    for emitter, nums in by_emitter.items():
        if nums != list(range(1, len(nums) + 1)):
            problems += _emitter_gaps([{"seq": 1, "emitter": emitter, "eseq": n} for n in nums])
    counts: Dict[str, int] = {}
    for i, emitter, _ in emitted:
        if emitter is not None and i < len(events) - 1:
            counts[emitter] = counts.get(emitter, 0) + 1
    end = _end_problems(events[-1], events, counts, len(events) - 1)
    return None if end is None else problems + end


def _end_problems(end: Dict[str, Any], others: Iterable[Dict[str, Any]], counts: Dict[str, int],
                  before: int) -> Optional[List[str]]:
    """The manifest's and run_end's problems of an in-order history whose last event is `end`;
    `others`: its events that may be of another kind than step (ftharness.history.columns.non_steps)."""
    problems: List[str] = []
    if end.get("kind") != "history_end":
        if any(e.get("kind") == "history_end" for e in others):
            return None   # events after history_end: the general check
        problems.append(NO_END)
    else:   # the last history_end, and the only one a check reads: every other event came before it
        problems += _manifest_checks(end, counts, before, after=False)
    if not any(e.get("kind") == "run_end" for e in reversed(others)):   # (near the end, when there)
        problems.append("no run_end: no fit() outcome was recorded")
    return problems


def _integrity_in_order_columns(events) -> Optional[List[str]]:
    """`_integrity_in_order` over ftharness.history.columns.Events: the same problems, in the same
    order, from the columns of the stored steps and the dicts of the other events."""
    n = len(events)
    seqs = events.seqs()
    if seqs is None or not np.array_equal(seqs, np.arange(1, n + 1, dtype=np.int64)):
        return None
    slots = events.slots
    names: Dict[str, int] = {}
    code = np.full(n, -1, dtype=np.int64)       # emitter number (-1: no emitter key or None)
    eseq = np.zeros(n, dtype=np.int64)
    odd: Dict[int, Any] = {}                    # position -> an eseq that is no int of 64 bits
    rows = slots < 0
    where = np.flatnonzero(rows)
    if len(where):
        def emitter_codes(store):
            return np.array([-1 if v is None else names.setdefault(v, len(names))
                             for v in store.ctx_values("emitter")] or [-1], dtype=np.int64)

        def eseq_missing(store):   # a layout with an emitter but no (int) eseq: e.get("eseq") is None
            return np.array([not lay_has_eseq for lay_has_eseq in _layouts_with(store, "eseq")] or [True])

        code[where] = events.stored_ctx(where, emitter_codes)
        eseq[where] = events.stored_column("eseq:i", where)
        missing = events.stored_ctx(where, eseq_missing).astype(bool) & (code[where] >= 0)
        for p in where[missing].tolist():
            odd[p] = None
    dict_pos = np.flatnonzero(~rows).tolist()
    for p, e in zip(dict_pos, events.dicts):
        if "emitter" in e:
            emitter = e.get("emitter")
            if emitter is None:
                continue
            if type(emitter) is not str:
                return None
            code[p] = names.setdefault(emitter, len(names))
            v = e.get("eseq")
            if type(v) is int and _INT64[0] <= v <= _INT64[1]:
                eseq[p] = v
            else:
                odd[p] = v
    problems: List[str] = []
    if names:
        if len(names) <= 64:   # each emitter's positions, ascending (a pass each: cheaper than a sort)
            groups = [np.flatnonzero(code == c) for c in range(len(names))]
        else:
            where = np.flatnonzero(code >= 0)
            order = where[np.argsort(code[where], kind="stable")]
            groups = np.split(order, np.flatnonzero(np.diff(code[order])) + 1)
        firsts = sorted((int(g[0]), g) for g in groups if len(g))   # emitters in order of first appearance
        by_code = {c: name for name, c in names.items()}
        for _, g in firsts:
            nums = eseq[g]
            if any(int(p) in odd for p in g.tolist()) if odd else False:
                listed = [odd[p] if p in odd else int(eseq[p]) for p in g.tolist()]
                if listed != list(range(1, len(listed) + 1)):
                    problems += _emitter_gaps([{"seq": 1, "emitter": by_code[int(code[g[0]])], "eseq": v}
                                               for v in listed])
            elif not np.array_equal(nums, np.arange(1, len(g) + 1, dtype=np.int64)):
                problems += _emitter_gaps([{"seq": 1, "emitter": by_code[int(code[g[0]])], "eseq": v}
                                           for v in nums.tolist()])
    counts: Dict[str, int] = {}
    if names:
        tally = np.bincount(code[:n - 1][code[:n - 1] >= 0], minlength=len(names))
        counts = {name: int(tally[c]) for name, c in names.items() if tally[c]}
    end = _end_problems(events[n - 1], events.dicts, counts, n - 1)
    return None if end is None else problems + end


_INT64 = (-(1 << 63), (1 << 63) - 1)


def _layouts_with(store, name: str) -> List[bool]:
    """Per context of a store: whether its layout has the int field `name`."""
    return store.has(name, "i").tolist()


def _int(v: Any) -> int:
    """An event's number (seq, eseq); 0 for anything that is no finite number."""
    if type(v) is int:
        return v
    try:
        return int(v)
    except (TypeError, ValueError, OverflowError):
        return 0


def _missing_between(nums: List[int], limit: int = 64) -> List[int]:
    """The first `limit` numbers in 1..max(nums) that `nums` lacks, found from the sorted distinct
    numbers (never a set of the whole range: a seq of 10**12 costs nothing)."""
    out: List[int] = []
    prev = 0
    for n in sorted(set(x for x in nums if x > 0)):
        k = prev + 1
        while k < n and len(out) < limit:
            out.append(k)
            k += 1
        if len(out) >= limit:
            break
        prev = n
    return out


def _count_missing(nums: List[int]) -> int:
    distinct = set(x for x in nums if x > 0)
    return (max(distinct) - len(distinct)) if distinct else 0


def integrity_problems(events: List[Dict[str, Any]]) -> List[str]:
    """Gaps, duplicates and a missing or disagreeing `history_end`.

    `events` in file order; a `history_end` may carry `_digest_before` (set by
    `read_history`: the digest of the lines before it) for the digest check."""
    if not events:
        return ["the history is empty"]
    problems: List[str] = []
    seqs = [_int(e.get("seq")) for e in events]
    if sorted(seqs) != list(range(1, len(seqs) + 1)):
        missing = _missing_between(seqs)
        dups = sorted(s for s, n in Counter(seqs).items() if n > 1)
        what = []
        if missing:
            count = _count_missing(seqs)
            what.append(f"seq {_ranges(missing)} missing" + (f" ({count} in all)" if count > len(missing) else ""))
        if dups:
            what.append(f"seq {_ranges(dups)} duplicated")
        problems.append("events " + ", ".join(what or ["out of sequence"]))
    elif seqs != sorted(seqs):
        problems.append("events out of order in the file (an append-only file is never reordered)")
    problems += _emitter_gaps(events)
    ends = [e for e in events if e.get("kind") == "history_end"]
    if not ends:
        problems.append(NO_END)
    else:
        problems += _manifest_problems(events, ends[-1])
    if not any(e.get("kind") == "run_end" for e in events):
        problems.append("no run_end: no fit() outcome was recorded")
    return problems


def _emitter_gaps(events: Iterable[Dict[str, Any]]) -> List[str]:
    by_emitter: Dict[str, List[int]] = {}
    for e in sorted(events, key=lambda e: _int(e.get("seq"))):
        if e.get("emitter") is not None:
            by_emitter.setdefault(str(e["emitter"]), []).append(_int(e.get("eseq")))
    out = []
    for emitter, nums in by_emitter.items():
        if nums != list(range(1, len(nums) + 1)):
            missing = _missing_between(nums)
            if missing:
                count = _count_missing(nums)
                out.append(f"emitter {emitter}: event(s) {_ranges(missing)} never reached the history"
                           + (f" ({count} in all)" if count > len(missing) else ""))
            else:
                out.append(f"emitter {emitter}: events duplicated or out of order ({nums[:8]})")
    return out


def _manifest_problems(events: List[Dict[str, Any]], end: Dict[str, Any]) -> List[str]:
    before = [e for e in events if _int(e.get("seq")) < _int(end.get("seq"))]
    counts: Dict[str, int] = {}
    for e in before:
        if e.get("emitter") is not None:
            counts[str(e["emitter"])] = counts.get(str(e["emitter"]), 0) + 1
    after = any(_int(e.get("seq")) > _int(end.get("seq")) for e in events)
    return _manifest_checks(end, counts, len(before), after)


def _manifest_checks(end: Dict[str, Any], counts: Dict[str, int], before: int, after: bool) -> List[str]:
    """history_end against the file: `counts` of each emitter's events before
    it, `before` events in all, `after`: whether any came after it."""
    out = []
    if not end.get("seal"):
        out.append("history_end has no seal (written by an older ftharness, or edited)")
    elif end["seal"] != seal(end):
        out.append("history_end was changed after it was written (seal mismatch)")
    declared = {str(k): _int(v) for k, v in (end.get("emitters") or {}).items()}
    for emitter in sorted(set(declared) | set(counts)):
        if declared.get(emitter, 0) != counts.get(emitter, 0):
            out.append(f"emitter {emitter}: history_end counts {declared.get(emitter, 0)} event(s), "
                       f"the file holds {counts.get(emitter, 0)}")
    if end.get("events") is not None and _int(end["events"]) != before:
        out.append(f"history_end counts {end['events']} event(s) before it, the file holds {before}")
    if end.get("digest") and "_digest_before" in end and end["digest"] != end["_digest_before"]:
        out.append("history digest differs from history_end's: the file was changed after it was written")
    if after:
        out.append("events after history_end")
    return out


def _ranges(nums: List[int]) -> str:
    """'3-5, 9' for [3, 4, 5, 9]."""
    parts: List[List[int]] = []
    for n in sorted(nums):
        if parts and n == parts[-1][1] + 1:
            parts[-1][1] = n
        else:
            parts.append([n, n])
    text = ", ".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts[:6])
    return text + (" ..." if len(parts) > 6 else "")


def seal(end: Dict[str, Any]) -> str:
    """sha256 over history_end's own fields, so the manifest cannot be edited either."""
    body = {k: v for k, v in end.items() if k != "seal" and not k.startswith("_")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def sealed_lines(events: Iterable[Dict[str, Any]], renumber: bool = True) -> List[bytes]:
    """History lines for `events` closed by a fresh, consistent history_end, as the history
    actor (ftharness.history.book) writes them: for synthetic histories and for edits of
    recorded ones (the mutation suites), so only the rules decide. `renumber` gives the
    events seq 1..n; otherwise their own seqs stand."""
    body = [dict(e) for e in events if e.get("kind") != "history_end"]
    counts: Dict[str, int] = {}
    digest, out = hashlib.sha256(), []
    for i, e in enumerate(body, 1):
        if renumber:
            e["seq"] = i
        if e.get("emitter"):
            counts[e["emitter"]] = counts.get(e["emitter"], 0) + 1
        line = json.dumps(e).encode()
        digest.update(line + b"\n")
        out.append(line)
    end = {"kind": "history_end", "source": "history", "events": len(body), "emitters": counts,
           "digest": digest.hexdigest(), "seq": max((e.get("seq", 0) for e in body), default=0) + 1,
           "t": body[-1].get("t", 0) if body else 0, "fit_index": body[-1].get("fit_index", 1) if body else 1}
    end["seal"] = seal(end)
    return out + [json.dumps(end).encode()]


