"""A job that cannot train, named before any chaos result (summary.json `job_error`).

A chaos run of a job that fails on its own (a config file it cannot find, a bug in its train
function) tests nothing: the faults never fire and every property has nothing to judge. The
verdict then names the job's own error first, with the error's last line and the file and line in
the user's code, and the terminal, the page's banner and JUnit's message all lead with it.

Pure: it reads the history's `worker_error` events (their `traceback`, recorded by the worker
wrapper, harness/job/instrument.py) and the run's outcome, never Ray. `job_error(events, outcome)`
is None unless the run failed and

- every attempt failed before its first step, with an error the train function raised that
  ftharness did not inject (`before_first_step`), or
- the last attempt's error was raised in the user's own code (its innermost frame is a file of
  theirs, not a library's, the standard library's or ftharness's) and no fault was injected in
  that attempt (`in_user_code`).

Where the error was raised: the innermost frame of the user's code, shown relative to the folder
of the train function's module (the scenario's folder: `job.py`, `mypkg/data.py`), wherever the
history was recorded; a file outside it that Ray shipped to the workers
(`.../runtime_resources/.../_ray_pkg_<hash>/x.py`) relative to the folder that was shipped.
"""

from __future__ import annotations

import functools
import os
import re
import sysconfig
from typing import Any, Dict, Iterable, List, Optional, Tuple

FRAME = re.compile(r'^\s*File "([^"]+)", line (\d+), in (.+?)\s*$')
#: a folder Ray unpacked from a runtime environment's working_dir or py_modules
SHIPPED = re.compile(r"/_ray_pkg_[0-9a-f]+/")
LIBRARY = ("/site-packages/", "/dist-packages/")
#: ftharness's folders in a checkout or install other than this one (a history recorded elsewhere)
OWN_ELSEWHERE = re.compile(r"/ftharness/(harness|history|scenarios|faults|reports)/")


@functools.lru_cache(maxsize=1)
def _own_dirs() -> Tuple[str, ...]:
    """ftharness's own folders, as installed here (editable: the checkout's top folders), found
    without importing them."""
    import importlib.util

    import ftharness

    dirs = {os.path.dirname(os.path.realpath(ftharness.__file__))}
    for name in ("harness", "history", "scenarios", "faults", "reports"):
        try:
            spec = importlib.util.find_spec(f"ftharness.{name}")
        except (ImportError, ValueError):
            spec = None
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            dirs.add(os.path.realpath(folder))
    return tuple(d + os.sep for d in dirs)


@functools.lru_cache(maxsize=1)
def _stdlib_dirs() -> Tuple[str, ...]:
    paths = sysconfig.get_paths()
    return tuple({os.path.realpath(paths[k]) + os.sep for k in ("stdlib", "platstdlib") if paths.get(k)})


def frames(traceback_text: Any) -> List[Tuple[str, int, str]]:
    """(file, line, function) of each frame of a formatted traceback, outermost first."""
    if not isinstance(traceback_text, str):
        return []
    out = []
    for line in traceback_text.splitlines():
        m = FRAME.match(line)
        if m:
            out.append((m.group(1), int(m.group(2)), m.group(3)))
    return out


def is_own(path: str) -> bool:
    """A frame of ftharness itself: this install's folders, an installed copy elsewhere, or a
    checkout elsewhere (a history recorded on another machine) whose file this install has too
    (`.../harness/job/instrument.py`)."""
    p = path.replace(os.sep, "/")
    if path.startswith(_own_dirs()) or OWN_ELSEWHERE.search(p):
        return True
    for own in _own_dirs():
        name = "/" + os.path.basename(own.rstrip(os.sep)) + "/"
        i = p.rfind(name)
        if i >= 0 and os.path.isfile(os.path.join(own, p[i + len(name):])):
            return True
    return False


def is_user(path: str) -> bool:
    """A frame of the user's code: not ftharness's, a library's, the standard library's or Python's own."""
    p = path.replace(os.sep, "/")
    if path.startswith("<") or any(s in p for s in LIBRARY) or is_own(path):
        return False
    if SHIPPED.search(p):
        return True
    return not path.startswith(_stdlib_dirs()) and not re.search(r"/lib/python3\.\d+/", p)


def shown_path(path: str) -> str:
    """A user's file as a person finds it: relative to the shipped folder (the scenario's), else
    to the current folder when it is under it, else as recorded."""
    p = path.replace(os.sep, "/")
    m = SHIPPED.search(p)
    if m:
        return p[m.end():]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return rel if not rel.startswith("..") else path


def _relative_to_job(path: str, outermost: str) -> str:
    """A user's file relative to the folder of the train function's module (the outermost frame of
    theirs: the scenario's folder, where `workload.entrypoint` is looked up), so that the same
    history names `job.py` wherever it was recorded; otherwise as `shown_path` shows it."""
    p, root = path.replace(os.sep, "/"), os.path.dirname(outermost.replace(os.sep, "/"))
    if root and p.startswith(root + "/"):
        return p[len(root) + 1:]
    return shown_path(path)


def last_line(event: Dict[str, Any]) -> str:
    """The error as a traceback's last line says it (`FileNotFoundError: [Errno 2] ...`)."""
    text = event.get("traceback")
    lines = [line.strip() for line in text.splitlines() if line.strip()] if isinstance(text, str) else []
    if lines and not FRAME.match(lines[-1]) and not lines[-1].startswith("^"):
        return lines[-1][:300]
    kind, error = event.get("error_type") or "error", str(event.get("error") or "").strip()
    return f"{kind}: {error}"[:300] if error else str(kind)


def where(event: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """The innermost frame of the user's code in a worker_error's traceback, and whether the
    error was raised there (no library or ftharness frame below it): {file, line, function,
    raised_here}; None when no frame of the user's code is in it."""
    fr = frames(event.get("traceback"))
    mine = [i for i, (path, _, _) in enumerate(fr) if is_user(path)]
    if not mine:
        return None
    path, line, function = fr[mine[-1]]
    below = fr[mine[-1] + 1:]
    return {"file": _relative_to_job(path, fr[mine[0]][0]), "line": line, "function": function,
            "raised_here": not below,
            "injected": any(is_own(p) for p, _, _ in below)}


def _number(v: Any) -> Optional[float]:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def job_error(events: Iterable[Dict[str, Any]], outcome: Dict[str, Any],
              steps: Optional[int] = None) -> Optional[Dict[str, Any]]:
    """The job's own error that stopped the run (see the module's doc), or None. `steps`: the last
    step the run reached, when known (then the step events are not read again)."""
    if (outcome or {}).get("outcome") != "failed":
        return None
    if steps is not None:
        from ftharness.history.columns import non_steps

        events = non_steps(events)
    errors, starts, injected, stepped = [], {}, [], bool(steps)
    for e in events:
        kind = e.get("kind")
        if kind == "step":
            stepped = True
        elif kind == "worker_error":
            errors.append(e)
        elif kind == "attempt_start" and e.get("attempt_id") is not None:
            starts.setdefault(e["attempt_id"], _number(e.get("t")))
        elif kind == "fault_injected":
            injected.append(e)
    if not errors:
        return None
    last_attempt = errors[-1].get("attempt_id")
    mine = [e for e in errors if e.get("attempt_id") == last_attempt] or errors[-1:]
    located = [(e, where(e)) for e in mine]
    chosen, at = next(((e, w) for e, w in located if w and w["raised_here"]),
                      next(((e, w) for e, w in located if w), located[0]))
    if at is not None and at["injected"]:   # raised by ftharness under the user's code: a crash_worker fault
        return None
    t_error = _number(chosen.get("t"))
    t_start = starts.get(last_attempt)
    if t_start is None:
        t_start = min((_number(e.get("t")) for e in mine if _number(e.get("t")) is not None), default=None)
    faulted = [f for f in injected if t_error is None or _number(f.get("t")) is None
               or (_number(f.get("t")) <= t_error and (t_start is None or _number(f.get("t")) >= t_start
                                                        or _lasting(f)))]
    attempts = len({e.get("attempt_id") for e in errors})
    before_first_step = not stepped and not faulted
    in_user_code = at is not None and at["raised_here"] and not faulted
    if not (before_first_step or in_user_code):
        return None
    out = {"error": last_line(chosen), "error_type": chosen.get("error_type"), "rank": chosen.get("rank"),
           "step": chosen.get("step"), "attempts": attempts, "before_first_step": before_first_step,
           "in_user_code": bool(at and at["raised_here"])}
    if at is not None:
        out.update({"file": at["file"], "line": at["line"], "function": at["function"]})
    out["reason"] = reason(out)
    return out


def _lasting(fault: Dict[str, Any]) -> bool:
    """A fault that stays in force after it fired (a duration, or not healed yet): it may still act
    on a later attempt."""
    return fault.get("t_healed") is None and (_number(fault.get("duration_s")) or 0) > 0


def location(job: Dict[str, Any]) -> str:
    """`job.py:9, in load_config`, or '' when no frame of the user's code was recorded."""
    if not job.get("file"):
        return ""
    return f"{job['file']}:{job['line']}, in {job['function']}"


def reason(job: Dict[str, Any]) -> str:
    """The verdict's first reason for such a run, one line."""
    where_ = location(job)
    error = job["error"] + (f" ({where_})" if where_ else "")
    if job.get("before_first_step"):
        n = job.get("attempts") or 1
        every = "the only attempt" if n == 1 else f"every attempt ({n})"
        return f"the job cannot train: {every} failed before its first step: {error}"
    step = job.get("step")
    return (f"the job's own code failed{f' after step {step}' if isinstance(step, int) and step else ''}, "
            f"with no fault in that attempt: {error}")


#: the marker a reason of `reason` starts with (the terminal puts such a reason on the verdict line)
MARKERS = ("the job cannot train: ", "the job's own code failed")


def is_job_reason(text: Any) -> bool:
    return isinstance(text, str) and text.startswith(MARKERS)


def trigger_text(at: Any) -> str:
    """A fault's trigger as a person writes it: {'step': 4, 'nth': 1, 'hold': True} -> 'after step 4'."""
    if not isinstance(at, dict):
        return "" if at is None else str(at)
    nth = at.get("nth") or 1
    times = "" if nth == 1 else f" (its {_ordinal(nth)} time)"
    if at.get("step") is not None:
        text = f"after step {at['step']}" + (f" on rank {at['rank']}" if at.get("rank") is not None else "") + times
    elif at.get("time_s") is not None:
        text = f"{at['time_s']:g} s after training started" if _number(at["time_s"]) is not None \
            else f"{at['time_s']} s after training started"
    elif at.get("event") is not None:
        text = f"at the {_ordinal(nth) + ' ' if nth != 1 else ''}{at['event']}" if nth != 1 else f"at {at['event']}"
    else:
        return ", ".join(f"{k} {v}" for k, v in at.items() if v is not None)
    if at.get("hold") is False:
        text += ", without holding the worker"
    return text


def _ordinal(n: Any) -> str:
    try:
        n = int(n)
    except (TypeError, ValueError):
        return str(n)
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


TRIGGER_DICT = re.compile(r"\(trigger (\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})\)")


def evidence_text(evidence: Any) -> str:
    """A landing's evidence with its trigger as a person writes it: 'never fired (trigger {'step': 3,
    'nth': 1, 'hold': True})' -> 'never fired (trigger: after step 3)'."""
    import ast

    text = "" if evidence is None else str(evidence)

    def plain(m: "re.Match[str]") -> str:
        try:
            at = ast.literal_eval(m.group(1))
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return m.group(0)
        return f"(trigger: {trigger_text(at)})" if isinstance(at, dict) else m.group(0)

    return TRIGGER_DICT.sub(plain, text)


# ------------------------------------------------------------------ the terminal's verdict line
def job_reason(summary: Dict[str, Any]) -> str:
    """The reason naming the job's own error in a summary ('' when the run has none)."""
    job = summary.get("job_error")
    if isinstance(job, dict) and isinstance(job.get("reason"), str):
        return job["reason"]
    return next((r for key in ("mismatches", "inconclusive") for r in summary.get(key) or [] if is_job_reason(r)), "")


def verdict_line(verdict: str, scenario: str, summary: Dict[str, Any], tail: str = "") -> str:
    """`VERDICT scenario: the job cannot train: ... (job.py:9, in load_config)` for a job that could
    not train (its own error goes on the verdict line, before any chaos result), else
    `VERDICT scenario: <tail>`. `run`, `check` and `suite` print through it."""
    job = job_reason(summary)
    if job:
        return f"{verdict} {scenario}: {job}"
    return f"{verdict} {scenario}" + (f": {tail}" if tail else "")


def other_reasons(summary: Dict[str, Any]) -> Tuple[List[str], List[str]]:
    """(mismatches, inconclusive) less the job's own error, which the verdict line already says."""
    job = job_reason(summary)
    return ([m for m in summary.get("mismatches") or [] if m != job],
            [m for m in summary.get("inconclusive") or [] if m != job])
