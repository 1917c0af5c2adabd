"""Filing the stored steps of a long history into the model, in bulk.

`History` files events one by one (`_add`, and `_filing` for the steps, reports
and written checkpoints of an attempt it knows). For an
ftharness.history.columns.Events in seq order, this does the same with the
dicts and with the few stored steps that can change the model (the first step
of each attempt id, and every step of a worker the model cannot file by its
attempt id), and then files every other stored step by its attempt id, where
the one-by-one pass would have put it: same attempts, same placements, same
order. An attempt's steps become an `EventsAt` over the history (its columns
read by the properties' fast paths); its `events` a merged view.
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import numpy as np

from ftharness.history.columns import STORED_KINDS, Events, EventsAt


class Placed:
    """(fit, attempt key) per event of the history, from one number per event."""

    def __init__(self, table: List[Tuple[int, Any]], codes: np.ndarray):
        self.table, self.codes = table, codes

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.table[c] for c in self.codes[i].tolist()]
        return self.table[self.codes[i]]

    def __iter__(self):
        table = self.table
        return (table[c] for c in self.codes.tolist())

    def append(self, placement) -> None:   # pragma: no cover - a columnar model is never extended
        raise TypeError("a model built from stored columns is not extended")


class Merged:
    """An attempt's events: the dicts the one-by-one pass filed (copies included, as
    `_add` files them) merged by position with its stored steps."""

    def __init__(self, events: Events, filed: List[dict], filed_at: List[int], rows_at: List[np.ndarray]):
        """`rows_at`: positions of its stored events (made into one order when first read: nothing
        reads an attempt's `events` while judging, and a long history's would take memory)."""
        self._parts = (filed_at, rows_at)
        self._filed, self._events, self._n = filed, events, len(filed)
        self._len = len(filed) + sum(len(r) for r in rows_at)

    @property
    def _order(self) -> np.ndarray:
        if self._parts is not None:
            filed_at, rows_at = self._parts
            self._at = np.concatenate([np.array(filed_at, dtype=np.int64), *rows_at])
            self._ord = np.argsort(self._at, kind="stable")
            self._parts = None
        return self._ord

    def __len__(self) -> int:
        return self._len

    def _one(self, j: int) -> dict:
        return self._filed[j] if j < self._n else self._events[int(self._at[j])]

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._one(j) for j in self._order[i].tolist()]
        return self._one(int(self._order[i]))

    def __iter__(self):
        return (self._one(j) for j in self._order.tolist())

    def append(self, e) -> None:   # pragma: no cover - a columnar model is never extended
        raise TypeError("a model built from stored columns is not extended")


def file_columnar(h, ev: Events) -> None:
    """File all of `ev` (in seq order; the model empty) into History `h`."""
    n = len(ev)
    slots = ev.slots
    is_row = slots < 0
    row_pos = np.flatnonzero(is_row)
    # per stored event: the number of its attempt id, or -1 (a worker the model cannot file by its id)
    aid_numbers: Dict[str, int] = {}

    def ctx_aid(store):
        return np.array([aid_numbers.setdefault(a, len(aid_numbers)) if s == "worker" and a is not None else -1
                         for s, a in zip(store.ctx_values("source"), store.ctx_values("attempt_id"))] or [-1],
                        dtype=np.int64)

    row_aid = ev.stored_ctx(row_pos, ctx_aid, np.int32)   # (int32: a day of soak has 10^7 rows)
    row_part = ev.split(row_pos)[0]
    one_by_one = row_aid < 0
    # the first stored event of each attempt id files it: the first of the runs of one id
    # (an attempt's events come in a run or a few; no sort of all the rows)
    if len(row_aid):
        runs = np.flatnonzero(np.concatenate([[True], row_aid[1:] != row_aid[:-1]]))
        runs = runs[row_aid[runs] >= 0]
        _, first = np.unique(row_aid[runs], return_index=True)
        one_by_one[runs[first]] = True
    special = row_pos[one_by_one]
    order = np.sort(np.concatenate([np.flatnonzero(~is_row), special]))

    codes = np.zeros(n, dtype=np.int32)
    table: List[Tuple[int, Any]] = []
    numbers: Dict[Any, int] = {}
    events_at: Dict[Any, List[int]] = {}      # attempt key -> positions of its events filed one by one
    general: Dict[str, List[int]] = {k: [] for k in STORED_KINDS}   # positions filed one by one, by kind
    kinds, filing, attempts = h._kinds, h._filing, h.attempts
    for i in order.tolist():
        e = ev[i]
        kind = e.get("kind")
        placement = None
        if kind == "step" or kind == "report" or kind == "checkpoint_written":
            source = e.get("source")
            if source == "worker" or source == "controller":
                aid = e.get("attempt_id")
                to = filing.get(aid) if aid is not None else None
                if to is not None:
                    to[0](e)
                    to[1 if kind == "step" else 2 if kind == "report" else 3](e)
                    placement = to[4]
                    events_at.setdefault(placement[1], []).append(i)
                    general[kind].append(i)
        if placement is None:
            placement = h._add(e)
            key = placement[1]
            if key is not None:   # _add filed it (or, for a failure, its copy) in that attempt
                events_at.setdefault(key, []).append(i)
            if kind in general:
                general[kind].append(i)
                if kind == "step" or kind == "report" or kind == "checkpoint_written":
                    h._file_fast(e, kind)
            else:
                h._indexed(kinds, kind, i, e)
        c = numbers.get(placement)
        if c is None:
            c = numbers[placement] = len(table)
            table.append(placement)
        codes[i] = c
    # every other stored event: to the attempt of its id, as `_filing` would have put it
    rest = row_pos[~one_by_one]
    rest_aid, rest_part = row_aid[~one_by_one], row_part[~one_by_one]
    by_number = {v: k for k, v in aid_numbers.items()}
    target_code = np.zeros(len(aid_numbers) or 1, dtype=np.int32)
    target_key: List[Any] = [None] * len(target_code)
    for number in np.unique(rest_aid).tolist():
        placement = filing[by_number[number]][4]
        c = numbers.get(placement)
        if c is None:
            c = numbers[placement] = len(table)
            table.append(placement)
        target_code[number], target_key[number] = c, placement[1]
    codes[rest] = target_code[rest_aid]
    h.placed = Placed(table, codes)
    del row_aid, row_part, one_by_one, special, order
    empty = np.zeros(0, dtype=np.int64)
    lists = {"step": "steps", "report": "reports", "checkpoint_written": "written"}
    rest_by_key: Dict[Any, List[np.ndarray]] = {}
    for part, kind in enumerate(STORED_KINDS):
        filed = np.array(general[kind], dtype=np.int64)
        mine = rest_part == part
        theirs, their_aid = rest[mine], rest_aid[mine]
        if len(theirs) or len(filed):
            kinds[kind] = np.sort(np.concatenate([filed, theirs]))
        # each attempt's events of this kind: those filed one by one, and its share of the rest (its
        # runs of `theirs`, in order: an attempt's events come in a run or a few; no sort of them all)
        share: Dict[Any, np.ndarray] = {}
        if len(theirs):
            starts = np.flatnonzero(np.concatenate([[True], their_aid[1:] != their_aid[:-1]]))
            runs: Dict[int, List[np.ndarray]] = {}
            for a, b, aid in zip(starts.tolist(), starts[1:].tolist() + [len(theirs)], their_aid[starts].tolist()):
                runs.setdefault(aid, []).append(theirs[a:b])
            for aid, parts in runs.items():
                share[target_key[aid]] = parts[0].copy() if len(parts) == 1 else np.concatenate(parts)
        filed_key = codes[filed] if len(filed) else filed
        for key, att in attempts.items():
            c = numbers.get((key[0], key))
            one = filed[filed_key == c] if c is not None and len(filed) else empty
            got = share.get(key, empty)
            if len(got):
                rest_by_key.setdefault(key, []).append(got)
            setattr(att, lists[kind], EventsAt(ev, np.sort(np.concatenate([one, got])) if len(one) else got))
        del share, theirs, their_aid
    for key, att in attempts.items():
        att.events = Merged(ev, att.events, events_at.get(key, []), rest_by_key.get(key, []))
