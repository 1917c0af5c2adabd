"""The spec models a scenario's faults are written in: strict parts, the trigger, the target, a kind's base.

The bottom of the fault layer's spec side (faults/base.py re-exports every name): `Strict` (unknown
keys, bools as numbers and NaN refused; the scenario language builds on it), `At` (when a fault
fires), `Target` (what it hits) and `FaultSpecBase` / `TargetedSpec`, which each kind's `Spec`
narrows. Pure pydantic; no cluster.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any, Dict, List, Literal, Optional, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from ftharness.history.triggers import EVENT_TRIGGERS


#: the events a trigger `at: {event: ...}` may name (those the history's trigger book fires on)
TRIGGER_EVENTS = tuple(EVENT_TRIGGERS)


class Strict(BaseModel):
    """A part of a scenario: unknown keys are refused, and `true` is no number,
    "3" no integer, NaN and infinities no durations."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)


class At(Strict):
    """When a fault fires: exactly one of `step`, `time_s` (seconds after training
    started) or `event` (its `nth` occurrence); `rank` narrows a step to one rank.
    A worker event holds the emitting worker until the fault is done; `hold: false`
    lets it run on (a partitioned worker could never hear its release)."""

    step: Optional[int] = Field(None, ge=1)
    rank: Optional[int] = Field(None, ge=0)
    time_s: Optional[float] = Field(None, ge=0)
    event: Optional[Literal[TRIGGER_EVENTS]] = None  # type: ignore[valid-type]
    nth: int = Field(1, ge=1)
    hold: bool = True

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in ("step", "time_s", "event") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("needs exactly one of step, time_s, event")
        if self.rank is not None and self.step is None:
            raise ValueError("rank only goes with step")
        if not self.hold and self.time_s is not None:
            raise ValueError("hold only goes with step or event (a time trigger holds nobody)")
        return self


#: the keys of a target, in the order messages list them
TARGET_KEYS = ("rank", "node", "node_id", "ip", "label", "random")


class Target(Strict):
    """What a fault hits, resolved when it fires: a worker `rank`, a worker `node`
    (0-based, head excluded), a node by Ray's `node_id` (8 or more hex digits of
    it), `ip` (the raylet's address) or `label` ({key: value} Ray node labels,
    all matching), or `random: true` (a random rank). A node given by id, IP or
    label must be exactly one live worker node (faults/targets.py)."""

    rank: Optional[int] = Field(None, ge=0)
    node: Optional[int] = Field(None, ge=0)
    node_id: Optional[str] = None
    ip: Optional[str] = None
    label: Optional[Dict[str, str]] = None
    random: Optional[bool] = None

    @field_validator("node_id")
    @classmethod
    def _node_id(cls, v: Optional[str]) -> Optional[str]:
        if v is not None and not re.fullmatch(r"[0-9a-fA-F]{8,56}", v):
            raise ValueError(f"node_id: must be 8 to 56 hex digits of a Ray node id (got {v[:60]!r})")
        return None if v is None else v.lower()

    @field_validator("ip")
    @classmethod
    def _ip(cls, v: Optional[str]) -> Optional[str]:
        if v is None:
            return v
        try:
            return str(ipaddress.ip_address(v.strip()))
        except ValueError:
            raise ValueError(f"ip: must be an IP address such as 10.0.0.5 (got {v[:60]!r})") from None

    @field_validator("label", mode="before")
    @classmethod
    def _label(cls, v: Any) -> Any:
        if isinstance(v, dict):  # YAML gives `{rack: 3}` an integer; Ray's labels are strings
            return {k: str(x) if isinstance(x, int) and not isinstance(x, bool) else x for k, x in v.items()}
        return v

    @field_validator("label")
    @classmethod
    def _label_pairs(cls, v: Optional[Dict[str, str]]) -> Optional[Dict[str, str]]:
        if v is not None and (not v or any(not k for k in v)):
            raise ValueError("label: must be a mapping of one or more Ray node labels, such as {zone: us-east-1a}")
        return v

    @model_validator(mode="after")
    def _one(self):
        given = [k for k in TARGET_KEYS[:-1] if getattr(self, k) is not None] + (["random"] if self.random else [])
        if len(given) != 1:
            raise ValueError(f"needs exactly one of {', '.join(TARGET_KEYS)}")
        return self

    @property
    def names_node(self) -> bool:
        """The target names a node (by index, id, IP or label), not a rank."""
        return any(getattr(self, k) is not None for k in ("node", "node_id", "ip", "label"))


class FaultSpecBase(Strict):
    """The spec of one fault kind. A subclass narrows `kind` to its Literal and
    adds its own arguments (None: the fault's own default applies)."""

    kind: str
    at: At

    @classmethod
    def kind_name(cls) -> str:
        """The kind this model is the spec of (its `kind` literal)."""
        return (get_args(cls.model_fields["kind"].annotation) or ("",))[0]

    @classmethod
    def arguments(cls) -> List[str]:
        """The kind's own arguments (besides kind, at and target)."""
        return [n for n in cls.model_fields if n not in ("kind", "at", "target")]

    def get(self, name: str, default: Any = None) -> Any:
        """`spec.get("notice_s")`, as plugins written against the dict spec of ftharness 0.2 read it
        (a fault now keeps its validated model: read `spec.notice_s`); warns once per call site."""
        import warnings

        warnings.warn("a fault's spec is its validated model: read spec.<argument>, not spec.get(...)",
                      DeprecationWarning, stacklevel=2)
        value = getattr(self, name, default)
        if hasattr(value, "model_dump"):   # (a nested model, e.g. `at` or `target`, as the dict it was)
            return value.model_dump(exclude_none=True)
        return default if value is None else value

    @model_validator(mode="before")
    @classmethod
    def _own_keys(cls, data: Any) -> Any:
        """Name a key that is not the kind's, and a missing target, in the kind's own words."""
        if isinstance(data, dict):
            for name in data:
                if name not in cls.model_fields:
                    raise ValueError(f"{name}: not an argument of {cls.kind_name()} "
                                     f"(allowed: {', '.join(cls.arguments()) or 'none'})")
            target = cls.model_fields.get("target")
            if target is not None and target.is_required() and "target" not in data:
                raise ValueError(f"target: {cls.kind_name()} needs a target "
                                 f"({', '.join(TARGET_KEYS[:-1])} or random)")
        return data


class TargetedSpec(FaultSpecBase):
    """A fault kind that hits a worker or a node: `target` is required."""

    target: Target
