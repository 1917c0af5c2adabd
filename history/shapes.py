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
import os
import re
import warnings
from itertools import repeat
from operator import itemgetter
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

try:   # the C twin of the regexes below (setup.py builds it where a C compiler is; FTHARNESS_LINESCAN=0: not used)
    from ftharness.history import _linescan as linescan
except ImportError:
    linescan = None
if os.environ.get("FTHARNESS_LINESCAN", "1") == "0":
    linescan = None

from ftharness.history.columns import CONTEXT_INTS, Contexts, Layout, Store, _small

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
        items: List[List[tuple]] = []      # per part: its ops (the parts joined by ", ")
        span: List[tuple] = []             # the ops of the run of context fields being read

        def close_run():
            parts.append(b"(" + b", ".join(run) + b")")
            j = len(self.fields)
            items.append([("span", j), ("lit", span[0][1][2:])] + span[1:] + [("span_end", j)])   # (no ", " first)
            self.spans.append(j)
            self.fields.append("")
            run.clear()
            span.clear()

        for k in lay.keys:
            if k in lay.ctx:
                run.append(_key(k) + (rb"(?:" + _INT + rb"|null)" if k in CONTEXT_INTS else rb"(?:" + _STR + rb"|null)"))
                span += [("lit", b", " + _key_text(k)), ("ctx_int" if k in CONTEXT_INTS else "ctx_str",)]
                continue
            if run:
                close_run()
            if k == "kind":
                text = json.dumps(k).encode() + b": " + json.dumps(store.kind).encode()
                parts.append(re.escape(text))
                items.append([("lit", text)])
            elif k == "metrics":
                inner, mine = [], [("lit", _key_text(k) + b"{")]
                for i, m in enumerate(lay.metrics):
                    t = lay.types["metrics." + m]
                    inner.append(_key(m) + b"(" + _SCALAR[t] + b")")
                    mine += [("lit", (b", " if i else b"") + _key_text(m)), (t, len(self.fields))]
                    self.fields.append("metrics." + m)
                parts.append(_key(k) + rb"\{" + b", ".join(inner) + rb"\}")
                items.append(mine + [("lit", b"}")])
            else:
                t = lay.types[k]
                parts.append(_key(k) + (_LIST if t == "l" else b"(" + _SCALAR[t] + b")"))
                items.append([("lit", _key_text(k)), (t, len(self.fields))])
                self.fields.append(k)
        if run:
            close_run()
        self.match = re.compile(rb"\{" + b", ".join(parts) + rb"\}").fullmatch
        ops: List[tuple] = [("lit", b"{")]
        for i, item in enumerate(items):
            ops += ([("lit", b", ")] if i else []) + item
        ops.append(("lit", b"}"))
        self.program = _program(ops)
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
        return cols, list(map(self._context, spans))

    def _context(self, span) -> tuple:
        """The context fields written in `span` (its bytes, a tuple of them for several runs)."""
        c = self._contexts.get(span)
        if c is None:
            d = json.loads(b"{" + (b", ".join(span) if len(self.spans) > 1 else span) + b"}")
            c = self._contexts[span] = tuple(d[k] for k in self.layout.ctx)
        return c

    def scanned(self, n: int, outs: list) -> Optional[Tuple[Dict[str, np.ndarray], Contexts]]:
        """`columns`, for the `n` lines ftharness.history._linescan matched (`outs`:
        its output per group; numbers as bytes, strings and spans numbered)."""
        lay, cols = self.layout, {}
        for j, name in enumerate(self.fields):
            if not name:
                continue
            t, out = lay.types[name], outs[j]
            if t == "i":
                cols[f"{name}:i"] = _small(np.frombuffer(out, dtype=np.int64))
            elif t == "f":
                a = np.frombuffer(out, dtype=np.float64)
                if name == "t" and not np.isfinite(a).all():
                    return None
                cols[f"{name}:f"] = a
            elif t == "s":
                ids, distinct = out
                codes = self.store.strings
                table = np.array([codes[(type(v), v)] for v in map(_string, distinct)] or [0], dtype=np.int32)
                cols[f"{name}:s"] = table[np.frombuffer(ids, dtype=np.int32)]
            else:
                flat, lengths = out
                cols["rows:l"], cols["nrows"] = _small(np.frombuffer(flat, dtype=np.int64)), \
                    np.frombuffer(lengths, dtype=np.int64)
        if not self.spans:
            return cols, Contexts([()], np.zeros(n, dtype=np.int32))
        if len(self.spans) == 1:
            ids, distinct = outs[self.spans[0]]
            return cols, Contexts(list(map(self._context, distinct)), np.frombuffer(ids, dtype=np.int32))
        each = [outs[j] for j in self.spans]
        rows, first, ids = np.unique(np.stack([np.frombuffer(i, dtype=np.int32) for i, _ in each], axis=1),
                                     axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first)          # (numbered in order of first appearance, as `columns` does)
        rank = np.empty(len(order), dtype=np.int32)
        rank[order] = np.arange(len(order), dtype=np.int32)
        values = [self._context(tuple(d[k] for (_, d), k in zip(each, row))) for row in rows[order].tolist()]
        return cols, Contexts(values, rank[ids.reshape(-1)])


def _key_text(name: str) -> bytes:
    return json.dumps(name).encode() + b": "


#: ftharness.history._linescan's op numbers (its enum)
_OPS = {"lit": 1, "i": 2, "f": 3, "s": 4, "l": 5, "span": 6, "span_end": 7, "ctx_int": 8, "ctx_str": 9}
_VALUE_OPS = {"i", "f", "s", "l", "ctx_int", "ctx_str"}


def _program(ops: List[tuple]) -> bytes:
    """`ops` as _linescan's program: adjacent literals joined. Its greedy scan of a
    value is the regex's only where the literal after a value cannot continue it."""
    merged: List[tuple] = []
    for op in ops:
        if op[0] == "lit" and merged and merged[-1][0] == "lit":
            merged[-1] = ("lit", merged[-1][1] + op[1])
        else:
            merged.append(op)
    out = bytearray()
    for i, op in enumerate(merged):
        out.append(_OPS[op[0]])
        if op[0] == "lit":
            assert len(op[1]) < 1 << 16
            out += len(op[1]).to_bytes(2, "little") + op[1]
        elif op[0] in _VALUE_OPS or op[0] in ("span", "span_end"):
            if len(op) > 1:
                out.append(op[1])
        if op[0] in _VALUE_OPS:
            after = next((o for o in merged[i + 1:] if o[0] == "lit"), ("lit", b""))[1]
            assert after[:1] in (b",", b"}", b"]"), after   # (never a digit, sign, dot or exponent)
    return bytes(out)


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
