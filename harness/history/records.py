"""Reading a history file back, and judging whether it is complete (pure, no Ray).

The history actor (harness.history) writes one JSON object per line and, when
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
with any problem cannot support a PASS (design.md: INCONCLUSIVE).
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List

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


@dataclass
class HistoryRead:
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
    the collector resumes (when it was on) at the end."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_history(path: str) -> HistoryRead:
    """Events in `seq` order and every reason the record is not whole."""
    with gc_paused():
        return _read_history(path)


def _read_history(path: str) -> HistoryRead:
    path = history_path(path)
    events: List[Dict[str, Any]] = []
    problems: List[str] = []
    digest = hashlib.sha256()   # of the lines read so far, each with its newline
    strings: Dict[str, str] = {}   # one copy of each string value (kinds, sources, ids repeat on every line)
    try:
        with open(path, "rb") as f:
            for i, raw in enumerate(f):   # one line at a time: the file is never held whole
                torn = not raw.endswith(b"\n")   # only the last line can lack its newline
                line = raw if torn else raw[:-1]
                if not line.strip():
                    digest.update(line + b"\n")
                    continue
                try:
                    e = json.loads(line.decode("utf-8"))
                    if not isinstance(e, dict):
                        raise ValueError("not an object")
                except (ValueError, UnicodeDecodeError):
                    problems.append(f"line {i + 1}: {'torn last line dropped' if torn else 'unreadable'}")
                    digest.update(line + b"\n")
                    continue
                for k, v in e.items():
                    if type(v) is str:
                        e[k] = strings.setdefault(v, v)
                if e.get("kind") == "history_end":   # the manifest's digest covers the lines before it
                    e["_digest_before"] = digest.hexdigest()
                digest.update(line + b"\n")
                events.append(e)
    except OSError as e:
        return HistoryRead([], [f"no history: {path} cannot be read ({e.strerror or e})"])
    try:
        problems += integrity_problems(events)
    except Exception as e:  # noqa: BLE001 - a record too damaged to check is incomplete
        problems.append(f"the history's bookkeeping is damaged ({type(e).__name__})")
    for e in events:
        e.pop("_line", None)
        e.pop("_digest_before", None)
    events.sort(key=lambda e: _int(e.get("seq")))
    if len(problems) > MAX_PROBLEMS_SHOWN:
        problems = problems[:MAX_PROBLEMS_SHOWN] + [f"... and {len(problems) - MAX_PROBLEMS_SHOWN} more"]
    return HistoryRead(events, problems)


def read_events(path: str) -> List[Dict[str, Any]]:
    """Only the events of a history file, in `seq` order (see `read_history`)."""
    return read_history(path).events


def _int(v: Any) -> int:
    try:
        return int(v)
    except (TypeError, ValueError):
        return 0


def integrity_problems(events: List[Dict[str, Any]]) -> List[str]:
    """Gaps, duplicates and a missing or disagreeing `history_end`.

    `events` in file order; a `history_end` may carry `_digest_before` (set by
    `read_history`: the digest of the lines before it) for the digest check."""
    if not events:
        return ["the history is empty"]
    problems: List[str] = []
    seqs = [_int(e.get("seq")) for e in events]
    if sorted(seqs) != list(range(1, len(seqs) + 1)):
        missing = sorted(set(range(1, max(seqs + [0]) + 1)) - set(seqs))
        dups = sorted(s for s, n in Counter(seqs).items() if n > 1)
        what = []
        if missing:
            what.append(f"seq {_ranges(missing)} missing")
        if dups:
            what.append(f"seq {_ranges(dups)} duplicated")
        problems.append("events " + ", ".join(what or ["out of sequence"]))
    elif seqs != sorted(seqs):
        problems.append("events out of order in the file (an append-only file is never reordered)")
    problems += _emitter_gaps(events)
    ends = [e for e in events if e.get("kind") == "history_end"]
    if not ends:
        problems.append("no history_end: the run did not close its history (crash or kill of the harness)")
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
            missing = sorted(set(range(1, max(nums) + 1)) - set(nums))
            if missing:
                out.append(f"emitter {emitter}: event(s) {_ranges(missing)} never reached the history")
            else:
                out.append(f"emitter {emitter}: events duplicated or out of order ({nums[:8]})")
    return out


def _manifest_problems(events: List[Dict[str, Any]], end: Dict[str, Any]) -> List[str]:
    out = []
    if not end.get("seal"):
        out.append("history_end has no seal (written by an older ftharness, or edited)")
    elif end["seal"] != seal(end):
        out.append("history_end was changed after it was written (seal mismatch)")
    before = [e for e in events if _int(e.get("seq")) < _int(end.get("seq"))]
    counts: Dict[str, int] = {}
    for e in before:
        if e.get("emitter") is not None:
            counts[str(e["emitter"])] = counts.get(str(e["emitter"]), 0) + 1
    declared = {str(k): _int(v) for k, v in (end.get("emitters") or {}).items()}
    for emitter in sorted(set(declared) | set(counts)):
        if declared.get(emitter, 0) != counts.get(emitter, 0):
            out.append(f"emitter {emitter}: history_end counts {declared.get(emitter, 0)} event(s), "
                       f"the file holds {counts.get(emitter, 0)}")
    if end.get("events") is not None and _int(end["events"]) != len(before):
        out.append(f"history_end counts {end['events']} event(s) before it, the file holds {len(before)}")
    if end.get("digest") and "_digest_before" in end and end["digest"] != end["_digest_before"]:
        out.append("history digest differs from history_end's: the file was changed after it was written")
    if any(_int(e.get("seq")) > _int(end.get("seq")) for e in events):
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


def load_history(path: str):
    """A results folder's (or a history file's) events as a pandas DataFrame."""
    import pandas as pd

    df = pd.DataFrame(read_events(path))
    if not df.empty:
        df["time"] = pd.to_datetime(df["t"], unit="s")
    return df
