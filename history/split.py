"""Reading a long history in two processes: the second half decoded by a forked child.

Decoding is nearly all of what reading a day of soak costs (about 6 us a line,
one core), and the machine has more than one. `read_split` forks a child that
decodes the file from a line start near the middle to its end, while the parent
decodes the part before; the child sends back its reader's state (the stores
finished into columns, its dicts, problems, slots) through a pipe, the numpy
columns as raw buffers (pickle protocol 5, no second copy), and the parent
appends it to its own, renumbered, as if it had read on (`merge`). The digest
stays one pass in the parent, over the bytes the child read, skipping what the
child skipped, so `history_end` is checked exactly as in one process.

It is used only where it is safe and worth it: a regular file of at least
`SPLIT_FROM` bytes, `os.fork`, two CPUs or more, and no other thread in the
process (a fork copies one thread; a lock another one held would stay held in
the child). Anything unusual (the child fails, dies or sends what cannot be
read) and the parent reads the rest itself: the events are the same either way.
"""

from __future__ import annotations

import os
import pickle
import re
import signal
import stat
import struct
import threading
from typing import Any, Dict, List, Optional

import numpy as np

from ftharness.history.columns import join, split_slots

#: files this long or longer are read in two processes (below: one, the fork costs more)
SPLIT_FROM = 64 << 20
#: the parent's share of the file: it also hashes the child's part (about 1 GB/s)
PARENT_SHARE = 0.46
_HEADER = struct.Struct("<QI")
_LINE = re.compile(r"^line (\d+): ")


def can_split(path: str) -> bool:
    if not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 or threading.active_count() != 1:
        return False
    if os.environ.get("FTHARNESS_READ_SPLIT", "1") == "0":
        return False
    try:   # a regular file itself (the reader refuses a link or a device: it decides, in one process)
        st = os.lstat(path)
    except OSError:
        return False
    from ftharness.inputs import system_path_problem

    return stat.S_ISREG(st.st_mode) and st.st_size >= SPLIT_FROM and system_path_problem(path) is None


def read_split(reader) -> bool:
    """Read `reader`'s whole file (final) in two processes; False (nothing read) where it does not split."""
    if reader.stores is None or reader.offset or not can_split(reader.path):
        return False
    cut = _line_start(reader.path, int(os.path.getsize(reader.path) * PARENT_SHARE))
    if cut is None:
        return False
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:   # the child: decode [cut, end), send the state, exit without running any cleanup
        code = 1
        try:
            os.close(r)
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            _send(w, _read_rest(type(reader), reader.path, cut))
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    done = False
    try:
        reader.read(limit=cut)
        state = _receive(r)
        done = True
        _, status = os.waitpid(pid, 0)
        if state is None or status != 0 or reader.offset != cut:
            reader.read(final=True)   # the rest, here
            return True
        merge(reader, state)
        return True
    finally:
        os.close(r)
        if not done:   # (an error or Ctrl-C here: the child goes too)
            try:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            except OSError:
                pass


def _line_start(path: str, near: int) -> Optional[int]:
    """The offset just after the first newline at or after `near` (None: none there)."""
    with open(path, "rb") as f:
        f.seek(near)
        at = near
        while True:
            block = f.read(1 << 20)
            if not block:
                return None
            nl = block.find(b"\n")
            if nl >= 0:
                return at + nl + 1
            at += len(block)


def _read_rest(reader_class, path: str, cut: int) -> Dict[str, Any]:
    """A reader of `reader_class` (records.HistoryReader) of [cut, end), without the digest: its state."""
    child = reader_class(path, columnar=True, hashing=False)
    child.offset = cut
    child.read(final=True)
    for store in child.stores:
        store.finish()
    return {"stores": child.stores, "events": child.events, "problems": child.problems, "ends": child.ends,
            "slots": join(child._slots, np.int64), "lines": child.lines, "offset": child.offset,
            "torn": child._torn, "skipped": child.skipped}


def _send(fd: int, state: Dict[str, Any]) -> None:
    buffers: List[pickle.PickleBuffer] = []
    meta = pickle.dumps(state, protocol=5, buffer_callback=buffers.append)
    raws = [b.raw() for b in buffers]
    with os.fdopen(fd, "wb") as f:
        f.write(_HEADER.pack(len(meta), len(raws)))
        f.write(struct.pack(f"<{len(raws)}Q", *(m.nbytes for m in raws)))
        f.write(meta)
        for m in raws:
            f.write(m)


def _receive(fd: int) -> Optional[Dict[str, Any]]:
    """The child's state, or None when it sent none (it failed) or a short one."""
    with os.fdopen(os.dup(fd), "rb") as f:
        head = f.read(_HEADER.size)
        if len(head) != _HEADER.size:
            return None
        size, count = _HEADER.unpack(head)
        sizes = struct.unpack(f"<{count}Q", f.read(8 * count))
        meta = f.read(size)
        buffers = []
        for n in sizes:
            buf = bytearray(n)
            view, got = memoryview(buf), 0
            while got < n:
                k = f.readinto(view[got:])
                if not k:
                    return None
                got += k
            buffers.append(buf)
        if len(meta) != size:
            return None
        return pickle.loads(meta, buffers=buffers)


def merge(reader, state: Dict[str, Any]) -> None:
    """Append the child's state to `reader`'s, as if `reader` had read on from where it stopped."""
    shift = reader.lines
    reader.problems += [_LINE.sub(lambda m: f"line {int(m.group(1)) + shift}: ", p, count=1) for p in state["problems"]]
    _hash_rest(reader, state)
    slots = state["slots"]
    out = slots.copy()
    kept = slots >= 0
    out[kept] += len(reader.events)
    part, row = split_slots(slots[~kept])
    base = np.array([store.n for store in reader.stores], dtype=np.int64)
    out[~kept] = -1 - ((row + base[part]) * 4 + part)
    for mine, theirs in zip(reader.stores, state["stores"]):
        mine.extend(theirs)
    reader.events += state["events"]
    reader.ends += state["ends"]
    reader._slots.append(out)
    reader.lines += state["lines"]
    reader.offset = state["offset"]
    reader._torn = state["torn"]


def _hash_rest(reader, state: Dict[str, Any]) -> None:
    """The digest over the child's part, as one reader would have made it: each
    history_end's digest before its line, the skipped long lines left out, a newline
    after a torn last line."""
    marks = sorted([(e.pop("_offset_before"), "end", e) for e in state["ends"]] +
                   [(a, "skip", b) for a, b in state["skipped"]], key=lambda m: m[0])
    at, stop = reader.offset, state["offset"]
    view = memoryview(bytearray(1 << 22))   # (one buffer for every read: no pages to fault in each time)
    with open(reader.path, "rb") as f:
        f.seek(at)

        def upto(end: int) -> None:
            nonlocal at
            while at < end:
                got = f.readinto(view[:min(len(view), end - at)])
                if not got:
                    raise OSError("the history got shorter while it was read")
                reader.digest.update(view[:got])
                at += got

        for offset, what, x in marks:
            upto(offset)
            if what == "end":
                x["_digest_before"] = reader.digest.hexdigest()
            else:   # a long line left out of the digest
                f.seek(x)
                at = x
        upto(stop)
    if state["torn"]:
        reader.digest.update(b"\n")
