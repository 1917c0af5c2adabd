"""The Ray releases ftharness supports, and what each one's Train V2 does under faults.

Pure data, read from each release's own code (ray/train/v2/...; the table with
file and line evidence is docs/ray-releases.md) and confirmed by real runs
(`ftharness matrix`). Everything version-dependent in ftharness asks this
module: the policy model (which budget a failure is charged to, the default
limits), the scenario language (a field a release lacks is refused, naming
the field and the release), doctor (settings that do nothing on a release),
and the matrix (`--ray all`). The Ray API differences themselves (imports
that moved or do not exist) stay in harness/cluster/ray_private.py, which
detects them by feature, not by number.

A release is named by its minor version: every patch of 2.57 behaves as
2.57's entry says (the entries were read from the latest patch of each minor).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, Optional, Tuple

#: the latest patch of each minor of the V2 era, oldest first (what `--ray all` runs)
SUPPORTED = ("2.51.2", "2.52.1", "2.53.0", "2.54.1", "2.55.1", "2.56.1", "2.57.1", "2.58.1", "2.59.0", "2.60.0")
OLDEST, NEWEST = SUPPORTED[0], SUPPORTED[-1]
#: every release of the V2 era, patches included, oldest first (`pip index versions ray`,
#: 2026-12-03): what `ftharness bisect` searches
ALL_RELEASES = ("2.51.0", "2.51.1", "2.51.2", "2.52.0", "2.52.1", "2.53.0", "2.54.0", "2.54.1", "2.55.0",
                "2.55.1", "2.56.0", "2.56.1", "2.57.0", "2.57.1", "2.58.0", "2.58.1", "2.59.0", "2.60.0")
RANGE_TEXT = "2.51 to 2.60"


@dataclass(frozen=True)
class Release:
    """What one minor release's Train V2 does; each field says where it was read."""

    minor: Tuple[int, int]
    #: FailureConfig fields and their defaults (ray/train/v2/api/config.py)
    failure_config: Dict[str, object]
    #: a separate preemption budget and PreemptionError (failure_handling/default.py)
    preemption_budget: bool
    #: PREEMPTING: the controller watches drains and waits out the deadline (controller/state.py)
    preempting_state: bool
    #: the PreemptionWatcher actor and workers' preemption_context (execution/preemption*.py)
    preemption_watcher: bool
    #: ray.train.get_preemption_info() (api/train_fn_utils.py)
    get_preemption_info: bool
    #: ScalingConfig(num_workers=(min, max)) (api/config.py)
    elastic: bool
    #: controller errors the default policy retries (charged to controller_failure_limit)
    retryable_controller_errors: Tuple[str, ...] = ("WorkerGroupStartupFailedError",
                                                   "WorkerGroupStartupTimeoutError")
    #: default RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S (constants.py): 30 s, 60 s from 2.54
    start_timeout_s: float = 60.0
    #: the env var bounding report/barrier collectives (constants.py) and its default
    #: (2.51: RAY_TRAIN_REPORT_BARRIER_TIMEOUT_S 1800 s; 2.52-2.55: -1 = none; 2.56+: unset = none,
    #: and -1 there makes every wait time out at once)
    collective_timeout_env: str = "RAY_TRAIN_COLLECTIVE_TIMEOUT_S"
    collective_timeout_default: Optional[float] = None
    #: the run snapshot records ray_version (checkpoint_manager.py, 2.54+)
    snapshot_records_version: bool = True
    #: a resumed run checks that the snapshot's checkpoint folders exist (2.54+; before, the
    #: check ran before the list was loaded and never saw a missing folder)
    snapshot_checks_folders: bool = True
    #: PlacementGroupCleaner removes a dead controller's placement group (2.53+)
    pg_cleaner: bool = True
    #: the [FailurePolicy] log line: "new" (multi-line, 2.52+) or "old" (one line, 2.51)
    decision_log: str = "new"
    #: default RAY_TRAIN_HEALTH_CHECK_INTERVAL_S and RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S (constants.py)
    health_check_interval_s: float = 2.0
    worker_health_check_timeout_s: float = 600.0
    #: default RAY_TRAIN_PREEMPTION_POLL_INTERVAL_S (constants.py), read where there is a watcher (2.57+)
    preemption_poll_interval_s: float = 5.0
    notes: Tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return f"{self.minor[0]}.{self.minor[1]}"

    @property
    def budgets(self) -> Tuple[str, ...]:
        return ("worker_group", "preemption", "controller") if self.preemption_budget else ("worker_group", "controller")

    def preempted_death_budget(self) -> str:
        """The budget a worker that died with its node drained for preemption is charged to."""
        return "preemption" if self.preemption_budget else "worker_group"

    def defaults(self) -> Dict[str, object]:
        """Every Ray setting ftharness passes or leaves to Ray, by dotted name, with this
        release's own default (what a plain TorchTrainer script gets when it leaves it out).
        tests/test_release_defaults.py compares them with the installed release's classes
        and constants (harness/cluster/ray_private.py: release_defaults)."""
        out: Dict[str, object] = {f"failure_config.{k}": v for k, v in self.failure_config.items()}
        out.update(COMMON_DEFAULTS)
        if self.elastic:
            out["scaling_config.elastic_resize_monitor_interval_s"] = 60.0
        out["env.RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S"] = self.start_timeout_s
        out["env.RAY_TRAIN_HEALTH_CHECK_INTERVAL_S"] = self.health_check_interval_s
        out["env.RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S"] = self.worker_health_check_timeout_s
        if self.preemption_watcher:
            out["env.RAY_TRAIN_PREEMPTION_POLL_INTERVAL_S"] = self.preemption_poll_interval_s
        out[f"env.{self.collective_timeout_env}"] = self.collective_timeout_default
        return out


#: defaults that are the same on every supported release (ray/air/config.py ScalingConfig and
#: CheckpointConfig, ray/train/v2/api/config.py RunConfig, ray/train/torch/config.py TorchConfig;
#: read on 2.51.2, 2.57.1 and 2.60.0)
COMMON_DEFAULTS: Dict[str, object] = {
    "scaling_config.num_workers": 1,
    "scaling_config.use_gpu": False,
    "scaling_config.resources_per_worker": None,     # None: one CPU per worker
    "scaling_config.placement_strategy": "PACK",
    "run_config.storage_path": None,                 # None: ~/ray_results
    "checkpoint_config.num_to_keep": None,           # None: keep every checkpoint
    "checkpoint_config.checkpoint_score_attribute": None,
    "checkpoint_config.checkpoint_score_order": "max",
    "torch_config.timeout_s": 1800,                  # the torch process group's timeout
    # TorchConfig.on_shutdown's wait for the workers' destroy_process_group (ray/train/constants.py;
    # read on 2.51.0, 2.55.0 and 2.60.0)
    "env.TORCH_PROCESS_GROUP_SHUTDOWN_TIMEOUT_S": 30,
}

_OLD_FC = {"max_failures": 0, "controller_failure_limit": -1}
_PREEMPT_FC = {**_OLD_FC, "max_preemption_failures": -1}
_GRACE_FC = {**_PREEMPT_FC, "relax_collectives_on_preemption": False, "preemption_grace_s": 0.0}


def _r(minor, fc, preempt, watcher, info, elastic, **kw) -> Release:
    return Release((2, minor), fc, preempt, preempt, watcher, info, elastic, **kw)


_PRE54 = dict(start_timeout_s=30.0, snapshot_records_version=False, snapshot_checks_folders=False,
              collective_timeout_default=-1)

RELEASES: Dict[Tuple[int, int], Release] = {r.minor: r for r in (
    _r(51, _OLD_FC, False, False, False, False, decision_log="old", pg_cleaner=False, **{
        **_PRE54, "collective_timeout_env": "RAY_TRAIN_REPORT_BARRIER_TIMEOUT_S",
        "collective_timeout_default": 1800}),
    _r(52, _OLD_FC, False, False, False, False, pg_cleaner=False, **_PRE54),
    _r(53, _OLD_FC, False, False, False, False, **_PRE54),
    _r(54, _OLD_FC, False, False, False, False, collective_timeout_default=-1,
       notes=("worker-group start timeout 30 s -> 60 s; snapshots record ray_version",)),
    _r(55, _OLD_FC, False, False, False, True, collective_timeout_default=-1,
       notes=("elastic num_workers: [min, max]",)),
    _r(56, _OLD_FC, False, False, False, True,
       notes=("RAY_TRAIN_COLLECTIVE_TIMEOUT_S unset means no timeout; -1 now times out at once",)),
    _r(57, _OLD_FC, False, True, False, True,
       notes=("the preemption watcher tells workers of a drain, but a preemption is still a "
              "worker-group failure charged to max_failures",)),
    _r(58, _PREEMPT_FC, True, True, True, True,
       notes=("max_preemption_failures, PreemptionError, PREEMPTING: a preemption has its own budget",)),
    _r(59, _PREEMPT_FC, True, True, True, True, notes=("no change under ray/train from 2.58",)),
    _r(60, _GRACE_FC, True, True, True, True,
       notes=("relax_collectives_on_preemption, preemption_grace_s",)),
)}


def parse(version: str) -> Tuple[int, int, int]:
    """(major, minor, patch) of "2.57.1" (a dev or rc suffix is ignored)."""
    m = re.match(r"^\s*(\d+)\.(\d+)(?:\.(\d+))?", str(version or ""))
    if not m:
        raise ValueError(f"not a Ray version: {version!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3) or 0)


def release(version: Optional[str]) -> Optional[Release]:
    """The entry of `version`'s minor, or None when it is outside the supported range (or unknown)."""
    try:
        major, minor, _ = parse(version)
    except ValueError:
        return None
    return RELEASES.get((major, minor))


def newest() -> Release:
    return RELEASES[max(RELEASES)]


def for_history(version: Optional[str]) -> Release:
    """The rules that judge a history recorded on `version`: the newest when the
    history does not say (histories from before ftharness recorded the version
    were all made on 2.60)."""
    return release(version) or newest()


def installed() -> Optional[str]:
    """The Ray version of this interpreter, or None without Ray."""
    try:
        from importlib.metadata import version

        return version("ray")
    except Exception:  # noqa: BLE001
        return None


def field_release(flag: str) -> str:
    """The first minor release whose entry has the boolean `flag` set ("2.55")."""
    for minor in sorted(RELEASES):
        if getattr(RELEASES[minor], flag):
            return RELEASES[minor].name
    return "none"


def field_needs(field_name: str) -> Optional[Release]:
    """The oldest release whose FailureConfig has `field_name`, or None if none has it."""
    for minor in sorted(RELEASES):
        if field_name in RELEASES[minor].failure_config:
            return RELEASES[minor]
    return None
