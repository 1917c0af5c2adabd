"""Fault kinds, one small module per family, and their one registry.

Each kind is a `Fault` subclass whose `Spec` is its pydantic spec model and
whose class attributes declare the rest (faults/base.py: the runtimes and
clusters it runs on, where it runs, the capabilities it needs, its cross-field
rules). `KINDS` below is the registry: the scenario language takes `FaultSpec`,
the union of every kind's spec model, from it; the injector, the worker's
instrumentation and the Chaos Toolkit actions ask it what each kind needs, and
`make_fault` builds a fault from its spec. Adding a kind: its module, and one
line here, or, outside this repository, an entry point in the group
`ftharness.faults` (docs/plugins.md), loaded below when this package is imported.
"""

from __future__ import annotations

import sys
from typing import Annotated, Any, Dict, Iterable, List, Mapping, Optional, Tuple, Union

from pydantic import Field

from ftharness.errors import FtharnessError
from ftharness.faults.base import FAILURE_CLASSES, UNDECLARED, UNKNOWN, FailureClaim, Fault, FaultSpecBase
from ftharness.faults.checkpoint import CorruptCheckpoint
from ftharness.faults.controller import KillController
from ftharness.faults.gpu import CollectiveHang, CudaError
from ftharness.faults.network import NetworkDegrade
from ftharness.faults.node import KillNode, PartitionNode, PreemptNode
from ftharness.faults.process import CrashWorker, HangWorker, KillWorker
from ftharness.faults.resources import StarveResources
from ftharness.faults.storage import StorageErrors

#: the entry-point group third-party fault kinds are registered under
ENTRY_POINT_GROUP = "ftharness.faults"
#: where a kind may run (Fault.runs_in)
PLACES = ("driver", "node_agent", "worker")

#: the built-in kinds, in the order the documentation lists them
BUILT_IN = (
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


class FaultKindError(FtharnessError, TypeError):
    """A built-in fault kind that declares something the rest of ftharness cannot use."""


def declaration_problem(cls: type) -> Optional[str]:
    """Why what `cls` declares for the oracles cannot be used (faults/base.py: `causes`,
    `explore_args`, `soak_args`); None if it can. A required argument without values to draw
    is refused here, never left out of explore in silence."""
    if cls.causes is not UNDECLARED and cls.causes is not None and cls.causes not in FAILURE_CLASSES:
        return (f"{cls.__name__}.causes must be None, one of {', '.join(FAILURE_CLASSES)}, or left undeclared "
                f"(got {cls.causes!r})")
    args = cls.Spec.arguments()
    for name, values in dict(cls.explore_args).items():
        if name not in args:
            return f"{cls.__name__}.explore_args names {name!r}, which is no argument of {cls.kind}"
        if isinstance(values, (str, bytes)) or not isinstance(values, (list, tuple)) or not values:
            return f"{cls.__name__}.explore_args[{name!r}] must be a non-empty tuple of values (the first: the simplest)"
    for name in args:
        if cls.Spec.model_fields[name].is_required() and name not in cls.explore_args:
            return (f"{cls.__name__}.explore_args has no values for {name}, a required argument of {cls.kind}: "
                    f"ftharness explore could not draw a fault of it")
    for name in dict(cls.soak_args or {}):
        if name not in args:
            return f"{cls.__name__}.soak_args names {name!r}, which is no argument of {cls.kind}"
    return None


def plugin_problem(cls: Any, taken: Iterable[str]) -> Optional[str]:
    """Why `cls`, loaded from an entry point, is no fault kind ftharness can use; None if it is."""
    if not (isinstance(cls, type) and issubclass(cls, Fault)):
        return f"{cls!r} is not a subclass of ftharness.faults.base.Fault"
    if not isinstance(cls.kind, str) or not cls.kind.isidentifier():
        return f"{cls.__name__}.kind must be a name such as my_fault (got {cls.kind!r})"
    if cls.kind in set(taken):
        return f"kind {cls.kind} is already registered"
    if not (isinstance(cls.Spec, type) and issubclass(cls.Spec, FaultSpecBase)) or cls.Spec is FaultSpecBase:
        return f"{cls.__name__}.Spec must be a subclass of FaultSpecBase with kind: Literal[{cls.kind!r}]"
    if cls.Spec.kind_name() != cls.kind:
        return f"{cls.__name__}.Spec's kind literal is {cls.Spec.kind_name()!r}, not {cls.kind!r}"
    if cls.runs_in not in PLACES:
        return f"{cls.__name__}.runs_in must be one of {', '.join(PLACES)} (got {cls.runs_in!r})"
    return declaration_problem(cls)


def _check_built_in() -> None:
    """A built-in kind declares everything the oracles ask (a plugin's may leave `causes` out:
    then its failure is UNKNOWN to every oracle)."""
    for cls in BUILT_IN:
        why = plugin_problem(cls, ()) or (f"{cls.__name__}.causes is not declared" if cls.causes is UNDECLARED else None)
        if why:
            raise FaultKindError(f"fault kind {cls.kind}: {why}")


_check_built_in()


def load_plugins(group: str = ENTRY_POINT_GROUP, taken: Iterable[str] = ()) -> Tuple[List[type], List[str]]:
    """(the fault kinds the installed distributions register under `group`, one line per entry
    point that could not be loaded). An entry point names a Fault subclass (or a list of them)."""
    from importlib.metadata import entry_points

    kinds: List[type] = []
    problems: List[str] = []
    taken = set(taken)
    try:
        found = sorted(entry_points(group=group), key=lambda ep: ep.name)
    except Exception as e:  # noqa: BLE001 - a broken environment loads no plugin, and says so
        return [], [f"{group}: entry points cannot be read ({type(e).__name__}: {e})"]
    for ep in found:
        try:
            loaded = ep.load()
        except BaseException as e:  # noqa: BLE001 - a plugin's SystemExit or KeyboardInterrupt at import is its own: one warning
            problems.append(f"{group} entry point {ep.name} ({ep.value}): not loaded ({type(e).__name__}: {e})")
            continue
        for cls in loaded if isinstance(loaded, (list, tuple)) else [loaded]:
            why = plugin_problem(cls, taken)
            if why:
                problems.append(f"{group} entry point {ep.name} ({ep.value}): not loaded ({why})")
                continue
            cls.plugin = f"{ep.dist.name if ep.dist else ep.value}"
            taken.add(cls.kind)
            kinds.append(cls)
    return kinds, problems


_PLUGINS, PLUGIN_PROBLEMS = load_plugins(taken=[cls.kind for cls in BUILT_IN])
for _line in PLUGIN_PROBLEMS:
    print(f"ftharness: warning: {_line}", file=sys.stderr)

#: the registry: every fault kind, built in first, then those of plugins (by entry point name)
KINDS = BUILT_IN + tuple(_PLUGINS)

REGISTRY: Dict[str, type] = {cls.kind: cls for cls in KINDS}
FAULT_KINDS = tuple(REGISTRY)

#: one fault of a scenario: the spec model its `kind` names
FaultSpec = Annotated[Union[tuple(cls.Spec for cls in KINDS)], Field(discriminator="kind")]


def kinds_that(**declared: Any) -> Tuple[str, ...]:
    """The kinds whose declarations have these values, in registry order
    (`kinds_that(runs_in="worker")`)."""
    return tuple(k for k, cls in REGISTRY.items() if all(getattr(cls, a) == v for a, v in declared.items()))


def kinds_on(runtime: str) -> Tuple[str, ...]:
    """The kinds that can run under `runtime` (ray_train, torchrun), in registry order."""
    return tuple(k for k, cls in REGISTRY.items() if runtime in cls.runtimes)


#: the kinds the worker does itself from its plan (the injector fires none of them)
IN_WORKER = kinds_that(runs_in="worker")


def spec_model(spec: Any) -> FaultSpecBase:
    """The spec model of one fault: `spec` itself where it is one; a dict is validated into its
    kind's model (a partial one, such as a table's `{"kind": ..., "duration_s": 4}`, is built
    without validation, with the model's defaults). KeyError for a kind nobody registered."""
    if isinstance(spec, FaultSpecBase):
        return spec
    cls = REGISTRY[spec.get("kind") if isinstance(spec, Mapping) else getattr(spec, "kind", None)]
    try:
        return cls.Spec.model_validate(dict(spec))
    except ValueError:
        return cls.Spec.model_construct(**dict(spec))


def failure_of(spec: Any) -> FailureClaim:
    """(failure class, CERTAIN|MAYBE|UNKNOWN) one fault (a model or a dict) causes, as its kind
    declares it (`Fault.failure_claim`); UNKNOWN for a kind nobody registered or one that
    declares nothing, never "no failure"."""
    cls = kind_of(spec)
    if cls is None:
        return FailureClaim(None, UNKNOWN)
    return cls.failure_claim(spec_model(spec))


def ends_fit(kind: Any) -> Optional[bool]:
    """Whether a fault of `kind` (a name) ends fit() itself (`Fault.ends_fit`); None for a kind
    nobody registered."""
    cls = REGISTRY.get(kind) if isinstance(kind, str) else None
    return None if cls is None else bool(cls.ends_fit)


def kind_facts() -> tuple:
    """((kind, KindFacts), ...) of every registered kind: what the causal model may take as given
    about each (history/kind_facts.py), declared by the kinds themselves."""
    from ftharness.history.kind_facts import KindFacts

    return tuple((name, KindFacts(kills_process=bool(c.kills_process), removes_node=bool(c.loses_node),
                                  drains_node=bool(c.drains_node), cuts_off=bool(c.cuts_off),
                                  damages_checkpoint=bool(c.damages_checkpoint)))
                 for name, c in sorted(REGISTRY.items()))


def echoes_of(spec: Any) -> Dict[str, Any]:
    """The `target_hit` fields one fault's record must hold as the scenario asked (`Fault.echoes`);
    {} for a kind nobody registered or a spec that cannot be read."""
    cls = kind_of(spec)
    try:
        return dict(cls.echoes(spec_model(spec))) if cls is not None else {}
    except Exception:  # noqa: BLE001 - a record that no model reads echoes nothing
        return {}


def lands_after_restart(spec: Any) -> bool:
    """Whether one fault (a model or a dict) lands only through a restart after it."""
    cls = kind_of(spec)
    return bool(cls is not None and cls.lands_after_restart(spec_model(spec)))


def kind_of(spec: Any) -> Optional[type]:
    """The Fault class of a spec (a model or its dump); None for a kind nobody registered."""
    kind = spec.get("kind") if isinstance(spec, dict) else getattr(spec, "kind", None)
    return REGISTRY.get(kind) if isinstance(kind, str) else None


def cpu_refusal(faults: Iterable[Any], why_cpu: str) -> Optional[str]:
    """`faults[i]...: ...` for the first fault that needs GPU workers, on a scenario that trains
    on CPU (`why_cpu` says why, naming the field); None when there is none. `faults`: the
    scenario's fault specs (models or dicts); each kind says in `cpu_problem` what it needs."""
    for i, f in enumerate(faults):
        cls = kind_of(f)
        why = cls.cpu_problem(spec_model(f), why_cpu, i) if cls is not None else None
        if why:
            return why
    return None


def make_fault(index: int, spec: Any) -> Fault:
    """The Fault object for `spec`: a spec model, or a history's record of one (a dict, made a
    model by the kind: `Fault.model_of`). The kinds that `runs_in` the worker are injected by
    the worker itself. KeyError for a kind nobody registered."""
    kind = spec.get("kind") if isinstance(spec, Mapping) else spec.kind
    return REGISTRY[kind](index, spec)


def landings(specs, events, final: bool = True):
    """[(spec, Landing)] for every fault of a scenario over a history (`specs`: spec models, or
    the records a history keeps of them)."""
    from ftharness.faults.base import EventIndex, judge_landing

    try:
        shared = EventIndex(events)   # one pass over the history for all the faults
    except Exception:  # noqa: BLE001 - each fault meets the malformed history on its own
        shared = None
    return [(spec, judge_landing(make_fault(i, spec), events, final, shared)) for i, spec in enumerate(specs)]
