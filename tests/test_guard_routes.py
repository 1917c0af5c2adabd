"""The destructive opt-in holds on every route: a cluster an operator started with
`ray start --head` (on loopback, started and stopped here under the host's Ray lock)
is refused, in one line with exit 2, by run (--address, cluster.address, RAY_ADDRESS),
suite (a fault-free scenario with the address first, kill-node after), soak, --submit,
doctor --run, the pytest plugin's fixture and the Chaos Toolkit control, unless
--allow-destructive is given; and the cluster is left as it was."""

import contextlib
import fcntl
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import pytest

from conftest import REPO, run_cli

# the host lock may be held by another run for a while: the wait is not the test's time
pytestmark = [pytest.mark.exclusive_ray, pytest.mark.slow, pytest.mark.timeout(3600)]

RAY = os.path.join(os.path.dirname(sys.executable), "ray")
LOCK = "/tmp/ftharness-ray.lock"
KILL = "{kind: kill_worker, target: {rank: 0}, at: {step: 2}}"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def alive_nodes(address):
    code = ("import ray; ray.init(address=%r, logging_level='ERROR'); "
            "print(sum(1 for n in ray.nodes() if n['Alive']))" % address)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return int(out.stdout.strip().splitlines()[-1])


def started_here(temp):
    """pids of the processes of the head started with `--temp-dir=temp` (their command lines name
    it), so that only they are stopped: never `ray stop`, which stops every Ray on the host."""
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as f:
                    if temp.encode() in f.read():
                        pids.add(int(entry))
            except OSError:
                pass
    return pids


def stop(temp):
    import signal

    from ftharness.harness.cluster.reaper import alive, descendants, identify, kill_all

    procs = identify(descendants(started_here(temp)))
    for pid, _ in procs:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.time() + 10
    while alive(procs) and time.time() < deadline:
        time.sleep(0.2)
    kill_all(alive(procs))


@contextlib.contextmanager
def head_started(env):
    """`ray start --head` on loopback under the host's Ray lock (taken here unless the caller holds
    it already: FTHARNESS_RAY_LOCK_HELD=1), with `env` over this process's environment; yields its
    address, and stops only its own processes after."""
    from ftharness.harness.frontends.pytest_plugin import _shared

    _shared.release()
    lock = None
    if os.environ.get("FTHARNESS_RAY_LOCK_HELD") != "1":
        lock = open(LOCK, "w")
        fcntl.flock(lock, fcntl.LOCK_EX)
    temp = tempfile.mkdtemp(prefix="fth-op-", dir="/tmp")
    port = free_port()
    try:
        subprocess.run([RAY, "start", "--head", f"--port={port}", "--num-cpus=1", f"--temp-dir={temp}",
                        "--include-dashboard=false", "--disable-usage-stats"],
                       check=True, capture_output=True, env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0", **env},
                       timeout=180)
        yield f"127.0.0.1:{port}"
    finally:
        stop(temp)
        shutil.rmtree(temp, ignore_errors=True)
        if lock is not None:
            lock.close()


@pytest.fixture(scope="module")
def operator_head():
    """`ray start --head` on loopback, as an operator would; its processes stopped after."""
    # The head, the probes and every command of this module without token authentication: on a host
    # where a local Ray 2.60 ray.init() once saved ~/.ray/auth_token, `ray start` turns token auth on,
    # and Ray's client given an explicit address (not "auto") then cannot connect unless
    # RAY_AUTH_MODE=token is set (seen on this project's machine after benchmarks/restart_study.py).
    saved_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        with head_started({}) as address:
            assert alive_nodes(address) == 1
            yield address
            assert alive_nodes(address) == 1, "a refused route touched the operator's cluster"
    finally:
        if saved_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = saved_mode


def refused(r, *words):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert len(lines) == 1 and len(lines[0]) <= 300 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def scenario(tmp_path, name, address=None, faults=KILL):
    cluster = f"cluster: {{address: '{address}'}}\n" if address else ""
    text = f"name: {name}\n{cluster}workload: {{steps: 4}}\nfailure_config: {{max_failures: 1}}\nfaults: [{faults}]\n"
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def test_a_cluster_with_token_authentication_is_named_as_such_and_reached_with_its_token(tmp_path):
    """Ray 2.60's token authentication: Ray's client sends a token to an address given explicitly
    only with RAY_AUTH_MODE=token. Without it (or with another token) the connection fails with
    Ray's C++ warnings on the terminal and "Failed to connect"; ftharness says why in one line, and
    with the mode and the cluster's token the same command runs. First in this file, before the
    module's operator head starts: one cluster at a time."""
    token, wrong = tmp_path / "token", tmp_path / "wrong"
    token.write_text("a" * 64)
    wrong.write_text("b" * 64)
    auth = {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: plain\nworkload: {steps: 2, num_workers: 1}\n")
    with head_started(auth) as address:
        line = refused(run_cli("run", str(plain), "--address", address, "--out", str(tmp_path / "a"), timeout=180,
                               env={"RAY_AUTH_MODE": "disabled", "RAY_AUTH_TOKEN_PATH": str(token)}),
                       f"--address {address}", "token authentication", "RAY_AUTH_MODE=token")
        assert "gcs_client" not in line
        refused(run_cli("run", str(plain), "--address", address, "--out", str(tmp_path / "b"), timeout=180,
                        env={**auth, "RAY_AUTH_TOKEN_PATH": str(wrong)}),
                f"--address {address}", "refused the token")
        ok = run_cli("run", str(plain), "--address", address, "--out", str(tmp_path / "c"), timeout=300, env=auth)
        assert ok.returncode == 0 and "PASS plain" in ok.stdout, (ok.stdout[-2000:], ok.stderr[-2000:])


def test_run_refuses_every_address_source(operator_head, tmp_path):
    plain = scenario(tmp_path, "plain")
    refused(run_cli("run", plain, "--address", operator_head, "--out", str(tmp_path / "a"), timeout=120),
            "--address", "--allow-destructive")
    refused(run_cli("run", scenario(tmp_path, "addr", operator_head), "--out", str(tmp_path / "b"), timeout=120),
            "cluster.address", "--allow-destructive")
    refused(run_cli("run", plain, "--out", str(tmp_path / "c"), env={"RAY_ADDRESS": operator_head}, timeout=120),
            "RAY_ADDRESS", "--allow-destructive")
    assert not any((tmp_path / d).exists() for d in "abc")


def test_suite_groups_by_address_and_refuses_the_faulty_one(operator_head, tmp_path):
    """What was seen 1: a fault-free scenario with the address first, kill-node after."""
    first = scenario(tmp_path, "a-no-faults", operator_head, faults="")
    shutil.copy(os.path.join(REPO, "scenarios", "catalog", "kill-node.yaml"), tmp_path / "b-kill-node.yaml")
    r = run_cli("suite", first, str(tmp_path / "b-kill-node.yaml"), "--out", str(tmp_path / "s"),
                env={"RAY_ADDRESS": operator_head}, timeout=120)
    refused(r, "RAY_ADDRESS", "--allow-destructive")
    r = run_cli("suite", first, scenario(tmp_path, "c-addr-kill", operator_head), "--out", str(tmp_path / "s"),
                timeout=120)
    refused(r, "cluster.address", "--allow-destructive")
    assert not (tmp_path / "s").exists()


def test_soak_refuses(operator_head, tmp_path):
    r = run_cli("soak", "--address", operator_head, "--duration", "30s", "--mix", "kill_worker:1",
                "--out", str(tmp_path / "soak"), timeout=120)
    refused(r, "--address", "--allow-destructive")


def test_submit_refuses(operator_head, tmp_path):
    r = run_cli("run", scenario(tmp_path, "sub"), "--submit", f"http://{operator_head}", "--out",
                str(tmp_path / "sub"), timeout=120)
    refused(r, "--submit", "--allow-destructive")


def test_doctor_run_refuses_an_operator_cluster_in_ray_address(operator_head, tmp_path):
    (tmp_path / "job.py").write_text("def train(config):\n    pass\n")
    r = run_cli("doctor", "--run", "job:train", "--out", str(tmp_path / "probe"),
                env={"RAY_ADDRESS": operator_head}, cwd=str(tmp_path), timeout=120)
    refused(r, "RAY_ADDRESS", "--allow-destructive")


def test_pytest_plugin_refuses(operator_head, ftharness_run):
    from ftharness.errors import ScenarioError

    spec = {"name": "plugin", "cluster": {"address": operator_head}, "failure_config": {"max_failures": 1},
            "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}}]}
    with pytest.raises(ScenarioError, match="--allow-destructive"):
        ftharness_run(spec)
    from ftharness.harness.frontends.pytest_plugin import _shared

    assert _shared.cluster is None, "the plugin started a cluster for a refused scenario"


def test_chaos_toolkit_control_refuses(operator_head, tmp_path):
    from chaoslib.exceptions import InterruptExecution

    from ftharness.harness.frontends.ctk.control import before_experiment_control
    from ftharness.harness.frontends.ctk.session import Session, session_or_none

    experiment = {"title": "t", "method": [{"type": "action", "name": "kill", "provider": {
        "type": "python", "module": "ftharness.harness.frontends.ctk.actions", "func": "kill_worker",
        "arguments": {"target": {"rank": 0}}}}]}
    sc = {"name": "ctk", "cluster": {"address": operator_head}}
    with pytest.raises(InterruptExecution, match="allow_destructive"):
        before_experiment_control(experiment, scenario=sc, out=str(tmp_path / "ctk"))
    assert session_or_none() is None
    # a session opened without fault actions still refuses a fault fired by hand
    session = Session.from_arguments(sc, str(tmp_path / "ctk2"))
    from ftharness.errors import ScenarioError

    with pytest.raises(ScenarioError, match="allow_destructive"):
        session.inject("kill_worker", {"target": {"rank": 0}})


def test_the_flag_lets_the_guard_pass(operator_head):
    """The opt-in is the only difference: with it, each route's decision names the operator's cluster."""
    from ftharness.harness.run.guard import check_route
    from ftharness.scenarios.schema import parse_scenario

    sc = parse_scenario({"name": "x", "failure_config": {"max_failures": 1},
                         "faults": [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}}]})
    t = check_route(sc, allow_destructive=True, address=operator_head)
    assert (t.address, t.source, t.allow_destructive, t.started_by_us) == (operator_head, "--address", True, False)

