"""What a continued `ftharness explore` takes from an earlier one's folder: data, never instructions.

An existing OUT is continued: its `explore.json` gives the examples run before (shown again, and
not run twice) and the smallest failing schedule of each finding, which the first round replays
before it searches. Those schedules are run on a real cluster, so they are held to what the
strategies (ftharness.scenarios.explore_strategies) could have drawn for this base scenario:

- every fault's `kind` one this base supports, its trigger (`at`) one `phase_at` draws (a step of
  the run, an event of `EVENTS` with `nth` 1..MAX_NTH, a time of `TIME_S`), its `target` a rank of
  the run, and every other key an argument the kind draws (`Fault.explore_args`) with one of the
  values it draws;
- a workload override only a setting of `WORKLOAD_AXES` with a value the base's scenario accepts;
- each replayed schedule re-validated as a scenario is (the schema, the release).

Anything else (an unknown key, a value no strategy draws, `entrypoint`, `storage_path`, ...) is
refused in one line naming the key, before a cluster starts. The file is read through the one
bounded reader (ftharness.inputs: a regular file, bounded size, objects and nesting), and the
example database (OUT/.hypothesis) must hold only folders and small regular files.
"""

from __future__ import annotations

import math
import os
import re
import stat as _stat
from typing import Any, Dict, List, Optional, Sequence, Tuple

from ftharness.errors import ScenarioError
from ftharness.inputs import InputRefused, read_json_bounded, shown
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import Scenario, parse_scenario, release_problem

EXPLORE_FILE, DB_DIR = "explore.json", ".hypothesis"
#: explore.json is at most this large (a long exploration's is a few MiB)
MAX_STATE_BYTES = 16 << 20
MAX_EXAMPLES = 20_000
MAX_FAULTS = 5                   # explore_command.MAX_FAULTS_LIMIT
MAX_TEXT = 4_000                 # characters of one string field
MAX_DB_ENTRIES = 100_000
MAX_DB_FILE = 1 << 20            # one entry of Hypothesis's database (a choice sequence: bytes)

#: the top-level keys explore.json has (Exploration.to_dict)
TOP_KEYS = frozenset({"base", "seed", "budget_s", "max_faults", "kinds", "left_out", "wall_s", "out", "session",
                      "stopped", "first_pass", "counts", "exit_code", "coverage", "examples", "findings",
                      "spending"})   # spending: this session's budget per gap (read by no later session)
#: the fields of an example and of a finding (explore.Example, explore.FoundGap; tests hold them equal)
EXAMPLE_FIELDS = ("index", "name", "faults", "phases", "status", "signature", "verdict", "outcome", "error_type",
                  "expected_outcomes", "reasons", "landed", "folder", "wall_s", "at_s", "purpose", "session", "workload")
FINDING_FIELDS = ("signature", "example", "scenario_file", "repeat", "status", "first_found_s", "examples_before")
_NAME = re.compile(r"explore-[0-9a-f]{8}")
_STATUS = ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")


class StateRefused(InputRefused):
    """A continued exploration's file holds something explore never wrote; one line naming the key."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (_is_int(v) or isinstance(v, float)) and math.isfinite(v)


def _drawn(value: Any, values: Sequence[Any]) -> bool:
    """Whether `value` is one of `values`, of the same type (True is no 1, 1 is no 1.0 for a choice)."""
    return any(type(v) is type(value) and v == value for v in values if v is not None)


class _Checker:
    def __init__(self, label: str, base: Scenario, support: "es.Support", ray_version: Optional[str]):
        self.label, self.base, self.support, self.ray_version = label, base, support, ray_version
        self.steps = es._steps(base)
        self.workers = base.workload.min_workers
        self.every = base.workload.checkpoint_every if base.workload.kind == "reference" else 1
        self.overrides: Dict[str, List[Any]] = {}
        for name, value in es._other_workloads(base):
            self.overrides.setdefault(name, []).append(value)

    def refuse(self, where: str, why: str) -> None:
        raise StateRefused(f"{self.label}: {where}: {why}; a continued exploration replays only what explore draws "
                           f"(choose a new --out, or remove the file)")

    # -- values the strategies draw
    def fault(self, f: Any, where: str) -> Dict[str, Any]:
        if not isinstance(f, dict):
            self.refuse(where, "must be a mapping (one fault)")
        kind = f.get("kind")
        if not isinstance(kind, str) or kind not in self.support.kinds:
            self.refuse(f"{where}.kind", f"{shown(kind, 40)} is no fault kind explore runs on this base "
                                         f"(allowed: {', '.join(self.support.kinds)})")
        args = dict(es.kind_class(kind).explore_args)
        for key, value in f.items():
            if key in ("kind", "at"):
                continue
            if key == "target":
                if (not isinstance(value, dict) or set(value) != {"rank"} or not _is_int(value["rank"])
                        or not 0 <= value["rank"] < max(1, self.workers)):
                    self.refuse(f"{where}.target", f"allowed: {{rank: 0..{max(0, self.workers - 1)}}}")
                continue
            if key not in args:
                self.refuse(f"{where}.{shown(key, 40)}", f"no argument {kind} draws (allowed: "
                                                         f"{', '.join(['kind', 'at', 'target', *args]) })")
            if not _drawn(value, args[key]):
                self.refuse(f"{where}.{key}", f"{shown(repr(value), 60)} is no value explore draws "
                                              f"(allowed: {', '.join(repr(v) for v in args[key] if v is not None)})")
        self.at(f.get("at"), f"{where}.at", kind)
        return f

    def at(self, at: Any, where: str, kind: str) -> None:
        triggers = self.support.triggers.get(kind, ())
        if not isinstance(at, dict) or not at:
            self.refuse(where, "must be a mapping (step, event or time_s)")
        keys = set(at)
        if keys == {"step"}:
            if "step" not in triggers or not _is_int(at["step"]) or not 1 <= at["step"] <= self.steps:
                self.refuse(f"{where}.step", f"allowed: a step 1..{self.steps} ({kind} fires at steps: "
                                             f"{'yes' if 'step' in triggers else 'no'})")
        elif keys in ({"event"}, {"event", "nth"}):
            if "event" not in triggers or not isinstance(at["event"], str) or at["event"] not in es.EVENTS:
                self.refuse(f"{where}.event", f"allowed: {', '.join(es.EVENTS)}")
            if "nth" in at and (not _is_int(at["nth"]) or not 1 <= at["nth"] <= es.MAX_NTH):
                self.refuse(f"{where}.nth", f"allowed: 1..{es.MAX_NTH}")
        elif keys == {"time_s"}:
            if "time_s" not in triggers or not _drawn(float(at["time_s"]) if _is_number(at["time_s"]) else None,
                                                      es.TIME_S):
                self.refuse(f"{where}.time_s", f"allowed: {', '.join(f'{t:g}' for t in es.TIME_S)}")
        else:
            bad = sorted(keys - {"step", "event", "nth", "time_s"}) or sorted(keys)
            self.refuse(f"{where}.{shown(bad[0], 40)}", "allowed: one of {step}, {event[, nth]}, {time_s}")

    def faults(self, faults: Any, where: str) -> List[Dict[str, Any]]:
        if not isinstance(faults, list) or not 1 <= len(faults) <= MAX_FAULTS:
            self.refuse(where, f"must be a list of 1 to {MAX_FAULTS} faults")
        return [self.fault(f, f"{where}[{i}]") for i, f in enumerate(faults)]

    def workload(self, w: Any, where: str) -> Dict[str, Any]:
        if w is None:
            return {}
        if not isinstance(w, dict):
            self.refuse(where, "must be a mapping of the settings explore draws")
        for key, value in w.items():
            if key not in self.overrides:
                allowed = ", ".join(self.overrides) or "none on this base"
                self.refuse(f"{where}.{shown(key, 40)}", f"no setting explore draws (allowed: {allowed})")
            if not _drawn(value, self.overrides[key]):
                self.refuse(f"{where}.{key}", f"{shown(repr(value), 60)} is no value explore draws "
                                              f"(allowed: {', '.join(map(repr, self.overrides[key]))})")
        return dict(w)

    def scenario(self, faults: List[Dict[str, Any]], workload: Dict[str, Any], where: str) -> None:
        """The schedule as the scenario it runs, validated as every scenario is."""
        from ftharness import releases

        expected = es.expectation(self.base.failure_config.model_dump(), faults, self.ray_version)
        data = es.example_scenario(self.base, faults, expected, self.ray_version, workload)
        try:
            sc = parse_scenario(data, source=where, base_dir=self.base.base_dir)
            version = self.ray_version or releases.installed()
            why = release_problem(sc, version) if version else None
        except ScenarioError as e:
            raise StateRefused(f"{self.label}: {str(e).splitlines()[0]}") from None
        if why:
            self.refuse(where, why)

    # -- the records around them
    def text(self, v: Any, where: str, none: bool = False) -> None:
        if (v is None and none) or (isinstance(v, str) and len(v) <= MAX_TEXT):
            return
        self.refuse(where, f"must be a string of at most {MAX_TEXT} characters" + (" or null" if none else ""))

    def example(self, e: Any, where: str) -> Dict[str, Any]:
        if not isinstance(e, dict):
            self.refuse(where, "must be a mapping (one example)")
        fields = EXAMPLE_FIELDS
        for key in e:
            if key not in fields:
                self.refuse(f"{where}.{shown(key, 40)}", f"unknown key (allowed: {', '.join(fields)})")
        for key in ("index", "name", "faults", "phases", "status"):
            if key not in e:
                self.refuse(f"{where}.{key}", "missing")
        if not _is_int(e["index"]) or e["index"] < 0:
            self.refuse(f"{where}.index", "must be a whole number >= 0")
        if not isinstance(e["name"], str) or not _NAME.fullmatch(e["name"]):
            self.refuse(f"{where}.name", "must be explore-<8 hex digits>, the name explore gives an example")
        self.faults(e["faults"], f"{where}.faults")
        if not isinstance(e["phases"], list) or any(not isinstance(p, str) or p not in es.PHASES for p in e["phases"]):
            self.refuse(f"{where}.phases", f"allowed: a list of {', '.join(es.PHASES)}")
        if e["status"] not in _STATUS:
            self.refuse(f"{where}.status", f"allowed: {', '.join(_STATUS)}")
        for key in ("signature", "folder"):
            self.text(e.get(key, ""), f"{where}.{key}")
        for key in ("verdict", "outcome", "error_type"):
            self.text(e.get(key), f"{where}.{key}", none=True)
        for key, ok in (("expected_outcomes", lambda x: x in ("succeeded", "failed")),
                        ("reasons", lambda x: isinstance(x, str) and len(x) <= MAX_TEXT),
                        ("landed", lambda x: isinstance(x, bool))):
            value = e.get(key, [])
            if not isinstance(value, list) or len(value) > 1000 or not all(ok(x) for x in value):
                self.refuse(f"{where}.{key}", "not a list explore writes")
        for key in ("wall_s", "at_s"):
            if not _is_number(e.get(key, 0.0)) or e.get(key, 0.0) < 0:
                self.refuse(f"{where}.{key}", "must be a number of seconds >= 0")
        if e.get("purpose", "search") not in ("search", "confirm"):
            self.refuse(f"{where}.purpose", "allowed: search, confirm")
        if not _is_int(e.get("session", 1)) or not 1 <= e.get("session", 1) <= 1_000_000:
            self.refuse(f"{where}.session", "must be a whole number 1..1000000")
        self.workload(e.get("workload"), f"{where}.workload")
        return e

    def finding(self, g: Any, where: str) -> Tuple[List[Dict[str, Any]], Dict[str, Any]]:
        if not isinstance(g, dict):
            self.refuse(where, "must be a mapping (one finding)")
        for key in g:
            if key not in FINDING_FIELDS:
                self.refuse(f"{where}.{shown(key, 40)}", f"unknown key (allowed: {', '.join(FINDING_FIELDS)})")
        if "example" not in g:
            self.refuse(f"{where}.example", "missing")
        example = self.example(g["example"], f"{where}.example")
        if g.get("repeat") is not None:
            self.example(g["repeat"], f"{where}.repeat")
        for key in ("signature", "scenario_file"):
            self.text(g.get(key, ""), f"{where}.{key}")
        if g.get("status", "confirmed") not in ("confirmed", "flaky", "unconfirmed"):
            self.refuse(f"{where}.status", "allowed: confirmed, flaky, unconfirmed")
        faults = example["faults"]
        workload = self.workload(example.get("workload"), f"{where}.example.workload")
        self.scenario(faults, workload, f"{where}.example")
        return faults, workload


def check_database(out: str) -> None:
    """OUT/.hypothesis holds only folders and small regular files (Hypothesis reads each whole,
    with a plain open: a FIFO would hang it, /dev/zero fill the memory); StateRefused otherwise."""
    root = os.path.join(out, DB_DIR)
    if not os.path.lexists(root):
        return
    if os.path.islink(root) or not os.path.isdir(root):
        raise StateRefused(f"{shown(root)}: not a folder (a symlink, a file); explore keeps its example database "
                           f"there: choose a new --out")
    seen = 0
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            seen += 1
            path = os.path.join(folder, name)
            st = os.lstat(path)
            if _stat.S_ISDIR(st.st_mode):
                continue
            if not _stat.S_ISREG(st.st_mode):
                raise StateRefused(f"{shown(path)}: not a regular file (a symlink, a FIFO, a device); the example "
                                   f"database holds only files explore wrote: choose a new --out")
            if st.st_size > MAX_DB_FILE:
                raise StateRefused(f"{shown(path)}: {st.st_size} bytes; an entry of the example database is at "
                                   f"most {MAX_DB_FILE}: choose a new --out")
        if seen > MAX_DB_ENTRIES:
            raise StateRefused(f"{shown(root)}: more than {MAX_DB_ENTRIES} entries; choose a new --out")


def load_state(out: str, base: Scenario, support: "es.Support",
               ray_version: Optional[str] = None) -> Tuple[List[Dict[str, Any]], List[Tuple[list, dict]]]:
    """(the examples, the (faults, workload) of each finding) of earlier explores into `out`, every
    value checked as above; ([], []) when `out` holds no explore.json. StateRefused (exit 2, one
    line naming the key) for anything explore never wrote."""
    check_database(out)
    path = os.path.join(out, EXPLORE_FILE)
    if not os.path.lexists(path):
        return [], []
    label = shown(path)
    data = read_json_bounded(path, MAX_STATE_BYTES, label)
    check = _Checker(label, base, support, ray_version)
    if not isinstance(data, dict):
        check.refuse("(top)", "must be a mapping, as explore writes it")
    for key in data:
        if key not in TOP_KEYS:
            check.refuse(shown(key, 40), f"unknown key (allowed: {', '.join(sorted(TOP_KEYS))})")
    examples, findings = data.get("examples") or [], data.get("findings") or []
    for key, value in (("examples", examples), ("findings", findings)):
        if not isinstance(value, list) or len(value) > MAX_EXAMPLES:
            check.refuse(key, f"must be a list of at most {MAX_EXAMPLES}")
    kept = [check.example(e, f"examples[{i}]") for i, e in enumerate(examples)]
    found = [check.finding(g, f"findings[{i}]") for i, g in enumerate(findings)]
    return kept, found
