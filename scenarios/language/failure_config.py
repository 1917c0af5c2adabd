"""`failure_config:` of a scenario (FailureConfigSpec): Ray Train's failure budgets, with
Ray's own defaults from ftharness.releases, and `given()`, the fields a scenario sets (the
only ones a run passes to Ray's FailureConfig)."""

from __future__ import annotations

from typing import Any, Dict

from pydantic import Field

from ftharness import releases
from ftharness.faults.base import Strict as _Strict


#: Ray Train's own FailureConfig defaults (the same on every release that has the field,
#: releases.py; tests/test_release_defaults.py checks them against the installed release)
_RAY_FC = releases.newest().failure_config


class FailureConfigSpec(_Strict):
    """Ray Train's failure budgets (FailureConfig) and preemption handling. A field the scenario
    leaves out is Ray's own default, as a plain FailureConfig() gets it: the run passes Ray only
    the fields the scenario sets (`model_fields_set`) and records what was used (run_start)."""

    max_failures: int = Field(_RAY_FC["max_failures"], ge=-1, le=1_000_000)
    max_preemption_failures: int = Field(_RAY_FC["max_preemption_failures"], ge=-1, le=1_000_000)
    controller_failure_limit: int = Field(_RAY_FC["controller_failure_limit"], ge=-1, le=1_000_000)
    preemption_grace_s: float = Field(_RAY_FC["preemption_grace_s"], ge=0, le=24 * 3600)
    relax_collectives_on_preemption: bool = _RAY_FC["relax_collectives_on_preemption"]

    def given(self) -> Dict[str, Any]:
        """The fields the scenario sets, and their values (what is passed to Ray's FailureConfig)."""
        return {k: getattr(self, k) for k in type(self).model_fields if k in self.model_fields_set}
