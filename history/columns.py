"""Step events held as columns, not dicts: what keeps a long history in bounded memory.

A step event is ~9 of 10 events of a history and, as a dict of 16-19 keys with a
list of row ids, takes about a kilobyte; a 10^7-event day of soak would not fit.
`read_history` therefore files each step event whose fields are all ones the
store knows, with the types ftharness writes (`StepStore.FIELDS`), as one row of
numpy columns plus a `context` (the fields that stay the same for a worker:
run, attempt, attempt id, rank, node, pid, emitter ..., and the event's key
order). Every other event stays the dict it was decoded as.

`Events` is the history as a sequence in file (then seq) order: indexing it
gives the very dict for a kept event and, for a stored step, a new dict equal to
the one decoded (same keys in the same order, same values and types), so code
that reads events one by one works unchanged. Readers that only look for other
kinds skip the steps (`non_steps`); the model and the properties read the
columns (`EventsAt.column`) and build dicts only on their slow paths.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

import numpy as np

#: fields of a step event kept per row, and the Python type each must have (else the event stays a dict)
ROW_FIELDS: Dict[str, type] = {"seq": int, "t": float, "step": int, "epoch": int, "loss": float,
                               "n_rows": int, "eseq": int, "rows": list}
#: fields that stay the same for one worker, kept once per distinct combination (`context`);
#: ints or None, strings or None (what the reader's bookkeeping checks allow)
CONTEXT_INTS = ("fit_index", "attempt", "rank", "world_size", "pid")
CONTEXT_STRS = ("source", "run", "attempt_id", "node_id", "emitter")
_KNOWN = frozenset(ROW_FIELDS) | frozenset(CONTEXT_INTS) | frozenset(CONTEXT_STRS) | {"kind"}
_INT64 = (-(1 << 63), (1 << 63) - 1)
_NONE = -(1 << 63)   # an int context field that is absent or None, in ctx_ints
_INT32 = (-(1 << 31), (1 << 31) - 1)
_DTYPES = {"seq": np.int64, "t": np.float64, "step": np.int64, "epoch": np.int64, "loss": np.float64,
           "n_rows": np.int64, "eseq": np.int64}


class _Codes(dict):
    """value -> its number, numbered in order of first appearance."""

    def __missing__(self, key):
        n = self[key] = len(self)
        return n


class Layout:
    """One key order of step events: which fields are per row, which per context."""

    def __init__(self, keys: Tuple[str, ...]):
        self.keys = keys
        self.row = tuple(k for k in keys if k in ROW_FIELDS)
        self.ctx = tuple(k for k in keys if k not in ROW_FIELDS and k != "kind")
        self.get_row = itemgetter(*self.row) if self.row else None
        self.get_ctx = itemgetter(*self.ctx) if self.ctx else None


def layout_of(keys: Tuple[str, ...]) -> Optional[Layout]:
    """The layout of a step event's keys, or None when one of them is no field the store keeps."""
    if "seq" not in keys or not _KNOWN.issuperset(keys) or len(set(keys)) != len(keys):
        return None
    return Layout(keys)


class StepStore:
    """The stored step events: numpy columns per row field, one context per row."""

    def __init__(self):
        self.layouts: List[Layout] = []
        self._layout_codes: Dict[Tuple[str, ...], int] = {}
        self._ctx_codes = _Codes()            # (layout number, context values) -> context number
        self.contexts: List[Tuple[int, tuple]] = []
        self._chunks: Dict[str, List[np.ndarray]] = {k: [] for k in (*ROW_FIELDS, "ctx", "nrows")}
        self.cols: Dict[str, np.ndarray] = {}
        self.n = 0
        self._memo: Dict[tuple, Any] = {}

    # -- building
    def layout(self, keys: Tuple[str, ...]) -> Optional[int]:
        code = self._layout_codes.get(keys, -1)
        if code == -1:
            lay = layout_of(keys)
            code = None
            if lay is not None and len(self.layouts) < 256:
                code = len(self.layouts)
                self.layouts.append(lay)
            self._layout_codes[keys] = code
        return code

    def take(self, by_layout: Dict[int, List[dict]]) -> Optional[Dict[int, Tuple[np.ndarray, ...]]]:
        """Columns for a block's candidate events, grouped by layout; None when one of
        them does not have the types the store keeps (then the block stays dicts)."""
        out = {}
        for code, events in by_layout.items():
            lay = self.layouts[code]
            cols = {}
            rows = list(map(lay.get_row, events))
            columns = list(zip(*rows)) if len(lay.row) > 1 else [rows]
            for name, col in zip(lay.row, columns):
                want = ROW_FIELDS[name]
                if set(map(type, col)) != {want}:
                    return None
                if name == "rows":
                    lengths = np.fromiter(map(len, col), dtype=np.int64, count=len(col))
                    flat = list(chain.from_iterable(col))
                    if flat and set(map(type, flat)) != {int}:
                        return None
                    try:
                        a = np.array(flat, dtype=np.int64)
                    except OverflowError:
                        return None
                    cols["rows"], cols["nrows"] = a, lengths
                    continue
                try:
                    a = np.array(col, dtype=_DTYPES[name])
                except OverflowError:
                    return None
                if name == "t" and not np.isfinite(a).all():   # the reader refuses such a t
                    return None
                cols[name] = a
            if lay.ctx:
                ctxs = list(map(lay.get_ctx, events))
                if len(lay.ctx) == 1:
                    ctxs = [(c,) for c in ctxs]
                for i, name in enumerate(lay.ctx):
                    allowed = {int, type(None)} if name in CONTEXT_INTS else {str, type(None)}
                    if not set(map(type, (c[i] for c in ctxs))) <= allowed:
                        return None
            else:
                ctxs = [()] * len(events)
            out[code] = (cols, ctxs)
        return out

    def add(self, code: int, cols: Dict[str, np.ndarray], ctxs: List[tuple]) -> np.ndarray:
        """Append one layout's rows; returns their row numbers."""
        n = len(ctxs)
        before = len(self._ctx_codes)
        codes = np.fromiter(map(self._ctx_codes.__getitem__, [(code, c) for c in ctxs]), dtype=np.int32, count=n)
        if len(self._ctx_codes) > before:
            self.contexts = list(self._ctx_codes)
        for name in ROW_FIELDS:
            if name == "rows":
                if "rows" in cols:
                    self._chunks["rows"].append(cols["rows"])
                    self._chunks["nrows"].append(cols["nrows"])
                else:
                    self._chunks["nrows"].append(np.zeros(n, dtype=np.int64))
            else:
                self._chunks[name].append(cols[name] if name in cols else np.zeros(n, dtype=_DTYPES[name]))
        self._chunks["ctx"].append(codes)
        first = self.n
        self.n += n
        return np.arange(first, self.n, dtype=np.int64)

    def finish(self) -> None:
        """Join the chunks into one array per column (rows as int32 where they fit)."""
        for name, chunks in self._chunks.items():
            if name == "rows":
                a = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
                if len(a) and _INT32[0] <= a.min() and a.max() <= _INT32[1]:
                    a = a.astype(np.int32)
                self.cols["rows"] = a
            elif name == "nrows":
                lengths = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int64)
                self.cols["row_start"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
            elif name == "ctx":
                self.cols["ctx"] = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.int32)
            else:
                dtype = _DTYPES[name]
                a = np.concatenate(chunks) if chunks else np.zeros(0, dtype=dtype)
                if dtype is np.int64 and name != "seq" and len(a) and _INT32[0] <= a.min() and a.max() <= _INT32[1]:
                    a = a.astype(np.int32)
                self.cols[name] = a
            chunks.clear()
        self.contexts = list(self._ctx_codes)

    # -- reading
    def event(self, r: int) -> dict:
        """Row `r` as the dict it was decoded as."""
        code, values = self.contexts[self.cols["ctx"][r]]
        lay = self.layouts[code]
        ctx = dict(zip(lay.ctx, values))
        cols = self.cols
        out = {}
        for k in lay.keys:
            if k == "kind":
                out[k] = "step"
            elif k in ctx:
                out[k] = ctx[k]
            elif k == "rows":
                a, b = cols["row_start"][r], cols["row_start"][r + 1]
                out[k] = cols["rows"][a:b].tolist()
            else:
                out[k] = cols[k][r].item()
        return out

    def has(self, name: str) -> np.ndarray:
        """Per context: whether its layout has the field `name`."""
        key = ("has", name, len(self.contexts))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = np.array([name in self.layouts[code].keys for code, _ in self.contexts],
                                               dtype=bool)
        return found

    def ctx_ints(self, name: str) -> Optional[np.ndarray]:
        """Per context: its int field `name` (_NONE where absent or None), or None when one is beyond 63 bits."""
        key = ("ints", name, len(self.contexts))
        if key not in self._memo:
            values = [_NONE if v is None else v for v in self.ctx_values(name)]
            try:
                self._memo[key] = np.array(values or [_NONE], dtype=np.int64)
            except OverflowError:
                self._memo[key] = None
            else:
                if any(v == _NONE for v in self.ctx_values(name) if v is not None):
                    self._memo[key] = None   # a real value equal to the mark
        return self._memo[key]

    def ctx_values(self, name: str) -> List[Any]:
        """Per context: its value of the context field `name` (None where its layout lacks it)."""
        key = ("ctx", name, len(self.contexts))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = [values[self.layouts[code].ctx.index(name)]
                                       if name in self.layouts[code].ctx else None
                                       for code, values in self.contexts]
        return found


class Events(Sequence):
    """A history's events in order: dicts, and rows of a StepStore read back as dicts.

    `slots[i]` >= 0: event i is `dicts[slots[i]]`; < 0: it is store row -1 - slots[i]."""

    def __init__(self, dicts: List[dict], slots: np.ndarray, store: StepStore):
        self.dicts, self.slots, self.store = dicts, slots, store

    def __len__(self) -> int:
        return len(self.slots)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self._at(s) for s in self.slots[i].tolist()]
        return self._at(int(self.slots[i]))

    def _at(self, s: int) -> dict:
        return self.dicts[s] if s >= 0 else self.store.event(-1 - s)

    def __iter__(self) -> Iterator[dict]:
        dicts, event = self.dicts, self.store.event
        for s in self.slots.tolist():
            yield dicts[s] if s >= 0 else event(-1 - s)

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Events)) else NotImplemented

    __hash__ = None

    def non_steps(self) -> List[dict]:
        """The events that are not stored steps, in order (every event but steps of the store)."""
        return self.dicts

    def is_row(self) -> np.ndarray:
        return self.slots < 0

    def sort_by(self, keys: List[Any]) -> None:
        """Reorder by one key per event (a stable sort, as list.sort)."""
        order = sorted(range(len(keys)), key=keys.__getitem__)
        slots = self.slots[np.array(order, dtype=np.int64)] if order else self.slots
        self.slots, self.dicts = _renumber(slots, self.dicts)

    def seqs(self, missing: Any = None) -> Optional[np.ndarray]:
        """Every event's seq (`missing` where a dict has none) as an int64 array, or None when
        one is no int of 64 bits."""
        dict_seqs = [e.get("seq", missing) for e in self.dicts]
        if set(map(type, dict_seqs)) - {int}:
            return None
        try:
            ds = np.array(dict_seqs, dtype=np.int64)
        except OverflowError:
            return None
        out = np.empty(len(self.slots), dtype=np.int64)
        rows = self.slots < 0
        out[~rows] = ds[self.slots[~rows]]
        out[rows] = self.store.cols["seq"][-1 - self.slots[rows]]
        return out


def _renumber(slots: np.ndarray, dicts: List[dict]) -> Tuple[np.ndarray, List[dict]]:
    """Dicts listed in the order of `slots` (so `non_steps` stays in order)."""
    where = slots >= 0
    old = slots[where]
    new_dicts = [dicts[i] for i in old.tolist()]
    slots = slots.copy()
    slots[where] = np.arange(len(old), dtype=slots.dtype)
    return slots, new_dicts


class EventsAt(Sequence):
    """The events at some positions of an Events (an attempt's steps), with their columns."""

    def __init__(self, events: Events, positions: np.ndarray):
        self.events, self.positions = events, positions
        slots = events.slots[positions]
        self._rows = slots < 0
        self.all_rows = bool(self._rows.all())
        self._store_rows = -1 - slots if self.all_rows else None

    def __len__(self) -> int:
        return len(self.positions)

    def __bool__(self) -> bool:
        return len(self.positions) > 0

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self.events[p] for p in self.positions[i].tolist()]
        return self.events[int(self.positions[i])]

    def __iter__(self) -> Iterator[dict]:
        events = self.events
        for p in self.positions.tolist():
            yield events[p]

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, EventsAt)) else NotImplemented

    __hash__ = None

    def array(self, name: str) -> Optional[np.ndarray]:
        """Field `name` of every event as an array, when all are stored rows whose layout has it
        (and, for a context field, whose value is an int)."""
        if not self.all_rows or name == "rows" or name not in _KNOWN or name == "kind":
            return None
        store = self.events.store
        ctx = store.cols["ctx"][self._store_rows]
        if name in ROW_FIELDS:
            if not store.has(name)[ctx].all():
                return None
            return store.cols[name][self._store_rows]
        if name not in CONTEXT_INTS:
            return None
        values = store.ctx_ints(name)
        if values is None:
            return None
        out = values[ctx]
        return None if (out == _NONE).any() else out

    def ctx_array(self, name: str) -> Optional[List[Any]]:
        """A context field of every event, when all are stored rows (None where its layout lacks it)."""
        if not self.all_rows or name in ROW_FIELDS:
            return None
        store = self.events.store
        values = store.ctx_values(name)
        ctx = store.cols["ctx"][self._store_rows]
        return [values[c] for c in ctx.tolist()], ctx, values

    def column(self, name: str) -> List[Any]:
        """`e.get(name)` of each event, in order."""
        a = self.array(name)
        if a is not None:
            return a.tolist()
        if self.all_rows and name not in ROW_FIELDS and name != "kind":
            return self.ctx_array(name)[0]
        return [e.get(name) for e in self]

    def rows(self) -> Optional[Tuple[np.ndarray, np.ndarray]]:
        """(flat row ids, start of each event's rows) when all are stored rows with `rows`."""
        if not self.all_rows:
            return None
        store = self.events.store
        ctx = store.cols["ctx"][self._store_rows]
        if not store.has("rows")[ctx].all():
            return None
        r = self._store_rows
        starts, ends = store.cols["row_start"][r], store.cols["row_start"][r + 1]
        return starts, ends


def non_steps(events: Iterable[dict]) -> Iterable[dict]:
    """Every event of `events` that may be of a kind other than `step`, in order: for an
    Events, its dicts (stored rows are steps only); any other iterable as it is. For scans
    that look for other kinds, or for a field no stored step has (`fault`, `fault_kind` ...)."""
    return events.non_steps() if isinstance(events, Events) else events
