"""A Ray worker node started with `ray start --block` inside a namespace host.

The embedded cluster's other worker nodes are `ray._private.node.Node`
objects started in the harness process; this one is a separate `ray start`,
as on a real machine, so it can live in its own network namespace. It offers
what the cluster handle needs from a node: its id, its processes, and a way
to die.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Dict, List, Optional

import ray

from ftharness.harness.cluster.netns import Host
from ftharness.errors import ClusterError


class NamespaceNode:
    """`ray start` in `host`'s namespace, joined to the head at `gcs_address`."""

    def __init__(self, host: Host, gcs_address: str, temp_dir: str, num_cpus: int, num_gpus: int,
                 resources: Dict[str, float], labels: Dict[str, str], object_store_memory: int):
        self.host = host
        self.node_id: Optional[str] = None
        # A host of its own has a /tmp of its own. Ray names a node's sockets and logs after
        # the first free name in the session folder; two `ray start`s sharing that folder pick
        # the same plasma socket at once and the second raylet aborts ("bind: Address already
        # in use": a Unix socket path is not per network namespace).
        self.temp_dir = os.path.join(temp_dir, "hosts", host.netns)
        os.makedirs(self.temp_dir, exist_ok=True)
        argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats",
                f"--address={gcs_address}", f"--node-ip-address={host.ip}",
                f"--num-cpus={num_cpus}", f"--num-gpus={num_gpus}",
                f"--resources={json.dumps(resources)}", "--labels=" + ",".join(f"{k}={v}" for k, v in labels.items()),
                f"--object-store-memory={object_store_memory}", f"--temp-dir={self.temp_dir}"]
        self._log = open(os.path.join(self.temp_dir, "ray-start.log"), "ab")
        # Gloo finds its own address from the hostname, which resolves to the loopback here;
        # name the interface instead, as on a real host with several (Ray's workers inherit it).
        env = {**os.environ, "GLOO_SOCKET_IFNAME": "eth0"}
        self.proc = subprocess.Popen(host.exec_argv(argv), stdout=self._log, stderr=subprocess.STDOUT,
                                     start_new_session=True, env=env)

    def wait_registered(self, timeout_s: float = 60.0) -> str:
        """The node id GCS gave the raylet at this host's IP."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for n in ray.nodes():
                if n.get("Alive") and n.get("NodeManagerAddress") == self.host.ip:
                    self.node_id = n["NodeID"]
                    return self.node_id
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise ClusterError(f"embedded cluster: the node in namespace {self.host.netns} did not join "
                           f"(see {self._log.name})")

    def pids(self) -> List[int]:
        """Every process in the node's namespace, `ray start` included."""
        return sorted(set(self.host.pids()) | ({self.proc.pid} if self.proc.poll() is None else set()))

    def raylet_pid(self) -> Optional[int]:
        for p in self.host.pids():
            try:
                with open(f"/proc/{p}/cmdline", "rb") as f:
                    if b"raylet" in f.read().split(b"\0")[0]:
                        return p
            except OSError:
                continue
        return None

    def stop(self, graceful: bool = False) -> None:
        """SIGTERM first if graceful (as a shutdown does), then SIGKILL what is left."""
        if graceful:
            self._signal(signal.SIGTERM)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and self.pids():
                time.sleep(0.1)
        self._signal(signal.SIGKILL)
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        self._log.close()

    def _signal(self, sig: int) -> None:
        for p in self.pids():
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
