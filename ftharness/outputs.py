"""The one way ftharness writes into an output folder (explore's OUT, `init`'s files): never
through a symlink, never out of the folder, with safe modes, and never over a file it did not
create in this run unless the caller asks (`overwrite=True`).

Every path is opened component by component from the folder's own descriptor (`dir_fd`,
`O_NOFOLLOW`, `O_DIRECTORY`), so a symlink planted anywhere below the folder (a file, a
subfolder) is refused, also one planted between a check and the write. A refusal is one line
(OutputRefused: a ScenarioError, so every route prints it and exits 2). What is written is
redacted first when asked (`secrets=True`: ftharness.safety.redact_secrets, URL credentials,
keys named like secrets, environment assignments of them). Layer 0: imports only the error
root and the pure guards.
"""

from __future__ import annotations

import errno
import os
import stat
from typing import Any, Iterable, List, Optional, Set, Tuple

from ftharness.errors import InputError, ScenarioError
from ftharness.inputs import shown

FILE_MODE = 0o644      # before the umask
SECRET_MODE = 0o600    # a file that may hold what a user would not show (kept for callers that ask)
DIR_MODE = 0o755

#: (device, inode) of every file this process created through `write_file`: those it may write again
_CREATED: Set[Tuple[int, int]] = set()


class OutputRefused(ScenarioError, InputError):
    """A write ftharness refuses (a symlink, a path out of the folder, a file it did not create)."""


def _parts(relative: str, root: str) -> List[str]:
    if not isinstance(relative, str) or not relative or "\x00" in relative or os.path.isabs(relative):
        raise OutputRefused(f"{shown(root)}: {shown(relative)}: must be a path inside the folder")
    parts = [p for p in relative.replace(os.sep, "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        raise OutputRefused(f"{shown(os.path.join(root, relative))}: leaves the output folder {shown(root)}")
    return parts


def _open_root(root: str) -> int:
    try:
        return os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as e:
        raise OutputRefused(f"{shown(root)}: cannot be written ({e.strerror})") from None


def _descend(fd: int, names: Iterable[str], root: str, create: bool, mode: int = DIR_MODE) -> int:
    """The descriptor of the folder `names` below `fd` (which it closes), made when `create`;
    a symlink or a file on the way is refused."""
    path = root
    for name in names:
        path = os.path.join(path, name)
        try:
            if create:
                try:
                    os.mkdir(name, mode, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.ELOOP, errno.ENOTDIR):
                raise OutputRefused(f"{shown(path)}: a symlink or a file where ftharness writes a folder of "
                                    f"{shown(root)}; it never writes through a symlink") from None
            raise OutputRefused(f"{shown(path)}: cannot be written ({e.strerror})") from None
        os.close(fd)
        fd = nxt
    return fd


def make_folder(root: str, relative: str = "", mode: int = DIR_MODE) -> str:
    """`root`/`relative` made (with `root` itself) and checked: no symlink below `root` on the way."""
    os.makedirs(root, mode=DIR_MODE, exist_ok=True)
    fd = _open_root(root)
    fd = _descend(fd, _parts(relative, root) if relative else [], root, create=True, mode=mode)
    os.close(fd)
    return os.path.join(root, relative) if relative else root


def write_file(root: str, relative: str, data: Any, overwrite: bool = False, mode: int = FILE_MODE,
               secrets: bool = False) -> str:
    """`data` (text or bytes) written to `root`/`relative`; the folders on the way are made. Refused
    (OutputRefused, one line): a symlink anywhere below `root` on the way or in the file's place, a
    path that leaves `root`, something that is no regular file in its place, and an existing file
    this process did not create unless `overwrite`. `secrets`: the text redacted first
    (ftharness.safety.redact_secrets). The path written is returned."""
    parts = _parts(relative, root)
    if secrets:
        from ftharness.safety import redact_secrets

        data = redact_secrets(data if isinstance(data, str) else bytes(data).decode("utf-8", "replace"))
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    os.makedirs(root, mode=DIR_MODE, exist_ok=True)
    fd = _descend(_open_root(root), parts[:-1], root, create=True)
    path = os.path.join(root, *parts)
    try:
        try:
            st = os.stat(parts[-1], dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None:
            if stat.S_ISLNK(st.st_mode):
                raise OutputRefused(f"{shown(path)}: a symlink; ftharness never writes through one")
            if not stat.S_ISREG(st.st_mode):
                raise OutputRefused(f"{shown(path)}: not a regular file (a folder, a FIFO, a device)")
            if not overwrite and (st.st_dev, st.st_ino) not in _CREATED:
                raise OutputRefused(f"{shown(path)}: already exists and was not written by this run; "
                                    f"ftharness does not overwrite it")
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
        flags |= os.O_TRUNC if st is not None else os.O_EXCL
        try:
            out = os.open(parts[-1], flags, mode, dir_fd=fd)
        except OSError as e:
            if e.errno in (errno.ELOOP, errno.EEXIST):
                raise OutputRefused(f"{shown(path)}: appeared (a symlink, a file) while ftharness wrote it; "
                                    f"not written") from None
            raise OutputRefused(f"{shown(path)}: cannot be written ({e.strerror})") from None
    finally:
        os.close(fd)
    with os.fdopen(out, "wb") as f:
        st = os.fstat(f.fileno())
        _CREATED.add((st.st_dev, st.st_ino))
        f.write(raw)
    return path


def created_here(path: str) -> bool:
    """Whether `path` (not followed) is a file this process created through `write_file`."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) in _CREATED


#: entries of an existing output folder looked at for planted links (a long exploration's OUT holds
#: tens of thousands); a folder with more is refused rather than half-checked
MAX_OUT_ENTRIES = 200_000


def planted_link_problem(root: str, limit: int = MAX_OUT_ENTRIES) -> Optional[str]:
    """Why the existing folder `root`, that a command is about to write into (`run --out`, a
    continued explore, a matrix or bisect folder), is no place to write: a symlink below it whose
    target (resolved) lies outside it. A run's own writes (scenario.yaml, summary.json, logs/ at
    teardown) and Ray's (storage/) are plain opens that would follow it out of the folder, after a
    cluster started: this refuses it before. None when `root` is absent or holds no such link;
    `root` itself may be a link (the folder the user named). Reads no file."""
    if not os.path.isdir(root):
        return None
    base = os.path.realpath(root)
    seen = 0
    for folder, dirs, files in os.walk(root):   # links to folders are listed, not followed
        for name in dirs + files:
            seen += 1
            path = os.path.join(folder, name)
            if os.path.islink(path):
                real = os.path.realpath(path)
                if real != base and not real.startswith(base.rstrip(os.sep) + os.sep):
                    return (f"{shown(path)}: a symlink out of the folder (to {shown(real, 60)}); ftharness never "
                            f"writes through one: remove it or choose a new folder")
        if seen > limit:
            return f"{shown(root)}: more than {limit} entries; choose a new folder"
    return None


def inside_problem(root: str, path: str) -> Optional[str]:
    """Why `path` is no place below `root` this writer writes (a symlink on the way, outside); None if it is."""
    rel = os.path.relpath(os.path.abspath(path), os.path.abspath(root))
    if rel == "." or rel.startswith(".."):
        return f"{shown(path)}: not inside {shown(root)}"
    cur = os.path.abspath(root)
    for part in rel.split(os.sep):
        cur = os.path.join(cur, part)
        if os.path.islink(cur):
            return f"{shown(cur)}: a symlink; ftharness never writes through one"
    return None
