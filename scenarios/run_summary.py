"""What summary.json holds: every top-level key a run's summary may have, with its type and
meaning, in one declared record. The verdict (ftharness.scenarios.verdict.evaluate) makes the
judged half, each runtime adds what it knows of the run (harness/run/shared.py `summarize`),
and soak, the Chaos Toolkit control and the suite's ERROR row add their own. Readers (check,
report, compare, JUnit) read these names; tests/test_run_summary.py fails on a key written that
is not declared here."""

from __future__ import annotations

from typing import Any, Dict, List, Optional, TypedDict


class RunSummary(TypedDict, total=False):
    # --- the verdict over the history (scenarios/verdict.py evaluate)
    scenario: str                        #: the scenario's name
    runtime: str                         #: ray_train or torchrun
    verdict: str                         #: PASS, FAIL, INCONCLUSIVE (ERROR: ftharness crashed on it)
    outcome: Optional[str]               #: succeeded, failed, or None when not recorded
    error: Optional[str]                 #: what fit() (or the agents) raised, as text
    error_type: Optional[str]            #: its class name
    error_cause: Optional[str]           #: for a controller that died in its constructor, what that raised
    matches_expectation: bool            #: verdict == PASS
    mismatches: List[str]                #: why FAIL: each violated expectation, one line
    inconclusive: List[str]              #: why INCONCLUSIVE: each missing or contradicting evidence
    expected_properties: List[str]       #: the properties the scenario's expect asked for
    attempts: int                        #: worker-group attempts, by the causal model
    steps: int                           #: the last training step reached
    job_error: Optional[Dict[str, Any]]  #: the job's own error that stopped the run (scenarios/job_error.py), or None
    budgets: Dict[str, int]              #: failures charged per budget (worker_group, preemption, controller)
    failure_config: Dict[str, Any]       #: the FailureConfig in force (run_start; the scenario's otherwise)
    faults: List[Dict[str, Any]]         #: each fault: kind, landed, status, evidence
    properties: Dict[str, Dict[str, Any]]   #: each property's status, explanation, findings
    unasked_failures: List[Dict[str, Any]]  #: properties that failed although the scenario did not ask
    history: Dict[str, Any]              #: {complete, problems}: the history's own integrity
    recovery_times_s: List[float]        #: each restart's recovery time
    final_state: Dict[str, Any]          #: the reference job's accumulators against the exactly-once value
    metrics: Optional[Dict[str, Any]]    #: the fit result's metrics (rank 0's last report)
    run_metrics: Dict[str, Any]          #: derived figures (lost steps, goodput, ...)
    events: int                          #: events in the history
    # --- what the run adds (harness/run/shared.py summarize, the runtimes)
    gpu: Dict[str, Any]                  #: the GPU facts the workers recorded
    ray_settings: List[Dict[str, Any]]   #: every Ray setting used, with its value and source
    differs_from_ray: List[str]          #: the settings where ftharness chose other than Ray's default
    settings: Dict[str, Any]             #: the cluster the run used (profile, address, its source, ...)
    run_name: str                        #: Ray Train's run name (storage folder)
    wall_time_s: float                   #: the run's wall time
    storage_path: str                    #: where checkpoints went
    resume_of: Optional[str]             #: the results folder a --resume continued
    results_dir: str                     #: this run's folder
    versions: Dict[str, str]             #: ftharness, Ray, torch, Python
    agents: List[Dict[str, Any]]         #: torchrun: each node agent's end
    not_applicable: Dict[str, str]       #: torchrun: what a Ray Train summary has that this runtime cannot
    # --- added by the route that ran it
    soak: Dict[str, Any]                 #: `ftharness soak`: the fault process and what it injected
    chaostoolkit: Dict[str, Any]         #: a Chaos Toolkit experiment's status and deviation
    internal_error: str                  #: the suite's ERROR row: ftharness's own crash, one line


DECLARED = frozenset(RunSummary.__annotations__)
