"""Wire faults, pure parts: who a partition cuts a node from, and what the scenario language
refuses (no namespaces, no Ray)."""

from types import SimpleNamespace

import pytest

from ftharness.faults.network import peers_of
from ftharness.errors import FaultSkipped, ScenarioError
from ftharness.scenarios.schema import parse_scenario

NET = SimpleNamespace(head_ip="10.9.9.1", hosts={0: SimpleNamespace(ip="10.9.9.2"), 1: SimpleNamespace(ip="10.9.9.3"),
                                                 2: SimpleNamespace(ip="10.9.9.4")})


def test_cut_from_names_everyone_the_head_or_the_other_workers():
    assert peers_of(NET, 1, "all") is None
    assert peers_of(NET, 1, "head") == ["10.9.9.1"]
    assert peers_of(NET, 1, "workers") == ["10.9.9.2", "10.9.9.4"]
    with pytest.raises(FaultSkipped, match="only worker node"):
        peers_of(SimpleNamespace(head_ip="10.9.9.1", hosts={0: NET.hosts[0]}), 0, "workers")


def fault(**extra):
    return {"kind": "partition_node", "target": {"rank": 1}, "at": {"step": 2}, **extra}


@pytest.mark.parametrize("extra, field", [
    ({"mode": "network"}, "faults[0].mode"),
    ({"cut_from": "workers"}, "faults[0].cut_from"),
    ({"direction": "in"}, "faults[0].direction"),
])
def test_wire_options_without_namespace_hosts_are_refused_naming_the_field(extra, field):
    with pytest.raises(ScenarioError) as e:
        parse_scenario({"name": "x", "faults": [fault(**extra)]}, source="s.yaml")
    assert f"s.yaml: {field}" in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_cut_from_on_namespace_hosts_is_accepted():
    sc = parse_scenario({"name": "x", "cluster": {"network": "namespaces", "cpus_per_node": 2},
                         "faults": [fault(mode="network", cut_from="head", direction="out")]})
    assert (sc.faults[0].cut_from, sc.faults[0].direction) == ("head", "out")
    with pytest.raises(ScenarioError, match="cut_from"):
        parse_scenario({"name": "x", "cluster": {"network": "namespaces"},
                        "faults": [fault(mode="network", cut_from="rack")]}, source="s.yaml")


def test_a_host_without_root_refuses_namespace_hosts_in_one_line(monkeypatch):
    from ftharness.harness.cluster import netns

    monkeypatch.setattr(netns.os, "geteuid", lambda: 1000)
    sc = parse_scenario({"name": "x", "cluster": {"network": "namespaces"}})
    assert netns.refusal(sc) == "cluster.network: namespaces: network namespaces need root"
    assert netns.refusal(parse_scenario({"name": "x"})) is None
