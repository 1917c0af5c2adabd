"""A Ray cluster somebody else runs, reached by address: connected to, listed, never torn down by us.

A part of the cluster handles (harness/cluster/handles.py re-exports `ExistingCluster` and opens it
for a scenario whose `cluster.address` is set): what faults may do there is list its nodes; it runs
no reaper and adds no node.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
from typing import Any, Dict, FrozenSet, List

import ray

from ftharness.errors import ClusterError
from ftharness.faults import capabilities as caps
from ftharness.harness.cluster import ray_private as rp
from ftharness.harness.cluster.agents import Agents
from ftharness.harness.cluster.history_service import ServiceSlot
from ftharness.harness.cluster.log_capture import LogCapture, NativeStderr, _end_capture, verbose
from ftharness.harness.cluster.nodes import NodeInfo, _latest_records, node_info
from ftharness.profiles import PROFILES


#: the resource Ray puts on the head node only
HEAD_RESOURCE = "node:__internal_head__"


def token_refused(native_stderr: str) -> bool:
    """Whether Ray's core said, while connecting, that the GCS refused the connection's
    authentication token (Ray 2.60's token authentication: "Unauthenticated ... InvalidAuthToken")."""
    return "InvalidAuthToken" in native_stderr or "Unauthenticated" in native_stderr


class ExistingCluster:
    """A cluster somebody else runs, reached by address; never torn down by us."""

    #: what faults may do here: list its Ray nodes; never add, remove or number them
    capabilities: FrozenSet[str] = frozenset({caps.NODES, caps.RAY})
    kind = "an existing cluster (cluster.address)"

    def __init__(self, address: str, profile: str = "fast"):
        self.address = address
        self.profile = profile
        self.start_time_s = 0.0
        self._history = ServiceSlot()
        self.node_agents = Agents()   # this driver's actors: they end when it disconnects
        self.heal_timing: Dict[str, Any] = {}   # heal() does nothing here

    def history_service(self):
        """The process that keeps the history of this driver's runs, on the driver's node
        (history_service.HistoryService): started at the first run, ended when the driver disconnects."""
        return self._history.get()

    def start(self) -> "ExistingCluster":
        if ray.is_initialized():
            raise ClusterError("a Ray driver is already connected in this process")
        self._probe()
        self._log_dir = tempfile.mkdtemp(prefix="fth-log-")
        self._capture = LogCapture(self._log_dir)   # Ray's driver-side lines: RESULTS/logs, not the terminal
        native = NativeStderr(self._capture)
        try:
            with native:
                ray.init(address=self.address, logging_level="ERROR", log_to_driver=verbose(),
                         namespace="ftharness")
        except Exception as e:  # ConnectionError, ValueError, ...
            msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            self._end_capture()
            if token_refused(native.text) and os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
                raise ClusterError(f"--address {self.address}: the cluster requires token authentication, and Ray "
                                   f"sends a token to an explicit address only with RAY_AUTH_MODE=token; set it "
                                   f"and give the cluster's token (RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or "
                                   f"~/.ray/auth_token)") from None
            if token_refused(native.text):
                raise ClusterError(f"--address {self.address}: the cluster refused the token this connection gave "
                                   f"(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token); give the "
                                   f"cluster's own token") from None
            raise ClusterError(f"--address {self.address}: cannot connect ({msg})") from None
        return self

    def _end_capture(self) -> None:
        _end_capture(getattr(self, "_capture", None))
        self._capture = None
        if getattr(self, "_log_dir", None):
            shutil.rmtree(self._log_dir, ignore_errors=True)
            self._log_dir = None

    def _probe(self, timeout_s: float = 5.0) -> None:
        """Fail fast: ray.init keeps retrying an address nobody listens on."""
        from ftharness.scenarios.schema import ray_client_refusal

        client = ray_client_refusal(self.address)
        if client:
            raise ClusterError(f"--address {self.address}: {client}")
        if self.address == "auto":
            return
        hostport = self.address.split("://", 1)[-1]
        host, _, port = hostport.rpartition(":")
        if not host or not port.isdigit():
            raise ClusterError(f"--address {self.address}: expected 'auto' or 'HOST:PORT' (the GCS address)")
        try:
            socket.create_connection((host, int(port)), timeout=timeout_s).close()
        except OSError as e:
            raise ClusterError(f"--address {self.address}: cannot connect ({e.strerror or e})") from None

    def close(self) -> None:
        self._history = ServiceSlot()   # its actor ends with the driver
        self.node_agents.close()
        self.node_agents = Agents()
        try:
            if ray.is_initialized():
                ray.shutdown()
        finally:
            self._end_capture()

    def __enter__(self) -> "ExistingCluster":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def nodes(self) -> List[NodeInfo]:
        by_node: Dict[str, List[int]] = {}
        for a in rp.train_worker_actors():
            by_node.setdefault(a["node_id"], []).append(a["pid"])
        head = self.head_node_id()
        return [node_info(i, n, n["NodeID"] == head, None, by_node.get(n["NodeID"], []))
                for i, n in enumerate(sorted(_latest_records(ray.nodes()).values(), key=lambda n: n["NodeID"]))]

    def head_node_id(self) -> str:
        """The GCS head: the live node carrying `node:__internal_head__` (not the
        driver's node, which on a client or a worker node is another one)."""
        for n in ray.nodes():
            if n.get("Alive") and HEAD_RESOURCE in (n.get("Resources") or {}):
                return n["NodeID"]
        raise ClusterError(f"--address {self.address}: no live node carries {HEAD_RESOURCE}; is this a Ray cluster?")

    def profile_in_force(self) -> str:
        return f"{self.profile} (Train settings only: Ray Core settings are the running cluster's own)"

    def adopt_dir(self, path: str) -> None:
        """Nothing: ftharness runs no reaper beside a cluster it did not start."""

    def adopt(self, pids: List[int]) -> None:
        """Nothing: ftharness runs no reaper beside a cluster it did not start."""

    def heal(self) -> List[int]:
        """Nothing: ftharness adds no node to a cluster it did not start."""
        return []

    def train_env(self) -> Dict[str, str]:
        # Ray Core settings of a running cluster cannot be changed from here;
        # the Train-side timings of the profile still apply to our run.
        return dict(PROFILES[self.profile]["train_env"])

    def node_env(self) -> Dict[str, str]:
        """Nothing: a running cluster's raylets keep the environment they were started with."""
        return {}
