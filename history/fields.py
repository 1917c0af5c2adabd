"""The field map of the model: every field the history writer can write, and who reads it.

For every event kind (docs/history.md) and every field path the writer can put in it, one of

- `Read(rules)`: the rules whose verdict changes when the field does: causal-model codes as
  `history/causal.py` adds them (`process`, `registration`, ...: the table of docs/verdicts.md),
  properties by name (`exactly_once_restore`, ...), a fault kind's landing as `landing:<kind>`
  (`landing:*`: the attribution every kind shares, faults/base.py), `integrity` (the seal and
  the manifest, history/records.py), `verdict` (what scenarios/verdict.py and `check`'s reading
  of run_end compare with the scenario) and `agreement` (the scenario.yaml the history ran,
  history/agreement.py). `partial` says what part of a read field no rule reads;
- `Free(reason)`: no rule reads it, and the reason says why an edit of it cannot change a
  verdict (text for a person, a figure shown on a report page, an echo of a judged fact);
- `Unread(note)`: no rule reads it and it is a fact of the run: what it means and what an edit
  of it could hide. These are the facts a rule is still owed (issue 46); the test that guards
  this map (tests/test_field_map.py) fails when one is left once the bucket is empty.

Paths: `a.b` a key of a dict field, `a[].b` a key of the dicts of a list field, `a.*` every key
under `a` (a dict keyed by rank, emitter, budget or a user's own names). A kind's own entry
wins over `COMMON` (the envelope and identity fields that events carry whatever their kind);
an exact path wins over a wildcard. docs/verdicts.md's "Field map" section is generated from
this module (`python scripts/gen_field_map.py`).

Pure: no Ray, no pandas; imports nothing of the judge.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union


@dataclass(frozen=True)
class Read:
    """Rules read the field: an edit of it changes what they decide."""

    rules: Tuple[str, ...]
    #: what of the field's value no rule reads (empty: all of it is read)
    partial: str = ""


@dataclass(frozen=True)
class Free:
    """No rule reads the field, and `reason` says why an edit cannot change a verdict."""

    reason: str


@dataclass(frozen=True)
class Unread:
    """No rule reads the field, though it is a fact of the run: what it means, what an edit could hide."""

    note: str


Entry = Union[Read, Free, Unread]


def R(*rules: str, partial: str = "") -> Read:
    return Read(tuple(rules), partial)


#: the rule families besides the causal model's codes, the properties and the landings
INTEGRITY, VERDICT, AGREEMENT = "integrity", "verdict", "agreement"
#: the attribution rule every fault kind's landing shares (faults/base.py: struck, failure_of, window)
LANDING_ANY = "landing:*"
FAMILIES = (INTEGRITY, VERDICT, AGREEMENT)

# -- reasons shared by several fields
TEXT = "free text for a person (an error message, a traceback, an action's wording): no rule parses it"
DISPLAY_GPU = ("a device fact shown on the report's GPU page (reports/gpu.py); what the run did is judged from its "
               "steps, reports and failures, never from the device it ran on")
SKIPPED = ("a skipped fault is a fault that did not land: the run is INCONCLUSIVE whatever the record of the skip "
           "says, so no value of this field can make it PASS")

#: fields of (nearly) every event: the envelope EventSource and the book write, and the identity of the
#: process that wrote it (workers: rank, attempt, node, pid; controllers: pid, attempt_id; agents: agent)
COMMON: Dict[str, Entry] = {
    "seq": R(INTEGRITY, LANDING_ANY, "no_zombie_writes", "bounded_lost_work", "budget_accounting"),
    "t": R("clock", "attempt-order", "after-death", "after-shutdown", "registration", "restore", "failure-attempt",
           "fit-order", "recovers", LANDING_ANY),
    "kind": R(INTEGRITY, "process", "registration", LANDING_ANY),
    "source": R("emitter", "state-chain", "fit-order", "sequence", "bounded_lost_work"),
    "run": R("run-identity"),
    "fit_index": R("fit-order", "registration", "return-value", "fault-trigger", "worker-end"),
    "emitter": R(INTEGRITY, "clock", "emitter", "sequence", "state-chain", "landing:kill_controller"),
    "eseq": R(INTEGRITY),
    "spooled": Free("set on an event journaled while its emitter was cut off and merged at close; no_zombie_writes "
                    "only adds a phrase to its message with it, the verdict rests on seq and t"),
    "pid": R("process", "emitter", "after-death", "exactly_once_restore", LANDING_ANY, "landing:kill_controller"),
    "rank": R("process", "lockstep", "report", "exactly_once_restore", "shard_reassignment", "monotonic_counters",
              LANDING_ANY),
    "node_id": R("process", "after-death", "zombie-report", "after-shutdown", "agent", "budget_accounting",
                 "landing:preempt_node", "landing:network_degrade"),
    "attempt_id": R("process", "registration", "failure-attempt", "attempt-order", "attempt", LANDING_ANY),
    "attempt": R("attempt", "emitter"),
    "world_size": R("process", "group", "emitter", "shard_reassignment"),
    "restart_count": R("emitter", "restart-count"),
    "agent": R("agent", "budget_accounting"),
}

FIELD_MAP: Dict[str, Dict[str, Entry]] = {
    "run_start": {
        "scenario": R(AGREEMENT),
        "run_name": R("run-identity", "registration"),
        "storage_path": R("registration", partial="compared with the registrations' folders only when both are "
                                                  "local absolute paths: under a URI (s3://...) only the run's "
                                                  "folder name is"),
        "resume_of": R("restore", "exactly_once_restore",
                       partial="only whether it is set: the folder it names is not checked to exist or to hold the "
                               "checkpoint the first restore read"),
        "workload": R(VERDICT, "exactly_once_restore", "shard_reassignment", "bounded_lost_work"),
        "workload.steps": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.batch_size": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.epochs": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.rows_per_epoch": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.checkpoint_every": R(VERDICT),
        "workload.model": R(VERDICT),
        "workload.data": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.features": R(VERDICT),
        "workload.seed": R(VERDICT, "exactly_once_restore", "shard_reassignment"),
        "workload.lr": R(VERDICT),
        "workload.step_delay_s": R(VERDICT),
        "workload.jit_checkpoint": R(VERDICT),
        "workload.stop_at": R(VERDICT, "exactly_once_restore"),
        "workload.use_gpu": R(VERDICT),
        "workload.*": Free("a user job's own train_loop_config, handed to its train function as it is; the verdict "
                           "reads recorded workload settings of the reference workload only (_recorded_workload)"),
        "failure_config": R(VERDICT, "budget_accounting"),
        "failure_config.max_failures": R("budget_accounting"),
        "failure_config.max_preemption_failures": R("budget_accounting"),
        "failure_config.controller_failure_limit": R("budget_accounting"),
        "failure_config.*": R("budget_accounting", VERDICT,
                              partial="each setting the scenario also holds is compared with it (preemption_grace_s, "
                                      "relax_collectives_on_preemption, ...); the names against the recorded release"),
        "ray_settings": Free("every Ray setting in force and where its value came from, shown on the report "
                             "(reports/frames.py); bounds come from the scenario and the release, never from the run"),
        "ray_settings[].*": Free("a row of ray_settings (setting, value, ray_default, source): shown only"),
        "num_workers": R(VERDICT),
        "ray_version": R(VERDICT, "budget_accounting"),
        "runtime": R(VERDICT),
        "health_check_timeout_s": R(VERDICT, "recovers",
                                    partial="not compared with the scenario for an existing cluster "
                                            "(cluster.address) or under torchrun"),
        "soak": R(VERDICT, partial="only whether a soak is recorded (a soak that injected nothing is INCONCLUSIVE)"),
        "soak.*": Free("the soak's plan (seed, duration_s, mtbf_s, planned count), shown on the report; the faults a "
                       "soak injected are judged from run_end.fault_specs and their own events"),
        # torchrun's run_start
        "max_restarts": R(VERDICT),
        "nodes": Free("torchrun: the scenario's node count, echoed for the person reading the run; the verdict takes "
                      "the cluster from the scenario"),
        "agents": Free("torchrun: how many agents the launcher needed (the nodes that train); the agents' own "
                       "decisions are judged from their controller_state and failure events"),
        "spare_nodes": Free("torchrun: the node ids held in reserve for a lost node; which one took over is "
                            "recorded by a fault_action, and whether training resumed by the steps"),
        "rdzv_conf": Free("torchrun: the rendezvous settings the agents got, for the person debugging a rendezvous; "
                          "attempts are judged from the rounds recorded"),
    },
    "run_end": {
        "outcome": R(VERDICT, "return-value", "result", "state-chain", "finished", "worker-end", "recovers",
                     "budget_accounting",
                     "landing:kill_controller", "landing:corrupt_checkpoint"),
        "error_type": R(VERDICT, "fit-order", "budget_accounting", "landing:kill_controller",
                        "landing:corrupt_checkpoint"),
        "error": R("landing:kill_controller", "landing:corrupt_checkpoint",
                   partial="only the pid a dead actor's context names, the snapshot's refusal, a deleted folder's "
                           "name; the rest is text"),
        "error_cause": R(VERDICT),
        "metrics": R("result", partial="compared with rank 0's report of the last registered checkpoint only when "
                                       "the fit succeeded and registered one"),
        "metrics.*": R("result"),
        "checkpoint": R("result", partial="only its last component is compared with the last registration"),
        "return_value": R(VERDICT, "return-value", "exactly_once_restore"),
        "return_value.step": R(VERDICT, "return-value"),
        "return_value.acc": R(VERDICT, "exactly_once_restore"),
        "return_value.*": R("return-value", partial="compared as a whole with rank 0's worker_end return value "
                                                    "(the reference job's param_checksum, a user job's own values)"),
        "fault_specs": R(VERDICT),
        "fault_specs[].*": R(VERDICT, partial="compared as a whole with the scenario's faults; each fault's landing "
                                              "is judged by the spec recorded here"),
        # torchrun's run_end
        "agents": R("result"),
        "agents[].node_id": R("result"),
        "agents[].killed_by_fault": R("result"),
        "agents[].node": Free("torchrun: the agent's index, the number node_id (agent-N) already carries"),
        "agents[].exit_code": R("agent"),
        "agents[].participated": R("agent"),
        "agents[].how": Free(TEXT + " (how the agent's run() ended)"),
        "agents[].error_type": Free("the type of what the agent's run() raised, shown in the report; the agent's "
                                    "decisions are judged from its failure events"),
        "agents[].error": Free(TEXT),
    },
    "attempt_start": {
        "num_workers": R("group"),
        "round": Free("torchrun: the rendezvous round, the number attempt_id (round-N) already names"),
        "agent": Free("torchrun: the agent that finished the round's rendezvous first: informational (which agent "
                      "is first is a race; the round's members come with worker_group_started)"),
    },
    "worker_group_started": {
        "workers": R("process", "group", LANDING_ANY, "recovers"),
        "workers[].rank": R("process", "group", LANDING_ANY),
        "workers[].node_id": R("process", "group", LANDING_ANY),
        "workers[].pid": R("process", LANDING_ANY),
        "workers[].actor_id": R("group"),
        "workers[].local_rank": R("group"),
        "workers[].agent": R("agent"),
        "world_size": R("group", "process"),
    },
    "worker_group_shutdown": {
        "errors": R("shutdown-errors", partial="only which ranks it lists; the reprs are text"),
        "errors.*": R("shutdown-errors"),
        "agent": Free("torchrun: the agent that stopped the round first: informational (a race between agents)"),
    },
    "controller_state": {
        "prev": R("state-chain"),
        "cur": R("state-chain", "restart", "recovers", "bounded_lost_work"),
        "error_type": R("recovers", partial="only whether it is set (a state carrying an error opens an outage)"),
        "error": Free(TEXT),
        "worker_failures": R("landing:collective_hang", "verdict"),
        "worker_failures.*": R("landing:collective_hang", "verdict"),
        "controller_failure": R("failure-detail"),
        "reason": Free(TEXT + " (why a torchrun agent restarted without a failure)"),
    },
    "failure": {
        "budget": R("budget_accounting", "failure-count", "agent", "recovers"),
        "decision": R("budget_accounting", "restart", "recovers", "bounded_lost_work"),
        "error_type": R("budget_accounting", "recovers"),
        "count": R("budget_accounting", "failure-count"),
        "limit": R("budget_accounting"),
        "counts": R("failure-count", "budget_accounting"),
        "counts.*": R("failure-count", "budget_accounting"),
        "controller_failure": R("landing:starve_resources"),
        "preempted_deaths": R("failure-detail"),
        "drain_timed_out": R("failure-detail"),
        "state": R("agent-order", partial="only whether it is HEALTHY (a restart another agent caused)"),
        "worker_failures": R("agent", "budget_accounting"),
        "worker_failures.*": R("agent", "budget_accounting"),
    },
    "checkpoint_registered": {
        "checkpoint": R("registration", "restore", "result", "no_zombie_writes", "bounded_lost_work",
                        "exactly_once_restore", "landing:corrupt_checkpoint"),
        "path": R("registration", "landing:corrupt_checkpoint",
                  partial="its last two components (the checkpoint, the run's folder), and above them only when "
                          "run_start.storage_path is a local absolute path"),
        "step": R("registration", "restore", "bounded_lost_work", "exactly_once_restore"),
        "how": Free("torchrun: how rank 0 committed the checkpoint (`committed by rename`): text"),
    },
    "worker_start": {
        "restored_checkpoint": R("restore", "worker-start", "exactly_once_restore", "bounded_lost_work",
                                 "no_zombie_writes", "landing:corrupt_checkpoint"),
        "restored_step": R("restore", "exactly_once_restore", "bounded_lost_work", "shard_reassignment"),
        "restored_intact": R("worker-start", "exactly_once_restore", "landing:corrupt_checkpoint"),
        "restored_digests": R("exactly_once_restore"),
        "restored_digests.*": R("exactly_once_restore"),
        "device": Free(DISPLAY_GPU),
        "gpu": Free(DISPLAY_GPU),
        "gpu.*": Free(DISPLAY_GPU),
        "pg": Free("how long the process group took to start and warm up, shown on the report's GPU page: a "
                   "duration no rule bounds"),
        "pg.*": Free("a part of pg (backend, init_s, warmup_s, error): shown only"),
    },
    "step": {
        "step": R("step-order", "lockstep", "report", "sequence", "fault-trigger", "exactly_once_restore",
                  "shard_reassignment", "bounded_lost_work", "recovers"),
        "rows": R("shard_reassignment"),
        "n_rows": Free("the length of `rows`, which is judged itself; shown on the report"),
        "epoch": R("shard_reassignment"),
        "loss": Free("the reference job's loss, a figure shown on the report; no property judges it "
                     "(the final accumulators are judged exactly instead)"),
    },
    "checkpoint_written": {
        "step": R("sequence", "written", "report"),
        "local_path": Free("the local folder the files were written to; the injector reads it at run time to "
                           "damage an in_flight checkpoint, no rule reads it from the history"),
    },
    "report": {
        "step": R("report", "sequence", "registration", "bounded_lost_work", "monotonic_counters",
                  "exactly_once_restore"),
        "checkpoint": R("report", "registration", "no_zombie_writes", "bounded_lost_work", "exactly_once_restore",
                        "result"),
        "digest": R("report", "exactly_once_restore"),
        "metrics": R("report", "monotonic_counters", "result"),
        "metrics.ftharness_step": R("report"),
        "metrics.step": R("report"),
        "metrics.reason": R("cadence", partial="only whether it says preemption or deadline (a checkpoint off the "
                                               "cadence is allowed then)"),
        "metrics.*": R("monotonic_counters", "result",
                       partial="a value is judged only when expect.monotonic names it, or in rank 0's report of "
                               "the last registered checkpoint (compared with run_end.metrics)"),
    },
    "preemption_notice": {
        "step": R("worker-step"),
        "deadline_ms": R("notice", "landing:preempt_node"),
    },
    "dataset_shard": {
        "dataset": Free("the dataset a rank asked get_dataset_shard for: shard_reassignment only names it in the "
                        "hint of a not-judged verdict (how to get the rows recorded)"),
        "row_id": R("dataset-rows", "shard_reassignment"),
    },
    "worker_end": {
        "step": R("sequence", "return-value"),
        "return_value": R("return-value", VERDICT, "exactly_once_restore"),
        "return_value.step": R("return-value", VERDICT),
        "return_value.acc": R(VERDICT, "exactly_once_restore"),
        "return_value.*": R("return-value", partial="compared as a whole with run_end's return value"),
        "held_s": Free("how long the landing hold kept the rank, a duration shown on the report; whether the faults "
                       "landed is judged from their own evidence"),
        "hold": Free("how the landing hold ended (released, timeout): whether the faults landed is judged from "
                     "their own evidence, never from this"),
        "mem_peak_allocated": Free(DISPLAY_GPU),
        "pg_teardown_s": Free("torchrun: how long destroying the process group took, shown only"),
    },
    "worker_error": {
        "error_type": R("landing:cuda_error", "landing:collective_hang", "landing:hang_worker"),
        "error": R("landing:cuda_error", "landing:collective_hang",
                   partial="only whether it names a CUDA error or a collective time-out; otherwise text"),
        "traceback": Free(TEXT),
        "step": R("worker-step"),
    },
    "fault_injected": {
        "fault": R("fault-twice", "fault-kind", "fault-trigger", VERDICT, "budget_accounting", LANDING_ANY),
        "fault_kind": R("fault-kind", AGREEMENT, "after-death", "after-shutdown", "budget_accounting"),
        "target_asked": R(LANDING_ANY),
        "target_asked.*": R(LANDING_ANY),
        "target_hit": R(LANDING_ANY, "after-death", "budget_accounting"),
        "target_hit.pid": R(LANDING_ANY, "after-death", "landing:kill_controller", "landing:cuda_error"),
        "target_hit.rank": R(LANDING_ANY, "landing:corrupt_checkpoint", "landing:collective_hang"),
        "target_hit.node_id": R(LANDING_ANY, "after-death", "after-shutdown", "budget_accounting",
                                "landing:preempt_node", "landing:network_degrade"),
        "target_hit.attempt_id": R(LANDING_ANY),
        "target_hit.ranks": R(LANDING_ANY),
        "target_hit.node_index": R(LANDING_ANY),
        "target_hit.ip": R(LANDING_ANY),
        "target_hit.labels": R(LANDING_ANY),
        "target_hit.labels.*": R(LANDING_ANY),
        "target_hit.how": R("after-death", "landing:corrupt_checkpoint",
                            partial="only SIGKILL, remove_node and snapshot/delete_dir are told apart"),
        "target_hit.deadline_ms": R("landing:preempt_node", "derived-field", "fault-notice", "budget_accounting"),
        "target_hit.checkpoint": R("landing:corrupt_checkpoint"),
        "target_hit.in_flight": R("landing:corrupt_checkpoint"),
        "target_hit.cpus_requested": R("landing:starve_resources"),
        "target_hit.ops": R("landing:storage_errors"),
        "target_hit.agent": R("budget_accounting"),
        "target_hit.collective_timeout_s": R("landing:collective_hang",
                                             partial="the window it sets comes from the run's own record, not from "
                                                     "the scenario's collective_timeout_s"),
        "target_hit.path": R("fault-target", partial="only for corrupt_checkpoint: a storage_errors control "
                                                     "file's path is not checked"),
        "target_hit.step": R("fault-spec"),
        "target_hit.where": R("fault-spec"),
        "target_hit.actor_id": R("fault-target"),
        "target_hit.attempt": Free("torchrun: the victim's attempt ordinal, which attempt_id (judged) names"),
        "target_hit.local_rank": R("fault-target"),
        "target_hit.kill_in_s": R("fault-spec"),
        "target_hit.paused_pids": R("fault-heal", partial="compared with what the heal resumed or found gone, "
                                                          "not with the group's pids on that node"),
        "target_hit.duration_s": R("fault-spec"),
        "target_hit.cut_from": Free("network partition: who the node was cut from, echoing the scenario's "
                                    "cut_from; the landing is judged by the failure of the attempt hit"),
        "target_hit.peers": Free("network partition: the peer IPs the rules name, for the person debugging"),
        "target_hit.rules": Free("network partition: the nft rules installed, text for the person debugging"),
        "target_hit.filesystem": Free("the pyarrow filesystem's type name the damage went through: text"),
        "target_hit.offset": Free("corrupt_checkpoint: where the bit flip went, for the reader; the landing is the "
                                  "restore of the named checkpoint"),
        "target_hit.size": Free("corrupt_checkpoint: the file's size before the damage, for the reader"),
        "target_hit.new_size": Free("corrupt_checkpoint: a truncated file's new size, for the reader"),
        "target_hit.sha256_before": Free("corrupt_checkpoint: the file's hash before the damage, for the reader; "
                                         "exactly_once_restore compares restored digests with reported ones"),
        "target_hit.sha256_after": Free("corrupt_checkpoint: the file's hash after the damage, for the reader"),
        "target_hit.id": Free("storage_errors: the control id that keeps this injection's hits apart (the "
                              "injector's own bookkeeping)"),
        "target_hit.path_glob": R("fault-spec"),
        "target_hit.error_rate": R("fault-spec"),
        "target_hit.latency_s": R("fault-spec"),
        "target_hit.partial": R("fault-spec"),
        "target_hit.device": Free("an in-worker fault's device, named in the landing's text only"),
        "target_hit.stall_s": R("fault-spec"),
        "trigger": R("fault-trigger"),
        "trigger.step": R("fault-trigger"),
        "trigger.rank": R("fault-trigger"),
        "trigger.time_s": R("fault-trigger"),
        "trigger.event": R("fault-trigger"),
        "trigger.nth": R("fault-trigger"),
        "trigger.hold": R("fault-trigger"),
        "t_requested": R("fault-times", "fault-trigger", "fault-notice", "recovers"),
        "t_done": R("fault-times", "fault-trigger", "fault-notice", "after-death", "recovers", LANDING_ANY),
        "window_s": R(LANDING_ANY, partial="it may only narrow the kind's own window"),
    },
    "fault_skipped": {
        "fault": R(VERDICT, AGREEMENT, LANDING_ANY),
        "fault_kind": R(AGREEMENT),
        "target_asked": Free(SKIPPED),
        "target_asked.*": Free(SKIPPED),
        "trigger": Free(SKIPPED),
        "trigger.*": Free(SKIPPED),
        "t_requested": Free(SKIPPED),
        "t_done": Free(SKIPPED),
        "reason": Free(TEXT + " (shown as the landing's evidence: " + SKIPPED + ")"),
        "traceback": Free(TEXT),
    },
    "fault_action": {
        "fault": R(LANDING_ANY, AGREEMENT),
        "fault_kind": R("derived-field", "after-death", AGREEMENT),
        "action": R("landing:preempt_node", partial="only whether it says the node `dies`"),
        "detail": R("landing:preempt_node", "landing:storage_errors", "after-death", "derived-field"),
        "detail.node_id": R("landing:preempt_node", "after-death", "derived-field"),
        "detail.how": R("after-death", partial="only whether it says remove_node"),
        "detail.ms_after_deadline": R("derived-field"),
        "detail.errors_returned": R("landing:storage_errors"),
        "detail.delays": R("landing:storage_errors"),
        "detail.first": R("landing:storage_errors"),
        "detail.first.*": R("landing:storage_errors",
                            partial="only the op of the first hit is compared (with the scenario's ops)"),
        "detail.node_index": Free("the index of a replacement node or a spare that took over: informational; "
                                  "whether training resumed is judged from the steps"),
        "detail.lost_node_id": Free("torchrun: the node a spare replaced, for the reader"),
        "detail.error": Free(TEXT),
        "t_requested": R("fault-times"),
        "t_done": R("fault-times", "after-death", "landing:preempt_node"),
    },
    "fault_healed": {
        "fault": R("landing:network_degrade", "landing:starve_resources", "landing:storage_errors"),
        "fault_kind": Free("the healed fault's kind: the landing reads the heal through the fault's index"),
        "detail": R("landing:network_degrade", "landing:starve_resources", "landing:storage_errors"),
        "detail.counters": R("landing:network_degrade"),
        "detail.counters.*": R("landing:network_degrade"),
        "detail.hogs_killed": R("landing:starve_resources"),
        "detail.hogs_running": R("landing:starve_resources"),
        "detail.errors_returned": R("landing:storage_errors"),
        "detail.delays": R("landing:storage_errors"),
        "detail.first": R("landing:storage_errors"),
        "detail.first.*": R("landing:storage_errors",
                            partial="only the op of the first hit is compared (with the scenario's ops)"),
        "detail.how": Free(TEXT + " (what was undone)"),
        "detail.error": Free(TEXT),
        "detail.removed": Free("network: whether the nft rules were removed, for the reader"),
        "detail.undrop": Free("network: whether the drop rules were removed, for the reader"),
        "detail.unshape": Free("network: whether the shaping was removed, for the reader"),
        "detail.node_id": R("fault-heal"),
        "detail.rank": Free("hang_worker: the resumed victim's rank, echoing target_hit"),
        "detail.pid": R("fault-heal"),
        "detail.actor_id": Free("hang_worker: the resumed victim's actor, echoing target_hit"),
        "detail.resumed": R("fault-heal"),
        "detail.gone": R("fault-heal"),
        "detail.attempt_id": R("fault-heal"),
        "detail.attempt": Free("hang_worker: the victim's attempt number, echoing target_hit (its attempt_id is read)"),
        "detail.resumed_pids": R("fault-heal"),
        "detail.gone_pids": R("fault-heal"),
        "action": Free(TEXT),
        "t_requested": R("fault-times"),
        "t_done": R("fault-times"),
    },
    "train_leftovers": {
        "fit_index": Free("the sample is taken after the last fit() only; no_leftovers places it by seq after the "
                          "last run_end"),
        "waited_s": Free("how long the sample polled before nothing was left or settle_s passed: shown in the "
                         "summary only"),
        "settle_s": Free("the wait the sample allowed (harness/run/leftovers.py SETTLE_S): shown in each violation"),
        "actors": R("no_leftovers"),
        "actors[].class_name": R("no_leftovers"),
        "actors[].pid": Free("named in the violation's text so a person can find the process"),
        "actors[].actor_id": Free("Ray's id of a leftover actor, for a person: the class says what was left"),
        "placement_groups": R("no_leftovers"),
        "placement_groups[].state": R("no_leftovers"),
        "placement_groups[].bundles": Free("the size of a leftover placement group, for a person"),
    },
    "landing_hold": {
        "held_s": Free("how long the injector held the returning job: informational, the faults' landings are "
                       "judged from their own evidence"),
        "waited_for": Free("the faults the hold waited on: informational (as held_s)"),
    },
    "history_end": {
        "events": R(INTEGRITY),
        "emitters": R(INTEGRITY),
        "emitters.*": R(INTEGRITY),
        "digest": R(INTEGRITY),
        "seal": R(INTEGRITY),
    },
    "experiment": {
        "phase": Free("a Chaos Toolkit experiment's start or end: the experiment's own journal; the run is "
                      "judged from its events like any other"),
        "title": Free("the Chaos Toolkit experiment's title: text"),
        "method": Free("the names of the experiment's method steps: text"),
        "status": Free("Chaos Toolkit's status of the experiment, kept in its journal beside the verdict"),
        "deviated": Free("whether Chaos Toolkit saw its steady state deviate: its own verdict, beside ftharness's"),
    },
}

#: kinds the writer emits that history/book.py's KINDS table does not list
EXTRA_KINDS = ("experiment",)


# -- reading the map
def lookup(kind: str, path: str) -> Optional[Entry]:
    """The entry that covers `path` of an event of `kind`: the kind's own (exact, then the longest
    wildcard above it), else COMMON's (the same way); None when nothing covers it."""
    for table in (FIELD_MAP.get(kind, {}), COMMON):
        if path in table:
            return table[path]
        found = _wildcard(table, path)
        if found is not None:
            return found
    return None


def _wildcard(table: Dict[str, Entry], path: str) -> Optional[Entry]:
    parts = _split(path)
    for n in range(len(parts) - 1, 0, -1):   # the longest prefix first: `a[].b.*` before `a[].*`
        key = "".join(parts[:n]) + ".*"
        if key in table:
            return table[key]
    return None


def _split(path: str) -> List[str]:
    """'a[].b.c' -> ['a', '[]', '.b', '.c'] (joined back, any prefix is a path)."""
    return re.findall(r"\[\]|\.?[^.\[]+", path)


def paths_of(event: dict, depth: int = 4) -> Iterator[str]:
    """Every field path of one event as the map names them (dicts: `a.b`, lists of dicts: `a[].b`),
    down to `depth` levels."""
    yield from _paths("", event, depth)


def _paths(prefix: str, value, depth: int) -> Iterator[str]:
    if depth <= 0:
        return
    if isinstance(value, dict):
        for k, v in value.items():
            p = f"{prefix}.{k}" if prefix else str(k)
            yield p
            yield from _paths(p, v, depth - 1)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, dict):
                yield from _paths(prefix + "[]", v, depth)


def uncovered(kind: str, paths: Iterable[str]) -> List[str]:
    """The paths no entry covers (a dict's keys need their own entries or a wildcard)."""
    return sorted({p for p in paths if lookup(kind, p) is None})


def entries() -> Iterator[Tuple[str, str, Entry]]:
    """(kind, path, entry) of every entry; the COMMON ones with kind '*'."""
    for path, e in COMMON.items():
        yield "*", path, e
    for kind, table in FIELD_MAP.items():
        for path, e in table.items():
            yield kind, path, e


def totals() -> Dict[str, int]:
    """How many entries are read, free and unread."""
    out = {"read": 0, "free": 0, "unread": 0}
    for _, _, e in entries():
        out["read" if isinstance(e, Read) else "free" if isinstance(e, Free) else "unread"] += 1
    return out


def unread() -> List[Tuple[str, str, Unread]]:
    return [(k, p, e) for k, p, e in entries() if isinstance(e, Unread)]


def partially_read() -> List[Tuple[str, str, Read]]:
    return [(k, p, e) for k, p, e in entries() if isinstance(e, Read) and e.partial]


# -- who the rules are: the modules whose source holds them (tests/test_field_map.py checks each claim)
#: the modules a property reads the history through besides its own: the helpers, the model, and the
#: verdict's check_context (what the properties get besides the events: the final state, the workload)
PROPERTY_SHARED = ("scenarios/properties/base.py", "history/model.py", "scenarios/verdict.py")
FAMILY_MODULES = {
    INTEGRITY: ("history/records.py", "history/integrity.py"),
    VERDICT: ("scenarios/verdict.py", "reports/judgement.py"),
    AGREEMENT: ("history/agreement.py", "reports/judgement.py"),
    LANDING_ANY: ("faults/base.py",),
}
#: budget_accounting also asks the causal model about drains and deaths (preemption_before)
EXTRA_MODULES = {"budget_accounting": ("scenarios/policy_model.py", "history/causal.py")}


def modules_of(rule: str, landing_module=None, property_module=None) -> Tuple[str, ...]:
    """The repository files whose source holds `rule` (paths from the repository root): a family's
    own; a landing's, its kind's module (`landing_module(kind)`) with faults/base.py; a property's,
    its module (`property_module(name)`) with the model and context it reads through; otherwise
    a model code's, history/causal.py. The two callables come from the caller (the registries
    live above this layer: history imports neither faults nor scenarios)."""
    if rule in FAMILY_MODULES:
        return FAMILY_MODULES[rule]
    if rule.startswith("landing:"):
        own = landing_module(rule.split(":", 1)[1]) if landing_module else None
        return ((own,) if own else ()) + ("faults/base.py",)
    own = property_module(rule) if property_module else None
    if own:
        return (own, *PROPERTY_SHARED, *EXTRA_MODULES.get(rule, ()))
    return ("history/causal.py",)


def field_name(path: str) -> str:
    """The key a rule reads for `path`: its last component (a wildcard's: the field it is under)."""
    parts = [p.lstrip(".") for p in _split(path) if p != "[]"]
    parts = [p for p in parts if p != "*"]
    return parts[-1] if parts else path
