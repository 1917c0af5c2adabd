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

from ftharness.history.columns import Events, EventsAt


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

    def __init__(self, events: Events, filed: List[dict], filed_at: List[int], rows_at: np.ndarray):
        at = np.concatenate([np.array(filed_at, dtype=np.int64), rows_at])
        self._order = np.argsort(at, kind="stable")
        self._at, self._filed, self._events, self._n = at, filed, events, len(filed)

    def __len__(self) -> int:
        return len(self._order)

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
    slots, store = ev.slots, ev.store
    is_row = slots < 0
    row_pos = np.flatnonzero(is_row)
    row_ctx = store.cols["ctx"][-1 - slots[row_pos]] if len(row_pos) else np.zeros(0, dtype=np.int32)
    # per context: the number of its attempt id, or -1 (a worker the model cannot file by its id)
    sources, aids = store.ctx_values("source"), store.ctx_values("attempt_id")
    aid_numbers: Dict[str, int] = {}
    ctx_aid = np.array([aid_numbers.setdefault(a, len(aid_numbers)) if s == "worker" and a is not None else -1
                        for s, a in zip(sources, aids)] or [-1], dtype=np.int64)
    row_aid = ctx_aid[row_ctx] if len(row_pos) else np.zeros(0, dtype=np.int64)
    one_by_one = row_aid < 0
    filed_ids = np.flatnonzero(~one_by_one)
    _, first = np.unique(row_aid[filed_ids], return_index=True)
    one_by_one[filed_ids[first]] = True   # the first step of each attempt id files it
    special = row_pos[one_by_one]
    order = np.sort(np.concatenate([np.flatnonzero(~is_row), special]))

    codes = np.zeros(n, dtype=np.int32)
    table: List[Tuple[int, Any]] = []
    numbers: Dict[Any, int] = {}
    general_steps: List[int] = []             # positions of the steps filed one by one
    events_at: Dict[Any, List[int]] = {}      # attempt key -> positions of its events filed one by one
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
                    key = placement[1]
                    events_at.setdefault(key, []).append(i)
                    if kind == "step":
                        general_steps.append(i)
                    else:
                        kinds[kind].append(i)
        if placement is None:
            placement = h._add(e)
            key = placement[1]
            if key is not None:   # _add filed it (or, for a failure, its copy) in that attempt
                events_at.setdefault(key, []).append(i)
            if kind == "step":
                general_steps.append(i)
            else:
                try:
                    kinds.setdefault(kind, []).append(i)
                except TypeError:   # an unhashable kind is no kind we look for
                    pass
            if kind == "step" or kind == "report" or kind == "checkpoint_written":
                h._file_fast(e, kind)
        c = numbers.get(placement)
        if c is None:
            c = numbers[placement] = len(table)
            table.append(placement)
        codes[i] = c
    # every other stored step: to the attempt of its id, as `_filing` would have put it
    rest = row_pos[~one_by_one]
    rest_aid = row_aid[~one_by_one]
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
    general = np.array(general_steps, dtype=np.int64)
    if len(rest) or len(general):
        kinds["step"] = np.sort(np.concatenate([general, rest]))
    # each attempt's steps and events: those filed one by one, and its share of the rest
    grouped = np.argsort(rest_aid, kind="stable")
    bounds = np.flatnonzero(np.diff(rest_aid[grouped])) + 1
    rest_of: Dict[Any, np.ndarray] = {}
    for part in np.split(grouped, bounds) if len(grouped) else []:
        rest_of[target_key[int(rest_aid[part[0]])]] = rest[part]
    empty = np.zeros(0, dtype=np.int64)
    step_key = h.placed.codes[general] if len(general) else general
    for key, att in attempts.items():
        mine = rest_of.get(key, empty)
        filed = general[step_key == numbers[(key[0], key)]] if (key[0], key) in numbers and len(general) else empty
        att.steps = EventsAt(ev, np.sort(np.concatenate([filed, mine])))
        att.events = Merged(ev, att.events, events_at.get(key, []), mine)
