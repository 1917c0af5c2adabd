"""Typed fault specs (pure): every kind of the registry owns a spec model, the
scenario's `faults:` list is their union picked by `kind`, each kind's defaults
are the dicts its fault receives, and what does not belong to a kind is refused
in one line naming the field. The published JSON Schema is what `ftharness
schema` prints, so it cannot go stale."""

import glob
import json
import os

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from pydantic import TypeAdapter, ValidationError

import ftharness.scenarios.schema as schema
from ftharness.faults import FAULT_KINDS, KINDS, REGISTRY, FaultSpec
from ftharness.faults.base import TRIGGER_EVENTS, FaultSpecBase, TargetedSpec
from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli import main as cli_main
from ftharness.history.triggers import EVENT_TRIGGERS
from ftharness.scenarios.schema import parse_scenario
from ftharness.scenarios.strategies import scenario_dicts

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLISHED = os.path.join(REPO, "scenarios", "scenario.schema.json")
CATALOG = sorted(glob.glob(os.path.join(REPO, "scenarios", "catalog", "*.yaml")))

#: the kinds whose spec needs a target (the registry's)
TARGETED = tuple(k for k, c in REGISTRY.items() if "target" in c.Spec.model_fields and c.Spec.model_fields["target"].is_required())

#: the dict each kind's fault receives for a minimal spec (its model's dump without None)
DEFAULTS = {
    "kill_worker": {},
    "crash_worker": {"where": "before_step"},
    "hang_worker": {},
    "kill_node": {},
    "preempt_node": {"notice_s": 3.0},
    "partition_node": {},
    "network_degrade": {},
    "corrupt_checkpoint": {"which": "latest", "how": "bitflip"},
    "storage_errors": {},
    "starve_resources": {},
    "kill_controller": {},
    "cuda_error": {"how": "device_assert"},
    "collective_hang": {},
}

#: an argument of another kind, for each kind (the registry's)
FOREIGN = {k: next(a for other in REGISTRY.values() for a in other.Spec.arguments() if a not in c.Spec.arguments())
           for k, c in REGISTRY.items()}


#: what a kind cannot do without: its required arguments (the first value explore draws) and what
#: its cross-field rule needs
REQUIRED = {**{k: {a: c.explore_args[a][0] for a in c.Spec.arguments() if c.Spec.model_fields[a].is_required()}
               for k, c in REGISTRY.items()},
            "network_degrade": {"loss_pct": 10}}


def minimal(kind, **args):
    return {"kind": kind, "at": {"step": 2}, **({"target": {"rank": 0}} if kind in TARGETED else {}),
            **REQUIRED.get(kind, {}), **args}


def scenario(fault):
    """A scenario of one fault; wire faults get the namespace hosts they need."""
    kind = fault.get("kind") if isinstance(fault, dict) else None
    cluster = {"network": "namespaces"} if kind == "network_degrade" else {"gpus_per_node": 1} \
        if kind == "cuda_error" else None    # a GPU fault needs GPU workers (faults/gpu.py)
    workload = {"collective_timeout_s": 5} if kind == "collective_hang" else None
    return {"name": "x", **({"cluster": cluster} if cluster else {}), **({"workload": workload} if workload else {}),
            "faults": [fault]}


def error_of(fault):
    with pytest.raises(ScenarioError) as e:
        parse_scenario(scenario(fault), source="s.yaml")
    msg = str(e.value)
    assert "\n" not in msg and len(msg) <= schema.MAX_MESSAGE, msg
    return msg


def test_the_registry_is_the_one_list_of_kinds():
    assert FAULT_KINDS == tuple(REGISTRY) == tuple(cls.kind for cls in KINDS)
    assert schema.FAULT_KINDS is FAULT_KINDS and schema.FaultSpec is FaultSpec
    assert set(FAULT_KINDS) == set(DEFAULTS)


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_every_kind_owns_a_spec_whose_literal_is_its_kind(kind):
    spec = REGISTRY[kind].Spec
    assert issubclass(spec, FaultSpecBase) and spec is not FaultSpecBase
    assert spec.kind_name() == kind
    assert issubclass(spec, TargetedSpec) == (kind in TARGETED)
    assert spec.model_json_schema()["properties"]["kind"]["const"] == kind


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_the_union_picks_the_kind_s_model_with_its_defaults(kind):
    sc = parse_scenario(scenario(minimal(kind)))
    f = sc.faults[0]
    assert type(f) is REGISTRY[kind].Spec
    dumped = f.model_dump(mode="json", exclude_none=True)
    assert dumped == {**minimal(kind, **DEFAULTS[kind]), "at": {"step": 2, "nth": 1, "hold": True}}
    assert TypeAdapter(FaultSpec).validate_python(minimal(kind)) == f


@pytest.mark.parametrize("kind", FAULT_KINDS)
def test_an_argument_of_another_kind_is_refused_by_name(kind):
    arg = FOREIGN[kind]
    assert arg not in REGISTRY[kind].Spec.model_fields
    msg = error_of(minimal(kind, **{arg: 1}))
    allowed = ", ".join(REGISTRY[kind].Spec.arguments()) or "none"
    assert msg == f"s.yaml: faults[0].{arg}: not an argument of {kind} (allowed: {allowed})"


@pytest.mark.parametrize("kind", TARGETED)
def test_a_kind_that_needs_a_target_is_refused_without_one(kind):
    fault = minimal(kind)
    del fault["target"]
    assert error_of(fault) == f"s.yaml: faults[0].target: {kind} needs a target (rank, node, node_id, ip, label or random)"


@pytest.mark.parametrize("kind", sorted(set(FAULT_KINDS) - set(TARGETED)))
def test_a_kind_without_a_target_refuses_one(kind):
    assert error_of(minimal(kind, target={"rank": 0})).startswith(f"s.yaml: faults[0].target: not an argument of {kind}")


def test_unknown_and_missing_kinds_list_the_allowed_ones():
    every = ", ".join(FAULT_KINDS)
    assert error_of({"kind": "meteor", "at": {"step": 1}}) == \
        f"s.yaml: faults[0].kind: unknown fault kind 'meteor' (none built in or from a plugin); " \
        f"allowed: {every}"
    assert error_of({"kind": "kill_wroker", "at": {"step": 1}}).startswith(
        "s.yaml: faults[0].kind: unknown fault kind 'kill_wroker' (did you mean kill_worker?); allowed:")
    assert error_of({"at": {"step": 1}}).startswith("s.yaml: faults[0].kind: a fault needs a kind; allowed: kill_worker")
    assert error_of(3) == "s.yaml: faults[0]: must be a mapping (got 3)"


def test_per_kind_rules():
    assert "rank or random" in error_of(minimal("crash_worker", target={"node": 0}))
    assert error_of(minimal("crash_worker", at={"time_s": 1})) == \
        "s.yaml: faults[0].at: crash_worker before_step needs {step: N}"
    on_restore = parse_scenario({"name": "x", "faults": [minimal("crash_worker", where="on_restore",
                                                                 at={"event": "restored"})]})
    assert on_restore.faults[0].where == "on_restore"
    assert error_of(minimal("corrupt_checkpoint", which="newest")).startswith(
        "s.yaml: faults[0].which: must be latest, oldest, in_flight or 'index N'")
    assert parse_scenario({"name": "x", "faults": [minimal("corrupt_checkpoint", which="index -1")]})
    assert error_of(minimal("preempt_node", notice_s=0)).startswith("s.yaml: faults[0].notice_s:")
    assert error_of(minimal("partition_node", mode="wire")).startswith("s.yaml: faults[0].mode: must be one of 'pause'")
    assert error_of(minimal("partition_node", mode="network")) == ("s.yaml: faults[0].mode: network acts on a node's "
                                                                   "own network, which needs cluster.network: namespaces")
    assert error_of(minimal("partition_node", direction="in")) == "s.yaml: faults[0].direction: only with mode: network"
    wire = {"name": "x", "cluster": {"network": "namespaces"}}
    assert parse_scenario({**wire, "faults": [minimal("partition_node", mode="network", direction="out")]})
    assert error_of({**minimal("network_degrade"), "loss_pct": None}).startswith("s.yaml: faults[0]")
    with pytest.raises(ScenarioError, match="faults\\[0\\].kind: network_degrade acts on a node's own network"):
        parse_scenario({"name": "x", "faults": [minimal("network_degrade")]}, source="s.yaml")
    with pytest.raises(ScenarioError, match="cluster.network: namespaces builds"):
        parse_scenario({**wire, "cluster": {"network": "namespaces", "address": "1.2.3.4:6379"}})
    with pytest.raises(ValidationError):
        REGISTRY["storage_errors"].Spec.model_validate(minimal("storage_errors", error_rate=1.5))


@pytest.mark.parametrize("kind", ["kill_worker", "kill_node"])
def test_a_ray_only_argument_is_refused_under_torchrun_naming_it(kind):
    """`graceful` is declared Ray-only (Fault.ray_only_args): one line under torchrun, nothing under Ray Train."""
    fault = minimal(kind, graceful=True, **({"target": {"node": 1}} if kind == "kill_node" else {}))
    assert parse_scenario({"name": "x", "faults": [fault]})
    with pytest.raises(ScenarioError) as e:
        parse_scenario({"name": "x", "workload": {"runtime": "torchrun"}, "faults": [fault]}, source="s.yaml")
    assert str(e.value) == (f"s.yaml: faults[0].graceful: Ray-only (ray.kill / a raylet's SIGTERM); under torchrun "
                            f"{kind} is a SIGKILL")
    assert REGISTRY["crash_worker"].ray_only_args == {}


def test_trigger_events_are_the_history_s():
    assert TRIGGER_EVENTS == tuple(EVENT_TRIGGERS)
    assert "lunch" in error_of(minimal("kill_worker", at={"event": "lunch"}))


def test_published_schema_is_what_the_command_prints(capsys, tmp_path):
    assert cli_main(["schema"]) == 0
    printed = capsys.readouterr().out
    with open(PUBLISHED) as f:
        assert f.read() == printed, "regenerate: ftharness schema --out scenarios/scenario.schema.json"
    out = tmp_path / "s.json"
    assert cli_main(["schema", "--out", str(out)]) == 0 and out.read_text() == printed
    published = json.loads(printed)
    assert sorted(published["properties"]["faults"]["items"]["discriminator"]["mapping"]) == sorted(FAULT_KINDS)
    assert "base_dir" not in published["properties"]


@pytest.mark.parametrize("path", CATALOG, ids=os.path.basename)
def test_catalog_names_the_schema_and_meets_it(path):
    with open(path) as f:
        assert f.readline().strip() == "# yaml-language-server: $schema=../scenario.schema.json"
    jsonschema = pytest.importorskip("jsonschema")
    with open(PUBLISHED) as f:
        jsonschema.validate(yaml.safe_load(open(path)), json.load(f))


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=scenario_dicts())
def test_generated_scenarios_are_valid(data):
    sc = parse_scenario(data)
    assert [f.kind for f in sc.faults] == [f["kind"] for f in data["faults"]]
