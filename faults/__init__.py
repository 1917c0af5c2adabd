"""Fault kinds, one small module per family; `make_fault` builds one from its spec."""

from faults.checkpoint import CorruptCheckpoint
from faults.controller import KillController
from faults.node import KillNode, PartitionNode, PreemptNode
from faults.process import HangWorker, KillWorker
from faults.resources import StarveResources
from faults.storage import StorageErrors

REGISTRY = {cls.kind: cls for cls in (KillWorker, HangWorker, KillNode, PreemptNode, PartitionNode,
                                      CorruptCheckpoint, StorageErrors, StarveResources, KillController)}


def make_fault(index, spec):
    """The Fault object for spec (crash_worker is done by the worker itself)."""
    return REGISTRY[spec["kind"]](index, spec)


def discover(discover_system: bool = True):
    """Chaos Toolkit's `chaos discover ftharness` imports the first top-level
    package of the distribution, which is this one; the extension lives in
    harness.ctk."""
    from harness.ctk import discover as ctk_discover

    return ctk_discover(discover_system)
