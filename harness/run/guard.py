"""Which cluster a run uses, and what ftharness refuses to do to a cluster it did
not start: decided before anything connects, the same way for every command.

The address comes from `--address`, else the scenario's `cluster.address`, else
`RAY_ADDRESS` (as `ray.init` would read it); none means the embedded cluster.
On a cluster ftharness did not start, destructive faults need
`--allow-destructive` whatever the source, and options ftharness cannot honour
there (adding a replacement node) are refused with the field that asks for them.
A Ray Client address (`ray://`) is refused from every source: the harness
needs its driver on the cluster. Once connected, `check_shared_storage` refuses
a local storage path on a cluster whose nodes are on several hosts.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Tuple

from ftharness.errors import ScenarioError
from ftharness.scenarios.schema import ray_client_refusal

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
    client = ray_client_refusal(address)
    if client:
        raise ScenarioError(f"{source}: {address}: {client}")
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


def _is_local(path: Optional[str]) -> bool:
    return path is None or "://" not in path or path.lower().startswith("file://")


def check_shared_storage(scenario, nodes: Iterable[Any], storage_path: Optional[str] = None) -> None:
    """On a cluster ftharness did not start: refuse a local storage path when the live nodes
    are on more than one host (distinct IPs), unless `workload.storage_shared` declares it a
    mount every node shares. Workers on other hosts cannot see the head's disk: their
    checkpoints would never reach the storage the controller and the restores read.
    `storage_path`: the path the run resolved (default: workload.storage_path)."""
    w = scenario.workload
    path = storage_path if storage_path is not None else w.storage_path
    if w.storage_shared or not _is_local(path):
        return
    hosts = sorted({str(n.ip) for n in nodes if getattr(n, "alive", False) and getattr(n, "ip", None)})
    if len(hosts) <= 1:
        return
    shown = ", ".join(hosts[:3]) + (f" and {len(hosts) - 3} more" if len(hosts) > 3 else "")
    given = path if w.storage_path else f"not given (the results folder{f', {path}' if path else ''})"
    raise ScenarioError(f"workload.storage_path: {given} is local to this host, but the cluster's nodes are on "
                        f"{len(hosts)} hosts ({shown}) whose workers cannot see its disk; use s3://... or a "
                        f"shared mount with workload.storage_shared: true")
