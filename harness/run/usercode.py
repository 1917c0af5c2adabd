"""What of a user's code ships to the Ray workers, and how.

A user's train module imports its neighbours (`from model import Net`, a package of
the folder); the workers have none of them unless they are shipped. The code root is
`workload.working_dir` when declared (a folder beside the scenario: all of it ships,
as a Ray user's `runtime_env={"working_dir": ...}` would), else the scenario's folder,
of which only the top-level modules and packages the job imports (and those its
module:function fields name) ship: a `settings.py` with a secret beside it stays here.
`workload.files` adds the data the job reads (paths or globs beside the scenario, inside
the code root), at the same place relative to the code. Both `run` (a runtime
environment's working_dir, on the embedded cluster and on an existing one) and `run
--submit` (the job's working dir) ship the same units, and an explore finding's folder
gets the same layout beside its scenario.

Shipped by one bounded copy (`Copy`): never a symlink out of the scenario's folder, never a
loop, only regular files and folders, at most MAX_CODE_BYTES and MAX_CODE_ENTRIES counted
on what is copied as it is copied (a `-> .` link measures 28 bytes but copies forever), and
nothing of a refused copy left behind. Never shipped: EXCLUDED (virtualenvs, `.git`, caches,
credential files and folders) less `workload.ship_include`, plus `workload.ship_exclude`, and
results folders.
"""

from __future__ import annotations

import fnmatch
import os
import shutil
import stat
import sys
import tempfile
from typing import Iterator, List, NamedTuple, Optional, Sequence, Tuple

from ftharness.errors import ScenarioError

#: tools' folders, caches and build output never shipped (a user's `.gitignore`-style expectations)
TOOLING = (".git", ".hg", ".svn", ".venv", "venv", "env", ".env", "__pycache__", "*.pyc", ".pytest_cache",
           ".hypothesis", ".mypy_cache", ".ruff_cache", ".tox", ".nox", "node_modules", "*.egg-info",
           "results", "build", "dist", ".ipynb_checkpoints")
#: credential files and folders never shipped (a `working_dir: .` in a home-like folder would send
#: them to every node); `workload.ship_include` ships one anyway
CREDENTIALS = (".env.*", ".netrc", "_netrc", ".ssh", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*", ".aws",
               ".gnupg", "*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.kdbx", ".pypirc",
               ".docker", ".kube", ".azure", ".gcloud", "credentials", "credentials.*", ".git-credentials",
               ".npmrc", ".yarnrc", ".boto", ".s3cfg", ".pgpass", ".htpasswd", "secrets", "secrets.*")
EXCLUDED = TOOLING + CREDENTIALS
#: what one run ships at most (Ray's own bound on a package is 512 MiB; code is far less)
MAX_CODE_BYTES = 64 * 1024 * 1024
#: files and folders one run ships at most, and entries a copy or a glob looks at
MAX_CODE_ENTRIES = 20_000
MAX_LOOKED_AT = 10 * MAX_CODE_ENTRIES
MAX_DEPTH = 64
FIELDS = ("entrypoint", "datasets", "dataset_config")
RESULTS_MARKERS = ("history.jsonl", "summary.json")


def _amount(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n >= 2**20 else f"{n:,} bytes"


def _shown(path: str) -> str:
    from ftharness.inputs import shown

    return shown(path)


class Rules(NamedTuple):
    """What is never shipped: EXCLUDED less `include`, plus `exclude` (base names, fnmatch)."""
    exclude: Tuple[str, ...] = ()
    include: Tuple[str, ...] = ()

    def excluded(self, name: str, path: str) -> bool:
        if any(fnmatch.fnmatch(name, p) for p in self.exclude):
            return True
        if any(fnmatch.fnmatch(name, p) for p in EXCLUDED) and not any(fnmatch.fnmatch(name, p) for p in self.include):
            return True
        # a results folder (it holds a run's history or summary) never ships
        return os.path.isdir(path) and any(os.path.exists(os.path.join(path, f)) for f in RESULTS_MARKERS)


def rules_of(scenario) -> Rules:
    w = scenario.workload
    return Rules(tuple(getattr(w, "ship_exclude", None) or ()), tuple(getattr(w, "ship_include", None) or ()))


def code_root(scenario) -> Optional[str]:
    """The folder the job's modules are imported from: workload.working_dir (resolved beside
    the scenario) or the scenario's folder; None for a scenario without a folder."""
    base = getattr(scenario, "base_dir", None)
    declared = scenario.workload.working_dir
    if not declared:
        return base
    from ftharness.inputs import confined

    root = confined(base or os.getcwd(), declared, "workload.working_dir")   # symlinks resolved: inside the folder
    if not os.path.isdir(root):
        raise ScenarioError(f"workload.working_dir: {declared}: no such folder beside the scenario")
    return root


def excluded(name: str, path: str, rules: Optional[Rules] = None) -> bool:
    """A name never shipped (EXCLUDED, or the scenario's `rules`), or a results folder."""
    return (rules or Rules()).excluded(name, path)


def _unit(root: str, top: str) -> Optional[str]:
    """`top.py` or the package folder `top/` under root, if there."""
    for candidate in (os.path.join(root, f"{top}.py"), os.path.join(root, top)):
        if os.path.isfile(candidate) or os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    return None


def named_units(scenario, root: str) -> List[str]:
    """The top-level module or package each module:function field names."""
    found = []
    for field in FIELDS:
        ref = getattr(scenario.workload, field, None)
        if ref:
            hit = _unit(root, ref.partition(":")[0].split(".")[0])
            if hit and hit not in found:
                found.append(hit)
    return found


def imported_units(root: str) -> List[str]:
    """The top-level modules and packages of `root` that this process has imported (the job's
    modules import their neighbours when resolve_function imports them)."""
    prefix = os.path.abspath(root) + os.sep
    found = set()
    for module in list(sys.modules.values()):
        origin = os.path.abspath(getattr(module, "__file__", None) or "")
        if origin.startswith(prefix):
            top = os.path.relpath(origin, root).split(os.sep)[0]
            top = top[:-3] if top.endswith(".py") else top
            hit = _unit(root, top)
            if hit:
                found.add(hit)
    return sorted(found)


def units(scenario) -> List[str]:
    """The files and folders of the code root that ship: all of a declared working_dir (less
    what is never shipped), else the named and imported modules and packages of the scenario's
    folder. Each is walked once, as it would be copied (Copy, counting only): a symlink out of
    the scenario's folder, a loop or too much code is refused here, before anything is sent."""
    root = code_root(scenario)
    if not root:
        return []
    rules = rules_of(scenario)
    if scenario.workload.working_dir:
        found = [os.path.join(root, n) for n in sorted(os.listdir(root)) if not rules.excluded(n, os.path.join(root, n))]
    else:
        found = sorted(set(named_units(scenario, root)) | set(imported_units(root)))
    counter = Copy(getattr(scenario, "base_dir", None) or root, rules, None, field=_field(scenario))
    for path in found:
        counter.add(path, os.path.basename(path))
    return found


def _field(scenario) -> str:
    return "workload.working_dir" if scenario.workload.working_dir else "workload"


# ------------------------------------------------------------------ workload.files
def _magic(part: str) -> bool:
    return any(c in part for c in "*?[")


def _glob(base: str, pattern: str, rules: Rules) -> List[str]:
    """The paths under `base` that `pattern` names (`/`-separated; `*`, `?`, `[..]` within a
    name, `**` for any folders; a `*` matches no dot name, as in a shell). Never follows a
    folder link while searching; what is never shipped is left out of a glob and refused when
    named literally. At most MAX_LOOKED_AT entries looked at."""
    parts = [p for p in pattern.replace("\\", "/").split("/") if p not in ("", ".")]
    looked = [0]
    found: List[str] = []

    def entries(folder: str) -> Iterator[os.DirEntry]:
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    looked[0] += 1
                    if looked[0] > MAX_LOOKED_AT:
                        raise ScenarioError(f"workload.files: {pattern}: more than {MAX_LOOKED_AT:,} entries looked "
                                            f"at under {_shown(base)}; name the files more narrowly")
                    yield entry
        except (NotADirectoryError, FileNotFoundError, PermissionError):
            return

    def walk(path: str, i: int) -> None:
        if i == len(parts):
            found.append(path)
            return
        part = parts[i]
        if part == "**":
            walk(path, i + 1)
            for e in entries(path):
                if e.is_dir(follow_symlinks=False) and not e.name.startswith(".") and not rules.excluded(e.name, e.path):
                    walk(e.path, i)
        elif not _magic(part):
            nxt = os.path.join(path, part)
            if os.path.lexists(nxt):
                if rules.excluded(part, nxt):
                    raise ScenarioError(f"workload.files: {pattern}: {part} is never shipped (credentials, virtualenvs, "
                                        f"caches, results); name it in workload.ship_include to ship it")
                walk(nxt, i + 1)
        else:
            for e in sorted(entries(path), key=lambda e: e.name):
                if fnmatch.fnmatch(e.name, part) and (part.startswith(".") or not e.name.startswith(".")) \
                        and not rules.excluded(e.name, e.path):
                    walk(e.path, i + 1)

    walk(base, 0)
    return sorted(set(found))


def declared_files(scenario) -> List[str]:
    """The paths `workload.files` names, each inside the scenario's folder (symlinks resolved)
    and inside the code root (the workers see the files where the code sees them); a pattern
    that names nothing is refused in one line, as is any path out of the folder."""
    patterns = list(getattr(scenario.workload, "files", None) or ())
    if not patterns:
        return []
    from ftharness.inputs import inside

    base = os.path.abspath(getattr(scenario, "base_dir", None) or os.getcwd())
    root = os.path.abspath(code_root(scenario) or base)
    rules = rules_of(scenario)
    out: List[str] = []
    for pattern in patterns:
        matches = _glob(base, pattern, rules)
        if not matches:
            raise ScenarioError(f"workload.files: {pattern}: nothing beside the scenario matches it "
                                f"({_shown(base)}); allowed: paths or globs of files and folders there")
        for path in matches:
            if not inside(path, base):
                raise ScenarioError(f"workload.files: {pattern}: {_shown(os.path.relpath(path, base))} is a symlink out "
                                    f"of the scenario's folder; only files inside it ship")
            if os.path.relpath(path, root).split(os.sep)[0] == "..":
                raise ScenarioError(f"workload.files: {pattern}: {_shown(os.path.relpath(path, base))} is outside "
                                    f"workload.working_dir ({scenario.workload.working_dir}), the workers' code root; "
                                    f"move it there")
            if path not in out:
                out.append(path)
    return out


def shipment(scenario) -> List[Tuple[str, str, str]]:
    """(source path, its place relative to the code root, the field it ships for): the code
    units and the declared files, nothing nested in something already listed."""
    root = code_root(scenario)
    if not root:
        return []
    items = [(p, os.path.basename(p), _field(scenario)) for p in units(scenario)]
    for path in declared_files(scenario):
        items.append((path, os.path.relpath(os.path.abspath(path), os.path.abspath(root)), "workload.files"))
    kept: List[Tuple[str, str, str]] = []
    for item in sorted(items, key=lambda it: (it[1].count(os.sep), it[1])):
        if not any(item[1] == k[1] or item[1].startswith(k[1] + os.sep) for k in kept):
            kept.append(item)
    return kept


# ------------------------------------------------------------------ the bounded copy
class Copy:
    """One copy of files and folders into `dest` (None: counted only), bounded on what it
    copies as it copies it. Symlinks are followed only to targets inside `root` (the
    scenario's folder) and copied as what they point at; a folder that leads back to one being
    walked is a loop; FIFOs, sockets and devices are refused; a file is read with O_NOFOLLOW and
    O_NONBLOCK and counted per chunk. Every refusal is one ScenarioError line naming `field`."""

    def __init__(self, root: str, rules: Rules, dest: Optional[str], field: str = "workload",
                 max_bytes: int = MAX_CODE_BYTES, max_entries: int = MAX_CODE_ENTRIES):
        self.root, self.rules, self.dest, self.field = os.path.realpath(root), rules, dest, field
        self.max_bytes, self.max_entries = max_bytes, max_entries
        self.bytes = self.entries = self.looked = 0
        self._walking: List[Tuple[int, int]] = []
        self.sizes = {}            # bytes of each item added (the one being copied: so far)
        self._item, self._start = "", 0

    def add(self, src: str, rel: str, field: Optional[str] = None) -> None:
        """`src` copied to `dest`/`rel` (its folders made)."""
        if field:
            self.field = field
        self._item, self._start = rel, self.bytes
        if self.dest is not None:
            os.makedirs(os.path.dirname(os.path.join(self.dest, rel)) or self.dest, exist_ok=True)
        self._add(src, rel, 0)
        self.sizes[rel] = self.bytes - self._start

    def _refuse(self, why: str):
        raise ScenarioError(f"{self.field}: {why}")

    def _bounds(self, rel: str) -> None:
        if self.bytes > self.max_bytes:
            sizes = dict(self.sizes, **{self._item: self.bytes - self._start})
            big = max(sizes, key=sizes.get)
            self._refuse(f"what ships to the workers passed {_amount(self.max_bytes)} at {_shown(rel)} (at most "
                         f"{_amount(self.max_bytes)}, counted as copied); {_shown(big)} alone is at least "
                         f"{_amount(sizes[big])}: keep data out of the code root or set workload.working_dir to a "
                         f"folder of code")
        if self.entries > self.max_entries:
            self._refuse(f"what ships to the workers passed {self.max_entries:,} files and folders at {_shown(rel)} "
                         f"(at most {self.max_entries:,}, counted as copied): keep data out of the code root or "
                         f"name it in workload.ship_exclude")

    def _add(self, src: str, rel: str, depth: int) -> None:
        from ftharness.inputs import inside

        st = os.lstat(src)
        real = src
        if stat.S_ISLNK(st.st_mode):
            real = os.path.realpath(src)
            if not inside(real, self.root):
                self._refuse(f"{_shown(src)} is a symlink out of the scenario's folder; only code inside it ships")
            try:
                st = os.stat(real)
            except OSError:
                return   # a dangling link (an editor's lock file): nothing to ship
        if stat.S_ISDIR(st.st_mode):
            key = (st.st_dev, st.st_ino)
            if key in self._walking:
                self._refuse(f"{_shown(src)} is a symlink loop (it leads back to a folder that holds it); "
                             f"remove the link or name it in workload.ship_exclude")
            if depth >= MAX_DEPTH:
                self._refuse(f"{_shown(src)} lies more than {MAX_DEPTH} folders deep; allowed: at most {MAX_DEPTH}")
            self.entries += 1
            self._bounds(rel)
            if self.dest is not None:
                os.makedirs(os.path.join(self.dest, rel), exist_ok=True)
            self._walking.append(key)
            try:
                with os.scandir(real) as it:
                    children = []
                    for e in it:
                        self.looked += 1
                        if self.looked > MAX_LOOKED_AT:
                            self._refuse(f"more than {MAX_LOOKED_AT:,} entries looked at under {_shown(src)}; "
                                         f"name the bulk in workload.ship_exclude")
                        children.append(e.name)
                for name in sorted(children):
                    path = os.path.join(real, name)
                    if not self.rules.excluded(name, path):
                        self._add(path, os.path.join(rel, name), depth + 1)
            finally:
                self._walking.pop()
        elif stat.S_ISREG(st.st_mode):
            self.entries += 1
            self._bounds(rel)
            self._file(real, rel)
        else:
            self._refuse(f"{_shown(src)} is not a regular file or folder (a FIFO, a socket, a device); "
                         f"only files and folders ship")

    def _file(self, real: str, rel: str) -> None:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                self._refuse(f"{_shown(real)} is not a regular file; only files and folders ship")
            if self.dest is None:
                self.bytes += st.st_size
                self._bounds(rel)
                return
            mode = 0o755 if st.st_mode & 0o111 else 0o644
            out = os.open(os.path.join(self.dest, rel), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
            try:
                while True:
                    chunk = os.read(fd, 1 << 20)
                    if not chunk:
                        break
                    self.bytes += len(chunk)
                    self._bounds(rel)
                    os.write(out, chunk)
            finally:
                os.close(out)
        finally:
            os.close(fd)


def copy_items(items: Sequence[Tuple[str, str, str]], dest: str, root: str, rules: Rules,
               max_bytes: int = MAX_CODE_BYTES, max_entries: int = MAX_CODE_ENTRIES, fresh: bool = True) -> Copy:
    """`items` (shipment) copied into `dest`, a folder this call creates (`fresh`; else an empty
    one the caller made and removes): on any refusal or interruption, what was copied is
    removed, so nothing half-copied is left behind."""
    if fresh:
        os.mkdir(dest, 0o700)
    try:
        copy = Copy(root, rules, dest, max_bytes=max_bytes, max_entries=max_entries)
        for src, rel, field in items:
            copy.add(src, rel, field)
        return copy
    except BaseException:
        if fresh:
            shutil.rmtree(dest, ignore_errors=True)
        else:
            for name in os.listdir(dest):
                path = os.path.join(dest, name)
                shutil.rmtree(path, ignore_errors=True) if os.path.isdir(path) and not os.path.islink(path) \
                    else os.unlink(path)
        raise


def ship(scenario, dest: str, replay: bool = False,
         items: Optional[Sequence[Tuple[str, str, str]]] = None, fresh: bool = True) -> Copy:
    """What the scenario ships (`items`: shipment, computed here by default), copied into `dest`
    (created here, or `fresh` False: an empty folder of the caller's; emptied on a refusal): laid out as the code root (the package the workers
    get), or with `replay` as the scenario's folder (the code root at its place, `working_dir`),
    for a folder a run is replayed from."""
    base = getattr(scenario, "base_dir", None) or code_root(scenario) or os.getcwd()
    prefix = scenario.workload.working_dir if replay and scenario.workload.working_dir else ""
    items = shipment(scenario) if items is None else items
    placed = [(src, os.path.normpath(os.path.join(prefix, rel)), field) for src, rel, field in items]
    return copy_items(placed, dest, base, rules_of(scenario), fresh=fresh)


def check_size(paths: List[str], limit: int = MAX_CODE_BYTES, rules: Optional[Rules] = None,
               root: Optional[str] = None) -> int:
    """The bytes that would ship (counted as the copy counts them, nothing written); a
    ScenarioError naming the largest entry when over `limit`."""
    if not paths:
        return 0
    base = root or os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
    counter = Copy(base, rules or Rules(), None, max_bytes=limit)
    for path in paths:
        counter.add(path, os.path.basename(path))
    return counter.bytes


def stage(paths: List[str], dest: str, rules: Optional[Rules] = None) -> None:
    """Copy the units into `dest` (an existing folder), bounded as Copy is; links followed only
    inside the folder that holds them."""
    if not paths:
        return
    base = os.path.commonpath([os.path.dirname(os.path.abspath(p)) for p in paths])
    copy = Copy(base, rules or Rules(), dest)
    for path in paths:
        copy.add(path, os.path.basename(path))


def runtime_env(scenario) -> Optional[dict]:
    """The runtime environment that ships the job's code and declared files to every worker of
    a run ({"working_dir": a package in the cluster's GCS}), None when there is nothing to ship
    (the reference workload, a scenario without a folder). Call after the job's functions
    were imported (resolve_function), with a Ray connection open.

    The fit task gets it and every actor under it inherits it (the Train controller, each
    worker group of every attempt). Each node's runtime env agent unpacks it into its
    `runtime_resources/working_dir_files/_ray_pkg_<hash>` on its first use of it, and
    removes that folder first when it is there (download_and_unpack_package,
    `overwrite=True`, in ray/_private/runtime_env/working_dir.py): harmless where each node
    has a folder of its own, but the embedded cluster's nodes share one host and one session
    folder, so a node's first use of the package (a restarted worker group on a node the run
    had not used) removed it under the other nodes' workers, which then could not import the
    job's modules (`No module named 'helpers'`). The embedded cluster gives each node its own
    folder (handles.EmbeddedCluster._add_node); a cluster of several nodes on one host that
    ftharness did not start can still meet it."""
    if scenario.workload.kind == "reference" or not scenario.workload.entrypoint:
        return None
    items = shipment(scenario)
    if not items:
        return None
    from ftharness.harness.cluster import ray_private as rp

    with tempfile.TemporaryDirectory(prefix="ftharness-code-") as tmp:
        staged = os.path.join(tmp, "code")
        ship(scenario, staged, items=items)
        return {"working_dir": rp.upload_working_dir(staged, scratch_dir=tmp)}


def check_shippable(scenario) -> None:
    """Everything `runtime_env` would refuse, counted without copying (before a cluster starts):
    the declared files, links out, loops and the bounds. Only a Ray Train job ships code."""
    if scenario.workload.kind == "reference" or getattr(scenario.workload, "runtime", "ray_train") != "ray_train":
        return
    items = shipment(scenario)
    base = getattr(scenario, "base_dir", None) or code_root(scenario) or os.getcwd()
    counter = Copy(base, rules_of(scenario), None)
    for src, rel, field in items:
        counter.add(src, rel, field)


def import_refusal(error: BaseException, scenario) -> Optional[str]:
    """One line for a job a worker cannot import (a module of it that did not ship, or that
    only this host's sys.path finds), None for any other error."""
    import re

    text = str(error)
    found = re.search(r"No module named '([^']+)'", text)
    if found is None and not isinstance(error, ImportError):
        return None
    module = found.group(1) if found else "a module of the job"
    root = code_root(scenario) or "the scenario's folder"
    return (f"workload.entrypoint: the workers cannot import {module!r} (No module named {module!r}): what ships "
            f"is the modules and packages of {root} the job imports (or all of workload.working_dir); "
            f"put {module} there or install it on every node")
def check_importable(functions: List, env: Optional[dict], node_id: str, scenario) -> None:
    """Unpickle the job's functions in a worker with the run's runtime environment, on the
    node fit() runs on, before anything of the run starts: ScenarioError (import_refusal)
    when a module is missing there. The fit task then reuses that worker process."""
    import ray
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    try:
        ray.get(_unpickle.options(runtime_env=env or {},
                                  scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False))
                .remote([f for f in functions if f is not None]), timeout=300)
    except Exception as e:  # noqa: BLE001 - only an import failure is the job's; others go on
        why = import_refusal(e, scenario)
        if why:
            raise ScenarioError(why) from None
        raise


def _remote_unpickle():
    import ray

    @ray.remote(num_cpus=0, max_retries=0)
    def unpickle(functions):
        return len(functions)

    return unpickle


class _Lazy:
    """The remote function, defined when first used (no Ray import for `validate`)."""

    def __init__(self):
        self.fn = None

    def options(self, **kw):
        if self.fn is None:
            self.fn = _remote_unpickle()
        return self.fn.options(**kw)


_unpickle = _Lazy()
