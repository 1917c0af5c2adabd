"""A mutant judged as `ftharness check` judges a results folder, and the rule that refused it.

A part of the mutation engine (reports/mutation.py re-exports its names): a recorded results folder
read (`load`) and a mutant written as one (`write`, re-sealed unless the edit is in transit or after
the seal), judged through `rejudge`, and each reason of the verdict named by its rule code
(`reason_code`), generic (the record disagreeing with itself) or semantic.
"""

from __future__ import annotations

import copy
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

from ftharness.history.records import read_history, sealed_lines
from ftharness.reports.mutation_parts import Event, Mutant


@dataclass
class Outcome:
    mutant: Mutant
    verdict: str
    killer: str                    # the rule code that refused it first (`reason_code`), "-" for a PASS
    reasons: List[str] = field(default_factory=list)
    codes: List[str] = field(default_factory=list)   # the rule code of every reason, in order

    @property
    def semantic_killer(self) -> Optional[str]:
        """The first semantic rule that refused it (None: none did; generic rules only, or a PASS)."""
        return next((c for c in self.codes if not is_generic(c)), None)


# ------------------------------------------------------------------------------- reading
def load(folder: str) -> Tuple[List[Event], str]:
    """(events without history_end, scenario.yaml text) of a recorded results folder."""
    read = read_history(folder)
    if read.problems:
        raise ValueError(f"{folder}: the recorded history is not intact ({read.problems[0]})")
    events = [copy.deepcopy(e) for e in read.events if e.get("kind") != "history_end"]
    from ftharness.inputs import MAX_SCENARIO_BYTES, read_bounded

    raw = read_bounded(os.path.join(folder, "scenario.yaml"), MAX_SCENARIO_BYTES)   # the one reader
    return events, raw.decode("utf-8", "replace")


# -------------------------------------------------------------------------------- judging
def write(m: Mutant, scenario_text: str, folder: str) -> str:
    """The mutant as a results folder (history.jsonl, scenario.yaml)."""
    os.makedirs(folder, exist_ok=True)
    if m.renumber:
        lines = _renumbered(m.events)
    else:
        lines = sealed_lines(m.events, renumber=True)
    if m.stale_seal:
        body = [json.loads(x) for x in lines[:-1]]
        steps = [e for e in body if e.get("kind") == "step"] or body
        steps[0]["loss"] = -1.0
        lines = [json.dumps(e).encode() for e in body] + lines[-1:]
    with open(os.path.join(folder, "history.jsonl"), "wb") as f:
        f.write(b"".join(x + b"\n" for x in lines))
    with open(os.path.join(folder, "scenario.yaml"), "w") as f:
        f.write(scenario_text)
    return folder


def _renumbered(events: List[Event]) -> List[bytes]:
    """Sealed lines in which each emitter's numbering follows the file (as if recorded so)."""
    eseq: Counter = Counter()
    out = []
    for e in events:
        e = dict(e)
        if e.get("emitter"):
            eseq[e["emitter"]] += 1
            e["eseq"] = eseq[e["emitter"]]
        out.append(e)
    return sealed_lines(out, renumber=True)


def judge(m: Mutant, scenario_text: str, folder: str) -> Outcome:
    """The mutant judged as `ftharness check` judges a results folder. A folder `check` refuses
    (scenario.yaml does not match the history: exit 2) is REFUSED; an internal error is ERROR
    (neither is a PASS; an error is counted as killed by nothing semantic)."""
    from ftharness.errors import ScenarioError
    from ftharness.reports.judgement import rejudge

    shutil.rmtree(folder, ignore_errors=True)
    try:
        summary = rejudge(write(m, scenario_text, folder))
    except ScenarioError as e:
        summary = {"verdict": "REFUSED", "inconclusive": [f"refused: {e}"]}
    except Exception as e:   # an internal error of the judge: named, never a PASS, never a semantic kill
        summary = {"verdict": "ERROR", "inconclusive": [f"error: {type(e).__name__}: {str(e)[:200]}"]}
    reasons = list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or [])
    codes = reason_codes(summary)
    return Outcome(m, summary.get("verdict"), codes[0] if codes else "-", reasons, codes)


#: the generic rules: what refuses a history that disagrees with itself as a record (a process's clock
#: running backwards, a line that does not parse, a seal or numbering that does not match, a value of the
#: wrong type, a record that cannot be read as a run, one process's events naming different pids, ranks or
#: attempts), whatever the facts mean. Every other reason (the other model rules, every property, a
#: fault's landing, the outcome, the recorded settings and release) is semantic.
GENERIC = frozenset({"history", "model:clock", "model:odd-value", "model:unreadable", "model:emitter",
                     "fault-record", "error"})


def reason_code(text: str) -> str:
    """The rule a reason of a verdict names: `model:<rule>` for the causal model's findings, the
    property's name, `landing`, `outcome`, `history` (the record's integrity: parse, seal, numbering),
    `release`, `recorded` (a recorded setting that differs from the scenario's), `scenario`, `job-error`
    (the job's own code failed with no fault), `other` for a reason no prefix here names."""
    if text.startswith("history:"):
        return "history"
    if text.startswith("model: the history could not be read"):
        return "model:unreadable"
    if text.startswith("model: "):
        return "model:" + text[len("model: "):].split(":", 1)[0].strip()
    if text.startswith("fault record seq"):
        return "fault-record"
    if text.startswith("fault(s) ") or text.startswith("the scenario's faults differ") \
            or text.startswith("the run recorded") or text.startswith("the run's ") \
            or text.startswith("the run trained to a deadline"):
        return "recorded"
    if text.startswith("fault "):
        return "landing"
    if text.startswith("pinned property "):
        return text.split()[2]
    if text.startswith("property "):
        return text.split()[1]
    if text.startswith("outcome") or text.startswith("error_type"):
        return "outcome"
    if text.startswith("release:"):
        return "release"
    if text.startswith("scenario.yaml names") or text.startswith("refused:"):
        return "scenario"
    if text.startswith("the soak"):
        return "soak"
    if text.startswith("the job's own code"):
        return "job-error"
    if text.startswith("error:"):
        return "error"
    return "other"


def reason_codes(summary: Dict[str, Any]) -> List[str]:
    """The rule code of every reason of a verdict, the mismatches (FAIL) first ([] for a PASS)."""
    if summary.get("verdict") == "PASS":
        return []
    return [reason_code(t) for t in list(summary.get("mismatches") or []) + list(summary.get("inconclusive") or [])]


def killer(summary: Dict[str, Any]) -> str:
    """What refused a history first, as a rule code (`reason_code`: `model:clock`, `model:registration`,
    a property's name, `landing`, `history`, `outcome`...; "-" for a PASS)."""
    codes = reason_codes(summary)
    return codes[0] if codes else ("-" if summary.get("verdict") == "PASS" else "other")


def is_generic(code: str) -> bool:
    return code in GENERIC


def field_key(kind: str, fld: str) -> str:
    """kind.field of an edit, list indices written [] (workers.0.pid -> worker_group_started.workers[].pid)."""
    return f"{kind}." + ".".join("[]" if p.isdigit() else p for p in str(fld).split("."))
