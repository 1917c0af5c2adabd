"""Which cluster a run uses, and what ftharness refuses to do to a cluster it did
not start: decided before anything connects, the same way for every command.

The address comes from `--address`, else the scenario's `cluster.address`, else
`RAY_ADDRESS` (as `ray.init` would read it); none means the embedded cluster.
On a cluster ftharness did not start, destructive faults need
`--allow-destructive` whatever the source, and options ftharness cannot honour
there (adding a replacement node) are refused with the field that asks for them.
"""

from __future__ import annotations

import os
from typing import Optional, Tuple

from harness.errors import ScenarioError

#: fault kinds that only observe or damage the run's own storage/process tree are still
#: destructive to a shared cluster's workers; every kind needs the opt-in
ADDRESS_SOURCES = ("--address", "cluster.address", "RAY_ADDRESS")


def cluster_address(flag: Optional[str], scenario) -> Tuple[Optional[str], Optional[str]]:
    """(address, where it came from), or (None, None) for the embedded cluster."""
    for value, source in zip((flag, scenario.cluster.address, os.environ.get("RAY_ADDRESS")), ADDRESS_SOURCES):
        if value:
            return value, source
    return None, None


def check_existing(scenario, address: Optional[str], source: Optional[str], allow_destructive: bool,
                   has_faults: Optional[bool] = None) -> None:
    """Refuse, with one line, what must not happen on a cluster ftharness did not start."""
    if not address:
        return
    if scenario.cluster.storage == "s3":
        raise ScenarioError(f"cluster.storage: s3 starts an S3 endpoint beside an embedded cluster; on "
                            f"{address} give workload.storage_path: s3://... (the cluster's own storage) instead")
    faulty = bool(scenario.faults) if has_faults is None else has_faults
    if faulty and not allow_destructive:
        raise ScenarioError(f"{source}: {address} is a cluster ftharness did not start; its faults "
                            f"need --allow-destructive")
    for i, f in enumerate(scenario.faults):
        if getattr(f, "replace", None):
            raise ScenarioError(f"{scenario.name}: faults[{i}].replace: ftharness cannot add a node to a cluster "
                                f"it did not start ({source} {address}); drop replace, or run on the embedded cluster")
