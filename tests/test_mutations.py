"""The mutation suite: the recorded real histories of tests/data, edited as a
wrong (or a right) run would have written them and sealed again, so that only
the rules decide; each judged through the same path as `ftharness check`
(`judge_folder`: history and scenario.yaml on disk, nothing else) and held to
the verdict it must get. Edits that stand for an event lost in transit keep the
emitter's numbering (`lost=True`: the history then says it has a gap); all the
others renumber, as if the run had been recorded that way. Pure and quick: no
Ray, a few seconds for every mutation."""

import copy
import hashlib
import json
import os
from collections import Counter
from typing import Callable, List, NamedTuple

import pytest
import yaml

from ftharness.history.records import read_history, seal
from ftharness.scenarios.properties import PROPERTIES

DATA = os.path.join(os.path.dirname(__file__), "data")
SOURCES = ("kill-worker", "preempt-node", "torchrun-kill-worker", "torchrun-kill-node")
PASS, FAIL, INCONCLUSIVE = "PASS", "FAIL", "INCONCLUSIVE"
#: the fewest mutations each property is held to (test_every_property_is_mutated)
MIN_PER_PROPERTY = 6


class Run:
    """A recorded run being edited: its events (history_end left out) and its scenario."""

    def __init__(self, name: str):
        read = read_history(os.path.join(DATA, name))
        assert read.problems == [], (name, read.problems)
        self.events = [copy.deepcopy(e) for e in read.events if e["kind"] != "history_end"]
        with open(os.path.join(DATA, name, "scenario.yaml")) as f:
            self.scenario = yaml.safe_load(f)
        self.renumber = True   # False: an event lost in transit (its emitter's count keeps the hole)

    # -- finding events
    def all(self, kind, **match) -> List[dict]:
        return [e for e in self.events if e["kind"] == kind and all(e.get(k) == v for k, v in match.items())]

    def one(self, kind, n=0, **match) -> dict:
        return self.all(kind, **match)[n]

    def restarted(self) -> List[dict]:
        return self.all("worker_start", attempt=2)

    # -- edits
    def drop(self, e, lost=False):
        self.events.remove(e)
        self.renumber = self.renumber and not lost

    def move_to_end(self, e):
        self.events.remove(e)
        self.events.append(e)

    def expect(self, **keys):
        self.scenario.setdefault("expect", {}).update(keys)

    def expect_also(self, *props):
        ex = self.scenario.setdefault("expect", {})
        ex["properties"] = list(ex.get("properties") or []) + [p for p in props if p not in (ex.get("properties") or [])]

    def shift_after(self, seq, seconds):
        """Every clock reading of the events after `seq` moved by `seconds`."""
        for e in self.events:
            if e["seq"] > seq:
                for k in ("t", "t_done", "t_requested"):
                    if isinstance(e.get(k), (int, float)):
                        e[k] += seconds

    # -- writing
    def lines(self) -> List[bytes]:
        """The events with a fresh, consistent history_end (as test_verdict.reseal)."""
        counts, digest, out, eseq = {}, hashlib.sha256(), [], Counter()
        for i, e in enumerate(self.events, 1):
            e = dict(e, seq=i)
            if e.get("emitter"):
                eseq[e["emitter"]] += 1
                if self.renumber:
                    e["eseq"] = eseq[e["emitter"]]
                counts[e["emitter"]] = counts.get(e["emitter"], 0) + 1
            line = json.dumps(e).encode()
            digest.update(line + b"\n")
            out.append(line)
        end = {"kind": "history_end", "source": "history", "events": len(out), "emitters": counts,
               "digest": digest.hexdigest(), "seq": len(out) + 1, "t": self.events[-1]["t"], "fit_index": 1}
        end["seal"] = seal(end)
        return out + [json.dumps(end).encode()]

    def write(self, folder) -> str:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "history.jsonl"), "wb") as f:
            f.write(b"".join(line + b"\n" for line in self.lines()))
        with open(os.path.join(folder, "scenario.yaml"), "w") as f:
            yaml.safe_dump(self.scenario, f, sort_keys=False)
        return str(folder)


class Mutation(NamedTuple):
    name: str
    source: str
    prop: str          # the property (or "verdict") whose rule it puts to the test
    verdict: str
    edit: Callable[[Run], None]


MUTATIONS: List[Mutation] = []


def mutation(prop, verdict, *sources):
    """Register `fn(run)` once per source history."""
    def register(fn):
        for source in sources:
            MUTATIONS.append(Mutation(f"{prop}/{fn.__name__}@{source}", source, prop, verdict, fn))
        return fn
    return register


RAY = ("kill-worker", "preempt-node")
TORCHRUN = ("torchrun-kill-worker", "torchrun-kill-node")
ALL = RAY + TORCHRUN


# ------------------------------------------------------------------- the record as it is
@mutation("verdict", PASS, *ALL)
def unchanged(run):
    """Sealed again, nothing else: the rules alone PASS it."""


@mutation("verdict", INCONCLUSIVE, *ALL)
def a_line_changed_after_the_seal(run):
    run.one("step", 3)["loss"] = 0.5
    run.lines = _stale_seal(run.lines)


@mutation("verdict", INCONCLUSIVE, *ALL)
def scenario_yaml_declares_no_fault(run):
    """scenario.yaml swapped for one without faults: the history's injection is judged by
    nobody, so its landing is unknown (was PASS: the recorded fault was never judged)."""
    run.scenario["faults"] = []


@mutation("verdict", INCONCLUSIVE, "kill-worker", "torchrun-kill-worker")
def the_fault_recorded_under_another_index(run):
    """The history says fault 1 was injected; the scenario declares only fault 0."""
    for e in run.events:
        if e.get("kind") in ("fault_injected", "fault_action") and e.get("fault") == 0:
            e["fault"] = 1


def _stale_seal(lines):
    """The lines, with history_end computed before the last edit (the file changed after)."""
    def stale():
        out = lines()
        body = [json.loads(x) for x in out[:-1]]
        body[0]["scenario"] = "edited"
        return [json.dumps(e).encode() for e in body] + out[-1:]
    return stale


# ------------------------------------------------------------------ exactly_once_restore
@mutation("exactly_once_restore", FAIL, *ALL)
def restored_files_differ(run):
    run.restarted()[0]["restored_intact"] = False


@mutation("exactly_once_restore", INCONCLUSIVE, *ALL)
def restored_files_never_hashed(run):
    run.restarted()[-1]["restored_intact"] = None


@mutation("exactly_once_restore", INCONCLUSIVE, "kill-worker", "torchrun-kill-worker")
def restored_intact_missing(run):
    del run.restarted()[0]["restored_intact"]


@mutation("exactly_once_restore", FAIL, *ALL)
def restored_a_checkpoint_never_registered(run):
    for e in run.restarted():
        e["restored_checkpoint"] = "checkpoint_never_registered"


@mutation("exactly_once_restore", FAIL, "preempt-node")
def restored_an_older_checkpoint(run):
    older = run.all("checkpoint_registered")[0]
    for e in run.restarted():
        e["restored_checkpoint"] = older["checkpoint"]


@mutation("exactly_once_restore", FAIL, *RAY)
def restored_step_disagrees_with_the_registration(run):
    run.restarted()[0]["restored_step"] -= 1


@mutation("exactly_once_restore", FAIL, *ALL)
def a_step_skipped(run):
    steps = run.all("step", attempt=2, rank=0)
    for e in steps[2:]:
        e["step"] += 1


@mutation("exactly_once_restore", FAIL, "kill-worker", "torchrun-kill-worker")
def a_step_applied_twice(run):
    steps = run.all("step", attempt=2, rank=0)
    steps[2]["step"] = steps[1]["step"]


@mutation("exactly_once_restore", INCONCLUSIVE, *ALL)
def a_step_event_lost_in_transit(run):
    """One step never reached the history: a gap, never "step N skipped" (FAIL)."""
    run.drop(run.all("step", attempt=2, rank=1)[1], lost=True)


@mutation("exactly_once_restore", INCONCLUSIVE, "kill-worker", "torchrun-kill-worker")
def a_rank_stepped_without_starting(run):
    run.drop(run.restarted()[1])


@mutation("exactly_once_restore", INCONCLUSIVE, "kill-worker")
def a_worker_start_lost_in_transit(run):
    run.drop(run.restarted()[1], lost=True)


@mutation("exactly_once_restore", FAIL, *ALL)
def final_accumulators_off(run):
    run.one("run_end")["return_value"]["acc"][1] += 1.0


@mutation("exactly_once_restore", INCONCLUSIVE, "kill-worker", "torchrun-kill-node")
def final_accumulators_not_recorded(run):
    run.one("run_end").pop("return_value")
    for e in run.all("worker_end"):   # where a release without Result.return_value keeps it
        e.pop("return_value", None)


@mutation("exactly_once_restore", FAIL, "kill-worker")
def the_restart_restored_nothing(run):
    for e in run.restarted():
        e.update(restored_checkpoint=None, restored_step=None, restored_intact=None)


@mutation("exactly_once_restore", PASS, "kill-worker", "preempt-node")
def restored_digests_match_the_reports(run):
    _restored_digests(run, lambda d: d)


@mutation("exactly_once_restore", FAIL, "kill-worker", "preempt-node")
def restored_digest_differs_from_the_report(run):
    _restored_digests(run, lambda d: "0" * 64)


def _restored_digests(run, change):
    """The restart records the digest of each rank's files as restored (`restored_digests`)."""
    name = run.restarted()[0]["restored_checkpoint"]
    reported = {str(e["rank"]): e["digest"] for e in run.all("report", checkpoint=name) if e.get("digest")}
    assert reported
    for e in run.restarted():
        e["restored_digests"] = {rank: change(d) for rank, d in reported.items()}


# --------------------------------------------------------------------- budget_accounting
def _failure(run):
    return run.all("failure")[0]


@mutation("budget_accounting", FAIL, "kill-worker")
def kill_charged_to_the_preemption_budget(run):
    _failure(run).update(budget="preemption", counts={"worker_group": 0, "preemption": 1, "controller": 0})
    run.scenario["failure_config"]["max_preemption_failures"] = 1
    _run_start_config(run)["max_preemption_failures"] = 1


@mutation("budget_accounting", FAIL, "preempt-node")
def preemption_charged_to_max_failures(run):
    _failure(run).update(budget="worker_group", counts={"worker_group": 1, "preemption": 0, "controller": 0})
    run.scenario["failure_config"]["max_failures"] = 1
    _run_start_config(run)["max_failures"] = 1


@mutation("budget_accounting", FAIL, *RAY)
def charged_to_the_controller_budget(run):
    _failure(run).update(budget="controller", counts={"worker_group": 0, "preemption": 0, "controller": 1})


@mutation("budget_accounting", FAIL, *RAY)
def retried_failure_recorded_as_raise(run):
    _failure(run)["decision"] = "RAISE"


@mutation("budget_accounting", FAIL, *ALL)
def count_off_by_one(run):
    _failure(run)["count"] = 2


@mutation("budget_accounting", INCONCLUSIVE, *ALL)
def count_missing(run):
    del _failure(run)["count"]


@mutation("budget_accounting", INCONCLUSIVE, *RAY)
def counts_missing(run):
    del _failure(run)["counts"]


@mutation("budget_accounting", FAIL, *RAY)
def counts_disagree(run):
    _failure(run)["counts"] = {"worker_group": 3, "preemption": 3, "controller": 0}


@mutation("budget_accounting", FAIL, *ALL)
def decided_with_another_limit(run):
    _failure(run)["limit"] = 5


@mutation("budget_accounting", PASS, *ALL)
def limit_missing(run):
    """The decision is still judged against the recorded failure_config (a finding says so)."""
    del _failure(run)["limit"]


def _run_start_config(run):
    return run.one("run_start")["failure_config"]


@mutation("budget_accounting", FAIL, "kill-worker", "torchrun-kill-worker")
def the_run_had_no_retry_to_give(run):
    """The history says the run ran with max_failures 0, yet the failure was retried."""
    _run_start_config(run)["max_failures"] = 0


@mutation("budget_accounting", FAIL, "preempt-node")
def the_run_had_no_preemption_to_give(run):
    _run_start_config(run)["max_preemption_failures"] = 0


@mutation("budget_accounting", INCONCLUSIVE, *RAY)
def scenario_yaml_limits_edited(run):
    """scenario.yaml says other limits than the run recorded: not the run it asks for."""
    for key in ("max_failures", "max_preemption_failures"):
        run.scenario["failure_config"][key] = 3


@mutation("budget_accounting", FAIL, "torchrun-kill-worker")
def torchrun_kill_relabelled_as_membership(run):
    _failure(run).update(budget="membership", error_type="MembershipChange", count=0, limit=None, counts={})


@mutation("budget_accounting", FAIL, "torchrun-kill-worker")
def torchrun_kill_relabelled_as_membership_without_its_worker_failures(run):
    f = _failure(run)
    f.update(budget="membership", error_type="MembershipChange", count=0, limit=None, counts={})
    f.pop("worker_failures")


@mutation("budget_accounting", FAIL, *TORCHRUN)
def torchrun_retry_recorded_as_raise(run):
    _failure(run)["decision"] = "RAISE"


@mutation("budget_accounting", FAIL, "kill-worker")
def failed_without_a_raise(run):
    run.one("run_end").update(outcome="failed", error_type="WorkerGroupError", error="x")
    run.expect(outcome="failed")


@mutation("budget_accounting", FAIL, "kill-worker")
def error_type_that_no_budget_matches(run):
    _failure(run)["error_type"] = "PreemptionError"


@mutation("budget_accounting", INCONCLUSIVE, "kill-worker")
def the_failure_lost_in_transit(run):
    run.drop(_failure(run), lost=True)


# -------------------------------------------------------------------- shard_reassignment
@mutation("shard_reassignment", FAIL, *ALL)
def two_ranks_read_the_same_rows(run):
    a, b = run.all("step", attempt=2, rank=0)[1], run.all("step", attempt=2, rank=1)[1]
    b["rows"] = list(a["rows"])


@mutation("shard_reassignment", FAIL, "kill-worker", "torchrun-kill-worker")
def rows_off_the_sampler(run):
    e = run.all("step", attempt=1, rank=0)[0]
    e["rows"] = [r + 1000 for r in e["rows"]]


@mutation("shard_reassignment", FAIL, "kill-worker", "preempt-node")
def a_row_dropped(run):
    e = run.all("step", attempt=2, rank=1)[0]
    e["rows"] = e["rows"][1:]
    e["n_rows"] = len(e["rows"])


@mutation("shard_reassignment", INCONCLUSIVE, "kill-worker", "torchrun-kill-node")
def rows_not_recorded(run):
    for e in run.all("step"):
        e["rows"] = None


# ---------------------------------------------------------------------- no_zombie_writes
@mutation("no_zombie_writes", FAIL, *ALL)
def a_registered_checkpoint_nobody_reported(run):
    run.all("checkpoint_registered")[-1]["checkpoint"] = "checkpoint_from_nowhere"


@mutation("no_zombie_writes", FAIL, "kill-worker", "preempt-node")
def registered_after_its_only_reporter_ended(run):
    """The checkpoint attempt 1 reported last, registered only after attempt 1 was shut down."""
    shutdown = run.one("worker_group_shutdown")
    names = [e["checkpoint"] for e in run.all("report", attempt=1) if e.get("checkpoint")]
    reg = next((e for e in run.all("checkpoint_registered") if e["checkpoint"] == names[-1]), None)
    if reg is None:   # the last one attempt 1 reported was never registered: register it now
        reg = dict(run.all("checkpoint_registered")[-1], checkpoint=names[-1])
    else:
        run.events.remove(reg)
    run.events.insert(run.events.index(shutdown) + 1, reg)
    run.expect(properties=["no_zombie_writes"])


@mutation("no_zombie_writes", FAIL, "kill-worker")
def a_zombie_report_restored(run):
    """Rank 0 of attempt 1 reports a checkpoint after its attempt ended; the restart restores it."""
    shutdown = run.one("worker_group_shutdown")
    late = dict(run.all("report", attempt=1, rank=0)[-1], checkpoint="checkpoint_zombie", step=4,
                t=shutdown["t"] + 0.5)
    run.events.insert(run.events.index(shutdown) + 1, late)
    for e in run.restarted():
        e["restored_checkpoint"] = "checkpoint_zombie"
    run.expect(properties=["no_zombie_writes"])


@mutation("no_zombie_writes", PASS, "kill-worker")
def a_zombie_step_is_only_a_finding(run):
    shutdown = run.one("worker_group_shutdown")
    last = run.all("step", attempt=1, rank=0)[-1]   # the zombie goes on with the next step
    late = dict(last, t=shutdown["t"] + 0.5, step=last["step"] + 1)
    run.events.insert(run.events.index(shutdown) + 1, late)
    run.expect(properties=["no_zombie_writes", "budget_accounting"])


# ------------------------------------------------------------------------------ recovers
@mutation("recovers", FAIL, *ALL)
def slower_than_the_declared_bound(run):
    run.expect(recovery_bound_s=5.0)


@mutation("recovers", PASS, "kill-worker", "torchrun-kill-worker")
def within_a_generous_bound(run):
    run.expect(recovery_bound_s=1000.0)


@mutation("recovers", FAIL, *RAY)
def slower_than_the_default_bound(run):
    """Training came back 400 s later: no bound declared, the default (300 s) holds."""
    run.shift_after(_failure(run)["seq"], 400.0)


@mutation("recovers", FAIL, "kill-worker")
def slow_but_within_the_recorded_health_check(run):
    """A bound never comes from the run it judges: the history's own health-check timeout (600 s)
    does not widen the bound of a worker kill, which waits for no health check (was PASS)."""
    run.one("run_start")["health_check_timeout_s"] = 600.0
    run.shift_after(_failure(run)["seq"], 400.0)


@mutation("recovers", PASS, "kill-worker")
def slow_but_within_a_declared_bound(run):
    """The scenario may declare a longer recovery: then 400 s more is within it."""
    run.shift_after(_failure(run)["seq"], 400.0)
    run.expect(recovery_bound_s=600.0)


@mutation("recovers", FAIL, "kill-worker")
def a_landed_fault_and_no_recovery(run):
    """No controller state change recorded the outage: the fault landed, nothing recovered."""
    for e in run.all("controller_state"):
        if e.get("cur") in ("RESTARTING", "RESCHEDULING", "ERRORED", "PREEMPTING") or e.get("error_type"):
            run.drop(e)
    run.expect(properties=["recovers"])


# --------------------------------------------------------------------- bounded_lost_work
@mutation("bounded_lost_work", PASS, *ALL)
def lost_within_the_cadence(run):
    run.expect_also("bounded_lost_work")


@mutation("bounded_lost_work", FAIL, *RAY)
def more_lost_than_declared(run):
    run.expect_also("bounded_lost_work")
    run.expect(max_lost_steps=1)


@mutation("bounded_lost_work", FAIL, "kill-worker")
def cadence_declared_tighter(run):
    """The scenario checkpoints every step (and the run recorded so): losing 3 is over 2."""
    run.one("run_start")["workload"]["checkpoint_every"] = 1
    run.scenario["workload"]["checkpoint_every"] = 1
    run.expect(properties=["bounded_lost_work"])


@mutation("verdict", INCONCLUSIVE, "kill-worker")
def cadence_recorded_other_than_declared(run):
    """The history says the run checkpointed every step, the scenario every 2: the run is not the
    one the scenario asks for, and the verdict names the difference (the bound stays the scenario's)."""
    run.one("run_start")["workload"]["checkpoint_every"] = 1
    run.expect(properties=["bounded_lost_work"])


@mutation("bounded_lost_work", FAIL, "preempt-node")
def registrations_late_so_the_restart_redoes_most_of_the_run(run):
    """Every registration after step 2 arrives after the restart, which restores step 2 (the
    latest registered then) and redoes 26 of 28 steps: a bound measured on the run's own
    registration lag (26) let it pass; the cadence (2 + 2) does not."""
    first = run.all("checkpoint_registered")[0]
    start2 = run.one("attempt_start", n=1)
    for e in run.all("checkpoint_registered"):
        if e is not first and e["seq"] < start2["seq"]:
            run.move_to_end(e)
    for e in run.restarted():
        e.update(restored_checkpoint=first["checkpoint"], restored_step=first["step"])
    run.expect(properties=["bounded_lost_work"])


@mutation("bounded_lost_work", FAIL, "kill-worker")
def the_restart_threw_the_checkpoint_away(run):
    for e in run.restarted():
        e.update(restored_checkpoint=None, restored_step=None, restored_intact=None)
    run.expect(properties=["bounded_lost_work"])


@mutation("bounded_lost_work", PASS, "kill-worker")
def a_declared_allowance(run):
    run.expect(properties=["bounded_lost_work"], max_lost_steps=3)


# -------------------------------------------------------------------- monotonic_counters
@mutation("monotonic_counters", PASS, *ALL)
def counters_that_grow(run):
    run.expect_also("monotonic_counters")
    run.expect(monotonic=["count", "step"])


@mutation("monotonic_counters", FAIL, *RAY)
def a_counter_goes_down(run):
    run.expect_also("monotonic_counters")
    run.expect(monotonic=["count"])
    reports = [e for e in run.all("report", attempt=2, rank=0)]
    reports[-1]["metrics"]["count"] = 1.0


@mutation("monotonic_counters", FAIL, "kill-worker", "torchrun-kill-worker")
def a_restart_resets_the_counter(run):
    run.expect_also("monotonic_counters")
    run.expect(monotonic=["count"])
    for e in run.all("report", attempt=2):
        e["metrics"]["count"] = e["metrics"]["count"] - 1000.0


@mutation("monotonic_counters", INCONCLUSIVE, "kill-worker")
def a_counter_never_reported(run):
    run.expect_also("monotonic_counters")
    run.expect(monotonic=["tokens_seen"])


@mutation("monotonic_counters", INCONCLUSIVE, "kill-worker")
def a_counter_that_is_no_number(run):
    run.expect_also("monotonic_counters")
    run.expect(monotonic=["count"])
    for e in run.all("report"):
        e["metrics"]["count"] = "many"
    run.one("run_end")["metrics"]["count"] = "many"   # fit()'s result: the last checkpointed report's metrics


# --------------------------------------------------------------- a hung worker's heal (tests/data/hang-worker-gone)
def _heal(run):
    return run.one("fault_healed")["detail"]


@mutation("verdict", PASS, "hang-worker-gone")
def a_hung_worker_ray_ended_is_named_gone(run):
    """The heal's SIGCONT found no process: Ray ended it when it restarted the group (shutdown recorded first)."""
    _heal(run)["gone"] = True


@mutation("verdict", INCONCLUSIVE, "hang-worker-gone")
def a_heal_that_resumed_nothing_as_recorded(run):
    """As recorded before heals named a gone process: `resumed: false` alone proves no resume."""


@mutation("verdict", INCONCLUSIVE, "hang-worker-gone")
def gone_while_its_attempt_ran_on(run):
    """The heal recorded right after the stop, while the hit attempt still ran, names its process gone:
    nothing recorded ended that attempt before it, so the heal is not taken on its word."""
    heal, inj = run.one("fault_healed"), run.one("fault_injected")
    heal["detail"]["gone"] = True
    heal["t"] = heal["t_done"] = inj["t_done"] + 0.5
    run.events.remove(heal)
    run.events.insert(run.events.index(inj) + 1, heal)


@mutation("verdict", INCONCLUSIVE, "hang-worker-gone")
def a_heal_on_another_attempt(run):
    _heal(run)["gone"] = True
    _heal(run)["attempt_id"] = "0" * 32


def _leftovers(run, actors=(), groups=()):
    """The runner's train_leftovers sample after the last fit() returned (harness/run/leftovers.py)."""
    run.expect_also("no_leftovers")
    end = run.all("run_end")[-1]
    run.events.append({"kind": "train_leftovers", "source": "harness", "run": end.get("run"),
                       "fit_index": end.get("fit_index"), "t": end["t"] + 2.0, "waited_s": 2.0, "settle_s": 15.0,
                       "actors": [{"class_name": c, "pid": 4242, "actor_id": "ab" * 8} for c in actors],
                       "placement_groups": [{"state": g, "bundles": 2} for g in groups],
                       "emitter": end.get("emitter"), "seq": end["seq"] + 10_000})


@mutation("no_leftovers", PASS, *ALL)
def nothing_left_after_fit(run):
    _leftovers(run)


@mutation("no_leftovers", FAIL, *RAY)
def a_cleaner_outlives_its_controller(run):
    _leftovers(run, actors=["PlacementGroupCleaner"])


@mutation("no_leftovers", FAIL, *RAY)
def a_placement_group_left_pending(run):
    _leftovers(run, groups=["PENDING"])


@mutation("no_leftovers", FAIL, "kill-worker")
def a_worker_left_running(run):
    _leftovers(run, actors=["RayTrainWorker", "RayTrainWorker"])


@mutation("no_leftovers", INCONCLUSIVE, *ALL)
def no_leftover_sample_taken(run):
    run.expect_also("no_leftovers")


@mutation("no_leftovers", INCONCLUSIVE, "kill-worker")
def the_sample_came_before_fit_returned(run):
    _leftovers(run)
    sample, end = run.events.pop(), run.all("run_end")[-1]
    run.events.insert(run.events.index(end), dict(sample, t=end["t"] - 1.0))


# --------------------------------------------------------------- the release a history was recorded on
def _recorded_on(run, version):
    """The history as a run on `version` records it: that release's FailureConfig fields only."""
    from ftharness.releases import release

    fields = release(version).failure_config
    for e in run.all("run_start"):
        e["ray_version"] = version
        for key in [k for k in e.get("failure_config") or {} if k not in fields]:
            e["failure_config"].pop(key)


@mutation("budget_accounting", FAIL, "preempt-node")
def a_preemption_budget_on_a_release_without_one(run):
    """The 2.60 preemption history said to be recorded on 2.57.1: that release has no preemption
    budget, so a failure charged there (and retried with max_failures 0) is not what Ray did."""
    _recorded_on(run, "2.57.1")


@mutation("budget_accounting", FAIL, "preempt-node")
def a_preemption_on_a_release_without_the_field_and_its_budget(run):
    """The same, with the scenario and the recorded failure_config as 2.57 runs them (the field left
    out): the preemption is still charged to a budget 2.57.1 does not have."""
    _recorded_on(run, "2.57.1")
    for e in run.all("run_start"):
        e["failure_config"].pop("max_preemption_failures", None)
    run.scenario["failure_config"].pop("max_preemption_failures", None)


@mutation("budget_accounting", PASS, "kill-worker")
def a_worker_kill_is_judged_alike_on_the_oldest_release(run):
    """A worker-group failure is charged to max_failures on every release."""
    _recorded_on(run, "2.51.2")


# --------------------------------------------------------------- failures nobody asked for
@mutation("verdict", PASS, "kill-worker", "preempt-node")
def an_unasked_failure_is_shown_not_judged(run):
    run.restarted()[0]["restored_intact"] = False
    run.expect(properties=["budget_accounting"])


# ------------------------------------------- found by fuzzing `ftharness check` (2026-12-02)
def _acc_off(run):
    run.one("run_end")["return_value"]["acc"][1] += 1.0


@mutation("exactly_once_restore", INCONCLUSIVE, "kill-worker")
def a_wrong_final_state_with_the_workload_config_gone_is_not_a_pass(run):
    _acc_off(run)
    run.one("run_start").pop("workload")


@mutation("shard_reassignment", INCONCLUSIVE, "kill-worker")
def rows_off_the_sampler_with_the_workload_config_gone_are_not_a_pass(run):
    step = run.all("step", attempt=1, rank=0)[0]
    step["rows"] = [r + 1000 for r in step["rows"]]
    run.one("run_start").pop("workload")


@mutation("exactly_once_restore", INCONCLUSIVE, "preempt-node")
def a_workload_config_with_an_unknown_field_is_unknown_not_a_crash(run):
    run.one("run_start")["workload"]["bogus_key"] = 1


@mutation("verdict", INCONCLUSIVE, "kill-worker")
def a_return_value_that_is_no_mapping_is_unknown_not_a_crash(run):
    run.one("run_end")["return_value"] = "done"


@mutation("recovers", INCONCLUSIVE, "kill-worker")
def a_fault_time_that_is_nan_is_damage_not_a_fast_recovery(run):
    run.one("fault_injected")["t_done"] = float("nan")
    fail = run.one("failure")
    for e in run.events:   # the job comes back 1000 s after its failure
        if e["seq"] > fail["seq"]:
            e["t"] += 1000


@mutation("verdict", INCONCLUSIVE, "kill-worker")
def a_failure_without_a_time_is_no_landing(run):
    run.one("failure").pop("t")


def _judge(mutation, tmp_path):
    from ftharness.harness.frontends.cli_results import judge_folder   # what `ftharness check DIR` judges with

    run = Run(mutation.source)
    mutation.edit(run)
    _, summary = judge_folder(run.write(tmp_path / mutation.name.replace("/", "_").replace("@", "-")))
    return summary


def _controller_died_after_the_fault(run, kind):
    """The fit ended ActorDiedError right after the fault, with no failure decision: what a
    killed controller leaves (Ray's budgets retry no controller death)."""
    fault = run.one("fault_injected")
    end = run.one("run_end")
    run.events = [e for e in run.events if e["seq"] <= fault["seq"] and e["kind"] != "failure"]
    run.events.append(dict(end, t=fault["t"] + 1.0, outcome="failed", error_type="ActorDiedError",
                           error="The actor died unexpectedly before finishing this task.\n\tclass_name: TrainController",
                           metrics=None, checkpoint=None))
    fault["fault_kind"] = kind
    if kind == "kill_controller":
        run.scenario["faults"][0] = {"kind": "kill_controller", "at": run.scenario["faults"][0]["at"]}
    run.expect(outcome="failed", error_type="ActorDiedError", properties=["recovers"])
    run.renumber = True


@mutation("recovers", INCONCLUSIVE, "kill-worker")
def a_killed_controller_owes_no_recovery(run):
    """Seen in explore: `recovers` failed such a run "although the budgets allowed a retry" (was FAIL)."""
    _controller_died_after_the_fault(run, "kill_controller")


@mutation("recovers", FAIL, "kill-worker")
def a_controller_death_nothing_caused_is_no_excuse(run):
    """The same end after a worker kill: nothing killed the controller, the budgets allowed a retry."""
    _controller_died_after_the_fault(run, "kill_worker")


@pytest.mark.parametrize("m", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_mutation_gets_its_verdict(m, tmp_path):
    summary = _judge(m, tmp_path)
    assert summary["verdict"] == m.verdict, summary["mismatches"] + summary["inconclusive"]
    if m.prop in PROPERTIES and m.verdict == FAIL:   # and it is that property's rule that decided
        assert summary["properties"][m.prop]["status"] == "failed", summary["properties"][m.prop]
    if m.edit is an_unasked_failure_is_shown_not_judged:
        assert [u["property"] for u in summary["unasked_failures"]] == ["exactly_once_restore"]


def test_every_property_is_mutated(capsys):
    per = Counter(m.prop for m in MUTATIONS)
    verdicts = Counter(m.verdict for m in MUTATIONS)
    with capsys.disabled():
        print(f"\nmutations: {len(MUTATIONS)}; per property: "
              + ", ".join(f"{p} {per[p]}" for p in (*PROPERTIES, "verdict"))
              + f"; per verdict: {dict(verdicts)}")
    assert len(MUTATIONS) >= 100
    for prop in PROPERTIES:
        assert per[prop] >= MIN_PER_PROPERTY, (prop, per[prop])
    assert all(verdicts[v] >= 10 for v in (PASS, FAIL, INCONCLUSIVE)), verdicts

