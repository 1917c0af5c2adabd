"""`ftharness doctor`: static checks of Ray Train V2 driver scripts and train modules.

It parses the files with `ast` and never imports or runs them, so it is safe on any
code and needs no Ray. Each finding names FILE:LINE, a rule, a severity, why the
pattern hurts when workers, nodes or the driver fail, and the fix.
"""

import ast
import os
import time
from dataclasses import asdict, dataclass
from typing import Iterable, List

from ftharness.harness.doctor import release_rules  # registers the release-dependent rules
from ftharness.harness.doctor.rules import RULES, dataset_index
from ftharness.harness.doctor.source import Module
from ftharness.errors import InputError
from ftharness.inputs import InputRefused, file_problem, read_bounded, shown

__all__ = ["Finding", "RULES", "analyse", "python_files", "render", "release_rules"]

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True)
class Finding:
    file: str
    line: int
    col: int  # 1-based
    rule: str
    severity: str
    message: str
    why: str
    fix: str

    def as_dict(self) -> dict:
        return asdict(self)


#: doctor's bounds: a driver script is a page, not generated code (the rules' cost grows faster
#: than the file: 256 KiB of trainers take about 10 s), a project a few thousand files
MAX_FILE_BYTES = 256 * 1024
MAX_FILES = 5_000
MAX_TOTAL_BYTES = 32 << 20
MAX_SECONDS = 120.0


def python_files(paths: Iterable[str]) -> List[str]:
    """Files named, and the *.py files under folders named (hidden folders skipped); InputError
    past MAX_FILES files or MAX_TOTAL_BYTES of them, or for a file larger than MAX_FILE_BYTES."""
    out: List[str] = []
    total = 0
    for p in paths:
        if os.path.isdir(p):
            for folder, dirs, files in os.walk(p):
                dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
                out += [os.path.join(folder, f) for f in sorted(files) if f.endswith(".py")]
                if len(out) > MAX_FILES:
                    raise InputError(f"{shown(p)}: more than {MAX_FILES} Python files; name fewer folders")
        elif os.path.lexists(p):
            out.append(p)
        else:
            raise InputError(f"{shown(p)}: no such file or directory")
    out = list(dict.fromkeys(out))
    for path in out:
        why = file_problem(path, MAX_FILE_BYTES)
        if why:
            raise InputError(why)
        try:
            total += os.path.getsize(path)
        except OSError:
            continue
        if total > MAX_TOTAL_BYTES:
            raise InputError(f"more than {MAX_TOTAL_BYTES >> 20} MiB of Python files under "
                             f"{shown(', '.join(paths), 80)}; name fewer files or folders")
    return out


def _finding(path: str, line: int, col: int, rule: str, message: str) -> Finding:
    r = RULES[rule]
    return Finding(path, line, col, rule, r.severity, message, r.why, r.fix)


def _parse(path: str):
    try:
        source = read_bounded(path, MAX_FILE_BYTES, shown(path),
                              f"doctor reads Python files of at most {MAX_FILE_BYTES // 1024} KiB")
    except InputRefused as e:
        raise InputError(str(e)) from None
    try:
        return ast.parse(source, filename=path)
    except SyntaxError as e:
        return _finding(path, e.lineno or 1, e.offset or 1, "syntax", f"does not parse: {e.msg}")
    except (ValueError, RecursionError, MemoryError) as e:  # null bytes, absurd nesting
        return _finding(path, 1, 1, "syntax", f"does not parse: {type(e).__name__}: {e}")


def analyse(paths: Iterable[str]) -> List[Finding]:
    """Every finding in the files and folders `paths`, in file and line order.

    Raises InputError for a path that does not exist or cannot be read."""
    findings: List[Finding] = []
    modules: List[Module] = []
    files = python_files(paths)
    deadline = time.monotonic() + MAX_SECONDS
    for path in files:
        _in_time(deadline, files)
        parsed = _parse(path)
        if isinstance(parsed, Finding):
            findings.append(parsed)
        else:
            modules.append(Module(path, parsed))
    project: dict = {}
    for m in modules:
        project.update(dataset_index(m))
    for m in modules:
        _in_time(deadline, files)
        m.project = project
        try:
            found = [(r.id, node, message) for r in RULES.values() if r.check for node, message in r.check(m)]
        except RecursionError:  # parsed, yet nested too deeply to walk: say so instead of a traceback
            findings.append(_finding(m.path, 1, 1, "syntax", "nested too deeply to analyse"))
            continue
        findings += [_finding(m.path, node.lineno, node.col_offset + 1, rule, message) for rule, node, message in found]
    order = {p: i for i, p in enumerate(files)}
    unique = {(f.file, f.line, f.rule): f for f in reversed(findings)}  # one per line and rule: the first
    return sorted(unique.values(), key=lambda f: (order[f.file], f.line, f.col, f.rule))


def _in_time(deadline: float, files: List[str]) -> None:
    if time.monotonic() > deadline:
        raise InputError(f"doctor: stopped after {MAX_SECONDS:.0f} s on {len(files)} files; name fewer files")


def render(findings: List[Finding], files: int) -> str:
    """One line per finding with its why and fix indented under it, then a summary line."""
    lines = []
    for f in findings:
        lines += [f"{f.file}:{f.line}: {f.rule} {f.severity}: {f.message}",
                  f"    why: {f.why}", f"    fix: {f.fix}"]
    if not findings:
        lines.append(f"no findings in {files} file{'s' if files != 1 else ''}")
    else:
        counts = ", ".join(f"{n} {s}{'s' if n != 1 and s != 'info' else ''}"
                           for s in SEVERITIES if (n := sum(f.severity == s for f in findings)))
        where = len({f.file for f in findings})
        lines.append(f"{len(findings)} finding{'s' if len(findings) != 1 else ''} ({counts}) "
                     f"in {where} of {files} file{'s' if files != 1 else ''}")
    return "\n".join(lines)
