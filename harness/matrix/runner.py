"""Run a matrix: each cell is one `ftharness run` in its release's interpreter.

A cell runs as its own process (`python -m ftharness run`) in the environment
of its release (envs.py; the running interpreter for the installed release),
so every cell goes through the same route, guard and judgement as a single
run, and starts and stops its own embedded cluster: one cluster at a time.
The matrix folder holds, per cell, the scenario as it ran (`cells/<id>/scenario.yaml`,
credentials redacted: a cell whose scenario carries some runs from a private copy
that is deleted when the cell ends) with the job's modules and declared files beside it
(a replay's folder, as an explore finding's), its notes, its log and its results folder, and
`cells.jsonl`, one line per finished cell, so an interrupted matrix keeps what
it measured and `--resume`-free reruns are cheap to compare.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

import yaml

from ftharness import releases
from ftharness.history.records import read_json_file
from ftharness.safety import redact
from ftharness.harness.matrix.axes import Cell
from ftharness.harness.matrix.cells import for_release
from ftharness.harness.matrix.envs import EnvError, ensure_env

EXIT_VERDICTS = {0: "PASS", 1: "FAIL", 2: "REFUSED", 3: "INCONCLUSIVE", 4: "ERROR", 130: "INTERRUPTED"}


@dataclass
class MatrixOptions:
    out_dir: str
    allow_destructive: bool = False
    cell_timeout_s: float = 1800.0
    say: Callable[[str], None] = print
    host_lock: Optional[str] = None    # a file whose lock each cell holds while it runs (a shared host)


def interpreter(ray_version: str, say: Callable[[str], None]) -> str:
    """The Python that runs cells on `ray_version`: this one for the installed release."""
    if ray_version == releases.installed():
        return sys.executable
    return ensure_env(ray_version, say).python


def run_cell(cell: Cell, python: str, opts: MatrixOptions) -> Dict[str, Any]:
    """One cell, start to verdict; its row for cells.jsonl."""
    folder = os.path.join(opts.out_dir, "cells", cell.cell_id)
    os.makedirs(folder, exist_ok=True)
    data, notes = for_release(cell.data, cell.ray)
    results = os.path.join(folder, "run")
    home = os.path.dirname(os.path.abspath(cell.source))
    env = cell_environment()
    cell_code(folder, data, cell.source, opts.say)
    with cell_scenario(folder, data) as scenario_file, host_lock(opts.host_lock, opts.say):
        # the cell's copy of the scenario lives in the matrix folder: --scenario-dir names the folder its
        # entrypoint modules are looked up in, as in a single run (only while they are imported, never
        # first on the harness process's path, where a `yaml.py` beside the scenario would replace the library)
        cmd = [python, "-P", "-m", "ftharness", "run", scenario_file, "--out", results, "--quiet",
               "--scenario-dir", home]
        if opts.allow_destructive:
            cmd.append("--allow-destructive")
        return _run_locked(cell, cmd, env, home, folder, results, notes, opts)


def cell_environment() -> Dict[str, str]:
    """The environment of a cell's `ftharness run`: this one without RAY_ADDRESS (a cell runs on
    the cluster its scenario names, checked by the guard before the matrix starts, else on its own
    embedded cluster; never on one an operator's shell points at)."""
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["PYTHONUNBUFFERED"] = "1"
    return env


@contextlib.contextmanager
def cell_scenario(folder: str, data: Dict[str, Any]):
    """The scenario file a cell runs: `folder`/scenario.yaml, credentials redacted (the
    matrix folder is shared and kept); where redacting changed it, the cell runs from a
    copy in a fresh 0700 folder, 0600, removed when the cell ends."""
    shown = redact(data)
    with open(os.path.join(folder, "scenario.yaml"), "w") as f:
        yaml.safe_dump(shown, f, sort_keys=False)
    if shown == data:
        yield os.path.join(folder, "scenario.yaml")
        return
    private = tempfile.mkdtemp(prefix="ftharness-cell-")   # mkdtemp: created fresh, mode 0700
    try:
        path = os.path.join(private, "scenario.yaml")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as f:
            yaml.safe_dump(data, f, sort_keys=False)
        yield path
    finally:
        shutil.rmtree(private, ignore_errors=True)


#: what a cell's folder holds of its own: the job's files of these names are not copied beside it
CELL_OWN = ("scenario.yaml", "log.txt", "run")


def cell_code(folder: str, data: Dict[str, Any], source: str, say: Callable[[str], None]) -> None:
    """The job's modules and declared files (`workload.files`) beside the cell's scenario.yaml,
    laid out as the scenario's folder, by the copy explore findings and `run --submit` get
    (usercode.ship, replay), so `ftharness run cells/<id>/scenario.yaml` replays the cell with
    them. The job is imported here first, so the neighbours it imports are known. The cell runs
    from the scenario's folder either way: a copy that is refused is one warning."""
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.submit import resolve_job
    from ftharness.harness.run.usercode import ship
    from ftharness.scenarios.schema import parse_scenario

    tmp = tempfile.mkdtemp(prefix="ftharness-cell-code-")
    try:
        sc = parse_scenario(data, source=source, base_dir=os.path.dirname(os.path.abspath(source)))
        if sc.workload.kind == "reference":
            return
        with contextlib.suppress(ScenarioError):   # a job that does not import: its cell says why
            resolve_job(sc)
        staged = os.path.join(tmp, "code")
        ship(sc, staged, replay=True)
        for name in sorted(os.listdir(staged)):
            if name in CELL_OWN or os.path.lexists(os.path.join(folder, name)):
                say(f"matrix:   warning: {name} of the job not copied beside the cell (the cell's folder has its own)")
                continue
            shutil.move(os.path.join(staged, name), os.path.join(folder, name))
    except (ScenarioError, OSError) as e:
        say(f"matrix:   warning: the job's code and files not copied beside the cell ({e})")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@contextlib.contextmanager
def host_lock(path: Optional[str], say: Callable[[str], None]):
    """Hold `path`'s flock(2) lock for one cell: several chaos runs on one host take turns
    (two embedded Ray clusters on one host confuse each other)."""
    if not path:
        yield
        return
    with open(path, "a") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"matrix:   waiting for the host lock {path}")
            fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _run_locked(cell: Cell, cmd, env, home, folder, results, notes, opts: MatrixOptions) -> Dict[str, Any]:
    t0 = time.monotonic()
    with open(os.path.join(folder, "log.txt"), "w") as log:
        try:
            rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, timeout=opts.cell_timeout_s,
                                cwd=home, env=env).returncode
        except subprocess.TimeoutExpired:
            rc = None
    row = {"cell": cell.cell_id, "scenario": cell.scenario, "source": cell.source, "ray": cell.ray,
           "settings": redact(cell.settings), "config": cell.config, "repeat": cell.repeat, "notes": notes,
           "exit": rc, "seconds": round(time.monotonic() - t0, 2),
           "results": os.path.relpath(results, opts.out_dir), "summary": None}
    row["verdict"] = "TIMEOUT" if rc is None else EXIT_VERDICTS.get(rc, f"EXIT {rc}")
    summary_path = os.path.join(results, "summary.json")
    summary = read_json_file(summary_path) if os.path.lexists(summary_path) else None
    if isinstance(summary, dict):
        row["summary"] = summary
    else:   # no judgement without a summary: a run that died before writing one is an error
        row["error"] = _last_error_line(os.path.join(folder, "log.txt"))
        if row["verdict"] in ("PASS", "FAIL", "INCONCLUSIVE"):
            row["verdict"] = "ERROR"
    return row


def _last_error_line(path: str, tail: int = 1 << 20) -> str:
    """The last error line of a cell's log, from its last `tail` bytes (through the one reader:
    a regular file only, never waited on)."""
    from ftharness.inputs import InputRefused, open_input

    try:
        with open_input(path) as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - tail))
            lines = [ln.strip() for ln in f.read(tail).decode("utf-8", "replace").splitlines() if ln.strip()]
    except (OSError, InputRefused):
        return ""
    errors = [ln for ln in lines if ln.startswith("ftharness:") or "Check failed" in ln]
    return (errors or lines or [""])[-1][:300]


def _row(cell: Cell, verdict: str, error: str) -> Dict[str, Any]:
    """The row of a cell that did not run."""
    return {"cell": cell.cell_id, "scenario": cell.scenario, "source": cell.source, "ray": cell.ray,
            "settings": redact(cell.settings), "config": cell.config, "repeat": cell.repeat, "notes": [],
            "exit": None, "verdict": verdict, "seconds": 0, "results": None, "summary": None, "error": error}


def run_matrix(cells: List[Cell], opts: MatrixOptions) -> List[Dict[str, Any]]:
    """Every cell in order (grouped by release); a release whose environment cannot be built
    is one line and its cells are recorded as such; the matrix goes on with the others."""
    os.makedirs(opts.out_dir, exist_ok=True)
    rows: List[Dict[str, Any]] = []
    pythons: Dict[str, Optional[str]] = {}
    with open(os.path.join(opts.out_dir, "cells.jsonl"), "a") as book:
        for i, cell in enumerate(cells, 1):
            if cell.na:
                opts.say(f"matrix: [{i}/{len(cells)}] {cell.scenario} on Ray {cell.ray}: N/A ({cell.na})")
                row = _row(cell, "N/A", cell.na)
                rows.append(row)
                book.write(json.dumps(row, default=str) + "\n")
                continue
            if cell.ray not in pythons:
                try:
                    pythons[cell.ray] = interpreter(cell.ray, opts.say)
                except EnvError as e:
                    opts.say(f"matrix: Ray {cell.ray} left out: {e}")
                    pythons[cell.ray] = None
            python = pythons[cell.ray]
            if python is None:
                row = _row(cell, "NO ENV", f"the environment of Ray {cell.ray} could not be built")
            else:
                opts.say(f"matrix: [{i}/{len(cells)}] {cell.scenario} on Ray {cell.ray}"
                         + "".join(f", {k}={v}" for k, v in sorted(cell.settings.items()))
                         + (f" (repeat {cell.repeat})" if cell.repeat > 1 else ""))
                row = run_cell(cell, python, opts)
                s = row.get("summary") or {}
                opts.say(f"matrix:   {row['verdict']} {s.get('outcome') or row.get('error', '')}"
                         f" in {row['seconds']:.0f} s")
            rows.append(row)
            book.write(json.dumps(row, default=str) + "\n")
            book.flush()
    return rows
