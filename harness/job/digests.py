"""sha256 digests of a checkpoint's files (pure: no Ray, no torch).

Every rank that reports a checkpoint writes, into it, a marker with the hash of
each file it wrote (ftharness.history.records.marker_name); a restore hashes the
files it finds and compares. Both runtimes (Ray Train's instrumentation and the
torchrun worker) use these functions, so a digest means the same on both.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Tuple

from ftharness.history.records import is_marker

DIGEST_LIMIT_BYTES = 512 * 1024 * 1024


def file_hashes(directory: str) -> Optional[Dict[str, str]]:
    """sha256 of each file of a checkpoint directory (markers excluded); None
    for checkpoints too large to hash cheaply."""
    files = sorted(os.path.relpath(os.path.join(r, f), directory)
                   for r, _, fs in os.walk(directory) for f in fs if not is_marker(f))
    if sum(os.path.getsize(os.path.join(directory, f)) for f in files) > DIGEST_LIMIT_BYTES:
        return None
    out = {}
    for rel in files:
        h = hashlib.sha256()
        with open(os.path.join(directory, rel), "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                h.update(chunk)
        out[rel] = h.hexdigest()
    return out


def digest_of(hashes: Optional[Dict[str, str]]) -> Optional[str]:
    """One digest over a rank's files (names and contents), for the history."""
    if hashes is None:
        return None
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()


def directory_intact(directory: str, markers: List[Dict[str, Any]]) -> Optional[bool]:
    """Whether every file each rank's marker lists is in `directory` with the
    content it had; None when nothing was hashed or the files cannot be read."""
    return restore_check(directory, markers)[0]


def restore_check(directory: str, markers: List[Dict[str, Any]]) -> Tuple[Optional[bool], Optional[Dict[str, str]]]:
    """What a restore records of the files it found: whether they are intact
    (`restored_intact`, as `directory_intact`) and, per rank that reported the
    checkpoint, the digest of that rank's files as restored (`restored_digests`,
    {rank: digest}), computed as the report computed its own, so the verdict can
    compare the two. (None, None) when nothing was hashed or nothing can be read."""
    wanted = {str(m.get("rank")): m["files"] for m in markers if isinstance(m.get("files"), dict)}
    if not wanted:
        return None, None
    try:
        have = file_hashes(directory)
    except OSError:
        return None, None
    if have is None:
        return None, None
    intact = all(have.get(rel) == sha for files in wanted.values() for rel, sha in files.items())
    digests = {rank: digest_of({rel: have.get(rel) for rel in files})
               for rank, files in wanted.items() if rank != "None"}
    return intact, digests
