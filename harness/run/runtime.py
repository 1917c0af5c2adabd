"""The runtime a run trains on, as one interface: Ray Train (harness/run/runner.py: `RayTrain`)
or torchrun (harness/run/torchrun_runner.py: `Torchrun`), chosen once from
`workload.runtime` (`runner.runtime_of`).

Two halves, so that light modules never load Ray to ask a question:

- `Declared`: what a runtime declares about itself (whether it launches on a Ray cluster
  handle, whether the driver imports the job's functions).
  The guard, the preflight checks and the command line read these through `declared_of`
  without importing a runner.
- `Runtime`: what a run needs from its runtime (what it refuses before anything starts,
  the cluster handle it launches on, a runner on that handle, the run end to end); and
  `Run`, what each runner does (start, wait for the outcome, close, summarize), driven the
  same way by `drive`.

What every run shares whatever its runtime (name, storage, versions, scenario.yaml, the
redacted summary.json) is harness/run/shared.py.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, ContextManager, Dict, Optional, Protocol

from ftharness.safety import redact


@dataclass(frozen=True)
class Declared:
    """What a runtime declares about itself, readable without loading it."""

    name: str                       # its `workload.runtime`
    #: None: it launches on a Ray cluster handle (embedded or at an address); otherwise why it
    #: uses none, as it ends the refusal of an address ("workload.runtime torchrun " + this)
    no_ray_cluster: Optional[str]
    #: whether the driver imports the job's module:function references (entrypoint, datasets,
    #: dataset_config) before the run: checked by `validate` and `run` (harness/run/preflight.py)
    imports_job_functions: bool

    @property
    def uses_ray_cluster(self) -> bool:
        return self.no_ray_cluster is None

    def cluster_refusal(self, source: str, address: Optional[str] = None) -> Optional[str]:
        """The line refusing a Ray cluster (`source`: --address, --submit, ...; `address`, shown
        redacted) to a runtime that uses none, or None where it launches on one."""
        if self.uses_ray_cluster:
            return None
        return f"{source}: workload.runtime {self.name} {self.no_ray_cluster}" + \
            (f" ({redact(address)})" if address else "")


#: every runtime `workload.runtime` may name (scenarios/schema.py's Literal), by that name
DECLARED: Dict[str, Declared] = {d.name: d for d in (
    Declared("ray_train", no_ray_cluster=None, imports_job_functions=True),
    Declared("torchrun", no_ray_cluster="starts its own agents and uses no Ray cluster", imports_job_functions=False),
)}


def declared_of(scenario) -> Declared:
    """What the scenario's runtime declares (`workload.runtime`, validated by the schema)."""
    return DECLARED[scenario.workload.runtime]


class Run(Protocol):
    """One run on its runtime, from start to summary (ScenarioRunner, TorchrunRunner)."""

    out_dir: str
    run_name: str
    history_path: str
    t0: float   # when the run started training: the summary's wall_time_s counts from it

    def start(self) -> None:
        """Results folder, history, armed injector, the job started; cleans up after itself on failure."""

    def wait(self) -> Dict[str, Any]:
        """Drive the injector until the job ended; its outcome (recorded as run_end)."""

    def close(self) -> None:
        """Heal, stop what the run started, flush the history: also after a failure."""

    def summarize(self, outcome: Dict[str, Any], wall: float) -> Dict[str, Any]:
        """summary.json (written redacted, harness/run/shared.py) and the summary."""


def drive(run: Run) -> Dict[str, Any]:
    """Start, wait for the outcome, close (whatever happened), summarize: every runtime's run."""
    run.start()
    try:
        outcome = run.wait()
    finally:
        run.close()
    return run.summarize(outcome, time.time() - run.t0)


class Runtime(ABC):
    """What a run needs from its runtime. One instance per run, chosen by `runner.runtime_of`."""

    declared: ClassVar[Declared]

    @property
    def name(self) -> str:
        return self.declared.name

    def check_resume(self, results_dir: str, scenario) -> None:
        """What `--resume results_dir` resumes, refused in one line before anything starts.
        A runtime that cannot resume refuses it when its run is opened (`runner`)."""

    @abstractmethod
    def cluster(self, scenario, address: Optional[str]) -> ContextManager[Any]:
        """The cluster handle its runs launch on, not yet started (a context manager that
        starts and tears it down); one that launches its own processes yields None."""

    @abstractmethod
    def runner(self, scenario, cluster, options) -> Run:
        """A run of `scenario` on `cluster` (this runtime's handle, open; None where it uses
        none), refused in one line when it cannot run there."""

    @abstractmethod
    def run_on(self, scenario, cluster, options) -> Dict[str, Any]:
        """The run on an open cluster (a suite's), end to end; returns the summary."""

    @abstractmethod
    def run(self, scenario, options) -> Dict[str, Any]:
        """Everything refused first, then the cluster, the run and the teardown; the summary."""
