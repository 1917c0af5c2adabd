"""What a fit() leaves running on the cluster after it returns: the `train_leftovers` fact.

Ray Train V2 ends every actor of a run when fit() returns, a failed one too: the controller,
the workers, their synchronization and dataset actors, their placement group, and (2.53+) the
detached PlacementGroupCleaner, which must exit once its controller is gone (ray-project/ray#61756:
up to 2.54 it never does when the controller dies before the first worker group starts).

Sampled only on a cluster ftharness started, where every run is this one, and only when the
scenario judges `no_leftovers` (the wait below costs a healthy run up to a few seconds). Ray
ends a run's actors asynchronously after fit() returns, so the sample polls until nothing is
left or SETTLE_S passed: what is still there then is a leftover. (The fit task puts back the
SIGINT handler fit() leaves holding the controller's handle: harness/run/fit_task.py.)
"""

from __future__ import annotations

import time
from typing import Any, Dict

from ftharness.harness.cluster import ray_private as rp

#: how long after fit() returned a Train actor or placement group may still be ending
SETTLE_S = 15.0
PERIOD_S = 0.25


def sample(settle_s: float = SETTLE_S) -> Dict[str, Any]:
    """{waited_s, settle_s, actors: [{class_name, pid, actor_id}], placement_groups: [{state, bundles}]}:
    Ray Train's actors and the placement groups still alive once nothing is left or `settle_s` passed."""
    t0 = time.monotonic()
    while True:
        actors, groups = rp.train_run_actors(), rp.live_placement_groups()
        if not (actors or groups) or time.monotonic() - t0 >= settle_s:
            break
        time.sleep(PERIOD_S)
    return {
        "waited_s": round(time.monotonic() - t0, 2),
        "settle_s": settle_s,
        "actors": [{"class_name": a["class_name"].rsplit(".", 1)[-1], "pid": a.get("pid"),
                    "actor_id": str(a.get("actor_id") or "")[:16]} for a in actors],
        "placement_groups": [{"state": g.get("state"), "bundles": g.get("bundles")} for g in groups],
    }
