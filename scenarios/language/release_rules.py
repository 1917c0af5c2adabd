"""Whether a scenario can run on a given Ray release (`release_problem`,
`require_release`), and the matrix's way to run it on an older one anyway
(`adapt_to_release`): a field the release lacks is refused or dropped with a note, never
dropped silently."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.faults import REGISTRY
from ftharness.scenarios.language.messages import one_line
from ftharness.scenarios.language.scenario import Scenario


def release_problem(sc: Scenario, ray_version: Optional[str]) -> Optional[str]:
    """Why `sc` cannot run on Ray `ray_version` (one line naming the field and the
    release), or None. A field the release lacks is refused, never dropped silently:
    its FailureConfig would reject it, or the behaviour it asks for does not exist there."""
    if sc.workload.runtime == "torchrun" or not ray_version:
        return None
    rel = releases.release(ray_version)
    if rel is None:
        return (f"Ray {ray_version}: not supported (ftharness supports Ray {releases.RANGE_TEXT}, "
                f"Train V2; tested: {', '.join(releases.SUPPORTED)})")
    for name in sorted(sc.failure_config.model_fields_set):
        if name not in rel.failure_config:
            since = releases.field_needs(name)
            return (f"failure_config.{name}: Ray {ray_version} has no such setting"
                    f"{f' (it arrived in {since.name})' if since else ''}; allowed on {rel.name}: "
                    f"{', '.join(sorted(rel.failure_config))}")
    if isinstance(sc.workload.num_workers, tuple) and not rel.elastic:
        return (f"workload.num_workers: [min, max] (elastic training) needs Ray {releases.field_release('elastic')} "
                f"or later; Ray {ray_version} takes a single number")
    if sc.workload.jit_checkpoint and not rel.preemption_watcher:
        return (f"workload.jit_checkpoint: waits for Ray's preemption notice, which Ray {ray_version} does not "
                f"give (from {releases.field_release('preemption_watcher')})")
    for i, f in enumerate(sc.faults):
        problem = REGISTRY[f.kind].release_problem(f, ray_version, rel.minor, i)
        if problem:
            return problem
    return None


def require_release(sc: Scenario, ray_version: Optional[str] = None) -> Scenario:
    """`sc`, or a one-line ScenarioError when it cannot run on `ray_version` (default: the installed Ray)."""
    problem = release_problem(sc, ray_version or releases.installed())
    if problem:
        raise ScenarioError(one_line(f"{sc.name}: {problem}"))
    return sc


def adapt_to_release(data: Dict[str, Any], ray_version: str) -> Tuple[Dict[str, Any], List[str]]:
    """A scenario's data with the failure_config fields Ray `ray_version` lacks removed, and one
    note per removal: the matrix runs a scenario on older releases this way, so that what the
    release does without the setting (e.g. a preemption charged to max_failures) is seen."""
    rel = releases.release(ray_version)
    fc = dict(data.get("failure_config") or {})
    notes = []
    if rel is not None and data.get("workload", {}).get("runtime", "ray_train") != "torchrun":
        for name in sorted(fc):
            if name not in rel.failure_config:
                notes.append(f"failure_config.{name} left out: Ray {ray_version} has no such setting")
                fc.pop(name)
    return ({**data, "failure_config": fc} if notes else data), notes
