"""A stored layout's lines as ftharness writes them, matched by one regex and read a column at a time.

Decoding a step line with orjson builds a dict of 16-19 keys and a list of row
ids, only for the reader to take it apart into columns again
(ftharness.history.columns): about 10 us an event, most of the time a long
history takes to judge. Once a layout has been seen (decoded as a dict), its
`Shape` is a regex that matches exactly the lines `json.dumps` writes for that
layout: the same keys in the same order, `", "` and `": "` between them, and a
value of the layout's type in each place (ints of at most 18 digits, finite
floats written as JSON writes them, ASCII strings without escapes, null, true,
false, lists of ints). Such a line decodes to the same dict under any JSON
reader, so its values can be taken straight from the matched text: the numbers
of a column parsed at once (numpy's parser, which gives the very doubles
orjson and `float` give: tests/test_shapes.py), the strings and contexts from
a cache. Any other line (another spacing, an escape, a NaN, a long integer, a
new layout) is decoded as a dict, as before, so the reader's events are the
same either way; only the cost differs.
"""

from __future__ import annotations

import json
import re
import warnings
from itertools import repeat
from operator import itemgetter
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ftharness.history.columns import CONTEXT_INTS, CONTEXT_STRS, Layout, Store, _small

_INT = rb"-?(?:0|[1-9][0-9]{0,17})"
_FLOAT = rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+]?[0-9]+)?|[eE][-+]?[0-9]+)"
#: printable ASCII but the quote and the backslash: what such a string means is its bytes
_STR = rb'"[\x20\x21\x23-\x5b\x5d-\x7e]*"'
_SCALAR = {"i": _INT, "f": _FLOAT, "s": _STR + rb"|null|true|false"}
_LIST = rb"\[((?:" + _INT + rb"(?:, " + _INT + rb")*)?)\]"
_TOKENS = {b"null": None, b"true": True, b"false": False}


def _key(name: str) -> bytes:
    return re.escape(json.dumps(name).encode() + b": ")


class Shape:
    """The lines of one layout of a store, as `json.dumps(event)` writes them."""

    def __init__(self, store: Store, code: int):
        lay: Layout = store.layouts[code]
        self.store, self.code, self.layout = store, code, lay
        parts: List[bytes] = []
        self.fields: List[str] = []        # per group: the row column it fills ("" for a context span)
        self.spans: List[int] = []         # the groups that hold a run of context fields
        run: List[bytes] = []              # the context fields of the run being read
        for k in lay.keys:
            if k in lay.ctx:
                run.append(_key(k) + (rb"(?:" + _INT + rb"|null)" if k in CONTEXT_INTS else rb"(?:" + _STR + rb"|null)"))
                continue
            if run:
                parts.append(b"(" + b", ".join(run) + b")")
                self.spans.append(len(self.fields))
                self.fields.append("")
                run = []
            if k == "kind":
                parts.append(re.escape(json.dumps(k).encode() + b": " + json.dumps(store.kind).encode()))
            elif k == "metrics":
                inner = []
                for m in lay.metrics:
                    inner.append(_key(m) + b"(" + _SCALAR[lay.types["metrics." + m]] + b")")
                    self.fields.append("metrics." + m)
                parts.append(_key(k) + rb"\{" + b", ".join(inner) + rb"\}")
            elif lay.types[k] == "l":
                parts.append(_key(k) + _LIST)
                self.fields.append(k)
            else:
                parts.append(_key(k) + b"(" + _SCALAR[lay.types[k]] + b")")
                self.fields.append(k)
        if run:
            parts.append(b"(" + b", ".join(run) + b")")
            self.spans.append(len(self.fields))
            self.fields.append("")
        self.match = re.compile(rb"\{" + b", ".join(parts) + rb"\}").fullmatch
        self._contexts: Dict[Any, tuple] = {}
        self._get_spans = itemgetter(*self.spans) if self.spans else None

    def columns(self, groups: List[tuple]) -> Optional[Tuple[Dict[str, np.ndarray], List[tuple]]]:
        """What `Store.take` gives for these lines (each one's `match(...).groups()`),
        or None when a value is not one a store keeps (a t that is not finite)."""
        lay, n = self.layout, len(groups)
        cols: Dict[str, np.ndarray] = {}
        by_group = list(zip(*groups))
        for j, name in enumerate(self.fields):
            if not name:
                continue
            t, col = lay.types[name], by_group[j]
            if t == "i":
                a = _numbers(col, np.int64)
                if a is None:
                    return None
                cols[f"{name}:i"] = _small(a)
            elif t == "f":
                a = _numbers(col, np.float64)
                if a is None or (name == "t" and not np.isfinite(a).all()):
                    return None
                cols[f"{name}:f"] = a
            elif t == "s":
                codes, cache = self.store.strings, {}
                values = [cache[v] if v in cache else cache.setdefault(v, _string(v)) for v in col]
                cols[f"{name}:s"] = np.fromiter(map(codes.__getitem__, zip(map(type, values), values)),
                                                dtype=np.int32, count=n)
            else:   # "l": the row ids, "1, 2, 3" per line
                commas = np.fromiter(map(bytes.count, col, repeat(b",")), dtype=np.int64, count=n)
                lengths = np.where(np.fromiter(map(len, col), dtype=np.int64, count=n) > 0, commas + 1, 0)
                flat = _numbers([v for v in col if v], np.int64, int(lengths.sum()))
                if flat is None:
                    return None
                cols["rows:l"], cols["nrows"] = _small(flat), lengths
        if self._get_spans is None:
            return cols, [()] * n
        spans = list(map(self._get_spans, groups)) if len(self.spans) > 1 else list(by_group[self.spans[0]])
        known, ctx = self._contexts, lay.ctx
        out = []
        for s in spans:
            c = known.get(s)
            if c is None:
                text = b", ".join(s) if len(self.spans) > 1 else s
                d = json.loads(b"{" + text + b"}")
                c = known[s] = tuple(d[k] for k in ctx)
            out.append(c)
        return cols, out


def _string(token: bytes) -> Any:
    v = _TOKENS.get(token, token)
    return token[1:-1].decode("ascii") if v is token else v


def _numbers(col, dtype, count: Optional[int] = None) -> Optional[np.ndarray]:
    """The numbers written in `col` (bytes of JSON numbers, one per item unless `count`
    says how many in all, with ", " between), parsed at once; None if one is not read."""
    if not col:
        return np.zeros(0, dtype=dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)   # (a short read shows as a shorter array)
        a = np.fromstring(b",".join(col), dtype=dtype, sep=",")
    return a if len(a) == (len(col) if count is None else count) else None
