"""Cluster handles: an embedded multi-node Ray cluster, or an existing one.

`EmbeddedCluster` starts a head (kept out of training: no CPUs, no GPUs) and N
worker nodes, each a real raylet, on this host with `ray.cluster_utils.Cluster`.
It can add, remove (graceful or not) and replace nodes, and lists nodes with
their raylet pid and the train worker pids on them. Teardown is guaranteed:
on `close()` / context exit, on Ctrl-C and SIGTERM (turned into an exception),
and on a hard crash of this process, where the `ftharness.harness.cluster.reaper` child, which
holds a pipe to us, kills every process the cluster started.

`ExistingCluster` connects to a running cluster by address and never stops
anything it did not start.

What the handles stand on has modules of its own: `nodes.py` (a node as a handle lists it, GPUs,
a node's processes), `reaping.py` (the reaper child, teardown), `log_capture.py` (a quiet terminal,
the logs kept) and `existing.py` (`ExistingCluster`); this module keeps `EmbeddedCluster` and
`open_cluster`, and re-exports the names others import from it.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import time
from typing import Any, Dict, FrozenSet, List, Optional, Protocol

import ray

from ftharness.errors import ClusterError
from ftharness.faults import capabilities as caps
from ftharness.harness.cluster import netns
from ftharness.harness.cluster import ray_private as rp
from ftharness.harness.cluster.agents import Agents
from ftharness.harness.cluster.existing import HEAD_RESOURCE, ExistingCluster
from ftharness.harness.cluster.history_service import ServiceSlot
from ftharness.harness.cluster.log_capture import (DRIVER_LOG, LOG_FILE_BYTES, LOG_TOTAL_BYTES, LOGS_DIR, RAY_LINE,
                                                   LogCapture, _end_capture, keep_logs, verbose)
from ftharness.harness.cluster.nodes import (NODE_LABEL, NODE_OBJECT_STORE_BYTES, NodeInfo, _env, _latest_records,
                                             _node_pids, _raylet_pid, gpu_slice, host_gpus, node_info)
from ftharness.harness.cluster.ns_node import NamespaceNode
from ftharness.harness.cluster.reaper import SigtermAsInterrupt, descendants, identify
from ftharness.harness.cluster.reaping import _Reaper, _remove_dir, _wait_gone
from ftharness.profiles import PROFILES

#: what other modules import from here: the handles, and the names that lived here before the split
__all__ = ["EmbeddedCluster", "ExistingCluster", "RayCluster", "open_cluster", "PROFILES", "HEAD_RESOURCE",
           "DRIVER_LOG", "LOG_FILE_BYTES", "LOG_TOTAL_BYTES", "LOGS_DIR", "RAY_LINE", "LogCapture", "keep_logs",
           "verbose", "NODE_LABEL", "NODE_OBJECT_STORE_BYTES", "NodeInfo", "node_info", "gpu_slice", "host_gpus",
           "_latest_records"]


class RayCluster(caps.ClusterHandle, Protocol):
    """What a run asks of the Ray cluster it runs on (harness/run/runner.py), besides what a
    fault may use (faults/capabilities.py: ClusterHandle and the capabilities it declares).
    EmbeddedCluster and ExistingCluster are the two; a run never probes one for a method."""

    address: str
    start_time_s: Optional[float]

    def start(self) -> "RayCluster": ...

    def close(self) -> None: ...

    def history_service(self) -> Any: ...

    def train_env(self) -> Dict[str, str]: ...

    def node_env(self) -> Dict[str, str]:
        """The environment the cluster's raylets start with for the profile (profiles.py:
        node_env), where ftharness started them; empty on a cluster it did not start."""
        ...

    def profile_in_force(self) -> str: ...

    def adopt_dir(self, path: str) -> None: ...

    def adopt(self, pids: List[int]) -> None: ...

    def heal(self) -> List[int]: ...

    #: where the last heal() spent its seconds (empty where it does nothing)
    heal_timing: Dict[str, Any]

    #: the node agents its runs signal processes through, started once per node and kept from one
    #: run to the next (a run's injector drops those of nodes gone); they end with the cluster
    node_agents: Agents


class EmbeddedCluster(SigtermAsInterrupt):
    """A head plus `nodes` worker raylets on this host."""

    #: name in refusals (faults/capabilities.py: capability_problem)
    kind = "an embedded cluster"

    def __init__(self, nodes: int = 3, cpus_per_node: int = 1, gpus_per_node: int = 0,
                 profile: str = "fast", network: str = "shared"):
        if profile not in PROFILES:
            raise ClusterError(f"cluster.profile: unknown {profile!r}; allowed: {', '.join(PROFILES)}")
        if network not in ("shared", "namespaces"):
            raise ClusterError(f"cluster.network: unknown {network!r}; allowed: shared, namespaces")
        self.network = network
        self.net: Optional[netns.Network] = None   # the bridge and namespaces, with network: namespaces
        #: what faults may do here (faults/capabilities.py)
        self.capabilities: FrozenSet[str] = frozenset(
            {caps.NODES, caps.NODE_INDEX, caps.ADD_NODE, caps.REMOVE_NODE, caps.RAY}
            | ({caps.NODE_NETWORK} if network == "namespaces" else set()))
        self.num_nodes = nodes
        self.cpus_per_node = cpus_per_node
        self.gpus_per_node = gpus_per_node
        self.profile = profile
        self._cluster = None
        self._nodes: Dict[int, Any] = {}       # harness index -> ray Node
        self._next_index = 0
        self._temp_dir: Optional[str] = None
        self._reaper: Optional[_Reaper] = None
        self._old_sigterm = None
        self.start_time_s: Optional[float] = None
        self._capture: Optional[LogCapture] = None
        self._gpus: Dict[int, List[str]] = {}   # harness index -> the physical GPUs its raylet sees
        self._history = ServiceSlot()
        self.leftovers: List[Dict[str, Any]] = []   # Ray Train actors the last heal() ended
        self.heal_timing: Dict[str, Any] = {}   # where the last heal() spent its time (a suite records it)
        self.node_agents = Agents()
        self._old_ray_tmpdir: Optional[str] = None     # RAY_TMPDIR as it was before start()
        self._ray_tmpdir_saved = False

    # ------------------------------------------------------------------ lifecycle
    def start(self) -> "EmbeddedCluster":
        from ray.cluster_utils import Cluster

        if ray.is_initialized():
            raise ClusterError("a Ray driver is already connected in this process; one cluster at a time")
        t0 = time.time()
        self._reaper = _Reaper()
        atexit.register(self.close)
        # A short private temp dir: Ray's socket paths must stay under 107 bytes. Ray makes
        # its temp dir mode 0777, so it lives inside a fresh folder of mode 0700 (mkdtemp's).
        self._private_dir = tempfile.mkdtemp(prefix="fth-", dir="/tmp")
        self._reaper.remove_dir_on_crash(self._private_dir)
        self._temp_dir = os.path.join(self._private_dir, "r")
        os.mkdir(self._temp_dir, 0o700)
        # Ray records "the current cluster" under $RAY_TMPDIR (default /tmp/ray);
        # a private one keeps `address="auto"` elsewhere on the host off our cluster.
        self._old_ray_tmpdir = os.environ.get("RAY_TMPDIR")
        self._ray_tmpdir_saved = True
        os.environ["RAY_TMPDIR"] = self._temp_dir
        os.makedirs(os.path.join(self._temp_dir, "ray"), exist_ok=True)
        self._capture = LogCapture(self._temp_dir)
        head_ip = {}
        try:
            if self.network == "namespaces":
                why = netns.unavailable()
                if why:
                    raise ClusterError(f"cluster.network: namespaces: {why}")
                self.net = netns.Network(on_create=self._reaper.remove_on_crash).start()
                head_ip = {"node_ip_address": self.net.head_ip}
            with _env(self.node_env()):
                self._cluster = Cluster(
                    initialize_head=True,
                    head_node_args={
                        **head_ip,
                        "num_cpus": 0,
                        "num_gpus": 0,
                        "resources": {"ftharness_head": 1},
                        # The dashboard stays: Ray Train V2's PlacementGroupCleaner asks the State
                        # API (served by it) whether a controller is alive, and without it the
                        # placement group of a killed controller is never removed.
                        "temp_dir": self._temp_dir,
                        "object_store_memory": NODE_OBJECT_STORE_BYTES,
                        "_system_config": dict(PROFILES[self.profile]["system_config"]),   # Ray writes into the dict it is given
                    },
                )
            self._watch(self._cluster.head_node)
            for _ in range(self.num_nodes):
                self.add_node(wait=False)
            self._cluster.wait_for_nodes()
            ray.init(address=self._cluster.address, _temp_dir=self._temp_dir,
                     _node_ip_address=head_ip.get("node_ip_address"),
                     logging_level="ERROR", log_to_driver=verbose(), namespace="ftharness")
            for n in self._nodes.values():
                if isinstance(n, NamespaceNode):
                    n.wait_registered()
            self._install_sigterm()  # after ray.init, which installs its own handler
            self._history.get(self.head_node_id())   # with the cluster: no run waits for its start
            self.wait_idle()
        except ClusterError:
            self.close()
            raise
        except Exception as e:
            self.close()
            first = (str(e).strip().splitlines() or [""])[0][:200]
            raise ClusterError(f"embedded cluster: could not start ({type(e).__name__}: {first})") from None
        except BaseException:  # Ctrl-C while starting: clean up, then let it through
            self.close()
            raise
        self.start_time_s = time.time() - t0
        return self

    def history_service(self):
        """The process that keeps the history of every run on this cluster (history_service.HistoryService)."""
        return self._history.get(self.head_node_id())

    def close(self) -> None:
        """Stop every process this cluster started and remove its temp dir."""
        started = set()
        self._history = ServiceSlot()   # its actor ends with the driver, below
        self.node_agents = Agents()     # their processes end with the nodes', below
        try:
            if self._cluster is not None:
                started = identify(descendants(set(self.all_pids())))
            if ray.is_initialized():
                ray.shutdown()
        finally:
            for n in self._nodes.values():
                if isinstance(n, NamespaceNode):
                    n.stop()
            if self.net is not None:
                self.net.close()
                self.net = None
            if self._cluster is not None:
                try:
                    self._cluster.shutdown()
                except Exception:
                    pass
                self._cluster = None
            _wait_gone(started)
            self._nodes.clear()
            if self._reaper is not None:
                self._reaper.release()
                self._reaper = None
            _end_capture(self._capture)   # before the temp dir goes: Ray's logs are in it
            self._capture = None
            if self._temp_dir:
                _remove_dir(getattr(self, "_private_dir", None) or self._temp_dir)
                self._temp_dir = None
            if self._ray_tmpdir_saved:
                if self._old_ray_tmpdir is None:
                    os.environ.pop("RAY_TMPDIR", None)
                else:
                    os.environ["RAY_TMPDIR"] = self._old_ray_tmpdir
                self._ray_tmpdir_saved = False
            self._restore_sigterm()
            atexit.unregister(self.close)

    def __enter__(self) -> "EmbeddedCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def _watch(self, node) -> None:
        if self._reaper is not None:
            self._reaper.watch(_node_pids(node))

    # ---------------------------------------------------------------------- nodes
    @property
    def address(self) -> str:
        return self._cluster.address

    @property
    def temp_dir(self) -> Optional[str]:
        return self._temp_dir

    def add_node(self, wait: bool = True, cpus: Optional[int] = None) -> int:
        """Start one more worker node (main thread only); returns its index. The node
        carries the Ray label `ftharness.io/node: <index>` (a fault may target it by label)."""
        index = self._next_index
        self._next_index += 1
        num_cpus = self.cpus_per_node if cpus is None else cpus
        with self._visible_gpus(index), _env(self.node_env()):
            return self._add_node(index, wait, num_cpus)

    def _visible_gpus(self, index: int):
        """CUDA_VISIBLE_DEVICES for the raylet of node `index` while it starts: GPUs of this host
        no live node holds, so the nodes of one host (each told `gpus_per_node`) do not all put
        their workers on GPU 0 (NCCL refuses two ranks on one GPU)."""
        import contextlib

        physical = host_gpus() if self.gpus_per_node else []
        if len(physical) < self.gpus_per_node or not physical:   # no GPU here, or fewer than one node asks for
            return contextlib.nullcontext()
        used = [g for i, gs in self._gpus.items() if i in self._nodes for g in gs]
        self._gpus[index] = gpu_slice(physical, used, self.gpus_per_node)
        return _env({"CUDA_VISIBLE_DEVICES": ",".join(self._gpus[index])})

    def _add_node(self, index: int, wait: bool, num_cpus: int) -> int:
        if self.net is not None:
            node = NamespaceNode(self.net.add_host(index), self._cluster.address, self._temp_dir,
                                 num_cpus, self.gpus_per_node, {"ftharness_worker": 1},
                                 {NODE_LABEL: str(index)}, NODE_OBJECT_STORE_BYTES)
            self._nodes[index] = node
            self._watch(node)
            if wait:
                node.wait_registered()
            return index
        node = self._cluster.add_node(
            wait=wait,
            num_cpus=num_cpus,
            num_gpus=self.gpus_per_node,
            resources={"ftharness_worker": 1},
            labels={NODE_LABEL: str(index)},
            temp_dir=self._temp_dir,
            # a folder of its own for the packages it unpacks, as on a host of its own: Ray's
            # working_dir setup removes and unpacks a package again on each node's first use of
            # it, under the other nodes' workers when they share one (usercode.runtime_env)
            runtime_env_dir_name=f"runtime_resources_node{index}",
            object_store_memory=NODE_OBJECT_STORE_BYTES,
        )
        self._watch(node)
        self._nodes[index] = node
        return index

    def remove_node(self, index: int, graceful: bool = False) -> None:
        """Stop a worker node: SIGKILL its processes, or SIGTERM first if graceful."""
        node = self._nodes.pop(index)
        if isinstance(node, NamespaceNode):
            node.stop(graceful=graceful)
            self.net.remove_host(index)   # the host is gone, and its links with it
            return
        self._cluster.remove_node(node, allow_graceful=graceful)

    def heal(self) -> List[int]:
        """Back to shape between scenarios: dead, paused or drained nodes replaced, node
        count restored, leftover harness actors gone. Returns the new node indices."""
        t0 = time.monotonic()
        self.heal_timing = {}
        self.leftovers = self.end_leftover_train_actors()
        t_nodes = time.monotonic()
        draining = set(rp.draining_nodes())  # a drained node is never schedulable again
        alive = {n["NodeID"] for n in ray.nodes() if n.get("Alive")} - draining
        for index in list(self._nodes):
            if self._nodes[index].node_id not in alive:
                try:
                    self.remove_node(index, graceful=False)
                except Exception:
                    self._nodes.pop(index, None)
        while len(self._nodes) > self.num_nodes:
            self.remove_node(max(self._nodes), graceful=False)
        added = []
        while len(self._nodes) < self.num_nodes:
            added.append(self.add_node())
        t_idle = time.monotonic()
        self.wait_idle()
        self.heal_timing.update(nodes_s=round(t_idle - t_nodes, 3), idle_wait_s=round(time.monotonic() - t_idle, 3),
                                heal_s=round(time.monotonic() - t0, 3))
        return added

    def end_leftover_train_actors(self, grace_s: float = 5.0) -> List[Dict[str, Any]]:
        """Ray Train actors and placement groups still alive between runs are ended, so the
        next run meets the cluster its scenario describes. A finished fit()'s controller can
        outlive it briefly (its owner drops the handle late: not reported). What holds CPUs is
        said in a line on stderr: a worker group whose worker died after the group started and
        before its train function was launched is left running, with its placement group
        (scenarios/known/worker-death-at-train-launch.yaml). Returns what was ended. Only on a
        cluster ftharness started: every run on it is ours."""
        # a fit() that just returned may still be tearing down: its actors and placement group
        # are waited for, not ended at once. (Its controller and dataset manager used to outlive
        # it, held by the SIGINT handler fit() leaves installed, until the pooled fit-task process
        # was reaped: the whole grace between every two runs. fit_task.sigint_handler_restored.) (The one CI run whose workers could not import a job's shipped modules,
        # once blamed on ending them at once, fits another cause, shown since: the nodes shared
        # one folder of unpacked packages and a node's first use of a package removed it under
        # the other nodes' workers; each node now has its own, _add_node, usercode.runtime_env)
        t0 = time.monotonic()
        deadline = t0 + grace_s
        lingering: Dict[str, float] = {}   # class (or "placement group") -> seconds it was still seen
        while True:
            left, groups = rp.train_run_actors(), rp.live_placement_groups()
            for name in [a["class_name"].rsplit(".", 1)[-1] for a in left] + ["placement group"] * bool(groups):
                lingering[name] = round(time.monotonic() - t0, 2)
            if not (left or groups) or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        self.heal_timing.update(leftover_wait_s=round(time.monotonic() - t0, 3), lingering=lingering)
        for a in left:
            if a["class_name"].rsplit(".", 1)[-1] == rp.TRAIN_WORKER_CLASS:   # the ones that hold CPUs
                print(f"ftharness: heal: ended a leftover {a['class_name']} (pid {a['pid']}) of an earlier run, "
                      f"alive {grace_s:g} s after its fit() returned", file=sys.stderr, flush=True)
            try:
                rp.kill_actor_by_id(a["actor_id"], no_restart=True)
            except Exception as e:  # noqa: BLE001 - gone meanwhile: nothing to end
                print(f"ftharness: heal: {a['class_name']} {a['actor_id'][:8]}: {type(e).__name__}", file=sys.stderr)
        for g in groups:
            print(f"ftharness: heal: removed a leftover placement group ({g['bundles']} bundle(s), {g['state']}) "
                  f"of an earlier run", file=sys.stderr, flush=True)
            try:
                rp.remove_placement_group_by_id(g["id"])
            except Exception as e:  # noqa: BLE001 - removed meanwhile
                print(f"ftharness: heal: placement group {g['id'][:8]}: {type(e).__name__}", file=sys.stderr)
        return left + [dict(g, class_name="placement group") for g in groups]

    def wait_idle(self, timeout_s: float = 60.0) -> None:
        """Wait until every worker node's CPUs are free in the GCS view. The last run's
        workers release theirs asynchronously, and a fresh node's appear late; a run started
        meanwhile would meet a smaller cluster than its scenario describes. (It did not make
        Ray 2.60's first elastic group full-size: elastic-shrink cannot rely on that.)"""
        deadline = time.monotonic() + timeout_s
        while True:
            free = rp.available_cpus_per_node()
            busy = {nid: (free.get(nid, 0.0), total) for nid, total in rp.total_cpus_per_node().items()
                    if free.get(nid, 0.0) < total}
            if not busy:
                return
            if time.monotonic() > deadline:
                shown = ", ".join(f"{nid[:8]} {f:g}/{t:g} CPUs free" for nid, (f, t) in busy.items())
                raise ClusterError(f"embedded cluster: not idle after {timeout_s:g} s ({shown})")
            time.sleep(0.1)

    def node(self, index: int):
        return self._nodes[index]

    def node_index(self, node_id: str) -> Optional[int]:
        for i, n in self._nodes.items():
            if n.node_id == node_id:
                return i
        return None

    def node_id(self, index: int) -> str:
        return self._nodes[index].node_id

    def worker_node_indices(self) -> List[int]:
        return sorted(self._nodes)

    def nodes(self) -> List[NodeInfo]:
        """Every node this cluster knows, with raylet and train worker pids."""
        by_node: Dict[str, List[int]] = {}
        for a in rp.train_worker_actors():
            by_node.setdefault(a["node_id"], []).append(a["pid"])
        known = _latest_records(ray.nodes())
        head = self._cluster.head_node
        out = [node_info(-1, known.get(head.node_id, {}), True, rp.raylet_pid(head), node_id=head.node_id)]
        for i, n in sorted(self._nodes.items()):
            out.append(node_info(i, known.get(n.node_id, {}), False, _raylet_pid(n),
                                 by_node.get(n.node_id, []), node_id=n.node_id))
        return out

    def all_pids(self) -> List[int]:
        pids = []
        for n in [self._cluster.head_node, *self._nodes.values()]:
            pids.extend(_node_pids(n))
        return pids

    def node_ip(self, index: int) -> Optional[str]:
        """The node's own IP where it is a namespace host."""
        n = self._nodes.get(index)
        return n.host.ip if isinstance(n, NamespaceNode) else None

    def head_node_id(self) -> str:
        return self._cluster.head_node.node_id

    def profile_in_force(self) -> str:
        return self.profile

    def adopt_dir(self, path: str) -> None:
        """A folder a run made beside the cluster (a spool): removed with the cluster's
        temp dir if this process dies."""
        if self._reaper is not None:
            self._reaper.remove_dir_on_crash(path)

    def adopt(self, pids: List[int]) -> None:
        """Processes a run started beside the cluster (an S3 endpoint): the reaper
        kills them with the cluster's if this process dies."""
        if self._reaper is not None:
            self._reaper.watch(pids)

    def train_env(self) -> Dict[str, str]:
        return dict(PROFILES[self.profile]["train_env"])

    def node_env(self) -> Dict[str, str]:
        return dict(PROFILES[self.profile]["node_env"])


def open_cluster(spec, address: Optional[str] = None):
    """A not-yet-started cluster handle for a scenario's `cluster` section."""
    address = address or spec.address
    if address:
        return ExistingCluster(address, profile=spec.profile)
    return EmbeddedCluster(spec.nodes, spec.cpus_per_node, spec.gpus_per_node, spec.profile,
                           getattr(spec, "network", "shared"))
