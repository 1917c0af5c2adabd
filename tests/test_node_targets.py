"""Node targets by node id, IP or Ray label (pure: no cluster). The scenario
language takes them, `resolve_node` picks exactly one live worker node from the
cluster's node records or refuses in one line naming the field and what exists,
the runner refuses a bad one before anything starts, and a fault whose node is
gone by the time it fires is skipped with the same reason."""

import random

import pytest

from ftharness.faults import make_fault
from ftharness.faults.base import FaultContext
from ftharness.faults.targets import TargetError, check_node_targets, resolve_node
from ftharness.harness.cluster.handles import ExistingCluster, NodeInfo, _latest_records, node_info
from ftharness.errors import FaultSkipped, ScenarioError
from ftharness.scenarios.schema import MAX_MESSAGE, parse_scenario

HEAD = "aa" * 28
W0 = "b0" + "11" * 27
W1 = "b0" + "22" * 27        # shares its first 2 hex digits with W0, not its first 8
W2 = "c3" * 28
DEAD = "dd" * 28


def nodes():
    return [
        NodeInfo(-1, HEAD, True, True, None, ip="10.0.0.1", labels={"ray.io/node-id": HEAD, "role": "head"}),
        NodeInfo(0, W0, True, False, None, ip="10.0.0.2", labels={"zone": "a", "rack": "1"}),
        NodeInfo(1, W1, True, False, None, ip="10.0.0.3", labels={"zone": "a", "rack": "2"}),
        NodeInfo(2, W2, True, False, None, ip="10.0.0.4", labels={"zone": "b", "rack": "1"}),
        NodeInfo(3, DEAD, False, False, None, ip="10.0.0.9", labels={"zone": "c"}),
    ]


def refused(target, where="faults[1].target"):
    with pytest.raises(TargetError) as e:
        resolve_node(target, nodes(), where=where)
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= MAX_MESSAGE, msg
    return msg


# ------------------------------------------------------------------ the scenario language
def kill_node(target, kind="kill_node"):
    return {"name": "x", "failure_config": {"max_failures": 1},
            "faults": [{"kind": kind, "target": target, "at": {"step": 2}}]}


def parse_error(data):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(data, source="s.yaml")
    return str(e.value)


@pytest.mark.parametrize("kind", ["kill_node", "preempt_node", "partition_node", "kill_worker", "hang_worker"])
def test_node_selectors_are_accepted_by_every_kind_that_takes_a_node(kind):
    for target, dumped in [({"node_id": W0[:8].upper()}, {"node_id": W0[:8]}),   # hex, any case
                           ({"ip": " 10.0.0.2 "}, {"ip": "10.0.0.2"}),
                           ({"ip": "fe80:0:0::1"}, {"ip": "fe80::1"}),            # normalised
                           ({"label": {"zone": "a", "rack": 2}}, {"label": {"zone": "a", "rack": "2"}})]:
        f = parse_scenario(kill_node(target, kind)).faults[0]
        assert f.target.model_dump(exclude_none=True) == dumped
        assert f.target.names_node


def test_bad_node_selectors_are_refused_naming_the_field():
    assert parse_error(kill_node({"node_id": "abc"})) == \
        "s.yaml: faults[0].target.node_id: must be 8 to 56 hex digits of a Ray node id (got 'abc')"
    assert parse_error(kill_node({"node_id": "zz" * 8})).startswith("s.yaml: faults[0].target.node_id: must be")
    assert parse_error(kill_node({"ip": "10.0.0"})) == \
        "s.yaml: faults[0].target.ip: must be an IP address such as 10.0.0.5 (got '10.0.0')"
    assert parse_error(kill_node({"label": {}})).startswith("s.yaml: faults[0].target.label: must be a mapping")
    assert parse_error(kill_node({"label": {"zone": ["a"]}})).startswith("s.yaml: faults[0].target.label.zone")
    assert parse_error(kill_node({"ip": "10.0.0.2", "node_id": W0})) == \
        "s.yaml: faults[0].target: needs exactly one of rank, node, node_id, ip, label, random"
    assert parse_error(kill_node({"ip": "10.0.0.2"}, "crash_worker")) == \
        "s.yaml: faults[0].target: crash_worker takes rank or random (it runs inside the worker)"


# ------------------------------------------------------------------ resolution
def test_node_id_full_or_unique_prefix():
    assert resolve_node({"node_id": W2}, nodes()).node_id == W2
    assert resolve_node({"node_id": W0[:8]}, nodes()).node_id == W0
    assert resolve_node({"node_id": W1[:8].upper()}, nodes()).node_id == W1


def test_node_id_prefix_shared_by_two_nodes_is_refused():
    both = nodes() + [NodeInfo(4, W0[:10] + "ff" * 23, True, False, None, ip="10.0.0.5")]
    with pytest.raises(TargetError) as e:
        resolve_node({"node_id": W0[:8]}, both, where="faults[0].target")
    assert str(e.value) == (f"faults[0].target.node_id: {W0[:8]} matches 2 live nodes ({W0[:8]}, {W0[:8]}); "
                            f"a fault needs exactly one")
    assert resolve_node({"node_id": W0[:12]}, both).node_id == W0     # a longer prefix tells them apart


def test_node_id_of_no_node_lists_the_live_ones():
    assert refused({"node_id": "ee" * 4}) == (f"faults[1].target.node_id: eeeeeeee matches no live node; "
                                               f"live nodes: {HEAD[:8]} (head), {W0[:8]}, {W1[:8]}, {W2[:8]}")


def test_a_dead_node_is_no_target():
    assert refused({"node_id": DEAD[:8]}).startswith(
        f"faults[1].target.node_id: {DEAD[:8]} matches no live node (it matches dead node {DEAD[:8]}); live nodes:")
    assert "(it matches dead node" in refused({"ip": "10.0.0.9"})


def test_the_head_is_no_target():
    for target, field in [({"node_id": HEAD[:8]}, "node_id"), ({"ip": "10.0.0.1"}, "ip"),
                          ({"label": {"role": "head"}}, "label")]:
        msg = refused(target)
        assert msg.startswith(f"faults[1].target.{field}: ") and "is the head node" in msg, msg


def test_ip():
    assert resolve_node({"ip": "10.0.0.3"}, nodes()).node_id == W1
    assert refused({"ip": "10.9.9.9"}) == ("faults[1].target.ip: 10.9.9.9 matches no live node; live node IPs: "
                                           "10.0.0.1 (head), 10.0.0.2, 10.0.0.3, 10.0.0.4")
    v6 = [NodeInfo(0, W0, True, False, None, ip="fe80::1")]
    assert resolve_node({"ip": "fe80:0::1"}, v6).node_id == W0


def test_ip_shared_by_several_nodes_is_refused():
    one_host = [NodeInfo(-1, HEAD, True, True, None, ip="127.0.0.1"),   # the embedded cluster: one host
                NodeInfo(0, W0, True, False, None, ip="127.0.0.1"),
                NodeInfo(1, W1, True, False, None, ip="127.0.0.1")]
    with pytest.raises(TargetError) as e:
        resolve_node({"ip": "127.0.0.1"}, one_host, where="faults[0].target")
    assert str(e.value) == (f"faults[0].target.ip: 127.0.0.1 matches 3 live nodes ({HEAD[:8]} (head), {W0[:8]}, "
                            f"{W1[:8]}); a fault needs exactly one")
    with pytest.raises(TargetError, match="live node IPs: 127.0.0.1 \\(head\\) x3"):
        resolve_node({"ip": "127.0.0.2"}, one_host)


def test_label():
    assert resolve_node({"label": {"zone": "b"}}, nodes()).node_id == W2
    assert resolve_node({"label": {"zone": "a", "rack": "2"}}, nodes()).node_id == W1    # every pair must match
    assert refused({"label": {"zone": "a"}}).startswith("faults[1].target.label: {zone: a} matches 2 live nodes")
    assert refused({"label": {"zone": "q"}}) == \
        "faults[1].target.label: {zone: q} matches no live node; live label values: zone: a, b"
    assert refused({"label": {"gpu": "h100"}}) == \
        "faults[1].target.label: {gpu: h100} matches no live node; live label values: gpu: on no live node"


def test_a_long_listing_is_cut_short():
    many = [NodeInfo(i, f"{i:02x}" * 28, True, False, None, ip=f"10.1.0.{i}") for i in range(20)]
    msg = str(pytest.raises(TargetError, resolve_node, {"ip": "10.2.0.1"}, many).value)
    assert msg.endswith("and 14 more") and len(msg) <= MAX_MESSAGE


def test_check_node_targets_names_the_first_bad_fault():
    specs = [{"kind": "kill_worker", "target": {"rank": 0}}, {"kind": "kill_node", "target": {"node_id": W2}},
             {"kind": "corrupt_checkpoint"}, {"kind": "preempt_node", "target": {"ip": "10.7.7.7"}}]
    with pytest.raises(TargetError, match=r"^faults\[3\]\.target\.ip: 10\.7\.7\.7 matches no live node"):
        check_node_targets(specs, nodes())
    check_node_targets(specs[:3], nodes())


# ------------------------------------------------------------------ node records from ray.nodes()
def test_node_records_carry_ip_and_labels():
    rec = {"NodeID": W0, "Alive": True, "NodeManagerAddress": "10.0.0.2", "Resources": {"CPU": 1.0},
           "Labels": {"ray.io/node-id": W0, "ftharness.io/node": "0"}}
    n = node_info(0, rec, False, 1234, [7, 5])
    assert (n.node_id, n.alive, n.ip, n.labels, n.train_worker_pids, n.raylet_pid) == \
        (W0, True, "10.0.0.2", {"ray.io/node-id": W0, "ftharness.io/node": "0"}, [5, 7], 1234)
    gone = node_info(3, {}, False, node_id=DEAD)              # a node ray.nodes() no longer lists
    assert (gone.node_id, gone.alive, gone.ip, gone.labels) == (DEAD, False, None, {})
    dead, live = dict(rec, Alive=False, NodeManagerAddress="10.0.0.8"), rec
    assert _latest_records([live, dead])[W0]["Alive"] and _latest_records([dead, live])[W0]["Alive"]


# ------------------------------------------------------------------ at injection
class FakeCluster:
    capabilities = ExistingCluster.capabilities   # lists Ray nodes; numbers none
    kind = ExistingCluster.kind

    def __init__(self, records):
        self.records = records

    def nodes(self):
        return self.records

    def head_node_id(self):
        return HEAD


def ctx(records, members=()):
    return FaultContext(cluster=FakeCluster(records), agents=None, members=list(members), storage_dir="/s",
                        history_path="/h", rng=random.Random(0))


def test_a_node_fault_resolves_its_target_when_it_fires():
    fault = make_fault(0, {"kind": "kill_node", "target": {"label": {"zone": "b"}}, "at": {"step": 1}})
    assert fault.victim_node(ctx(nodes())) == W2


def test_a_node_gone_since_validation_skips_the_fault_with_the_reason():
    fault = make_fault(2, {"kind": "preempt_node", "target": {"node_id": W2[:8]}, "at": {"step": 1}})
    now = [n for n in nodes() if n.node_id != W2] + [NodeInfo(5, W2, False, False, None, ip="10.0.0.4")]
    with pytest.raises(FaultSkipped) as e:
        fault.victim_node(ctx(now))
    assert str(e.value).startswith(f"faults[2].target.node_id: {W2[:8]} matches no live node (it matches dead node")


def test_a_worker_fault_on_a_node_hits_its_lowest_rank_or_is_skipped():
    members = [{"rank": r, "node_id": nid, "pid": 100 + r, "actor_id": f"a{r}"}
               for r, nid in [(0, W0), (3, W1), (1, W1)]]
    fault = make_fault(0, {"kind": "kill_worker", "target": {"ip": "10.0.0.3"}, "at": {"step": 1}})
    assert fault.victim(ctx(nodes(), members))["rank"] == 1
    idle = make_fault(0, {"kind": "hang_worker", "target": {"label": {"zone": "b"}}, "at": {"step": 1}})
    with pytest.raises(FaultSkipped, match=f"node {W2[:8]} hosts no worker of the current group"):
        idle.victim(ctx(nodes(), members))


# ------------------------------------------------------------------ the runner, before anything starts
def test_the_runner_refuses_a_bad_node_target_before_it_starts(tmp_path):
    from ftharness.harness.run.runner import RunOptions, ScenarioRunner

    sc = parse_scenario(kill_node({"ip": "10.0.0.1"}))
    runner = ScenarioRunner(sc, FakeCluster(nodes()), RunOptions(out_dir=str(tmp_path / "out")))
    with pytest.raises(ScenarioError) as e:
        runner.start()
    assert str(e.value).startswith("x: faults[0].target.ip: 10.0.0.1 is the head node")
    assert not (tmp_path / "out").exists()          # refused before the results folder
    ok = ScenarioRunner(parse_scenario(kill_node({"node_id": W1[:8]})), FakeCluster(nodes()),
                        RunOptions(out_dir=str(tmp_path / "ok")))
    ok.check_cluster()


# ------------------------------------------------------------------ on the shared embedded cluster
def injected(s, kind):
    from ftharness.history.records import read_events

    ev = read_events(s["results_dir"])
    hits = [e for e in ev if e["kind"] == "fault_injected" and e["fault_kind"] == kind]
    assert hits, [e for e in ev if e["kind"] == "fault_skipped"]
    return hits[0]["target_hit"]


@pytest.mark.full
@pytest.mark.cluster
@pytest.mark.parametrize("by", ["node_id", "label"])
def test_kill_node_named_by_id_or_label(ftharness_run, ftharness_cluster, by):
    """Three ranks on three worker nodes, so the node named hosts one; the run goes on after
    the replacement joins. Embedded worker nodes carry the label ftharness.io/node: <index>."""
    from ftharness.harness.cluster.handles import NODE_LABEL

    index = ftharness_cluster.worker_node_indices()[-1]
    node_id = ftharness_cluster.node_id(index)
    target = {"node_id": node_id[:12]} if by == "node_id" else {"label": {NODE_LABEL: str(index)}}
    s = ftharness_run({"name": f"kill-node-by-{by}", "workload": {"num_workers": 3, "steps": 10, "checkpoint_every": 2},
                      "failure_config": {"max_failures": 1},
                      "faults": [{"kind": "kill_node", "target": target, "at": {"step": 4}, "replace": True}]})
    assert s["verdict"] == "PASS", (s["mismatches"], s["inconclusive"])
    hit = injected(s, "kill_node")
    assert hit["node_id"] == node_id and len(hit["ranks"]) == 1


@pytest.mark.full
@pytest.mark.cluster
def test_an_ip_every_embedded_node_shares_is_refused_before_the_run(ftharness_run, ftharness_cluster):
    head = next(n for n in ftharness_cluster.nodes() if n.is_head)
    assert head.ip and all(n.ip == head.ip for n in ftharness_cluster.nodes() if n.alive)   # one host
    workers = [n for n in ftharness_cluster.nodes() if not n.is_head and n.alive]
    assert all(n.labels.get("ftharness.io/node") == str(n.index) for n in workers)
    with pytest.raises(ScenarioError) as e:
        ftharness_run({"name": "kill-by-ip", "failure_config": {"max_failures": 1},
                      "faults": [{"kind": "kill_node", "target": {"ip": head.ip}, "at": {"step": 2}}]})
    assert str(e.value).startswith(f"kill-by-ip: faults[0].target.ip: {head.ip} matches {len(workers) + 1} live nodes")
