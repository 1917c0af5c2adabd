"""What a rule may expect of a job: the promises each job shape makes, and the rules that read them.

A user's job is judged only on what every Ray Train job does (every rank calls
`ray.train.report`, a report is a collective, Ray registers what was reported);
ftharness's reference job promises more (every report's checkpoint holds new
files, metrics carry the step, a checkpoint every `checkpoint_every` steps), and
a rule that reads such a promise runs only where the declared job made it. So a
Lightning job whose ranks > 0 report a folder with nothing of their own, or an
XGBoost job that reports its final model twice, never fails or goes
INCONCLUSIVE on a promise it never made (issue 46; the controls under
tests/data/controls are real runs of each shape, and each must PASS).

`PROMISES` is the one table; `Declared.holds(name)` (history/causal.py) asks it;
scripts/gen_field_map.py and docs/verdicts.md show it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, FrozenSet, Tuple

#: the job shapes ftharness tells apart from what the scenario declares
REFERENCE = "reference"      # ftharness's own workload (workload.kind: reference), under either runtime
USER = "user"                # a user's train_loop_per_worker (workload.entrypoint), any framework on Ray Train
SHAPES = (REFERENCE, USER)


@dataclass(frozen=True)
class Promise:
    says: str                      # what the job does, as a rule relies on it
    shapes: FrozenSet[str]         # the job shapes that make it
    rules: Tuple[str, ...]         # the rules (docs/verdicts.md's codes, or property names) that read it
    why: str                       # where the promise comes from


_ALL = frozenset(SHAPES)
_REF = frozenset({REFERENCE})

PROMISES: Dict[str, Promise] = {
    "report-is-collective": Promise(
        "every rank of an attempt calls report the same number of times, in step order",
        _ALL, ("report", "collective-order", "lockstep"),
        "ray.train.report is a collective in Ray Train V2 (a barrier broadcasting the checkpoint folder)"),
    "one-folder-per-report": Promise(
        "the ranks of one report name one checkpoint folder", _ALL, ("report",),
        "Ray raises when ranks report different folders for one report"),
    "registered-after-report": Promise(
        "a checkpoint is registered after a rank reported it, in report order, in the run's folder",
        _ALL, ("registration", "run-identity"), "Ray Train's CheckpointManager registers the reported checkpoint"),
    "new-files-each-report": Promise(
        "each report's checkpoint holds files no earlier report held (its digest is new)", _REF, ("report",),
        "the reference job saves its state every time it checkpoints; Lightning's ranks > 0 report a folder "
        "with nothing of theirs and XGBoost reports its final model twice, so no user job promises it"),
    "metrics-carry-step": Promise(
        "a report's metrics carry the step it reports (`step`)", _REF, ("report",),
        "harness/job/workload.py save_and_report"),
    "written-before-reported": Promise(
        "the rank that reports a checkpoint wrote it first (checkpoint_written), at that step, before stepping on",
        _REF, ("report", "sequence"), "harness/job/workload.py: side.checkpoint_written, then side.report"),
    "step-before-report": Promise(
        "a rank reports step N after doing step N (a user job's step is its report)", _REF, ("report", "sequence"),
        "the reference job records its optimizer step, then reports it"),
    "fixed-cadence": Promise(
        "a checkpoint at every checkpoint_every-th step and the last, and only there (or on a notice or deadline)",
        _REF, ("cadence",), "harness/job/workload.py: step % checkpoint_every == 0 or step == steps"),
    "returns-last-step": Promise(
        "fit() returns the step the lineage ended at", _REF, ("return-value",),
        "the reference train function returns {'step': ...}"),
    "exact-accumulators": Promise(
        "the final accumulators equal a fault-free run's", _REF, ("exactly_once_restore",),
        "scenarios/reference_data.py expected_accumulators"),
}


def promised(shape: str) -> FrozenSet[str]:
    """The promises a job of `shape` makes."""
    return frozenset(name for name, p in PROMISES.items() if shape in p.shapes)
