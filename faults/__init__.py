"""Fault kinds, one small module per family, and their one registry.

Each kind is a `Fault` subclass whose `Spec` is its pydantic spec model
(faults/base.py). `KINDS` below is the registry: the scenario language takes
`FaultSpec`, the union of every kind's spec model, from it, and `make_fault`
builds a fault from its spec. Adding a kind: its module (or a class in an
existing one), and one line here.
"""

from typing import Annotated, Union

from pydantic import Field

from ftharness.faults.checkpoint import CorruptCheckpoint
from ftharness.faults.controller import KillController
from ftharness.faults.gpu import CollectiveHang, CudaError
from ftharness.faults.network import NetworkDegrade
from ftharness.faults.node import KillNode, PartitionNode, PreemptNode
from ftharness.faults.process import CrashWorker, HangWorker, KillWorker
from ftharness.faults.resources import StarveResources
from ftharness.faults.storage import StorageErrors

#: the registry: every fault kind, in the order the documentation lists them
KINDS = (
    KillWorker,
    CrashWorker,
    HangWorker,
    KillNode,
    PreemptNode,
    PartitionNode,
    NetworkDegrade,
    CorruptCheckpoint,
    StorageErrors,
    StarveResources,
    KillController,
    CudaError,
    CollectiveHang,
)

REGISTRY = {cls.kind: cls for cls in KINDS}
FAULT_KINDS = tuple(REGISTRY)

#: one fault of a scenario: the spec model its `kind` names
FaultSpec = Annotated[Union[tuple(cls.Spec for cls in KINDS)], Field(discriminator="kind")]


def make_fault(index, spec):
    """The Fault object for spec, a spec model's dump (crash_worker, cuda_error and collective_hang
    are injected by the worker itself)."""
    return REGISTRY[spec["kind"]](index, spec)


def landings(specs, events, final: bool = True):
    """[(spec, Landing)] for every fault of a scenario over a history."""
    from ftharness.faults.base import EventIndex, judge_landing

    try:
        shared = EventIndex(events)   # one pass over the history for all the faults
    except Exception:  # noqa: BLE001 - each fault meets the malformed history on its own
        shared = None
    return [(spec, judge_landing(make_fault(i, spec), events, final, shared)) for i, spec in enumerate(specs)]

