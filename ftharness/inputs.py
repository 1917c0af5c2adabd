"""The one way ftharness reads what a user or a handed folder gives it.

Every file that comes from input (a scenario, a results folder's history, summary,
scenario copy or matrix book, a journal, a user module `validate` parses, a file
`doctor` reads) is opened here: only a regular file, never one under /proc, /sys
or /dev (symlinks resolved, and the file actually opened checked again), opened
non-blocking so a FIFO never hangs the reader, its size capped before it is read
(at most cap + 1 bytes are ever read). Every path from input that must stay inside
a folder (`workload.working_dir`, the code `--submit` ships, a resumed run's storage)
is confined here with symlinks resolved. A refusal is one line naming the file or
field and what is allowed (InputRefused: a ScenarioError, so every route prints it
and exits 2). Layer 0: imports only the error root.
"""

from __future__ import annotations

import os
import re
import stat
from typing import Any, Callable, Dict, Iterable, List, Optional, Tuple

from ftharness.errors import InputError, ScenarioError

SYSTEM_FOLDERS = ("/proc", "/sys", "/dev")
#: the size caps of the files ftharness reads whole
MAX_JSON_BYTES = 64 << 20        # summary.json, a journal, a matrix book (a long soak's summary is a few MiB)
MAX_SCENARIO_BYTES = 256 * 1024  # scenario.yaml (ftharness.scenarios.schema.MAX_FILE_BYTES)
MAX_SOURCE_BYTES = 4 << 20       # a Python module validate or doctor parses
MAX_SHOWN = 120                  # characters of a path an error line shows


class InputRefused(ScenarioError, InputError):
    """A file or path from input that ftharness does not read or use; one line for the user."""


def shown(path: Any, limit: int = MAX_SHOWN) -> str:
    """A path as an error line shows it: control characters escaped, a long one cut in the middle."""
    text = re.sub(r"[\x00-\x1f\x7f-\x9f]", lambda m: f"\\x{ord(m.group()):02x}", str(path))
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 2):]


def _under_system(real: str) -> Optional[str]:
    for s in SYSTEM_FOLDERS:
        if real == s or real.startswith(s + os.sep):
            return s
    return None


def system_path_problem(path: str) -> Optional[str]:
    """Why `path` (symlinks resolved) is no input ftharness reads: under /proc, /sys or /dev; or None."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return "cannot be resolved"
    where = _under_system(real)
    return f"is under {where} ({shown(real, 60)}), not a file ftharness reads" if where else None


def _opened_path(fd: int) -> Optional[str]:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return None


def open_input(path: str, what: str = "") -> "os.FileIO":
    """`path` opened for reading in binary (blocking again once it is known to be a regular
    file). Raises InputRefused for a file ftharness does not read (not regular, under /proc,
    /sys or /dev), OSError when it cannot be opened (FileNotFoundError: absent)."""
    label = what or shown(path)
    why = system_path_problem(path)
    if why:
        raise InputRefused(f"{label}: {why}; give a regular file")
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputRefused(f"{label}: not a regular file (a folder, a device, a FIFO or a socket); "
                               f"give a regular file")
        opened = _opened_path(fd)   # what was opened, not what the name said a moment before
        if opened and opened.startswith("/") and _under_system(opened):
            raise InputRefused(f"{label}: is under {_under_system(opened)}, not a file ftharness reads; "
                               f"give a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path: str, cap: int, what: str = "", note: str = "") -> bytes:
    """The bytes of the regular file `path`, at most `cap` of them: its size is checked before
    reading, and at most cap + 1 bytes are read (a file that grows is caught too). Every
    problem (absent, unreadable, not regular, too large) is one InputRefused line."""
    label = what or shown(path)
    note = f"; {note}" if note else ""
    try:
        f = open_input(path, label)
    except InputRefused:
        raise
    except FileNotFoundError:
        raise InputRefused(f"{label}: no such file") from None
    except IsADirectoryError:
        raise InputRefused(f"{label}: a folder, not a file") from None
    except (OSError, ValueError, TypeError) as e:
        raise InputRefused(f"{label}: cannot be read ({getattr(e, 'strerror', None) or type(e).__name__})") from None
    with f:
        try:
            size = os.fstat(f.fileno()).st_size
            if size > cap:
                raise InputRefused(f"{label}: {size} bytes; at most {cap} are read{note}")
            raw = f.read(cap + 1)
        except OSError as e:
            raise InputRefused(f"{label}: cannot be read ({e.strerror or type(e).__name__})") from None
    if len(raw) > cap:
        raise InputRefused(f"{label}: more than {cap} bytes; at most {cap} are read{note}")
    return raw


def file_problem(path: str, cap: Optional[int] = None, what: str = "") -> Optional[str]:
    """Why `path`, when it exists, is no file ftharness reads (see open_input; over `cap` bytes
    when given); None when it is absent or fine. Reads nothing."""
    if not os.path.lexists(path):
        return None
    try:
        with open_input(path, what) as f:
            size = os.fstat(f.fileno()).st_size
    except InputRefused as e:
        return str(e)
    except FileNotFoundError:   # a dangling symlink: as absent
        return None
    except (OSError, ValueError) as e:
        return f"{what or shown(path)}: cannot be read ({getattr(e, 'strerror', None) or type(e).__name__})"
    if cap is not None and size > cap:
        return f"{what or shown(path)}: {size} bytes; at most {cap} are read"
    return None


# ------------------------------------------------------------------ results folders
#: the files of a results folder (or a matrix folder) and the size each may have (None: streamed)
RESULTS_FILES = (("history.jsonl", None), ("summary.json", MAX_JSON_BYTES),
                 ("scenario.yaml", MAX_SCENARIO_BYTES), ("cells.jsonl", MAX_JSON_BYTES))
MAX_FOLDER_ENTRIES = 10_000      # entries of a folder of results folders looked at


def results_folder_problem(path: str) -> Optional[str]:
    """Why the results folder `path` (or a folder of them, one level down, as `report` and
    `compare` take it), or the journal file `path`, holds a file ftharness does not read: a
    FIFO, a device, a file under /proc, /sys or /dev, or one larger than its cap. None when
    every file it would read is fine (a missing file is the route's to judge). Reads nothing."""
    if not isinstance(path, str) or not path:
        return None
    why = system_path_problem(path)
    if why:
        return f"{shown(path)}: {why}"
    if os.path.lexists(path) and not os.path.isdir(path):
        return file_problem(path, MAX_JSON_BYTES)
    folders = [path]
    try:
        with os.scandir(path) as it:
            for i, entry in enumerate(it):
                if i >= MAX_FOLDER_ENTRIES:
                    return f"{shown(path)}: more than {MAX_FOLDER_ENTRIES} entries; not a results folder"
                if entry.is_dir(follow_symlinks=True):
                    folders.append(entry.path)
    except OSError:
        return None
    for folder in folders:
        for name, cap in RESULTS_FILES:
            why = file_problem(os.path.join(folder, name), cap, shown(os.path.join(folder, name)))
            if why:
                return why
    return None


def first_problem(problems: Iterable[Optional[str]]) -> Optional[str]:
    return next((p for p in problems if p), None)


# ------------------------------------------------------------------ confinement
def inside(path: str, root: str) -> bool:
    """Whether `path` is `root` or below it, both with symlinks resolved."""
    real, base = os.path.realpath(path), os.path.realpath(root)
    return real == base or real.startswith(base.rstrip(os.sep) + os.sep)


def confined(root: str, relative: str, field: str) -> str:
    """`relative` joined to `root`, symlinks resolved, refused (InputRefused naming `field`) when it
    leaves `root`: an absolute path, `..`, or a symlink out of the folder."""
    if not isinstance(relative, str) or not relative or "\x00" in relative:
        raise InputRefused(f"{field}: must be a non-empty path inside {shown(root)}")
    target = os.path.join(root, relative)
    if os.path.isabs(relative) or not inside(target, root):
        raise InputRefused(f"{field}: {shown(relative)} leaves the scenario's folder {shown(root)} "
                           f"(symlinks resolved); allowed: a folder inside it")
    return os.path.realpath(target)


def links_leaving(root: str, limit: int = 100_000) -> List[str]:
    """The symlinks under `root` whose targets lie outside it (symlinks resolved): what a copy
    or an upload that follows links would take from elsewhere. At most `limit` entries walked."""
    out, seen = [], 0
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            seen += 1
            p = os.path.join(folder, name)
            if os.path.islink(p) and not inside(p, root):
                out.append(p)
        if seen > limit:
            out.append(f"{root} (more than {limit} entries)")
            break
    return out


# ------------------------------------------------------------------ release strings
_RELEASE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(\.(0|[1-9][0-9]*))?")


def release_text_problem(text: Any) -> Optional[str]:
    """Why `text` is not written as a Ray release (ASCII digits, MAJOR.MINOR[.PATCH], no leading
    zeros: `2.060.0` or non-ASCII digits would be the same release under another name); None if it is."""
    if not isinstance(text, str) or not text.isascii() or not _RELEASE.fullmatch(text):
        return "a release is MAJOR.MINOR[.PATCH] in ASCII digits without leading zeros, e.g. 2.60.0"
    return None


# ------------------------------------------------------------------ bounded JSON
MAX_JSON_DEPTH = 32              # nesting deeper than this is no file ftharness wrote
MAX_JSON_CONTAINERS = 500_000    # objects and arrays one file may hold (counted on the bytes, before parsing)
MAX_JSON_ITEMS = 2_000_000       # values one file may hold (its commas, counted the same way)


def read_json_bounded(path: str, cap: int = MAX_JSON_BYTES, what: str = "", max_depth: int = MAX_JSON_DEPTH,
                      max_containers: int = MAX_JSON_CONTAINERS, max_items: int = MAX_JSON_ITEMS) -> Any:
    """The JSON value of the regular file `path` (read_bounded: at most `cap` bytes, never a FIFO
    or a device), with its objects and arrays counted on the bytes before it is parsed (64 MiB of
    `[{},...]` would take gigabytes), its values counted the same way (its commas), and its
    nesting bounded. Every problem is one InputRefused line."""
    label = what or shown(path)
    return json_value(read_bounded(path, cap, label), label, max_depth, max_containers, max_items)


# ------------------------------------------------------------------ one reader, a schema per kind
class FileKind:
    """What one kind of input file may be: its format (json, jsonl, yaml, text), its size, its
    nesting and value counts (JSON), the type of its top-level value and the keys it must hold.
    `allowed` is the clause every refusal of such a file ends with."""

    __slots__ = ("name", "fmt", "max_bytes", "top", "required", "max_depth", "max_containers", "max_items")

    def __init__(self, name: str, fmt: str, max_bytes: int, top: Optional[type] = None,
                 required: Tuple[str, ...] = (), max_depth: int = MAX_JSON_DEPTH,
                 max_containers: int = MAX_JSON_CONTAINERS, max_items: int = MAX_JSON_ITEMS):
        self.name, self.fmt, self.max_bytes, self.top, self.required = name, fmt, max_bytes, top, required
        self.max_depth, self.max_containers, self.max_items = max_depth, max_containers, max_items

    @property
    def allowed(self) -> str:
        what = {dict: "an object", list: "a list", None: "a value"}[self.top] if self.fmt != "jsonl" \
            else "one JSON object a line"
        keys = f" with {', '.join(self.required)}" if self.required else ""
        depth = f", nested at most {self.max_depth} deep" if self.fmt in ("json", "jsonl") else ""
        return f"allowed: {self.name}, a regular {self.fmt.upper()} file of at most {self.max_bytes} bytes{depth}, " \
               f"holding {what}{keys}"


#: every kind of file ftharness reads that it did not just write itself (docs/safety.md): a kind's
#: caps are those of the largest such file ftharness writes, with room to spare
KINDS: Dict[str, FileKind] = {
    "json": FileKind("a JSON file of a results folder", "json", MAX_JSON_BYTES),
    "summary": FileKind("a run's summary.json", "json", MAX_JSON_BYTES, dict),
    "journal": FileKind("a Chaos Toolkit journal", "json", MAX_JSON_BYTES, dict),
    "skipped": FileKind("a suite's skipped.json", "json", 4 << 20, list),
    "cells": FileKind("a matrix's cells.jsonl", "jsonl", MAX_JSON_BYTES, dict, ("cell",)),
    "scenario_copy": FileKind("a results folder's scenario.yaml", "yaml", MAX_SCENARIO_BYTES, dict),
    "sources_list": FileKind("a SOURCES.txt of results folders", "text", 1 << 20),
    "source": FileKind("a Python module", "text", MAX_SOURCE_BYTES),
}


def read_input(path: str, kind: str, what: str = "", parse_yaml: Optional[Callable[[bytes, str], Any]] = None) -> Any:
    """The content of the file `path` of kind `kind` (KINDS): parsed JSON (json), a list of objects
    (jsonl), parsed YAML (yaml: `parse_yaml`, the caller's bounded loader, scenarios/language/yaml_reader.py's
    load_yaml_text, which this layer does not import) or text. Only a regular file
    (never a FIFO, a device, a file under /proc, /sys or /dev), at most the kind's bytes, nesting,
    objects and values, of the kind's top-level type and keys. Every problem is one InputRefused
    line naming the file and what is allowed (a route prints it and exits 2)."""
    spec = KINDS[kind]
    label = what or shown(path)
    try:
        raw = read_bounded(path, spec.max_bytes, label)
        value = _parse(raw, spec, label, parse_yaml)
    except InputRefused as e:
        raise InputRefused(f"{one_clause(str(e))}; {spec.allowed}") from None
    _check_shape(value, spec, label)
    return value


def one_clause(text: str, limit: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _parse(raw: bytes, spec: FileKind, label: str, parse_yaml: Optional[Callable[[bytes, str], Any]]) -> Any:
    if spec.fmt == "text":
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise InputRefused(f"{label}: not UTF-8 text (byte {e.start})") from None
    if spec.fmt == "yaml":
        if parse_yaml is None:
            raise TypeError(f"read_input: a {spec.name} needs the caller's parse_yaml")
        try:
            return parse_yaml(raw, label)
        except ScenarioError as e:
            raise InputRefused(str(e)) from None
    if spec.fmt == "json":
        return json_value(raw, label, spec.max_depth, spec.max_containers, spec.max_items)
    rows = []
    counted(raw, label, spec.max_containers, spec.max_items)
    for i, line in enumerate(raw.split(b"\n"), 1):
        if line.strip():
            rows.append(json_value(line, f"{label} line {i}", spec.max_depth, spec.max_containers,
                                   spec.max_items))
    return rows


def _check_shape(value: Any, spec: FileKind, label: str) -> None:
    items = value if spec.fmt == "jsonl" else [value]
    for i, item in enumerate(items, 1):
        where = f"{label} entry {i}" if spec.fmt == "jsonl" else label
        if spec.top is not None and not isinstance(item, spec.top):
            expected = {dict: "object", list: "list"}.get(spec.top, spec.top.__name__)
            raise InputRefused(f"{where}: not a JSON {expected} (a {type(item).__name__}); {spec.allowed}")
        missing = [k for k in spec.required if k not in item]
        if missing:
            raise InputRefused(f"{where}: no {', '.join(missing)}; {spec.allowed}")


def counted(raw: bytes, label: str, max_containers: int = MAX_JSON_CONTAINERS, max_items: int = MAX_JSON_ITEMS) -> None:
    """Refuse JSON bytes holding more objects and arrays, or values, than a file ftharness writes
    (counted on the bytes: parsing 64 MiB of `[{},...]` would take gigabytes)."""
    if raw.count(b"{") + raw.count(b"[") > max_containers:
        raise InputRefused(f"{label}: more than {max_containers} objects and arrays; not a file ftharness wrote")
    if raw.count(b",") > max_items:
        raise InputRefused(f"{label}: more than {max_items} values; not a file ftharness wrote")


def json_value(raw: bytes, label: str, max_depth: int = MAX_JSON_DEPTH, max_containers: int = MAX_JSON_CONTAINERS,
               max_items: int = MAX_JSON_ITEMS) -> Any:
    """JSON bytes parsed within the counts (`counted`) and nesting bounds; InputRefused otherwise."""
    import json

    counted(raw, label, max_containers, max_items)
    try:
        value = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise InputRefused(f"{label}: nested more than {max_depth} levels deep") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise InputRefused(f"{label}: not JSON ({shown(str(e).splitlines()[0] if str(e) else type(e).__name__, 80)})") from None
    stack = [(value, 1)]
    while stack:
        node, d = stack.pop()
        if d > max_depth:
            raise InputRefused(f"{label}: nested more than {max_depth} levels deep")
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return value
