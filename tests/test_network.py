"""Namespace hosts and faults on the wire, on a real embedded cluster whose worker nodes
each live in a network namespace of their own (needs root, `ip netns`, nftables)."""

import os
import signal
import statistics
import subprocess
import sys
import textwrap
import time

import pytest

from ftharness.harness.cluster import netns
from ftharness.history.records import read_events
from ftharness.harness.run.collect import catalog_dir
from test_teardown import alive

pytestmark = [pytest.mark.cluster, pytest.mark.exclusive_ray, pytest.mark.slow,
              pytest.mark.skipif(netns.unavailable() is not None or netns.nft_missing() is not None,
                                 reason=f"{netns.unavailable() or netns.nft_missing()}")]


def leftovers(tag):
    """Namespaces, links and namespaces' name files (/etc/netns) of network `tag` still on this host."""
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    files = os.listdir(netns.NETNS_ETC) if os.path.isdir(netns.NETNS_ETC) else []
    return [w for w in (names + links).split() + files if w.startswith(f"fth{tag}")]


CHILD = textwrap.dedent("""
    import time
    from ftharness.harness.cluster.handles import EmbeddedCluster
    from ftharness.harness.cluster.reaper import descendants
    c = EmbeddedCluster(nodes=2, network="namespaces").start()
    print(c.net.tag, flush=True)
    print(" ".join(map(str, descendants(set(c.all_pids())))), flush=True)
    time.sleep(600)
""")


def test_harness_killed_leaves_no_namespace_link_or_process():
    """First in this file, before the module's cluster starts: one cluster at a time."""
    from ftharness.harness.frontends.pytest_plugin import _shared

    _shared.release()
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    tag = proc.stdout.readline().strip()
    pids = {int(p) for p in proc.stdout.readline().split()}
    assert tag and len(leftovers(tag)) >= 5 and len(pids) >= 5, (tag, leftovers(tag), pids)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    deadline = time.time() + 30
    while time.time() < deadline and (leftovers(tag) or alive(pids)):
        time.sleep(0.3)
    assert leftovers(tag) == [] and alive(pids) == set()


@pytest.fixture(scope="module")
def ns_cluster():
    from ftharness.harness.cluster.handles import EmbeddedCluster
    from ftharness.harness.frontends.pytest_plugin import _shared

    _shared.release()
    cluster = EmbeddedCluster(nodes=3, cpus_per_node=2, network="namespaces").start()
    tag = cluster.net.tag
    try:
        yield cluster
    finally:
        cluster.close()
    assert leftovers(tag) == []


def run(cluster, tmp_path, name):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner
    from ftharness.scenarios.schema import load_scenario

    cluster.heal()
    sc = load_scenario(os.path.join(catalog_dir(), f"{name}.yaml"))
    s = ScenarioRunner(sc, cluster, RunOptions(out_dir=str(tmp_path / name), progress=False)).run()
    return s, read_events(s["results_dir"])


def test_worker_nodes_are_hosts_with_their_own_ips(ns_cluster):
    import ray

    ips = {n["NodeManagerAddress"] for n in ray.nodes() if n.get("Alive") and "ftharness_worker" in n["Resources"]}
    assert len(ips) == 3 and ns_cluster.net.head_ip not in ips, ips
    for index in ns_cluster.worker_node_indices():
        host = ns_cluster.net.hosts[index]
        assert host.ip in ips
        assert ns_cluster.nodes()[0].is_head
        assert set(ns_cluster._nodes[index].pids()) <= set(host.pids()) | {ns_cluster._nodes[index].proc.pid}


LOOKUPS = textwrap.dedent("""
    import socket, sys
    print(socket.gethostbyaddr(sys.argv[1])[0])
    try:
        socket.getaddrinfo("no-such-host.invalid", 80)
    except socket.gaierror:
        pass
    print(open("/etc/resolv.conf").read().count("nameserver"))
""")


def test_a_namespace_host_names_every_bridge_address_and_asks_no_unreachable_name_server(ns_cluster):
    """The host's name server is beyond a namespace's route: each lookup there waited 10 s, and
    gloo's reverse lookup of its own address made every torch process group start 10 s late.
    A node resolves the bridge's addresses from its own hosts file and has no name server."""
    for index in ns_cluster.worker_node_indices():
        host = ns_cluster.net.hosts[index]
        out = subprocess.run(host.exec_argv([sys.executable, "-c", LOOKUPS, host.ip]), capture_output=True,
                             text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        name, servers = out.stdout.split()
        assert name == f"fth{ns_cluster.net.tag}-{host.ip.rsplit('.', 1)[1]}" and servers == "0"
    assert any(f.startswith(f"fth{ns_cluster.net.tag}") for f in os.listdir(netns.NETNS_ETC))


def test_network_partition_is_detected_and_the_cut_off_workers_are_judged_as_zombies(ns_cluster, tmp_path):
    """Both ranks on one node; its packets are dropped. The run restarts on another node; the
    cut-off pair trains on, and its late steps come from the node's journal as findings."""
    import ray

    s, ev = run(ns_cluster, tmp_path, "network-partition")
    assert s["matches_expectation"], (s["mismatches"], s["inconclusive"])
    hit = next(e for e in ev if e["kind"] == "fault_injected")["target_hit"]
    assert hit["how"] == "nft drop (both)" and "drop" in hit["rules"]
    failures = [e for e in ev if e["kind"] == "failure"]
    assert failures and failures[0]["budget"] == "worker_group"
    groups = [e for e in ev if e["kind"] == "worker_group_started"]
    assert {w["node_id"] for w in groups[0]["workers"]} == {hit["node_id"]}     # packed on the cut node
    assert hit["node_id"] not in {w["node_id"] for w in groups[-1]["workers"]}  # restarted elsewhere
    late = [e for e in ev if e.get("spooled")]
    first = groups[0]["attempt_id"]
    assert late and {e["attempt_id"] for e in late} == {first}, late
    assert any(e["kind"] == "step" for e in late)
    zombie = s["properties"]["no_zombie_writes"]
    assert zombie["status"] == "passed" and any("journaled on its node" in f for f in zombie["findings"]), zombie
    assert any(e["kind"] == "fault_healed" for e in ev)
    ips = {n["NodeManagerAddress"] for n in ray.nodes() if n["NodeID"] == hit["node_id"]}
    assert ips == {hit["ip"]}


def step_seconds(ev, rank, t0, t1):
    ts = [e["t"] for e in ev if e["kind"] == "step" and e.get("rank") == rank and t0 <= e["t"] <= t1]
    return [b - a for a, b in zip(ts, ts[1:])]


@pytest.mark.full
def test_network_degrade_slows_the_steps_it_lasts(ns_cluster, tmp_path):
    s, ev = run(ns_cluster, tmp_path, "network-degrade")
    assert s["matches_expectation"], (s["mismatches"], s["inconclusive"])
    inj = next(e for e in ev if e["kind"] == "fault_injected")
    healed = next(e for e in ev if e["kind"] == "fault_healed")
    assert "numgen random" in inj["target_hit"]["how"] and "tbf" in inj["target_hit"]["how"]
    before = step_seconds(ev, 0, 0, inj["t"])
    during = step_seconds(ev, 0, inj["t"], healed["t"])
    assert before and during
    slow, base = statistics.median(during), statistics.median(before)
    print(f"median step {base * 1000:.0f} ms before, {slow * 1000:.0f} ms degraded (x{slow / base:.1f})")
    assert slow > 1.5 * base, (base, slow)



@pytest.mark.full
def test_partition_between_workers_is_invisible_to_ray_until_the_collective_times_out(ns_cluster, tmp_path):
    """Cut from the other workers but not from the head: the node stays alive for Ray; the
    failure is the process group's timeout, and the run recovers once the partition heals."""
    import ray

    s, ev = run(ns_cluster, tmp_path, "network-partition-workers")
    assert s["matches_expectation"], (s["mismatches"], s["inconclusive"])
    hit = next(e for e in ev if e["kind"] == "fault_injected")["target_hit"]
    assert hit["cut_from"] == "workers" and ns_cluster.net.head_ip not in hit["peers"] and hit["peers"]
    injected = next(e for e in ev if e["kind"] == "fault_injected")
    failure = next(e for e in ev if e["kind"] == "failure")
    state = [e for e in ev if e["kind"] == "controller_state" and e.get("error")][0]
    low = state["error"].lower()
    assert "rank 0,1" in low and "timed out" in low, state["error"]   # both ranks' collective timed out
    assert failure["t"] - injected["t"] >= 29, failure["t"] - injected["t"]   # the 30 s timeout, not a check
    node = next(n for n in ray.nodes() if n["NodeID"] == hit["node_id"])
    assert node["Alive"]                                                    # Ray never saw it go
