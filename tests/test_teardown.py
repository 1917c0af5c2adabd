"""Teardown is guaranteed: no process a cluster started survives it, whether the
body returns, raises, is interrupted, or the harness process is killed outright."""

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from ftharness.harness.cluster.handles import EmbeddedCluster
from ftharness.harness.cluster.reaper import descendants

pytestmark = [pytest.mark.exclusive_ray, pytest.mark.slow]


def alive(pids):
    out = set()
    for p in pids:
        try:
            with open(f"/proc/{p}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] != "Z":
                    out.add(p)
        except OSError:
            pass
    return out


def wait_gone(pids, timeout=20):
    deadline = time.time() + timeout
    while time.time() < deadline and alive(pids):
        time.sleep(0.2)
    return alive(pids)


def started_processes(cluster):
    """Every process the cluster started, including Ray workers under raylets."""
    return descendants(set(cluster.all_pids()))


@pytest.mark.full
def test_context_exit_leaves_nothing(ftharness_exclusive):
    with EmbeddedCluster(nodes=2) as cluster:
        import ray

        @ray.remote(num_cpus=1)
        def pid():
            return os.getpid()

        worker_pid = ray.get(pid.remote())
        pids = started_processes(cluster) | {worker_pid}
        temp_dir = cluster.temp_dir
        assert len(alive(pids)) >= 5
    assert wait_gone(pids) == set()
    assert not os.path.exists(temp_dir)


@pytest.mark.full
def test_raising_body_leaves_nothing(ftharness_exclusive):
    pids = set()
    with pytest.raises(RuntimeError, match="boom"):
        with EmbeddedCluster(nodes=1) as cluster:
            pids = started_processes(cluster)
            raise RuntimeError("boom")
    assert pids and wait_gone(pids) == set()


CHILD = textwrap.dedent("""
    import sys, time
    from ftharness.harness.cluster.handles import EmbeddedCluster
    from ftharness.harness.cluster.reaper import descendants
    c = EmbeddedCluster(nodes=2).start()
    import ray
    @ray.remote(num_cpus=1)
    def sleepy():
        time.sleep(600)
    refs = [sleepy.remote() for _ in range(2)]
    time.sleep(4)
    print(" ".join(map(str, descendants(set(c.all_pids())))), flush=True)
    print(c.temp_dir, flush=True)
    time.sleep(600)
""")


def start_child():
    proc = subprocess.Popen([sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    pids = {int(p) for p in proc.stdout.readline().split()}
    temp_dir = proc.stdout.readline().strip()
    assert len(pids) >= 5, pids
    return proc, pids, temp_dir


@pytest.mark.parametrize("sig", [signal.SIGKILL, pytest.param(signal.SIGTERM, marks=pytest.mark.full),
                                 pytest.param(signal.SIGINT, marks=pytest.mark.full)])
def test_harness_killed_leaves_nothing(ftharness_exclusive, sig):
    proc, pids, temp_dir = start_child()
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    assert wait_gone(pids) == set()
    deadline = time.time() + 10
    while os.path.exists(temp_dir) and time.time() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(temp_dir)
