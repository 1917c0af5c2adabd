"""Worker nodes as hosts of their own: one Linux network namespace per node.

With `cluster: {network: namespaces}` every worker node is a real `ray start`
inside its own network namespace, with its own IP on a bridge; the head (GCS,
driver, Train controller, history) stays on the host at the bridge's address.
Ray then sees distinct hosts, and a network fault is a real one: packets are
dropped by nftables rules inside the node's namespace (a partition, either
way or both), or shaped by `tc tbf` on its link (a bandwidth cap). The rules
live in the namespace, so they die with it.

Names carry a short run tag (`fth<tag>...`), so several runs never touch each
other's links, and the reaper removes them if the harness dies.

Needs root, `ip netns`, and `nft` for drops (Debian package nftables); `tc netem`
(latency) only where the kernel has it.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import shutil
import signal
import subprocess
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from ftharness.errors import ClusterError
from ftharness.inputs import InputRefused, read_bounded

NFT_TABLE = "ftharness"
#: `ip netns exec NAME` bind-mounts the files of /etc/netns/NAME/ over /etc's (ip-netns(8))
NETNS_ETC = "/etc/netns"
#: the most of the host's /etc/hosts a namespace's own hosts file copies
HOSTS_FILE_BYTES = 1 << 20


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return _run(["ip", *args], check)


def _run(cmd: List[str], check: bool = True, stdin: Optional[str] = None) -> subprocess.CompletedProcess:
    p = subprocess.run(cmd, capture_output=True, text=True, input=stdin)
    if check and p.returncode != 0:
        raise ClusterError(f"network: `{' '.join(cmd)}` failed: {(p.stderr or p.stdout).strip()[:200]}")
    return p


def unavailable() -> Optional[str]:
    """Why namespace hosts cannot be built here (None: they can)."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is missing"
    if _run(["ip", "netns", "list"], check=False).returncode != 0:
        return "`ip netns` does not work here"
    return None


def nft_missing() -> Optional[str]:
    if shutil.which("nft") is None:
        return "dropping packets needs nftables (`apt-get install nftables`)"
    return None


@contextlib.contextmanager
def deferred_signals():
    """SIGINT and SIGTERM wait until the block is done (its cleanup included), then act as they
    would have: a Ctrl-C in the middle of a host change cannot leave the change behind. Only the
    main thread can hold signals; elsewhere the block's own try/finally is the cleanup."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got: List[int] = []
    old = {s: signal.signal(s, lambda n, _frame: got.append(n)) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in old.items():
            signal.signal(s, handler)
        if got:
            handler = old[got[0]]
            if callable(handler):
                handler(got[0], None)   # Python's own SIGINT handler raises KeyboardInterrupt here
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), got[0])


def netem_missing() -> Optional[str]:
    """netem is a kernel module; probe it on a throwaway dummy link (only where a run is about to
    build namespace hosts: `validate` changes nothing on the host). An interrupt waits until the
    link is removed (deferred_signals), and it is removed in any case."""
    name = f"fthp{uuid.uuid4().hex[:6]}"
    with deferred_signals():
        if _ip("link", "add", name, "type", "dummy", check=False).returncode != 0:
            return "cannot probe tc netem (no dummy link)"
        try:
            ok = _run(["tc", "qdisc", "add", "dev", name, "root", "netem", "delay", "1ms"],
                      check=False).returncode == 0
        finally:
            _ip("link", "del", name, check=False)
    return None if ok else "this kernel has no tc netem (latency and jitter need it)"


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.0.0.0/8 no interface of this host uses."""
    used = _run(["ip", "-4", "-o", "addr", "show"], check=False).stdout
    nets = [ipaddress.ip_interface(w).network for w in used.split() if "/" in w and w[0].isdigit()]
    for _ in range(200):
        n = ipaddress.ip_network(f"10.{os.urandom(1)[0] % 200 + 50}.{os.urandom(1)[0]}.0/24")
        if not any(n.overlaps(u) for u in nets):
            return n
    raise ClusterError("network: no free 10.x.y.0/24 subnet for the node bridge")


@dataclass
class Host:
    """One node's namespace: its name, its address, and the host side of its link."""

    index: int
    netns: str
    ip: str
    host_link: str
    shaped: List[str] = field(default_factory=list)

    def pids(self) -> List[int]:
        out = _run(["ip", "netns", "pids", self.netns], check=False).stdout.split()
        return [int(p) for p in out if p.isdigit()]

    def exec_argv(self, argv: List[str]) -> List[str]:
        return ["ip", "netns", "exec", self.netns, *argv]


class Network:
    """A bridge on the host and a namespace per worker node; node faults on the wire."""

    def __init__(self, on_create=None):
        self.tag = uuid.uuid4().hex[:5]
        self.bridge = f"fth{self.tag}br"
        self.subnet = _free_subnet()
        self.hosts: Dict[int, Host] = {}
        self._on_create = on_create or (lambda kind, name: None)  # tells the reaper
        self._up = False

    @property
    def head_ip(self) -> str:
        return str(self.subnet.network_address + 1)

    def start(self) -> "Network":
        self._on_create("link", self.bridge)
        _ip("link", "add", self.bridge, "type", "bridge")
        _ip("addr", "add", f"{self.head_ip}/{self.subnet.prefixlen}", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        self._up = True
        return self

    def add_host(self, index: int) -> Host:
        """A namespace with its own IP, bridged to the head; lo up, default route via the head."""
        ns = f"fth{self.tag}n{index}"
        link = f"fth{self.tag}v{index}"
        ip = str(self.subnet.network_address + 2 + index)
        if index + 2 >= self.subnet.num_addresses - 1:
            raise ClusterError(f"network: node index {index} does not fit in {self.subnet}")
        self._on_create("netns", ns)
        self._on_create("link", link)
        _ip("netns", "add", ns)
        _ip("link", "add", link, "type", "veth", "peer", "name", "eth0", "netns", ns)
        _ip("link", "set", link, "master", self.bridge, "up")
        _ip("-n", ns, "addr", "add", f"{ip}/{self.subnet.prefixlen}", "dev", "eth0")
        _ip("-n", ns, "link", "set", "eth0", "up")
        _ip("-n", ns, "link", "set", "lo", "up")
        _ip("-n", ns, "route", "add", "default", "via", self.head_ip)
        self._write_name_files(ns)
        host = Host(index, ns, ip, link)
        self.hosts[index] = host
        return host

    def _write_name_files(self, ns: str) -> None:
        """The namespace's own hosts and resolv.conf. The host's name server is out of a namespace's
        reach (its route ends at the bridge), so every lookup there waited out the resolver's
        timeout, 10 s (gloo's reverse lookup of its own address made each torch process group start
        10 s later). As on a cluster whose name service answers, every address of the bridge has a
        name, and other names fail at once (no name server: glibc asks 127.0.0.1, refused). Where
        /etc/netns cannot be written the namespace uses the host's files, as before: slower, not wrong."""
        folder = os.path.join(NETNS_ETC, ns)
        try:   # the host's own names (its hostname among them) stay as they were
            own = read_bounded("/etc/hosts", HOSTS_FILE_BYTES, "/etc/hosts").decode("utf-8", "replace")
        except InputRefused:
            own = "127.0.0.1 localhost\n"
        names = "".join(f"{a} fth{self.tag}-{a.packed[-1]}\n" for a in self.subnet.hosts())
        try:
            os.makedirs(folder, exist_ok=True)
            with open(os.path.join(folder, "hosts"), "w") as f:
                f.write(own.rstrip("\n") + "\n# ftharness: the node bridge's addresses\n" + names)
            with open(os.path.join(folder, "resolv.conf"), "w") as f:
                f.write("# ftharness: no name server is reachable from a namespace host; names come from hosts\n")
        except OSError:
            _remove_name_files(ns)

    def remove_host(self, index: int) -> None:
        """Kill whatever still runs in the namespace, then delete it and its link."""
        host = self.hosts.pop(index, None)
        if host is None:
            return
        for _ in range(3):
            pids = host.pids()
            if not pids:
                break
            for p in pids:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
        _ip("link", "del", host.host_link, check=False)
        _ip("netns", "del", host.netns, check=False)
        _remove_name_files(host.netns)

    def close(self) -> None:
        for index in list(self.hosts):
            self.remove_host(index)
        if self._up:
            _ip("link", "del", self.bridge, check=False)
            self._up = False

    # ------------------------------------------------------------------ faults
    def drop(self, index: int, direction: str = "both", percent: float = 100.0,
             peers: Optional[List[str]] = None) -> str:
        """Drop the node's packets: `in`, `out` or `both` ways, all or `percent` of them, with
        everyone or only with `peers` (IPs). Returns the nft rules, the evidence."""
        missing = nft_missing()
        if missing:
            raise ClusterError(f"network: {missing}")
        host = self.hosts[index]
        match = "" if percent >= 100 else f"numgen random mod 10000 < {int(round(percent * 100))} "
        rules = []
        for chain, hook, addr in (("in_f", "input", "saddr"), ("out_f", "output", "daddr")):
            if direction not in ("both", "in" if hook == "input" else "out"):
                continue
            iface = "iifname" if hook == "input" else "oifname"
            who = f"ip {addr} {{ {', '.join(peers)} }} " if peers else ""
            rules.append(f"  chain {chain} {{\n    type filter hook {hook} priority 0; policy accept;\n"
                         f"    {iface} \"eth0\" {who}{match}counter drop\n  }}")
        text = f"table inet {NFT_TABLE} {{\n" + "\n".join(rules) + "\n}\n"
        self.undrop(index)
        _run(host.exec_argv(["nft", "-f", "-"]), stdin=text)
        return " | ".join(r.split("\n")[2].strip() for r in rules)

    def undrop(self, index: int) -> bool:
        host = self.hosts.get(index)
        if host is None:
            return False
        return _run(host.exec_argv(["nft", "delete", "table", "inet", NFT_TABLE]), check=False).returncode == 0

    def shape(self, index: int, rate_mbit: float) -> str:
        """Cap the node's bandwidth both ways with tc tbf (its eth0 out, its host link in)."""
        host = self.hosts[index]
        rate = f"{rate_mbit:g}mbit"
        burst = f"{max(4, int(rate_mbit * 1000 / 8 / 100)):d}kb"   # ~10 ms at the rate, at least 4 kB
        args = ["root", "tbf", "rate", rate, "burst", burst, "latency", "100ms"]
        _run(host.exec_argv(["tc", "qdisc", "replace", "dev", "eth0", *args]))
        _run(["tc", "qdisc", "replace", "dev", host.host_link, *args])
        return f"tc tbf rate {rate} burst {burst} on eth0 and {host.host_link}"

    def delay(self, index: int, latency_ms: float) -> str:
        missing = netem_missing()
        if missing:
            raise ClusterError(f"network: {missing}")
        host = self.hosts[index]
        _run(host.exec_argv(["tc", "qdisc", "replace", "dev", "eth0", "root", "netem", "delay",
                             f"{latency_ms:g}ms"]))
        return f"tc netem delay {latency_ms:g}ms on eth0"

    def unshape(self, index: int) -> bool:
        host = self.hosts.get(index)
        if host is None:
            return False
        a = _run(host.exec_argv(["tc", "qdisc", "del", "dev", "eth0", "root"]), check=False).returncode == 0
        b = _run(["tc", "qdisc", "del", "dev", host.host_link, "root"], check=False).returncode == 0
        return a or b

    def counters(self, index: int) -> Dict[str, Any]:
        """What the node's network faults did so far, read before they are removed: packets
        the nft drop rules counted, and each tc qdisc's sent/dropped/overlimits (the landing
        evidence of a degrade: faults/network.py). {} where nothing could be read."""
        host = self.hosts.get(index)
        if host is None:
            return {}
        out: Dict[str, Any] = {}
        nft = _run(host.exec_argv(["nft", "list", "table", "inet", NFT_TABLE]), check=False)
        if nft.returncode == 0:
            out["dropped_packets"] = nft_dropped(nft.stdout or "")
        tc = _run(host.exec_argv(["tc", "-s", "qdisc", "show", "dev", "eth0"]), check=False)
        if tc.returncode == 0:
            out["qdiscs"] = tc_stats(tc.stdout or "")
        return out

    def heal(self, index: int) -> Dict[str, bool]:
        """Every network fault on the node gone: drops and shaping."""
        return {"undrop": self.undrop(index), "unshape": self.unshape(index)}


def nft_dropped(listing: str) -> int:
    """Packets counted by the `counter drop` rules of an `nft list table` listing."""
    return sum(int(n) for n in re.findall(r"counter packets (\d+) bytes \d+ drop", listing))


def tc_stats(listing: str) -> List[Dict[str, Any]]:
    """Each qdisc of a `tc -s qdisc show` listing: kind, sent packets, dropped, overlimits."""
    out = []
    for m in re.finditer(r"qdisc (\w+) [^\n]*\n\s*Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", listing):
        out.append({"kind": m.group(1), "bytes": int(m.group(2)), "packets": int(m.group(3)),
                    "dropped": int(m.group(4)), "overlimits": int(m.group(5))})
    return out


def _remove_name_files(ns: str) -> None:
    """/etc/netns/NAME of one of our namespaces (its name starts with fth, no path in it)."""
    if ns.startswith("fth") and "/" not in ns and ns not in (".", ".."):
        shutil.rmtree(os.path.join(NETNS_ETC, ns), ignore_errors=True)   # /etc/netns itself stays: ip-netns's own


def remove_leftovers(kind: str, name: str) -> None:
    """The reaper's half: delete a namespace (its processes first) or a link."""
    if kind == "netns":
        for p in _run(["ip", "netns", "pids", name], check=False).stdout.split():
            try:
                os.kill(int(p), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        _ip("netns", "del", name, check=False)
        _remove_name_files(name)
    elif kind == "link":
        _ip("link", "del", name, check=False)


def refusal(scenario, probe: bool = True) -> Optional[str]:
    """One line on what this host lacks for the scenario's network, or None. Without `probe`
    (validate) nothing is changed on the host: netem, which only a probe link can show, is
    left to the run."""
    if getattr(scenario.cluster, "network", "shared") != "namespaces":
        return None
    why = unavailable()
    if why:
        return f"cluster.network: namespaces: {why}"
    for i, f in enumerate(scenario.faults):
        drops = getattr(f, "mode", None) == "network" or getattr(f, "loss_pct", None) is not None
        if drops and nft_missing():
            return f"faults[{i}]: {nft_missing()}"
        missing = netem_missing() if probe and getattr(f, "latency_ms", None) is not None else None
        if missing:
            return f"faults[{i}].latency_ms: {missing}; use loss_pct or rate_mbit"
    return None
