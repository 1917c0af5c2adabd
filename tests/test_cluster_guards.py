"""What ftharness refuses about where it runs (pure: no cluster is started): a
local storage_path on an existing cluster whose nodes are on several hosts
(unless declared a shared mount), and Ray Client (ray://) addresses from every
source, each in one line that names the field or flag and says why."""

import pytest

from conftest import run_cli
from ftharness.harness.cluster.handles import ExistingCluster, NodeInfo
from ftharness.errors import ClusterError, ScenarioError
from ftharness.harness.run.guard import check_existing, check_shared_storage, cluster_address
from ftharness.scenarios.schema import MAX_MESSAGE, parse_scenario, ray_client_refusal


def node(i, ip, alive=True, head=False):
    return NodeInfo(i, f"{i + 10:02x}" * 28, alive, head, None, ip=ip)


ONE_HOST = [node(-1, "10.0.0.1", head=True), node(0, "10.0.0.1"), node(1, "10.0.0.1")]
THREE_HOSTS = [node(-1, "10.0.0.1", head=True), node(0, "10.0.0.2"), node(1, "10.0.0.3")]


def scenario(**workload):
    return parse_scenario({"name": "x", "workload": workload}, source="s.yaml")


def refusal(sc, nodes, **kw):
    with pytest.raises(ScenarioError) as e:
        check_shared_storage(sc, nodes, **kw)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= MAX_MESSAGE, msg
    return msg


# ------------------------------------------------------------------ local storage on several hosts
def test_local_storage_on_several_hosts_is_refused():
    assert refusal(scenario(storage_path="/data/ckpt"), THREE_HOSTS) == (
        "workload.storage_path: /data/ckpt is local to this host, but the cluster's nodes are on 3 hosts "
        "(10.0.0.1, 10.0.0.2, 10.0.0.3) whose workers cannot see its disk; use s3://... or a shared mount "
        "with workload.storage_shared: true")


def test_no_storage_path_means_the_results_folder_which_is_local_too():
    msg = refusal(scenario(), THREE_HOSTS, storage_path="/home/me/results/run/storage")
    assert msg.startswith("workload.storage_path: not given (the results folder, /home/me/results/run/storage) "
                          "is local to this host")
    assert refusal(scenario(), THREE_HOSTS).startswith("workload.storage_path: not given (the results folder) is local")
    assert refusal(scenario(storage_path="file:///data/ckpt"), THREE_HOSTS)     # a file:// URI is local disk too


def test_many_hosts_are_cut_short():
    many = [node(i, f"10.0.1.{i}") for i in range(40)]
    assert "(10.0.1.0, 10.0.1.1, 10.0.1.10 and 37 more)" in refusal(scenario(storage_path="/d"), many)


@pytest.mark.parametrize("nodes, workload", [
    (ONE_HOST, {"storage_path": "/data/ckpt"}),                              # one host sees its own disk
    (THREE_HOSTS, {"storage_path": "s3://bucket/ckpt"}),                     # a URI every node reaches
    (THREE_HOSTS, {"storage_path": "gs://bucket/ckpt"}),
    (THREE_HOSTS, {"storage_path": "/mnt/nfs/ckpt", "storage_shared": True}),   # declared a shared mount
    (THREE_HOSTS, {"storage_shared": True}),                                 # the results folder on one
    (ONE_HOST + [node(5, "10.0.0.7", alive=False)], {"storage_path": "/d"}),  # a dead node's host does not count
    (ONE_HOST + [node(6, None)], {"storage_path": "/d"}),                    # nor a node with no address known
])
def test_what_is_allowed(nodes, workload):
    check_shared_storage(scenario(**workload), nodes)


def test_storage_shared_is_for_local_paths_only():
    with pytest.raises(ScenarioError) as e:
        scenario(storage_path="s3://bucket/x", storage_shared=True)
    assert str(e.value) == ("s.yaml: workload.storage_shared: declares a local storage_path a shared mount; "
                            "s3://bucket/x is a URI, shared already")
    assert scenario(storage_path="file:///mnt/nfs", storage_shared=True).workload.storage_shared


def test_the_runner_checks_storage_on_an_existing_cluster_only(tmp_path):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner

    class Existing(ExistingCluster):
        def nodes(self):
            return THREE_HOSTS

    class Embedded:
        capabilities, kind = frozenset({"nodes", "node_index", "remove_node", "add_node", "ray"}), "a stand-in"

        def nodes(self):
            raise AssertionError("an embedded cluster with no node target is not asked for its nodes")

    existing = ScenarioRunner(scenario(), Existing("10.0.0.1:6379"), RunOptions(out_dir=str(tmp_path / "a")))
    with pytest.raises(ScenarioError, match="^workload.storage_path: not given \\(the results folder, /"):
        existing.start()
    assert not (tmp_path / "a").exists()
    ScenarioRunner(scenario(storage_path="s3://b/x"), Existing("10.0.0.1:6379"),
                   RunOptions(out_dir=str(tmp_path / "b"))).check_cluster()
    ScenarioRunner(scenario(), Embedded(), RunOptions(out_dir=str(tmp_path / "c"))).check_cluster()


# ------------------------------------------------------------------ ray://
CLIENT = "ray://10.0.0.5:10001"


def test_ray_client_is_refused_from_every_source(monkeypatch):
    assert ray_client_refusal("10.0.0.5:6379") is None and ray_client_refusal("auto") is None
    why = ray_client_refusal(" RAY://h:1")
    assert why.startswith("Ray Client (ray://) runs the driver remotely")
    sc = scenario()
    with pytest.raises(ScenarioError) as e:
        check_existing(sc, *cluster_address(CLIENT, sc), allow_destructive=True)
    assert str(e.value) == f"--address: {CLIENT}: {ray_client_refusal(CLIENT)}"
    monkeypatch.setenv("RAY_ADDRESS", CLIENT)
    with pytest.raises(ScenarioError, match=f"^RAY_ADDRESS: {CLIENT}: Ray Client"):
        check_existing(sc, *cluster_address(None, sc), allow_destructive=True, has_faults=False)
    with pytest.raises(ScenarioError) as e:
        parse_scenario({"name": "x", "cluster": {"address": CLIENT}}, source="s.yaml")
    assert str(e.value).startswith(f"s.yaml: cluster.address: {CLIENT}: Ray Client (ray://)")
    assert len(str(e.value)) <= MAX_MESSAGE


def test_the_handle_refuses_ray_client_before_connecting():
    with pytest.raises(ClusterError, match=f"^--address {CLIENT}: Ray Client"):
        ExistingCluster(CLIENT)._probe()


def one_error_line(r):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    return lines[0]


def test_cli_refuses_ray_client_in_one_line(tmp_path):
    line = one_error_line(run_cli("run", "--address", CLIENT, "--out", str(tmp_path / "r"), timeout=120))
    assert line.startswith(f"ftharness: error: --address: {CLIENT}: Ray Client (ray://) runs the driver remotely")
    assert "--address auto or HOST:6379" in line
    assert not (tmp_path / "r").exists()
    by_env = one_error_line(run_cli("run", "--out", str(tmp_path / "e"), env={"RAY_ADDRESS": CLIENT}, timeout=120))
    assert by_env.startswith(f"ftharness: error: RAY_ADDRESS: {CLIENT}: Ray Client")
    path = tmp_path / "client.yaml"
    path.write_text(f"name: client\ncluster: {{address: '{CLIENT}'}}\n")
    by_file = one_error_line(run_cli("validate", str(path), timeout=120))
    assert "cluster.address: ray://10.0.0.5:10001: Ray Client" in by_file
