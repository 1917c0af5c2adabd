"""A cell's scenario as its release runs it, judged by that release's own policy.

A catalog scenario is written for the newest release. On an older one two
things may differ, both by the release's documented rules, and the matrix
makes each visible instead of calling it a failure:

- a failure_config field the release lacks (max_preemption_failures before
  2.58) is left out, with a note (schema.adapt_to_release);
- the outcome the scenario expects is replaced by the one the release's policy
  model predicts for the same faults (policy_model.expected_outcome on the
  release), when the scenario's own expectation is the newest policy's
  prediction: a preemption that 2.60 retries from max_preemption_failures is
  charged to max_failures on 2.57, and with max_failures 0 the run must fail
  there. Properties that need a finished run are then not expected.

Everything else (every property, every fault landing) is judged as written, so
a violation on one release is a FAIL in that cell.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ftharness import releases
from ftharness.faults.base import CERTAIN
from ftharness.scenarios import policy_model
from ftharness.scenarios.schema import adapt_to_release

#: properties that need a run that finished: not expected where the release's policy says it fails
NEEDS_SUCCESS = ("recovers",)


def fault_classes(faults: List[Dict[str, Any]]) -> Optional[List[str]]:
    """The failure classes of `faults` in order (each as its kind declares it: `Fault.failure_claim`),
    or None when one has no single known class (it may or may not fail, causes none of its own
    that the policy charges, or declares nothing)."""
    from ftharness.faults import failure_of

    out = []
    for f in sorted(faults, key=lambda f: (f.get("at") or {}).get("step") or 0):
        claim = failure_of(f)
        if claim.certainty != CERTAIN or claim.failure is None:
            return None
        out.append(claim.failure)
    return out


def predicted(data: Dict[str, Any], ray_version: str) -> Optional[policy_model.Expectation]:
    """What `ray_version`'s policy predicts for the scenario's faults, or None when it cannot say."""
    if (data.get("workload") or {}).get("runtime", "ray_train") != "ray_train":
        return None
    classes = fault_classes(list(data.get("faults") or []))
    if classes is None:
        return None
    return policy_model.expected_outcome(data.get("failure_config") or {}, classes, ray_version)


def for_release(data: Dict[str, Any], ray_version: str) -> Tuple[Dict[str, Any], List[str]]:
    """The scenario data a cell on `ray_version` runs, and the notes saying what was changed and why."""
    written = predicted(data, releases.NEWEST)
    out, notes = adapt_to_release(data, ray_version)
    here = predicted(out, ray_version)
    expect = dict(out.get("expect") or {})
    wanted = expect.get("outcome", "succeeded")
    if written is None or here is None or written.outcome != wanted or here.outcome == wanted:
        return out, notes
    expect["outcome"] = here.outcome
    if here.error_type:
        expect["error_type"] = here.error_type
    props = expect.get("properties")
    if props and here.outcome == "failed":
        dropped = [p for p in props if p in NEEDS_SUCCESS]
        expect["properties"] = [p for p in props if p not in NEEDS_SUCCESS]
        if dropped:
            notes.append(f"expect.properties: {', '.join(dropped)} not expected, the run fails by its policy")
    last = here.decisions[-1] if here.decisions else None
    why = (f"the {last.failure_class} failure is charged to {LIMIT_NAMES.get(last.budget, last.budget)} "
           f"(count {last.count}, limit {last.limit})") if last else "by its policy"
    notes.append(f"expect.outcome: {here.outcome} on Ray {ray_version}, as its policy says: {why}")
    return {**out, "expect": expect}, notes


#: the FailureConfig field each budget is counted against, as users know them
LIMIT_NAMES = {"worker_group": "max_failures", "preemption": "max_preemption_failures",
               "controller": "controller_failure_limit", "none": "no budget (not retryable)"}
