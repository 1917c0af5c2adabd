"""Fault kinds, one small module per family; `make_fault` builds one from its spec."""

from faults.checkpoint import CorruptCheckpoint
from faults.controller import KillController
from faults.node import KillNode, PartitionNode, PreemptNode
from faults.process import CrashWorker, HangWorker, KillWorker
from faults.resources import StarveResources
from faults.storage import StorageErrors

REGISTRY = {cls.kind: cls for cls in (KillWorker, CrashWorker, HangWorker, KillNode, PreemptNode, PartitionNode,
                                      CorruptCheckpoint, StorageErrors, StarveResources, KillController)}


def make_fault(index, spec):
    """The Fault object for spec (crash_worker is injected by the worker itself)."""
    return REGISTRY[spec["kind"]](index, spec)


def landings(specs, events, final: bool = True):
    """[(spec, Landing)] for every fault of a scenario over a history."""
    from faults.base import judge_landing

    return [(spec, judge_landing(make_fault(i, spec), events, final)) for i, spec in enumerate(specs)]


def discover(discover_system: bool = True):
    """Chaos Toolkit's `chaos discover ftharness` imports the first top-level
    package of the distribution, which is this one; the extension lives in
    harness.frontends.ctk."""
    from harness.frontends.ctk import discover as ctk_discover

    return ctk_discover(discover_system)
