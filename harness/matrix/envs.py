"""One isolated Python environment per Ray release, built on first use and cached.

A Ray driver cannot join a cluster of another version, so each release runs in
its own interpreter. The environment holds that release's `ray[default,train]`
and ftharness's other dependencies; two things come from the running
installation instead of being installed again:

- torch (and the packages it needs), through a `.pth` file naming a folder of
  symlinks into this interpreter's site-packages: gigabytes shared, not copied,
  and outside the environment's own site-packages, so its pip never sees,
  upgrades or uninstalls them;
- ftharness's own code, through a second folder of symlinks (`ftharness/` ->
  the folders this process imports), rewritten on every use, so a cell always
  runs the ftharness that launched it.

The cache lives under `$FTHARNESS_CACHE` (default `$XDG_CACHE_HOME/ftharness`,
else `~/.cache/ftharness`), one folder per release and Python version; a build
writes into a temporary folder and renames it when complete, so a crashed or
interrupted build never leaves a half environment that looks usable. uv builds
it when `uv` is on PATH (seconds from its cache), pip otherwise.
"""

from __future__ import annotations

import hashlib
import importlib.metadata as md
import os
import shutil
import importlib.util
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, List, Optional, Set

from ftharness.errors import FtharnessError

#: ftharness's dependencies that each environment installs for itself (torch is shared, ray is the release)
NOT_INSTALLED = {"ray", "torch"}
#: extras of ftharness an environment gets too: S3 storage scenarios need moto's server, the pytest plugin pytest
EXTRAS = ("s3", "test")
STAMP = ".ftharness-env"


class EnvError(FtharnessError, RuntimeError):
    """A release's environment could not be built; one line for the user."""


def cache_root() -> Path:
    base = os.environ.get("FTHARNESS_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "ftharness")
    return Path(base)


def _name(requirement: str) -> str:
    import re

    return re.split(r"[\s\[<>=!~;(]", requirement.strip(), maxsplit=1)[0].lower().replace("_", "-")


def requirements() -> List[str]:
    """ftharness's own requirements (with the EXTRAS), minus ray and torch."""
    out = []
    for req in md.requires("ftharness") or []:
        spec, _, marker = req.partition(";")
        marker = marker.strip()
        if marker.startswith("extra"):
            extra = marker.split("==")[-1].strip().strip("'\"")
            if extra not in EXTRAS:
                continue
        elif marker:
            continue
        if _name(spec) not in NOT_INSTALLED:
            out.append(spec.strip())
    return sorted(out)


def _closure(root: str) -> Set[str]:
    """The installed distributions `root` needs, itself included (names normalised)."""
    seen: Set[str] = set()
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        seen.add(name)
        for req in dist.requires or []:
            spec, _, marker = req.partition(";")
            if "extra" in marker:
                continue
            todo.append(_name(spec))
    return seen


def _top_level_entries(dist_name: str) -> Set[str]:
    """The names a distribution puts directly into site-packages (packages, modules, its dist-info)."""
    dist = md.distribution(dist_name)
    out = set()
    for f in dist.files or []:
        first = f.parts[0]
        if first in ("..", "__pycache__") or first.endswith(".pth"):
            continue
        out.add(first)
    return out


def link_farm(folder: Path, dists: Iterable[str]) -> None:
    """`folder` holds a symlink to each top-level entry of `dists` where this interpreter
    finds it: its own site-packages, or a layered one (a venv whose .pth names another
    environment's site-packages, as the helpers' worktree venvs do)."""
    folder.mkdir(parents=True, exist_ok=True)
    for dist in sorted(dists):
        site = Path(md.distribution(dist).locate_file(""))
        for entry in _top_level_entries(dist):
            src, dst = site / entry, folder / entry
            if src.exists() and not dst.exists():
                dst.symlink_to(src)


def code_farm(folder: Path) -> None:
    """`folder/ftharness`: symlinks to the folders this process imports ftharness from
    (its repository's top folders in an editable install, site-packages in a wheel)."""
    import ftharness

    pkg = folder / "ftharness"
    if pkg.exists():
        shutil.rmtree(pkg)
    pkg.mkdir(parents=True)
    root = Path(ftharness.__file__).resolve().parent
    for f in root.iterdir():
        if f.name != "__pycache__":
            (pkg / f.name).symlink_to(f)
    for sub in ("history", "faults", "scenarios", "harness", "reports"):
        mod = __import__(f"ftharness.{sub}", fromlist=["_"])
        if not (pkg / sub).exists():
            (pkg / sub).symlink_to(Path(mod.__file__).resolve().parent)


@dataclass
class ReleaseEnv:
    """A built environment: its interpreter runs `python -m ftharness` on that release."""

    ray_version: str
    path: Path

    @property
    def python(self) -> str:
        return str(self.path / "bin" / "python")


def current_ray() -> str:
    try:
        return md.version("ray")
    except md.PackageNotFoundError:
        return ""


def release_pins(ray_version: str) -> List[str]:
    """What a release's own code needs pinned beyond its wheel's metadata: before 2.55 Ray Data reads
    `pandas.errors.SettingWithCopyWarning` unguarded (ray/air/util/data_batch_conversion.py), which
    pandas 3 removed, so every Ray Data job (XGBoost, LightGBM, `datasets=`) died there on 2.51-2.54."""
    try:
        parts = tuple(int(x) for x in ray_version.split(".")[:2])
    except ValueError:
        return []
    return ["pandas<3"] if parts < (2, 55) else []


def env_key(ray_version: str) -> str:
    """The cache folder's name: the release, Python, and a digest of what is installed in it."""
    py = f"py{sys.version_info[0]}{sys.version_info[1]}"
    digest = hashlib.sha256("\n".join([ray_version, *requirements(), *release_pins(ray_version)]).encode()
                            ).hexdigest()[:8]
    return f"ray-{ray_version}-{py}-{digest}"


def installer() -> Optional[List[str]]:
    """uv's command when it is available, else None (pip is used)."""
    uv = shutil.which("uv")
    if uv:
        return [uv]
    try:
        if importlib.util.find_spec("uv") is not None:   # the PyPI package ships the binary
            return [sys.executable, "-m", "uv"]
    except (ImportError, ValueError):
        return None


def ensure_env(ray_version: str, say: Callable[[str], None] = print) -> ReleaseEnv:
    """The environment of `ray_version`, built if the cache has none. Raises EnvError (one line)."""
    path = cache_root() / "envs" / env_key(ray_version)
    if (path / STAMP).is_file() and (path / "bin" / "python").exists():
        code_farm(path / "shared-code")
        return ReleaseEnv(ray_version, path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".build-{ray_version}-", dir=path.parent))
    try:
        _build(tmp, ray_version, say)
        _write_pth(tmp, path)
        shutil.rmtree(path, ignore_errors=True)
        os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    # venv scripts name their interpreter by the build folder's path: the stamp is written last, after a check
    _check(path, ray_version)
    (path / STAMP).write_text(f"ray {ray_version}\nbuilt {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
    return ReleaseEnv(ray_version, path)


def _run(cmd: List[str], what: str, timeout: float = 1800) -> None:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise EnvError(f"{what}: timed out after {timeout:.0f} s") from None
    if r.returncode != 0:
        tail = [ln for ln in (r.stderr or r.stdout).strip().splitlines() if ln.strip()][-1:] or ["no output"]
        raise EnvError(f"{what}: {tail[0][:200]}")


def _build(tmp: Path, ray_version: str, say: Callable[[str], None]) -> None:
    reqs = [f"ray[default,train]=={ray_version}", *requirements(), *release_pins(ray_version)]
    uv = installer()
    t0 = time.monotonic()
    say(f"matrix: building the environment of Ray {ray_version} ({'uv' if uv else 'pip'}): "
        f"{' '.join(reqs[:1])} and {len(reqs) - 1} more; torch shared from {md.distribution('torch').locate_file('')}")
    if uv:
        _run([*uv, "venv", "--quiet", "--python", sys.executable, str(tmp)], f"Ray {ray_version}: uv venv")
        _run([*uv, "pip", "install", "--quiet", "--python", str(tmp / "bin" / "python"), *reqs],
             f"Ray {ray_version}: cannot be installed here")
    else:
        _run([sys.executable, "-m", "venv", str(tmp)], f"Ray {ray_version}: venv")
        _run([str(tmp / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              *reqs], f"Ray {ray_version}: cannot be installed here")
    say(f"matrix: Ray {ray_version} installed in {time.monotonic() - t0:.0f} s")


def _site(env: Path) -> Path:
    return env / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def _write_pth(tmp: Path, final: Path) -> None:
    """Share torch and ftharness's code; paths name the final folder the build is renamed to."""
    torch_dists = _closure("torch")
    own = {_name(p.name.split("-")[0]) for p in _site(tmp).glob("*.dist-info")}
    link_farm(tmp / "shared-torch", {d for d in torch_dists if d == "torch" or d not in own})
    code_farm(tmp / "shared-code")
    (_site(tmp) / "ftharness-shared.pth").write_text(
        f"{final / 'shared-code'}\n{final / 'shared-torch'}\n")


def _check(path: Path, ray_version: str) -> None:
    code = ("import ray, torch, ftharness, ftharness.harness.cluster.ray_private; "
            "print(ray.__version__)")
    # -P and cwd: a checkout's own ftharness/ folder in the working directory must not shadow the
    # shared code (it holds only the root package; the subpackages are mapped by the install)
    r = subprocess.run([str(path / "bin" / "python"), "-P", "-c", code], capture_output=True, text=True,
                       timeout=300, cwd=str(path))
    got = r.stdout.strip().splitlines()[-1:] if r.returncode == 0 else []
    if got != [ray_version]:
        tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
        shutil.rmtree(path, ignore_errors=True)
        raise EnvError(f"Ray {ray_version}: the environment does not import ({tail[:200]})")
