"""The detection profiles ftharness runs an embedded cluster with (pure data).

`cluster.profile` names one: "fast" makes GCS declare a dead or stopped node within
~2-5 s and gives death causes (e.g. `preempted`) time to reach the Train controller;
"ray_defaults" is what a stock cluster does. The cluster layer applies them; the
judgement reads them as what the scenario declared (a bound never comes from the run
it judges), e.g. how long Ray Train waits for a hung worker's health check.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

#: Ray Core settings (`system_config`), Ray Train environment (`train_env`: the fit's process, which
#: Ray Train propagates to its controller and workers) and the embedded nodes' own environment
#: (`node_env`: read in the Train controller's process, which Ray Train does not propagate from the
#: driver, so it must be in the environment its raylet starts workers with) per profile
PROFILES: Dict[str, Dict[str, Any]] = {
    "fast": {
        "system_config": {
            "health_check_initial_delay_ms": 1000,
            "health_check_period_ms": 500,
            "health_check_timeout_ms": 500,
            "health_check_failure_threshold": 3,
            "timeout_ms_task_wait_for_death_info": 10000,
        },
        "train_env": {
            "RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25",
            "RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": "10",
            "RAY_TRAIN_PREEMPTION_POLL_INTERVAL_S": "0.5",
            "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20",
        },
        "node_env": {
            # TorchConfig.on_shutdown waits this long for each worker to destroy its process
            # group (default 30 s). A hung or cut-off worker never answers, so every restart
            # after one waits it out; the decision to restart is taken before it, so no outcome
            # changes (docs/benchmarks.md, "A restart's time and a suite's").
            "TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S": "5",
        },
    },
    "ray_defaults": {"system_config": {}, "train_env": {}, "node_env": {}},
}

#: Ray Train's own RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S default, in every V2 release (constants.py)
RAY_HEALTH_CHECK_TIMEOUT_S = 600.0


def health_check_timeout_s(profile: Optional[str]) -> float:
    """How long Ray Train waits for a hung worker under `profile` (the release's default when the
    profile leaves it, or for a cluster ftharness did not start)."""
    env = (PROFILES.get(profile or "") or {}).get("train_env") or {}
    try:
        return float(env.get("RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S", RAY_HEALTH_CHECK_TIMEOUT_S))
    except (TypeError, ValueError):
        return RAY_HEALTH_CHECK_TIMEOUT_S
