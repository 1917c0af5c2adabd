"""`expect:` of a scenario (ExpectSpec, PinnedViolation): what a run must show for a PASS,
checked against the property registry so a property name is refused at load, not after
a run."""

from __future__ import annotations

from typing import Annotated, Dict, List, Literal, Optional

from pydantic import Field, field_validator, model_validator

from ftharness.faults.base import Strict as _Strict
from ftharness.history.model import BUDGETS, LIMIT_FIELD, TORCHRUN_BUDGET
from ftharness.scenarios.properties import PROPERTIES

#: the budget names of the history and the summary (`budgets`, history/model.py `charged`):
#: what `expect.charged` may name
CHARGED_BUDGETS = BUDGETS + (TORCHRUN_BUDGET,)
#: longest exception class name `expect.worker_failure_types` takes (Python identifiers, dotted or not)
MAX_CLASS_NAME = 200


class PinnedViolation(_Strict):
    """A known gap of Ray: `property` is expected to FAIL, and only for `reason`
    (a case-insensitive substring every violation of it must contain)."""

    property: Literal[PROPERTIES]  # type: ignore[valid-type]
    reason: str = Field(..., min_length=3, max_length=300)


class ExpectSpec(_Strict):
    """What the run must show for a PASS: outcome, properties that hold, pinned violations, bounds."""

    outcome: Literal["succeeded", "failed"] = "succeeded"
    #: properties that must hold; None: every property that applies to the workload
    properties: Optional[List[Literal[PROPERTIES]]] = Field(None, max_length=64)  # type: ignore[valid-type]
    #: properties pinned to FAIL for a stated reason (known Ray gaps), so the suite notices when they close
    violations: List[PinnedViolation] = Field(default_factory=list, max_length=64)
    error_type: Optional[str] = Field(None, max_length=200)
    recovery_bound_s: Optional[float] = Field(None, gt=0, le=7 * 24 * 3600)
    #: most steps one restart may redo (bounded_lost_work); None: the largest gap between
    #: reported checkpoints plus the registration lag
    max_lost_steps: Optional[int] = Field(None, ge=0, le=1_000_000)
    #: metrics the job reports that never decrease over the kept lineage (monotonic_counters)
    monotonic: Optional[List[Annotated[str, Field(min_length=1, max_length=200)]]] = Field(None, max_length=64)
    #: failures charged to each named budget when the run ends, exactly (budgets left out are not
    #: judged; name one with 0 to require that nothing was charged to it)
    charged: Optional[Dict[str, int]] = Field(None, max_length=len(CHARGED_BUDGETS))
    #: {rank: exception class name} of the last worker failure the controller recorded
    #: (`controller_state.worker_failures`): each named rank failed with that class (others not judged)
    worker_failure_types: Optional[Dict[str, str]] = Field(None, min_length=1, max_length=1024)

    @field_validator("charged", mode="before")
    @classmethod
    def _budgets(cls, v):
        if isinstance(v, dict):
            for name, n in v.items():
                if name not in CHARGED_BUDGETS:
                    field = {f: b for b, f in LIMIT_FIELD.items()}.get(name)
                    hint = f" (the FailureConfig field {name} limits the budget {field})" if field else ""
                    raise ValueError(f"charged: {str(name)[:40]!r} is not a budget{hint}; "
                                     f"allowed: {', '.join(CHARGED_BUDGETS)}")
                if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 1_000_000:
                    raise ValueError(f"{name}: {str(n)[:20]!r} is not a count; allowed: an integer 0-1000000")
        return v

    @field_validator("worker_failure_types", mode="before")
    @classmethod
    def _ranks(cls, v):
        if isinstance(v, dict):
            for rank, name in v.items():
                r = str(rank)
                if isinstance(rank, bool) or not (r.isascii() and r.isdigit()) or int(r) > 100_000:
                    raise ValueError(f"worker_failure_types: {r[:20]!r} is not a rank; allowed: a world rank 0-100000")
                if not isinstance(name, str) or not name or len(name) > MAX_CLASS_NAME \
                        or not all(part.isidentifier() for part in name.split(".")):
                    raise ValueError(f"worker_failure_types: rank {r}: {str(name)[:40]!r} is not an exception class "
                                     f"name; allowed: a Python class name such as ValueError")
            return {str(int(str(k))): n for k, n in v.items()}
        return v

    @field_validator("violations", mode="before")
    @classmethod
    def _pins(cls, v):
        for item in v if isinstance(v, list) else []:
            if isinstance(item, str):
                raise ValueError(f"violations: {item!r} needs a reason: {{property: {item}, reason: '...'}}")
        return v

    @model_validator(mode="after")
    def _no_contradiction(self):
        both = sorted({p.property for p in self.violations} & set(self.properties or []))
        if both:
            raise ValueError(f"violations: {', '.join(both)} is both expected to hold (properties) "
                             f"and pinned to fail (violations)")
        if self.properties is not None:
            if not self.properties:
                raise ValueError("properties: [] expects nothing, so any run would PASS; name at least one "
                                 "property, or leave the key out for every property that applies")
            judged = set(self.properties) | {p.property for p in self.violations}
            for key, prop in (("monotonic", "monotonic_counters"), ("recovery_bound_s", "recovers"),
                              ("max_lost_steps", "bounded_lost_work")):
                if getattr(self, key) is not None and prop not in judged:
                    raise ValueError(f"{key}: declared, but properties leaves out {prop}, which judges it; "
                                     f"add {prop} to properties or drop {key}")
        return self
