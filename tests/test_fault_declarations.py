"""A fault kind declares what the oracles ask of it (faults/base.py), and every oracle reads it
from the registry: explore's expectation, the simulator, the matrix, soak, the verdict and the
properties. A kind that declares nothing is unknown to all of them, never "no failure". Pure."""

from typing import Literal, Optional

import pytest

import ftharness.faults as faults
from ftharness.faults import REGISTRY, declaration_problem, failure_of, plugin_problem
from ftharness.faults.base import CERTAIN, FAILURE_CLASSES, MAYBE, UNKNOWN, Fault, TargetedSpec
from ftharness.harness.matrix.cells import fault_classes
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.policy_model import CLASSES
from ftharness.scenarios.simulator.calibration import DEFAULTS
from ftharness.scenarios.simulator.schedule import failure_class, simulate_schedule
from ftharness.scenarios.soak import SOAK_KINDS, soak_spec


class ZapSpec(TargetedSpec):
    kind: Literal["zap_worker"]
    level: Optional[int] = None


class Zap(Fault):
    """A plugin's kind that kills a worker and says so."""

    kind = "zap_worker"
    Spec = ZapSpec
    causes = "worker_group"

    def inject(self, ctx):
        return {}


class Quiet(Fault):
    """A plugin's kind that declares nothing about what it causes."""

    kind = "quiet_worker"
    Spec = type("QuietSpec", (TargetedSpec,), {"__annotations__": {"kind": Literal["quiet_worker"]}})

    def inject(self, ctx):
        return {}


@pytest.fixture
def plugins(monkeypatch):
    """Zap and Quiet in the registry, as entry points would put them."""
    monkeypatch.setitem(REGISTRY, Zap.kind, Zap)
    monkeypatch.setitem(REGISTRY, Quiet.kind, Quiet)


def fault(kind, step=3, **args):
    return {"kind": kind, "target": {"rank": 0}, "at": {"step": step}, **args}


def test_the_failure_classes_are_the_policy_models():
    assert set(FAILURE_CLASSES) == set(CLASSES)


def test_every_built_in_kind_declares_what_it_causes():
    for kind, cls in REGISTRY.items():
        assert cls.failure_claim(cls.Spec.model_construct()).certainty in (CERTAIN, MAYBE), kind
        assert declaration_problem(cls) is None, kind


def test_a_required_argument_without_values_to_draw_is_refused_at_registration():
    class NeedsSpec(TargetedSpec):
        kind: Literal["needs_level"]
        level: int

    class Needs(Fault):
        kind = "needs_level"
        Spec = NeedsSpec
        causes = "worker_group"

        def inject(self, ctx):
            return {}

    assert "explore_args has no values for level" in plugin_problem(Needs, ())
    Needs.explore_args = {"level": (1, 2)}
    assert plugin_problem(Needs, ()) is None
    Needs.causes = "exploded"
    assert "causes must be None" in plugin_problem(Needs, ())


def test_a_kind_that_declares_nothing_is_unknown_to_every_oracle(plugins):
    assert failure_of(fault("quiet_worker")) == (None, UNKNOWN)
    assert failure_of({"kind": "nobody_registered"}) == (None, UNKNOWN)
    assert es.expectation({"max_failures": 0}, [fault("quiet_worker")]).outcomes == ("succeeded", "failed")
    assert fault_classes([fault("quiet_worker")]) is None
    with pytest.raises(ValueError, match="not simulated"):
        failure_class(fault("quiet_worker"))
    assert faults.ends_fit("quiet_worker") is False and faults.ends_fit("nobody_registered") is None


def test_a_plugin_kind_that_fails_a_worker_is_expected_as_one(plugins):
    """No false gap: the model expects of a declared worker failure what it expects of kill_worker."""
    for fc in ({"max_failures": 0}, {"max_failures": 1}):
        assert es.expectation(fc, [fault("zap_worker")]) == es.expectation(fc, [fault(faults.FAULT_KINDS[0])])
    assert es.expectation({"max_failures": 1}, [fault("zap_worker")]).outcomes == ("succeeded",)
    assert es.restarts(fault("zap_worker"))
    assert fault_classes([fault("zap_worker")]) == ["worker_group"]
    assert failure_class(fault("zap_worker")) == "worker_group"


def test_the_early_reclaim_rule_is_one_rule_every_oracle_reads():
    """A preempted node killed before its deadline is a worker-group failure: explore, the
    simulator, the matrix and soak all read it from the kind."""
    preempting = faults.kinds_that(causes="preemption")
    assert preempting
    for kind in preempting:
        early, waited = fault(kind, kill_offset_s=-1.5), fault(kind)
        assert es.failure_of(early) == ("worker_group", CERTAIN) and es.failure_of(waited) == ("preemption", CERTAIN)
        assert failure_class(early) == "worker_group" and failure_class(waited) == "preemption"
        assert fault_classes([early, waited]) == ["worker_group", "preemption"]
        if kind in SOAK_KINDS:
            assert SOAK_KINDS[kind][0] == failure_of(soak_spec(kind)).failure
        r = simulate_schedule({"max_failures": 1, "max_preemption_failures": 0}, [early], DEFAULTS, steps=10)
        assert r.classes == ["worker_group"] and r.outcome == "succeeded"


def test_soak_draws_the_kinds_that_declare_soak_arguments():
    assert set(SOAK_KINDS) == {k for k, c in REGISTRY.items() if c.soak_args is not None}
    for kind, (budget, args) in SOAK_KINDS.items():
        spec = REGISTRY[kind].Spec.model_validate(soak_spec(kind))   # a soak's fault is a valid spec
        assert budget == failure_of(spec).failure and budget in ("worker_group", "preemption")


def test_explore_draws_each_kinds_declared_arguments_in_its_declared_order():
    order = es.kind_order()
    assert sorted(order) == sorted(REGISTRY)
    assert [REGISTRY[k].explore_rank for k in order] == sorted(REGISTRY[k].explore_rank for k in order)
    for kind in order:
        plain = es.plain(kind, {"step": 2})
        for name, values in REGISTRY[kind].explore_args.items():
            if values[0] is not None and name in plain:
                assert plain[name] == values[0], (kind, name)
