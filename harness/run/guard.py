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

`check_route` is the one decision every route makes per scenario (run, suite,
soak, matrix, the pytest plugin, Chaos Toolkit, --submit, doctor --run):
it returns the `Target` the scenario runs on, or refuses in one line.
`check_handle` applies the same rule again where faults are armed (the runner)
and `check_live_fault` where a fault is fired by hand (Chaos Toolkit), so a
route that forgot to ask cannot reach an operator's cluster either.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Tuple

from ftharness.errors import ScenarioError
from ftharness.harness.run.runtime import declared_of
from ftharness.safety import redact
from ftharness.scenarios.schema import ray_client_refusal

#: fault kinds that only observe or damage the run's own storage/process tree are still
#: destructive to a shared cluster's workers; every kind needs the opt-in
ADDRESS_SOURCES = ("--address", "cluster.address", "RAY_ADDRESS")


def cluster_address(flag: Optional[str], scenario, environment: bool = True) -> Tuple[Optional[str], Optional[str]]:
    """(address, where it came from), or (None, None) for the embedded cluster. `environment`
    False: RAY_ADDRESS is not read (a matrix's cells do not inherit it)."""
    env = os.environ.get("RAY_ADDRESS") if environment else None
    for value, source in zip((flag, scenario.cluster.address, env), ADDRESS_SOURCES):
        if value:
            return value, source
    return None, None


@dataclass(frozen=True)
class Target:
    """The cluster a scenario runs on: `address` None is a cluster ftharness starts (and tears
    down); otherwise one somebody else runs, named by `source`. `allow_destructive`: faults
    may be injected there (always true on a cluster ftharness starts)."""

    address: Optional[str]
    source: Optional[str]
    allow_destructive: bool

    @property
    def started_by_us(self) -> bool:
        return self.address is None


def check_route(scenario, allow_destructive: bool = False, started_by_us: bool = False,
                address: Optional[str] = None, source: str = "--address",
                has_faults: Optional[bool] = None, environment: bool = True) -> Target:
    """Which cluster `scenario` runs on, and whether its faults may run there; one line
    (ScenarioError) otherwise. Call it for every scenario before anything starts.

    `address`: what the route was given explicitly (`--address`, `--submit URL`; named by
    `source`), else the scenario's `cluster.address`, else `RAY_ADDRESS`.
    `started_by_us`: the route runs the scenario on a cluster it starts itself (the pytest
    plugin's shared cluster, a matrix's embedded cluster): an address from any source is then
    refused rather than ignored. `has_faults`: faults come from elsewhere than
    `scenario.faults` (a soak's drawn plan, Chaos Toolkit actions: pass True). `environment`
    False: RAY_ADDRESS is not a source (a route whose processes do not inherit it: the matrix)."""
    runtime = declared_of(scenario)
    if not runtime.uses_ray_cluster:   # its own local processes: RAY_ADDRESS is not ours to read
        if address:
            raise ScenarioError(runtime.cluster_refusal(source, address))
        return Target(None, None, True)
    if started_by_us:
        given = [(v, s) for v, s in ((address, source), (scenario.cluster.address, "cluster.address")) if v]
        if given:
            value, where = given[0]
            raise ScenarioError(f"{scenario.name}: {where}: {redact(value)}: this route runs on a cluster ftharness "
                                f"starts itself; drop the address (or use `ftharness run --address`)")
        return Target(None, None, True)
    addr, src = cluster_address(address, scenario, environment)
    if address:
        src = source
    check_existing(scenario, addr, src, allow_destructive, has_faults)
    return Target(addr, src, True if addr is None else bool(allow_destructive))


def check_handle(scenario, cluster, allow_destructive: bool, has_faults: Optional[bool] = None) -> None:
    """The same rule where faults are armed: on a cluster handle ftharness did not start, a
    run with faults needs the opt-in (whatever route built the handle)."""
    from ftharness.harness.cluster.handles import ExistingCluster

    check_capabilities(scenario, cluster)
    if isinstance(cluster, ExistingCluster):
        faulty = bool(scenario.faults) if has_faults is None else has_faults
        if faulty and not allow_destructive:
            raise ScenarioError(f"{redact(cluster.address)} is a cluster ftharness did not start; its faults "
                                f"need --allow-destructive")


def check_capabilities(scenario, cluster) -> None:
    """Refuse, in one line naming the fault, a scenario whose faults need what the cluster
    handle cannot do (faults/capabilities.py): asked of the handle before it starts."""
    from ftharness.faults import REGISTRY
    from ftharness.faults.capabilities import capability_problem

    problem = capability_problem(scenario.faults, cluster.capabilities, cluster.kind, REGISTRY)
    if problem:
        raise ScenarioError(f"{scenario.name}: {problem}")


def check_live_fault(target: Target, kind: str) -> None:
    """A fault fired by hand (a Chaos Toolkit action) on `target`: refused without the opt-in."""
    if not target.allow_destructive:
        raise ScenarioError(f"{kind}: {target.source} {redact(target.address)} is a cluster ftharness did not "
                            f"start; faults there need allow_destructive: true in the control's arguments")


def check_existing(scenario, address: Optional[str], source: Optional[str], allow_destructive: bool,
                   has_faults: Optional[bool] = None) -> None:
    """Refuse, with one line, what must not happen on a cluster ftharness did not start."""
    if not address:
        return
    client = ray_client_refusal(address)
    if client:
        raise ScenarioError(f"{source}: {redact(address)}: {client}")
    address = redact(address)
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
    path = redact(path)
    given = path if w.storage_path else f"not given (the results folder{f', {path}' if path else ''})"
    raise ScenarioError(f"workload.storage_path: {given} is local to this host, but the cluster's nodes are on "
                        f"{len(hosts)} hosts ({shown}) whose workers cannot see its disk; use s3://... or a "
                        f"shared mount with workload.storage_shared: true")
