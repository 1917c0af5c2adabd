"""The bulk of a history's events held as columns, not dicts: a long history in bounded memory.

Steps are ~9 of 10 events of a history and reports most of the rest; as dicts of
16-19 keys (a list of row ids, a dict of metrics) they take about a kilobyte
each, and a 10^7-event day of soak would not fit. `read_history` therefore
files each step, report and written-checkpoint event whose fields are all ones
a store knows (`STORED_KINDS`, `_FIELDS`), with values of one type per field,
as one row of numpy columns of its kind's `Store` plus a `context` (the fields
that stay the same for a worker: run, attempt, attempt id, rank, node, pid,
emitter ..., and the event's key order). Every other event stays the dict it
was decoded as.

`Events` is the history as a sequence in file (then seq) order: indexing it
gives the very dict for a kept event and, for a stored one, a new dict equal to
the one decoded (same keys in the same order, same values and types), so code
that reads events one by one works unchanged. Readers that look only for other
kinds skip the stored ones (`non_steps`); the model and the properties read
the columns (`EventsAt.column`, `.array`) and build dicts only on slow paths.
"""

from __future__ import annotations

from itertools import chain
from operator import itemgetter
from typing import Any, Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Union

from collections.abc import Sequence

import numpy as np

#: the kinds kept in stores, each in its own (the number is the store's in a slot)
STORED_KINDS = ("step", "report", "checkpoint_written")
_PART = {k: i for i, k in enumerate(STORED_KINDS)}
#: fields that stay the same for one worker, kept once per distinct combination (`context`);
#: ints or None, strings or None (what the reader's bookkeeping checks allow)
CONTEXT_INTS = ("fit_index", "attempt", "rank", "world_size", "pid")
CONTEXT_STRS = ("source", "run", "attempt_id", "node_id", "emitter")
#: fields kept per row: ints, floats, strings (or None), the row ids (ints), the metrics (scalars)
ROW_FIELDS = ("seq", "t", "step", "epoch", "loss", "n_rows", "eseq", "rows", "checkpoint", "digest",
              "local_path", "metrics")
_FIELDS = frozenset(CONTEXT_INTS) | frozenset(CONTEXT_STRS) | frozenset(ROW_FIELDS) | {"kind"}
#: the reader's int bookkeeping fields: kept as ints only (a None or a float: the event stays a dict)
_INT_ONLY = frozenset({"seq", "eseq", "step"})
_INT32 = (-(1 << 31), (1 << 31) - 1)
_NONE = -(1 << 63)   # an int context field that is absent or None, in ctx_ints
_SCALARS = {int: "i", float: "f", str: "s", type(None): "s", bool: "s"}
#: events built at a time when iterating over stored rows
_CHUNK = 4096


class Contexts(NamedTuple):
    """The contexts of a run of rows: the distinct ones, and each row's number among them."""
    values: List[tuple]
    ids: np.ndarray


class _Codes(dict):
    """value -> its number, numbered in order of first appearance."""

    def __missing__(self, key):
        n = self[key] = len(self)
        return n


class _Strings(dict):
    """(type, value) -> its number, and `values_`: the values by number."""

    def __init__(self):
        super().__init__()
        self.values_: List[Any] = []

    def __missing__(self, key):
        n = self[key] = len(self.values_)
        self.values_.append(key[1])
        return n


class Layout:
    """One key order (and metrics key order) of a kind's events, and each row column's type."""

    def __init__(self, keys: Tuple[str, ...], metrics: Optional[Tuple[str, ...]], sample: dict):
        self.keys, self.metrics = keys, metrics
        self.ctx = tuple(k for k in keys if k in CONTEXT_INTS or k in CONTEXT_STRS)
        self.row = tuple(k for k in keys if k in ROW_FIELDS and k != "metrics")
        self.get_row = itemgetter(*self.row) if self.row else None
        self.get_ctx = itemgetter(*self.ctx) if self.ctx else None
        self.get_metrics = itemgetter(*metrics) if metrics else None
        #: column name -> "i" | "f" | "s" | "l" (row ids); metrics columns are named "metrics.<key>"
        self.types: Dict[str, str] = {}
        for k in self.row:
            self.types[k] = "l" if k == "rows" else _SCALARS.get(type(sample[k]), "?")
        for k in metrics or ():
            self.types["metrics." + k] = _SCALARS.get(type(sample["metrics"][k]), "?")
        self.ok = "?" not in self.types.values() and all(self.types[k] == "i" for k in _INT_ONLY if k in self.types) \
            and self.types.get("t", "f") == "f" and (self.types.get("rows", "l") == "l")


class Store:
    """The stored events of one kind: numpy columns per row field, one context per row."""

    def __init__(self, kind: str):
        self.kind = kind
        self.layouts: List[Layout] = []
        self._layout_codes: Dict[tuple, Optional[int]] = {}
        self._ctx_codes = _Codes()            # (layout number, context values) -> context number
        self.contexts: List[Tuple[int, tuple]] = []
        self.strings = _Strings()             # (type, value) -> number, for the "s" columns
        self._chunks: Dict[str, List[np.ndarray]] = {}
        #: "name:type" -> the column (type "i", "f", "s": string numbers, "l": row ids), "ctx", "row_start"
        self.cols: Dict[str, np.ndarray] = {}
        self.n = 0
        self._memo: Dict[tuple, Any] = {}
        self.trim = None   # called after each column is joined (the reader's heap trim)

    # -- building
    def layout(self, e: dict) -> Optional[int]:
        keys = tuple(e)
        m = e.get("metrics")
        sig = (keys, tuple(m) if m.__class__ is dict else None)
        code = self._layout_codes.get(sig, -1)
        if code == -1:
            code = None
            if "seq" in keys and _FIELDS.issuperset(keys) and len(self.layouts) < 256 and \
                    ("metrics" not in keys or sig[1] is not None):
                lay = Layout(keys, sig[1], e)
                if lay.ok:
                    code = len(self.layouts)
                    self.layouts.append(lay)
            self._layout_codes[sig] = code
        return code

    def take(self, by_layout: Dict[int, List[dict]]) -> Optional[Dict[int, tuple]]:
        """Columns for a block's candidate events, grouped by layout; None when one of
        them has a value of another type than its layout's (then the block stays dicts)."""
        out = {}
        for code, events in by_layout.items():
            lay = self.layouts[code]
            cols: Dict[str, np.ndarray] = {}
            named: List[Tuple[str, tuple]] = []
            if lay.row:
                rows = list(map(lay.get_row, events))
                named += zip(lay.row, zip(*rows) if len(lay.row) > 1 else [rows])
            if lay.metrics:
                ms = list(map(lay.get_metrics, map(itemgetter("metrics"), events)))
                if set(map(len, map(dict.keys, map(itemgetter("metrics"), events)))) != {len(lay.metrics)}:
                    return None   # (keys past the layout's: the key tuple differs, never here)
                named += zip(("metrics." + k for k in lay.metrics), zip(*ms) if len(lay.metrics) > 1 else [ms])
            for name, col in named:
                t = lay.types[name]
                a = self._column(t, col, name)
                if a is None:
                    return None
                if name == "rows":
                    cols["rows:l"], cols["nrows"] = a
                else:
                    cols[f"{name}:{t}"] = a
            if lay.ctx:
                ctxs = list(map(lay.get_ctx, events))
                if len(lay.ctx) == 1:
                    ctxs = [(c,) for c in ctxs]
                for name, values in zip(lay.ctx, zip(*ctxs)):
                    allowed = {int, type(None)} if name in CONTEXT_INTS else {str, type(None)}
                    if not set(map(type, values)) <= allowed:
                        return None
            else:
                ctxs = [()] * len(events)
            out[code] = (cols, ctxs)
        return out

    def _column(self, kind: str, col: tuple, name: str):
        types = set(map(type, col))
        if kind == "i":
            if types != {int}:
                return None
            try:
                return _small(np.array(col, dtype=np.int64))
            except OverflowError:
                return None
        if kind == "f":
            if types != {float}:
                return None
            a = np.array(col, dtype=np.float64)
            if name == "t" and not np.isfinite(a).all():   # the reader refuses such a t
                return None
            return a
        if kind == "s":
            if not types <= {str, type(None), bool}:
                return None
            codes = self.strings
            return np.fromiter(map(codes.__getitem__, zip(map(type, col), col)), dtype=np.int32, count=len(col))
        if types != {list}:   # "l": the row ids
            return None
        lengths = np.fromiter(map(len, col), dtype=np.int64, count=len(col))
        flat = list(chain.from_iterable(col))
        if flat and set(map(type, flat)) != {int}:
            return None
        try:
            return _small(np.array(flat, dtype=np.int64)), lengths
        except OverflowError:
            return None

    def add(self, code: int, cols: Dict[str, np.ndarray], ctxs: Union[List[tuple], Contexts]) -> int:
        """Append one layout's rows (`ctxs`: each one's context); returns the first one's number."""
        before = len(self._ctx_codes)
        if isinstance(ctxs, Contexts):
            n = len(ctxs.ids)
            codes = np.array([self._ctx_codes[(code, c)] for c in ctxs.values] or [0], dtype=np.int32)[ctxs.ids]
        else:
            n = len(ctxs)
            codes = np.fromiter(map(self._ctx_codes.__getitem__, [(code, c) for c in ctxs]), dtype=np.int32, count=n)
        if len(self._ctx_codes) > before:
            self.contexts = list(self._ctx_codes)
        lay = self.layouts[code]
        names = set(self._chunks) | {f"{k}:{t}" for k, t in lay.types.items()} | {"ctx"}
        if "rows:l" in names:
            names.add("nrows")
        for name in names:
            if name not in self._chunks:   # a column new with this layout: absent (zeros) in the rows before
                self._chunks[name] = [np.zeros(self.n, dtype=_dtype(name))] if self.n and name != "rows:l" else []
            if name == "ctx":
                self._chunks[name].append(codes)
            elif name in cols:
                self._chunks[name].append(cols[name])
            elif name != "rows:l":   # (row ids: only those of rows that have them)
                self._chunks[name].append(np.zeros(n, dtype=_dtype(name)))
        first = self.n
        self.n += n
        return first


    def extend(self, other: "Store") -> None:
        """Append the rows of `other`, a finished store of the same kind read from a
        later part of the file (ftharness.history.split): its layouts, strings and
        contexts renumbered as this store numbers them."""
        if not other.n:
            return
        codes = []   # other's layout number -> this store's
        for lay in other.layouts:
            sig = (lay.keys, lay.metrics)
            code = self._layout_codes.get(sig)
            if code is None or self.layouts[code].types != lay.types:
                code = len(self.layouts)
                self.layouts.append(lay)
                self._layout_codes.setdefault(sig, code)
            codes.append(code)
        strings = np.array([self.strings[(type(v), v)] for v in other.strings.values_] or [0], dtype=np.int32)
        before = len(self._ctx_codes)
        ctx = np.array([self._ctx_codes[(codes[code], values)] for code, values in other.contexts] or [0],
                       dtype=np.int32)
        if len(self._ctx_codes) > before:
            self.contexts = list(self._ctx_codes)
        theirs = dict(other.cols)
        if "row_start" in theirs:
            theirs["nrows"] = np.diff(theirs.pop("row_start"))
        for name in set(self._chunks) | set(theirs):
            if name not in self._chunks:   # as `add`: absent (zeros) in the rows before
                self._chunks[name] = [np.zeros(self.n, dtype=_dtype(name))] if self.n and name != "rows:l" else []
            if name == "ctx":
                self._chunks[name].append(ctx[theirs[name]])
            elif name.endswith(":s") and name in theirs:
                self._chunks[name].append(strings[theirs[name]])
            elif name in theirs:
                self._chunks[name].append(theirs[name])
            elif name != "rows:l":
                self._chunks[name].append(np.zeros(other.n, dtype=_dtype(name)))
        self.n += other.n

    def finish(self) -> None:
        """Join the chunks into one array per column (small ints as int32)."""
        for name, chunks in self._chunks.items():
            if name == "nrows":
                lengths = join(chunks, np.int64)
                self.cols["row_start"] = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
                continue
            # (seqs compare with the dicts': int64 throughout)
            self.cols[name] = join(chunks, np.int64 if name == "seq:i" else None, _dtype(name))
            if self.trim is not None:
                self.trim()
        self._chunks.clear()
        self.contexts = list(self._ctx_codes)

    # -- reading
    def event(self, r: int) -> dict:
        """Row `r` as the dict it was decoded as."""
        return self.events(np.array([r], dtype=np.int64))[0]

    def events(self, rows: np.ndarray, fields: Optional[frozenset] = None) -> List[dict]:
        """Rows `rows` as the dicts they were decoded as (same keys in the same order, same
        values and types), built a column at a time: one by one, numpy scalars field after
        field, a report's dict cost ~20 us. With `fields`: dicts of only those keys (the
        ones a caller reads: a report's metrics are most of its cost)."""
        rows = np.asarray(rows, dtype=np.int64)
        out: List[Optional[dict]] = [None] * len(rows)
        if not len(rows):
            return out
        ctx = self.cols["ctx"][rows]
        codes = np.array([code for code, _ in self.contexts], dtype=np.int64)[ctx]
        for code in np.unique(codes).tolist():
            mine = np.flatnonzero(codes == code)
            lay, mine_rows = self.layouts[code], rows[mine]
            keys = lay.keys if fields is None else tuple(k for k in lay.keys if k in fields)
            values = {k: self._values(lay, k, mine_rows) for k in lay.types
                      if fields is None or k.split(".")[0] in fields}
            ctxs = [self.contexts[c][1] for c in ctx[mine].tolist()]
            parts = []   # per key, in order: its values for the rows
            for k in keys:
                if k == "kind":
                    parts.append([self.kind] * len(mine))
                elif k in lay.ctx:
                    parts.append([c[lay.ctx.index(k)] for c in ctxs])
                elif k == "metrics":
                    names = lay.metrics
                    parts.append([dict(zip(names, vs)) for vs in zip(*(values["metrics." + m] for m in names))]
                                 if names else [{} for _ in mine])
                else:
                    parts.append(values[k])
            for i, vs in zip(mine.tolist(), zip(*parts) if parts else [()] * len(mine)):
                out[i] = dict(zip(keys, vs))
        return out

    def _values(self, lay: Layout, name: str, rows: np.ndarray) -> List[Any]:
        """Field `name` (a row column) of each of `rows`, as Python values."""
        t, cols = lay.types[name], self.cols
        if t == "s":
            strings = self.strings.values_
            return [strings[c] for c in cols[name + ":s"][rows].tolist()]
        if t == "l":
            start, ids = cols["row_start"], cols["rows:l"]
            return [ids[a:b].tolist() for a, b in zip(start[rows].tolist(), start[rows + 1].tolist())]
        got = cols[f"{name}:{t}"][rows]
        return got.astype(np.float64).tolist() if t == "f" else got.astype(np.int64).tolist()

    def has(self, name: str, kind: str = None) -> np.ndarray:
        """Per context: whether its layout has the row field `name` (of type `kind`, when given)."""
        key = ("has", name, kind, len(self.contexts))
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = np.array(
                [name in self.layouts[code].types and (kind is None or self.layouts[code].types[name] == kind)
                 for code, _ in self.contexts], dtype=bool)
        return found

    def ctx_ints(self, name: str) -> Optional[np.ndarray]:
        """Per context: its int field `name` (_NONE where absent or None), or None when one is beyond 63 bits."""
        key = ("ints", name, len(self.contexts))
        if key not in self._memo:
            values = self.ctx_values(name)
            try:
                found = np.array([_NONE if v is None else v for v in values] or [_NONE], dtype=np.int64)
            except OverflowError:
                found = None
            if found is not None and any(v == _NONE for v in values if v is not None):
                found = None   # a real value equal to the mark
            self._memo[key] = found
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


def join(chunks: List[np.ndarray], dtype=None, empty=np.int64) -> np.ndarray:
    """np.concatenate(chunks), emptying the list as it copies: each chunk is
    freed once copied, so the peak is the result and one chunk, not twice the
    column (`dtype`: the result's, else the chunks' common type; `empty`: the
    type of an empty result)."""
    if not chunks:
        return np.zeros(0, dtype=dtype or empty)
    out = np.empty(sum(len(c) for c in chunks), dtype=dtype or np.result_type(*{c.dtype for c in chunks}))
    chunks.reverse()
    at = 0
    while chunks:
        c = chunks.pop()
        out[at:at + len(c)] = c
        at += len(c)
    return out


def _small(a: np.ndarray) -> np.ndarray:
    """An int64 array as int32 when its values fit (a block's; blocks of both join as int64)."""
    if len(a) and _INT32[0] <= a.min() and a.max() <= _INT32[1]:
        return a.astype(np.int32)
    return a


def _dtype(name: str):
    return np.int32 if name == "ctx" or name.endswith(":s") else np.float64 if name.endswith(":f") else np.int64


def slot_of(part: int, row: int) -> int:
    """The slot (< 0) of row `row` of store `part`."""
    return -1 - (row * 4 + part)


def split_slots(slots: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    """(store number, row) of stored slots."""
    code = -1 - slots
    return code & 3, code >> 2


class Events(Sequence):
    """A history's events in order: dicts, and rows of the stores read back as dicts.

    `slots[i]` >= 0: event i is `dicts[slots[i]]`; < 0: a row of a store (`split_slots`)."""

    def __init__(self, dicts: List[dict], slots: np.ndarray, stores: List[Store]):
        self.dicts, self.slots, self.stores = dicts, slots, stores
        self._split: Optional[Tuple[np.ndarray, np.ndarray]] = None

    def split(self, positions: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
        """`split_slots(self.slots[positions])` (positions of stored events), from one split of all
        the slots kept as int8 and int32: a long history's checks ask for it a few times, and each
        split of 10^7 slots builds three arrays of 80 MB."""
        if self._split is None:
            code = -1 - self.slots
            part = (code & 3).astype(np.int8)
            code >>= 2
            self._split = part, _small(code) if len(code) else code
        part, row = self._split
        return part[positions], row[positions]

    def __len__(self) -> int:
        return len(self.slots)

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.at_slots(self.slots[i])
        return self._at(int(self.slots[i]))

    def at_slots(self, slots: np.ndarray, fields: Optional[frozenset] = None) -> List[dict]:
        """The events of `slots`, in order; the stored ones built a store at a time (with
        `fields`: of those keys only, see Store.events)."""
        out: List[Any] = [None] * len(slots)
        kept = np.flatnonzero(slots >= 0)
        dicts = self.dicts
        for i, s in zip(kept.tolist(), slots[kept].tolist()):
            out[i] = dicts[s]
        rows_at = np.flatnonzero(slots < 0)
        if len(rows_at):
            part, row = split_slots(slots[rows_at])
            for p, store in enumerate(self.stores):
                mine = np.flatnonzero(part == p)
                if len(mine):
                    for i, e in zip(rows_at[mine].tolist(), store.events(row[mine], fields)):
                        out[i] = e
        return out

    def _at(self, s: int) -> dict:
        if s >= 0:
            return self.dicts[s]
        code = -1 - s
        return self.stores[code & 3].event(code >> 2)

    def __iter__(self) -> Iterator[dict]:
        for start in range(0, len(self.slots), _CHUNK):
            yield from self.at_slots(self.slots[start:start + _CHUNK])

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, Events)) else NotImplemented

    __hash__ = None

    @property
    def stored(self) -> int:
        return sum(s.n for s in self.stores)

    def non_steps(self) -> List[dict]:
        """The events kept as dicts, in order: all but the stored steps, reports and written checkpoints."""
        return self.dicts

    def sort_by(self, keys: List[Any]) -> None:
        """Reorder by one key per event (a stable sort, as list.sort)."""
        order = sorted(range(len(keys)), key=keys.__getitem__)
        slots = self.slots[np.array(order, dtype=np.int64)] if order else self.slots
        self.slots, self.dicts = _renumber(slots, self.dicts)
        self._split = None

    def stored_column(self, name: str, positions: np.ndarray) -> np.ndarray:
        """The int column `name` ("seq:i", "eseq:i" ...) of the stored events at `positions`."""
        part, row = self.split(positions)
        out = np.zeros(len(positions), dtype=np.int64)
        for p, store in enumerate(self.stores):
            mine = part == p
            if mine.any():
                out[mine] = store.cols[name][row[mine]] if name in store.cols else 0
        return out

    def stored_ctx(self, positions: np.ndarray, values_of, dtype=np.int64) -> np.ndarray:
        """Per stored event at `positions`: values_of(store)[its context], as an array (int64 unless `dtype`)."""
        part, row = self.split(positions)
        out = np.zeros(len(positions), dtype=dtype)
        for p, store in enumerate(self.stores):
            mine = part == p
            if mine.any():
                out[mine] = values_of(store)[store.cols["ctx"][row[mine]]]
        return out

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
        out[rows] = self.stored_column("seq:i", np.flatnonzero(rows))
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
    """The events at some positions of an Events (an attempt's steps, reports ...), with their columns."""

    def __init__(self, events: Events, positions: np.ndarray):
        self.events, self.positions = events, positions
        self.store: Optional[Store] = None   # when all are rows of one store
        self._rows = None
        self._ctx_rows = self._ctx_set = None
        if len(positions) and (events.slots[positions] < 0).all():
            part, rows = events.split(positions)
            if (part == part[0]).all():
                self.store, self._rows = events.stores[int(part[0])], _small(rows)

    def __len__(self) -> int:
        return len(self.positions)

    def __bool__(self) -> bool:
        return len(self.positions) > 0

    def __getitem__(self, i):
        if isinstance(i, slice):
            return self.events.at_slots(self.events.slots[self.positions[i]])
        return self.events[int(self.positions[i])]

    def seq_at(self, i: int) -> Any:
        """`self[i].get("seq", 0)`, without the dict where the events are rows of one store
        (every stored event has an int seq: Store.layout)."""
        if self.store is not None:
            return int(self.store.cols["seq:i"][self._rows[i]])
        return self[i].get("seq", 0)

    def __iter__(self) -> Iterator[dict]:
        slots = self.events.slots
        for start in range(0, len(self.positions), _CHUNK):
            yield from self.events.at_slots(slots[self.positions[start:start + _CHUNK]])

    def __eq__(self, other) -> bool:
        return list(self) == list(other) if isinstance(other, (list, EventsAt)) else NotImplemented

    __hash__ = None

    def array(self, name: str) -> Optional[np.ndarray]:
        """Field `name` of every event as an int or float array, when all are rows of one store
        whose layouts have it as such (for a context field: an int in every one)."""
        store = self.store
        if store is None:
            return None
        if name in CONTEXT_INTS:
            values = store.ctx_ints(name)
            if values is None:
                return None
            if (values[self._contexts()] == _NONE).any():
                return None
            return values[self._ctx()]
        if name not in ROW_FIELDS or name in ("rows", "metrics"):
            return None
        for t in ("i", "f"):
            if store.has(name, t)[self._contexts()].all():
                return store.cols[f"{name}:{t}"][self._rows]
        return None

    def _ctx(self) -> np.ndarray:
        """Each event's context number (kept: every column read asks for it)."""
        if self._ctx_rows is None:
            self._ctx_rows = self.store.cols["ctx"][self._rows]
        return self._ctx_rows

    def _contexts(self) -> np.ndarray:
        """The distinct context numbers of the events."""
        if self._ctx_set is None:
            self._ctx_set = np.unique(self._ctx())
        return self._ctx_set

    def column(self, name: str) -> List[Any]:
        """`e.get(name)` of each event, in order."""
        a = self.array(name)
        if a is not None:
            return a.tolist()
        store = self.store
        if store is not None and (name in CONTEXT_STRS or name in CONTEXT_INTS):
            values = store.ctx_values(name)
            return [values[c] for c in self._ctx().tolist()]
        if store is not None and name in ROW_FIELDS and name not in ("rows", "metrics"):
            ctx = self._ctx()
            out: List[Any] = [None] * len(ctx)   # None where the layout has no such key
            for t in ("i", "f", "s"):
                mine = np.flatnonzero(store.has(name, t)[ctx])
                if not len(mine):
                    continue
                got = store.cols[f"{name}:{t}"][self._rows[mine]].tolist()
                if t == "s":
                    strings = store.strings.values_
                    got = [strings[c] for c in got]
                for i, v in zip(mine.tolist(), got):
                    out[i] = v
            return out
        return [e.get(name) for e in self]

    def rows(self) -> Optional[Tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """(row ids of all, start and end of each event's) when all are stored rows with row ids."""
        store = self.store
        if store is None or not store.has("rows", "l")[self._contexts()].all():
            return None
        r = self._rows
        return store.cols["rows:l"], store.cols["row_start"][r], store.cols["row_start"][r + 1]


def having(events, name: str, fields: Optional[Iterable[str]] = None) -> List[dict]:
    """The events of `events` (a list, or an EventsAt) whose field `name` is truthy
    (`e.get(name)`), in order: for stored ones read from the column, and only those made dicts
    (with `fields`, the keys the caller reads: a stored event's dict holds only those)."""
    if isinstance(events, EventsAt):
        chosen = np.array([i for i, v in enumerate(events.column(name)) if v], dtype=np.int64)
        return events.events.at_slots(events.events.slots[events.positions[chosen]],
                                      None if fields is None else frozenset(fields) | {name})
    return [e for e in events if e.get(name)]


def non_steps(events: Iterable[dict]) -> Iterable[dict]:
    """Every event of `events` that may be of a kind other than the stored ones (STORED_KINDS), in
    order: for an Events, its dicts; any other iterable as it is. For scans that look for other
    kinds, or for a field no stored event has (`fault`, `fault_kind`, `decision` ...)."""
    return events.non_steps() if isinstance(events, Events) else events
