"""`cluster:` of a scenario (ClusterSpec) and the address rules every route shares:
`cluster.address`, `--address` and RAY_ADDRESS are refused for the same reasons
(`ray_client_refusal`, `address_form_problem`), here, before anything connects."""

from __future__ import annotations

import math
from typing import Dict, Literal, Optional, Union

from pydantic import Field, field_validator

from ftharness.faults.base import Strict as _Strict


def ray_client_refusal(address: Optional[str]) -> Optional[str]:
    """Why a Ray Client address (ray://) cannot be used, from any source (cluster.address,
    --address, RAY_ADDRESS); None for any other address."""
    if not address or not address.strip().lower().startswith("ray://"):
        return None
    return ("Ray Client (ray://) runs the driver remotely, but the history and fault agents need a driver "
            "on the cluster: run ftharness on the head (--address auto or HOST:6379) or submit it there "
            "(ftharness run --submit http://HEAD:8265)")


def address_form_problem(address: str) -> Optional[str]:
    """Why `address` is not a GCS address ftharness can connect to ('auto' or HOST:PORT with a
    port 1-65535); None when it is one (whether anybody listens is the cluster probe's to say)."""
    a = address.strip()
    if a == "auto":
        return None
    host, _, port = a.split("://", 1)[-1].rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536 or any(c.isspace() for c in a) \
            or not all(c.isalnum() or c in ".-_[]:" for c in host):
        return "expected 'auto' or 'HOST:PORT' (the GCS address, port 1-65535)"
    return None


#: the prefix every `cluster.train_env` name must have: Ray Train's own settings, nothing else
TRAIN_ENV_PREFIX = "RAY_TRAIN_"
#: most entries, longest name and longest value `cluster.train_env` takes
MAX_TRAIN_ENV, MAX_ENV_NAME, MAX_ENV_VALUE = 32, 100, 200


def train_env_problem(name: object, value: object) -> Optional[str]:
    """Why `name: value` cannot be a `cluster.train_env` entry (one line, led by `train_env` or by the
    name, as the scenario loader places it); None when it can."""
    n = str(name)
    if not isinstance(name, str) or not n.startswith(TRAIN_ENV_PREFIX) or len(n) > MAX_ENV_NAME \
            or not all(c.isascii() and (c.isupper() or c.isdigit() or c == "_") for c in n):
        return (f"train_env: {n[:40]!r} is not a Ray Train setting; allowed: names of upper-case letters, digits "
                f"and _ starting with {TRAIN_ENV_PREFIX} (at most {MAX_ENV_NAME} characters)")
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) \
            or (isinstance(value, float) and not math.isfinite(value)) \
            or len(str(value)) > MAX_ENV_VALUE or any(c in str(value) for c in "\x00\n\r"):
        return (f"{n}: {str(value)[:40]!r} is not allowed; allowed: a string of at most "
                f"{MAX_ENV_VALUE} characters on one line, or a finite number")
    return None


class ClusterSpec(_Strict):
    """The cluster a run uses: an embedded one on this host, or an existing one by `address`."""

    nodes: int = Field(3, ge=1, le=64)
    cpus_per_node: int = Field(1, ge=1, le=256)
    gpus_per_node: int = Field(0, ge=0, le=16)
    profile: Literal["fast", "ray_defaults"] = "fast"
    address: Optional[str] = Field(None, max_length=300)
    #: where checkpoints go: `local` (the results folder, or workload.storage_path) or `s3`
    #: (a real S3 endpoint on loopback that the run starts, with a bucket of its own)
    storage: Literal["local", "s3"] = "local"
    #: `shared`: every node in the host's network namespace; `namespaces`: each worker node a
    #: host of its own (network namespace, own IP on a bridge), so network faults are real
    network: Literal["shared", "namespaces"] = "shared"
    #: Ray Train environment variables (RAY_TRAIN_*) the run sets in the driver before fit(), over the
    #: profile's; Ray Train passes those it propagates to the controller and the workers
    train_env: Dict[str, Union[str, int, float]] = Field(default_factory=dict, max_length=MAX_TRAIN_ENV)

    @field_validator("train_env", mode="before")
    @classmethod
    def _train_settings(cls, v):
        for name, value in (v.items() if isinstance(v, dict) else ()):
            why = train_env_problem(name, value)
            if why:
                raise ValueError(why)
        return v

    def train_env_text(self) -> Dict[str, str]:
        """`train_env` as the environment holds it (every value a string: -1 -> '-1', 0.5 -> '0.5')."""
        return {k: v if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)
                for k, v in self.train_env.items()}

    @field_validator("address")
    @classmethod
    def _not_ray_client(cls, v: Optional[str]) -> Optional[str]:
        if v is None:
            return v
        why = ray_client_refusal(v) or address_form_problem(v)
        if why:
            raise ValueError(f"address: {v[:80] if v.strip() else repr(v)}: {why}")
        return v
