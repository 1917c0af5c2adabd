"""Reading a history file back, and judging whether it is complete (pure, no Ray).

The history actor (ftharness.history) writes one JSON object per line and, when
the run closes, a last `history_end` event: how many events each emitter
handed over, how many lines came before it, and a sha256 over those lines in
file order. Each event carries `seq` (the actor's order) and, from its
emitter, `emitter` and `eseq` (1, 2, 3 ... per emitter). So:

- a line removed, duplicated or reordered breaks the `seq` run, an emitter's
  `eseq` run, the manifest counts or the digest;
- an event an emitter failed to hand over (the actor was unreachable) leaves a
  hole in that emitter's `eseq`;
- an unreadable line anywhere but at the very end is corruption; a torn last
  line (a crash mid-write) is dropped and named, and then `history_end` is
  missing anyway.

`read_history(path)` returns the events with the list of problems; a history
with any problem cannot support a PASS (docs/verdicts.md: INCONCLUSIVE). A long one's
steps, reports and written checkpoints are kept as columns
(ftharness.history.columns), read back as the same dicts.

A damaged or hostile results folder is read in bounded time and memory: only a
regular file is read (a FIFO, a device or a symlink to one is refused, never
waited on), a line longer than MAX_LINE is skipped and named, a line nested
too deep is unreadable, an event whose bookkeeping fields (`seq`, `t`, `kind`
...) have a type ftharness never writes is dropped and named, and gaps in `seq` and
`eseq` are found from the sorted numbers, never by building the range up to
the largest one (a `seq` of 10**12 costs nothing).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from ftharness.errors import FtharnessError
from ftharness.history.integrity import _int, _integrity_in_order, integrity_problems, seal, sealed_lines

#: what other modules import from here (integrity_problems, seal and sealed_lines live in history/integrity.py)
__all__ = ["HISTORY_FILE", "marker_name", "is_marker", "MAX_PROBLEMS_SHOWN", "MAX_LINE", "MAX_JSON_BYTES",
           "HistoryError", "open_regular", "read_json_file", "COLUMNS_FROM", "HistoryRead", "history_path",
           "gc_paused", "read_history", "MAX_SHAPES", "HistoryReader", "LiveHistory", "read_events",
           "load_history", "integrity_problems", "seal", "sealed_lines"]

HISTORY_FILE = "history.jsonl"
#: every rank that reports a checkpoint writes its own marker into it (lineage step, and the
#: hash of each file it wrote): ranks' directories are merged into one checkpoint on upload,
#: so one shared marker name would keep whichever rank uploaded last
MARKER_PREFIX, MARKER_SUFFIX = ".ftharness-rank", ".json"


def marker_name(rank: int) -> str:
    return f"{MARKER_PREFIX}{rank}{MARKER_SUFFIX}"


def is_marker(filename: str) -> bool:
    """Whether a checkpoint file is one of ftharness's markers (never a file of the job's)."""
    return filename.startswith(MARKER_PREFIX) and filename.endswith(MARKER_SUFFIX)
MAX_PROBLEMS_SHOWN = 5
#: a history line longer than this is no event of ftharness's (events are a few hundred bytes)
MAX_LINE = 1 << 20
#: the JSON files of a results folder (summary.json, a journal) are read up to this size
MAX_JSON_BYTES = 64 << 20


class HistoryError(FtharnessError, OSError):
    """A results folder's file that cannot be read as one (not a regular file, too large)."""


def open_regular(path: str):
    """`path` opened for reading in binary through the one input reader (ftharness.inputs:
    a regular file, following a symlink only to a regular file, never one under /proc, /sys
    or /dev); HistoryError otherwise. Non-blocking open: a FIFO never hangs the reader."""
    from ftharness.inputs import InputRefused, open_input

    try:
        return open_input(path)
    except InputRefused as e:
        raise HistoryError(str(e)) from None


def read_json_file(path: str, missing: Any = None) -> Any:
    """The JSON value of a small file of a results folder, or `missing` when it is absent, not a
    regular file, larger than MAX_JSON_BYTES, not JSON, nested too deep or holding more values
    than a file ftharness writes (ftharness.inputs.read_input, kind json)."""
    from ftharness.inputs import InputRefused, read_input

    try:
        return read_input(path, "json")   # the one reader: bounded size, nesting and counts
    except InputRefused:
        return missing

#: from this many events on, `read_history` gives the step events in columns
#: (ftharness.history.columns.Events, a sequence of dicts); below, a list of dicts
COLUMNS_FROM = 50_000


try:   # a faster decoder, when installed (a dependency of the package; the standard library's otherwise)
    from orjson import loads as _orjson_loads
except ImportError:  # pragma: no cover - depends on the environment
    _orjson_loads = None


@dataclass
class HistoryRead:
    #: a list of dicts; for a long history (COLUMNS_FROM events or more) an
    #: ftharness.history.columns.Events, a read-only sequence of the same dicts
    events: List[Dict[str, Any]]
    problems: List[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems


def history_path(path: str) -> str:
    return os.path.join(path, HISTORY_FILE) if os.path.isdir(path) else path


@contextlib.contextmanager
def gc_paused():
    """Python's cycle collector off for one bulk pass over a history (reading
    or judging it). Every full collection walks all the live objects, the
    events included, so with a million events it would cost more than the
    pass; reference counting still frees everything that holds no cycle, and
    the collector resumes (when it was on) at the end, with the objects the
    pass made in the oldest generation (the youngest would hold them all, and
    its next collection would walk every one of them at once)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:   # what the pass made joins the oldest generation: no collection of it all at once now
            gc.freeze()
            gc.enable()
            gc.unfreeze()


def read_history(path: str) -> HistoryRead:
    """Events in `seq` order and every reason the record is not whole."""
    with gc_paused():
        return _read_history(path)


def _read_history(path: str) -> HistoryRead:
    path = history_path(path)
    reader = HistoryReader(path, columnar=True)
    try:
        from ftharness.history.split import read_split

        if not read_split(reader):   # (a long file, in two processes: the same reader's state)
            reader.read(final=True)
    except OSError as e:
        return HistoryRead([], [f"no history: {path} cannot be read ({e.strerror or e})"])
    events, problems = reader.columns(), list(reader.problems)
    reader.events = []
    if len(events) < COLUMNS_FROM:   # a short history: the list of dicts, as it always was
        events = list(events)
    checked = None
    try:
        checked = _integrity_in_order(events)
        problems += integrity_problems(events) if checked is None else checked
    except Exception as e:  # noqa: BLE001 - a record too damaged to check is incomplete
        problems.append(f"the history's bookkeeping is damaged ({type(e).__name__})")
    for e in reader.ends:
        e.pop("_digest_before", None)
    if checked is None and isinstance(events, list):   # not in seq order already
        events.sort(key=lambda e: _int(e.get("seq")))
    elif checked is None:
        events.sort_by([_int(e.get("seq")) for e in events])
    if len(problems) > MAX_PROBLEMS_SHOWN:
        problems = problems[:MAX_PROBLEMS_SHOWN] + [f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more"]
    return HistoryRead(events, problems)


#: bytes -> ":" for the bytes a JSON number follows (`:,[`), "0" for digits, "-" for itself, "x" for
#: the rest (blanks deleted): a number of 19 or more digits then reads ":0000..." or ":-0000..."
_NUMBERS = bytes(ord(":") if c in b":,[" else ord("0") if c in b"0123456789" else c if c == ord("-") else ord("x")
                 for c in range(256))
_LONG = (b":" + b"0" * 19, b":-" + b"0" * 19)


def _long_number(data: bytes) -> bool:
    """Whether `data` may hold a number of 19 or more digits: maybe an integer
    beyond 64 bits, which orjson would read as a float (a string that looks like
    one is harmless: its line is read by the standard library)."""
    t = data.translate(_NUMBERS, b" \t\n\r")
    return _LONG[0] in t or _LONG[1] in t
#: fields whose string values repeat from event to event: one copy of each value is kept
_SHARED = ("kind", "source", "run", "attempt_id", "node_id", "emitter", "checkpoint")
_SKIP = object()   # a blank line
#: the bytes read at a time
_BLOCK = 1 << 22
#: the most line shapes (ftharness.history.shapes) a reader tries on each line
MAX_SHAPES = 16


def _std_loads(line: bytes, keys: Dict[str, str]) -> Any:
    """The standard library's decoding; an object's keys shared with earlier
    events' (json makes new key strings for every line, orjson caches them)."""
    if len(line) > MAX_LINE:
        raise ValueError("line too long")
    e = json.loads(line.decode("utf-8"))   # NaN is a value a job reports (a diverged loss)
    if type(e) is dict:
        e = {keys.setdefault(k, k): v for k, v in e.items()}
    return e


#: bookkeeping fields every reader sorts, compares or indexes by: an int (or null) ...
_INT_FIELDS = ("seq", "eseq", "attempt", "rank", "step", "fit_index", "fault", "world_size", "pid")
#: ... a string (or null)
_STR_FIELDS = ("kind", "emitter", "source", "run", "attempt_id", "node_id")
_FINITE = float("inf")


def _bad_field(e: Dict[str, Any]) -> Optional[str]:
    """The first bookkeeping field of `e` with a type ftharness never writes there, or None."""
    for k in _INT_FIELDS:
        v = e.get(k)
        if v is not None and v.__class__ is not int:
            return k
    for k in _STR_FIELDS:
        v = e.get(k)
        if v is not None and v.__class__ is not str:
            return k
    t = e.get("t")
    if t is not None and (t.__class__ not in (int, float) or not -_FINITE < t < _FINITE):
        return "t"
    if e.get("kind") not in _BULK:
        return _non_finite(e)
    return None


#: the bulk kinds (millions in a long run), whose numbers besides `t` no rule times anything by
_BULK = frozenset({"step", "report", "checkpoint_written"})
#: fields that hold the job's own values, where NaN is data (a diverged loss)
_USER_FIELDS = frozenset({"metrics", "return_value"})


def _non_finite(e: Dict[str, Any], limit: int = 10_000) -> Optional[str]:
    """The first field (outside the job's own values) holding NaN or an infinity, which
    ftharness never writes: a time, a deadline or a window that is no number."""
    stack = [(k, v) for k, v in e.items() if k not in _USER_FIELDS]
    while stack and limit > 0:
        limit -= 1
        k, v = stack.pop()
        if v.__class__ is float and not -_FINITE < v < _FINITE:
            return str(k)
        if v.__class__ is dict:
            stack.extend((f"{k}.{k2}", v2) for k2, v2 in v.items())
        elif v.__class__ is list:
            stack.extend((f"{k}[{i}]", v2) for i, v2 in enumerate(v[:1000]))
    return None


class HistoryReader:
    """Reads a history file as it grows: each `read()` decodes only the whole
    lines appended since the last one (a line still being written waits for its
    newline), so a live view follows a long run at the cost of what is new.

    `events` are in file order, each line's problems in `problems`; `digest`
    covers every line read, each with its newline. `read(final=True)` also
    takes a last line without its newline (torn by a crash mid-write: dropped
    and named when it is not JSON). Decoding is orjson's when it is installed
    (the standard library's otherwise, and for every line orjson refuses or
    could read differently), with the same events either way."""

    def __init__(self, path: str, columnar: bool = False, hashing: bool = True):
        self.path = history_path(path)
        #: without `hashing` (the second half of a split read, ftharness.history.split) no digest:
        #: each history_end gets `_offset_before` (its line's offset) and `skipped` lists the
        #: byte ranges of the long lines left out, so the parent hashes the range as this would have
        self.hashing = hashing
        self.skipped: List[Tuple[int, int]] = []
        #: with `columnar`, steps, reports and written checkpoints go to stores
        #: (ftharness.history.columns), `columns()` gives all the events; `events` holds the others
        self.stores = None
        if columnar:
            from ftharness.history.columns import STORED_KINDS, Store

            self.stores = [Store(kind) for kind in STORED_KINDS]
            for store in self.stores:
                store.trim = _trim
            self._parts = {kind: i for i, kind in enumerate(STORED_KINDS)}
        #: (Shape, its key) per layout seen: ftharness.history.shapes; `_shaped`: the keys that have one
        self._shapes: List[tuple] = []
        self._shaped: Dict[tuple, Any] = {}
        self._programs: tuple = ()
        self._slots: List[Any] = []
        self.offset = 0                     # bytes of whole lines consumed
        self.lines = 0
        self.events: List[Dict[str, Any]] = []
        self.problems: List[str] = []
        self.ends: List[Dict[str, Any]] = []   # the history_end events, each with `_digest_before`
        self.digest = hashlib.sha256()
        self._strings: Dict[str, str] = {}   # one copy of each string value (kinds, sources, ids repeat)
        self._keys: Dict[str, str] = {}
        self._torn = False

    def read(self, final: bool = False, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """Decode what was appended since the last read (up to byte `limit`, a line's
        start, when given); returns the new events."""
        if self._torn:
            raise ValueError("the history was already read to its torn end")
        start = len(self.events)
        # one buffer for the whole read: a block, after the start of a line the last one cut
        # (a new bytes object per block would fault its pages in anew: a third of the read's time)
        buf = bytearray(_BLOCK + MAX_LINE)
        view = memoryview(buf)
        with gc_paused(), open_regular(self.path) as f:
            f.seek(self.offset)
            have = 0   # bytes of a line begun in the last block, at the buffer's start
            while True:
                want = _BLOCK if limit is None else max(0, min(_BLOCK, limit - f.tell()))
                got = f.readinto(view[have:have + want]) if want else 0
                if not got:
                    break
                end = have + got
                cut = buf.rfind(b"\n", 0, end) + 1
                if cut == 0:
                    have = end
                    if end > MAX_LINE:   # no newline in sight: skip to the next one
                        self._skip_long(f, end)
                        have = 0
                    continue
                self._lines(view[:cut])
                self.offset += cut
                have = end - cut
                buf[:have] = view[cut:end]
                if have > MAX_LINE:
                    self._skip_long(f, have)
                    have = 0
            if final and have:
                self._torn = True
                self._lines(bytes(view[:have]) + b"\n", torn=True)
                self.offset += have
        return self.events[start:]

    def _skip_long(self, f, consumed: int) -> None:
        """A line longer than MAX_LINE: read past its newline without keeping it, and name it."""
        skipped = consumed
        while True:
            block = f.read(_BLOCK)
            if not block:
                break
            nl = block.find(b"\n")
            if nl >= 0:
                skipped += nl + 1
                f.seek(-(len(block) - nl - 1), os.SEEK_CUR)
                break
            skipped += len(block)
        self.lines += 1
        self.skipped.append((self.offset, self.offset + skipped))
        self.offset += skipped
        self.problems.append(f"line {self.lines}: longer than {MAX_LINE} bytes, skipped")

    def _decode(self, line: bytes) -> Any:
        """One line's event; _SKIP for a blank line, and None (or what is not a
        dict) for one that is not an object. orjson's where it reads the line as
        the standard library would, else the standard library's."""
        if not line.strip():
            return _SKIP
        try:
            if _orjson_loads is not None and not _long_number(line):
                try:
                    return _orjson_loads(line)
                except ValueError:
                    pass
            return _std_loads(line, self._keys)
        except (ValueError, UnicodeDecodeError, RecursionError):
            return None

    def _lines(self, body: bytes, torn: bool = False) -> None:
        """Decode `body` (bytes, or a view of them), whole lines each ending with a newline (`torn`: one
        line that had none in the file)."""
        scanned = self._scan(body) if self._shapes else None
        if scanned is not None:   # the lines that match a shape read in C, the others as dicts
            ends, starts = self._columnar_scanned(body, scanned, torn)
            count = len(starts) - 1
        else:
            body = bytes(body)
            lines = body.split(b"\n")
            lines.pop()   # after the last newline
            count = len(lines)
            # orjson for the whole block when it has no long number, else line by line (also when most
            # lines will match a shape: the others are few, and the check costs a pass over the block)
            fast = _orjson_loads is not None and not self._shapes and not _long_number(body)
            if self.stores is not None:
                ends = self._columnar(lines, fast, torn)
            else:
                ends = self._decode_lines(lines, fast, torn)
        at, done = 0, 0
        for i, e in ends:
            if scanned is not None:
                upto = int(starts[i])
            else:
                upto = at + sum(len(line) + 1 for line in lines[done:i])
            if self.hashing:
                self.digest.update(body[at:upto])
                e["_digest_before"] = self.digest.hexdigest()
            else:
                e["_offset_before"] = self.offset + upto
            at, done = upto, i
            self.ends.append(e)
        if self.hashing:
            self.digest.update(body[at:] if at else body)
        self.lines += count

    def _columnar(self, lines: List[bytes], fast: bool, torn: bool) -> List[tuple]:
        """`_decode_lines`, with the block's step events filed in the store (see
        ftharness.history.columns): all of them or, when one has a field of a type the
        store does not keep, none (the block is decoded again, as dicts)."""
        problems, events = len(self.problems), len(self.events)
        cands: Dict[tuple, List[Any]] = {}
        slots: List[int] = []
        ends = self._decode_lines(lines, fast, torn, cands, slots)
        taken = self._take(cands)
        if taken is None:   # the block as dicts: what the reader always did
            del self.problems[problems:], self.events[events:]
            ends = self._decode_lines(lines, fast, torn)
            self._slots.append(np.arange(events, len(self.events), dtype=np.int64))
            return ends
        numbers: Dict[tuple, int] = {}
        keys = np.array([numbers.setdefault(k, len(numbers)) for k in self._cand_keys], dtype=np.int64)
        self._file(taken, np.array(slots, dtype=np.int64), list(numbers), keys,
                   np.array(self._cand_index, dtype=np.int64))
        return ends

    def _take(self, cands: Dict[tuple, List[Any]]) -> Optional[Dict[tuple, tuple]]:
        """The columns of a block's candidates, per key: decoded events by (part, layout),
        lines matched by a shape's regex by (part, layout, 1); None when one does not fit."""
        taken: Dict[tuple, tuple] = {}
        for part, store in enumerate(self.stores):
            mine = {key[1]: found for key, found in cands.items() if key[0] == part and len(key) == 2}
            got = store.take(mine) if mine else {}
            if got is None:
                return None
            taken.update({(part, code): value for code, value in got.items()})
        for key, found in cands.items():   # lines matched by a shape: their groups, not dicts
            if len(key) == 3:
                got = self._shaped[key].columns(found)
                if got is None:
                    return None
                taken[key] = got
        return taken

    def _file(self, taken: Dict[tuple, tuple], block: np.ndarray, keys: List[tuple], key_of: np.ndarray,
              index: np.ndarray) -> None:
        """File a block's stored events (`taken`: per key, its columns) and keep its slots:
        `block` per event, its index in `events` or ~ its number among the candidates, the
        candidate's key (`keys[key_of[c]]`) and its row among its key's (`index[c]`)."""
        if taken:
            stores = self.stores
            first = {key: stores[key[0]].add(key[1], *value) for key, value in taken.items()}
            cand = ~block[block < 0]             # candidate numbers, in order
            firsts = np.array([first[k] for k in keys], dtype=np.int64)[key_of]
            parts = np.array([k[0] for k in keys], dtype=np.int64)[key_of]
            block[block < 0] = (-1 - ((firsts + index) * 4 + parts))[cand]
        self._slots.append(block)

    def _scan(self, body: bytes):
        """ftharness.history._linescan's reading of `body` (None without it, or without a store)."""
        from ftharness.history import shapes

        if shapes.linescan is None or self.stores is None:
            return None
        if len(self._programs) != len(self._shapes):
            self._programs = tuple(self._shaped[key].program for _, key in self._shapes)
        return shapes.linescan.scan(body, self._programs)

    def _columnar_scanned(self, body: bytes, scanned: tuple, torn: bool) -> Tuple[List[tuple], np.ndarray]:
        """`_columnar` for a block _linescan has read: the lines it matched come as
        columns, the others are decoded here (as dicts, in the order of the file)."""
        which = np.frombuffer(scanned[0], dtype=np.int8)
        starts = np.frombuffer(scanned[1], dtype=np.int64)
        problems, events = len(self.problems), len(self.events)
        other = np.flatnonzero(which < 0).tolist()
        lines = [bytes(body[starts[i]:starts[i + 1] - 1]) for i in other]
        cands: Dict[tuple, List[Any]] = {}
        slots: List[int] = []
        slot_lines: List[int] = []
        # (orjson for them all when none has a long number; their shapes were tried in C)
        fast = _orjson_loads is not None and not _long_number(b"\n".join(lines))
        ends = self._decode_lines(lines, fast, torn, cands, slots, at=other, slot_lines=slot_lines)
        taken = self._take(cands)   # (a shape learned in this block matched its later lines by regex)
        numbers: Dict[tuple, int] = {}
        py_keys = [numbers.setdefault(k, len(numbers)) for k in self._cand_keys]
        shaped = np.flatnonzero(which >= 0)
        shape_of = which[shaped]
        index = np.zeros(len(shaped), dtype=np.int64)
        key_number = np.zeros(len(self._shapes), dtype=np.int64)
        for k, (n, outs) in enumerate(scanned[2]):
            if not n or taken is None:
                continue
            key = self._shapes[k][1]
            got = self._shaped[key].scanned(n, outs)
            if got is None:
                taken = None
                break
            if key in taken:   # (its regex matched a line it did not: never, but then the block as dicts)
                taken = None
                break
            taken[key] = got
            key_number[k] = numbers.setdefault(key, len(numbers))
            index[shape_of == k] = np.arange(n, dtype=np.int64)
        if taken is None:   # the block as dicts: what the reader always did
            del self.problems[problems:], self.events[events:]
            lines = bytes(body).split(b"\n")
            lines.pop()
            ends = self._decode_lines(lines, False, torn)
            self._slots.append(np.arange(events, len(self.events), dtype=np.int64))
            return ends, starts
        per_line = np.zeros(len(which), dtype=np.int64)
        has = np.zeros(len(which), dtype=bool)
        per_line[slot_lines], has[slot_lines] = slots, True
        per_line[shaped], has[shaped] = ~(len(py_keys) + np.arange(len(shaped), dtype=np.int64)), True
        key_of = np.concatenate([np.array(py_keys, dtype=np.int64), key_number[shape_of]])
        index = np.concatenate([np.array(self._cand_index, dtype=np.int64), index])
        self._file(taken, per_line[has], list(numbers), key_of, index)
        return ends, starts

    def _decode_lines(self, lines: List[bytes], fast: bool, torn: bool,
                      cands: Optional[Dict[int, List[dict]]] = None, slots: Optional[List[int]] = None,
                      at: Optional[List[int]] = None, slot_lines: Optional[List[int]] = None) -> List[tuple]:
        """Decode whole lines into `events` (and `problems`); returns (position in
        `lines`, event) of the history_end events. With `cands`: step events the
        store may keep are listed there by layout instead (`slots`: per event kept,
        its index in `events`, or ~ its number among the candidates). With `at`:
        each line's position in its block (and `slot_lines` gets each slot's)."""
        loads = _orjson_loads if fast else self._decode
        strings, events, first = self._strings.setdefault, self.events, self.lines
        ends = []   # (position in `lines`, event) of history_end events: the digest before each
        shapes, last, match = (), None, None
        if cands is not None:
            parts, stores, add_slot = self._parts, self.stores, slots.append
            self._cand_keys, self._cand_index = keys, index = [], []
            add_key, add_index = keys.append, index.append
            shapes = self._shapes if at is None else ()   # (with `at`: lines no shape matched)
            add_line = slot_lines.append if slot_lines is not None else None
        for i, line in (enumerate(lines) if at is None else zip(at, lines)):
            if shapes:   # a line as ftharness writes a stored layout's: its values, no dict
                m = match(line) if match is not None else None
                if m is None:
                    for shape in shapes:
                        if shape is not last:
                            m = shape[0](line)
                            if m is not None:
                                last, match, shaped_key = shape, shape[0], shape[1]
                                matched = cands.setdefault(shaped_key, [])
                                add_groups = matched.append
                                break
                if m is not None:
                    if add_line is not None:
                        add_line(i)
                    add_slot(~len(keys))
                    add_key(shaped_key)
                    add_index(len(matched))
                    add_groups(m.groups())
                    continue
            try:
                e = loads(line)
            except ValueError:   # orjson's refusal (the standard library decides) or a blank line
                e = self._decode(line)
            if e.__class__ is not dict:
                if e is not _SKIP:
                    self.problems.append(f"line {first + i + 1}: {'torn last line dropped' if torn else 'unreadable'}")
                continue
            part = parts.get(e.get("kind"), -1) if cands is not None else -1
            if part >= 0:
                code = stores[part].layout(e)
                if code is not None:
                    key = (part, code)
                    if (part, code, 1) not in self._shaped and len(self._shapes) < MAX_SHAPES:
                        self._add_shape(part, code)
                        shapes = self._shapes
                    mine = cands.get(key)
                    if mine is None:
                        mine = cands[key] = []
                    if add_line is not None:
                        add_line(i)
                    add_slot(~len(keys))
                    keys.append(key)
                    index.append(len(mine))
                    mine.append(e)
                    continue
            bad = _bad_field(e)
            if bad is not None:   # what every reader sorts and compares by has the type the writer gives it
                self.problems.append(f"line {first + i + 1}: {bad} is not what ftharness writes there; event dropped")
                continue
            # one copy of each repeated string value (_SHARED, spelled out: this runs for every event)
            kind = e.get("kind")
            if kind.__class__ is str:
                e["kind"] = kind = strings(kind, kind)
            v = e.get("source")
            if v.__class__ is str:
                e["source"] = strings(v, v)
            v = e.get("run")
            if v.__class__ is str:
                e["run"] = strings(v, v)
            v = e.get("attempt_id")
            if v.__class__ is str:
                e["attempt_id"] = strings(v, v)
            v = e.get("node_id")
            if v.__class__ is str:
                e["node_id"] = strings(v, v)
            v = e.get("emitter")
            if v.__class__ is str:
                e["emitter"] = strings(v, v)
            v = e.get("checkpoint")
            if v.__class__ is str:
                e["checkpoint"] = strings(v, v)
            if "_line" in e:
                del e["_line"]
            if kind == "history_end":   # the manifest's digest covers the lines before it
                ends.append((i, e))
            elif "_digest_before" in e:
                del e["_digest_before"]
            if slots is not None:
                if add_line is not None:
                    add_line(i)
                add_slot(len(events))
            events.append(e)
        return ends

    def _add_shape(self, part: int, code: int) -> None:
        from ftharness.history.shapes import Shape

        key = (part, code, 1)
        shape = self._shaped[key] = Shape(self.stores[part], code)
        self._shapes.append((shape.match, key))

    def columns(self):
        """The events read, as ftharness.history.columns.Events (a reader made with `columnar`)."""
        from ftharness.history.columns import Events, join

        for store in self.stores:
            store.finish()
            _trim()
        slots = join(self._slots, np.int64)
        self._slots.append(slots)   # (the same array, for another call)
        return Events(self.events, slots, self.stores)


class LiveHistory:
    """The events of a history file that is still being written, and their
    model (ftharness.history.model.History), kept up to date by reading only
    the lines appended since the last `update()` (a line still being written
    waits for its newline): what a live view judges over and over.

    `events` are those `read_history` returns for the lines read (in seq
    order), without the check of the record's completeness; the model grows
    with them, and is built again only when an appended event sorts before
    one already in (never, for a history as the actor writes it)."""

    def __init__(self, path: str):
        self.path = history_path(path)
        self._reset()

    def _reset(self) -> None:
        self.reader = HistoryReader(self.path)
        self.events: List[Dict[str, Any]] = []
        self.model = None
        self._last_seq: Optional[int] = 0   # the last event's seq while they ascend (None: not in order)

    def update(self):
        """(events, model) of the history as it stands now."""
        from ftharness.history.model import History

        try:
            size = os.path.getsize(self.path)
        except OSError:   # not written yet: no events, as read_history reads a missing file
            self._reset()
            self.model = History([])
            return self.events, self.model
        if size < self.reader.offset:   # replaced or cut: start again
            self._reset()
        new = self.reader.read()
        for e in self.reader.ends:
            e.pop("_digest_before", None)
        self.reader.ends.clear()
        ordered = self._last_seq is not None
        for e in new:
            seq = e.get("seq")
            if ordered and type(seq) is int and seq > self._last_seq:
                self._last_seq = seq
            else:
                ordered = False
        self.events += new
        if not ordered:   # read_history's order, and a model built from it
            self._last_seq = None
            self.events.sort(key=lambda e: _int(e.get("seq")))
            self.model = History(self.events)
        elif self.model is None or not self.model.extend(new):
            self.model = History(self.events)
        return self.events, self.model


def _trim() -> None:
    """Hand the heap's free pages back (glibc's malloc_trim): the blocks' chunks of the stores,
    joined, leave holes that would otherwise count in the process's memory until it ends."""
    global _TRIM
    if _TRIM is None:
        try:
            import ctypes

            _TRIM = ctypes.CDLL("libc.so.6").malloc_trim
        except (OSError, AttributeError):   # not glibc: nothing to do
            _TRIM = False
    if _TRIM:
        _TRIM(0)


_TRIM = None


def read_events(path: str) -> List[Dict[str, Any]]:
    """Only the events of a history file, in `seq` order (see `read_history`), as a list."""
    return list(read_history(path).events)


def load_history(path: str):
    """A results folder's (or a history file's) events as a pandas DataFrame."""
    import pandas as pd

    df = pd.DataFrame(read_events(path))
    if not df.empty:
        df["time"] = pd.to_datetime(df["t"], unit="s")
    return df
