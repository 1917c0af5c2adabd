"""Rules of the causal model that hold the record against what was declared and done to it.

`history/causal.py` checks that the record agrees with itself. These rules read
the facts a record could otherwise carry unread: the run's identity (every event
names the run, every registration lies in the run's folder), the scaling config
(a group's size), the workload's checkpoint cadence, the preemption notices
against the drains that gave them, each failure's charge against the restarts
that followed, the order of collective steps across processes, and a finished
fit's last attempt. Each rule says which jobs it applies to (`job_shapes.py`):
the reference job promises more than a user's job, and a rule that reads such a
promise runs only where `Declared.holds` says the declared job made it.

Every function takes the model builder (`_Builder` of causal.py) and adds its
findings to `b.m`; none reads Ray, all are pure.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any, Dict, List, Optional, Tuple

from ftharness.history.causal_faults import fault_heals, fault_spec_echo, fault_target_identity, preemption_notices
from ftharness.history.causal_torchrun import agent_order, agents, restart_count
from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, fault_time, num

#: seconds a worker may still record its own end or error after its group was shut down (Ray's
#: shutdown waits for the actors; a rank blocked in a collective raises once its peer is gone).
#: Training progress (a step, a report) gets the cross-process clock tolerance only.
TOL_SHUTDOWN_END = 10.0
#: the failure budgets a restart with a new attempt id pays from (a controller failure in
#: SCHEDULING is retried under the same attempt id, RESCHEDULING)
RESTARTING_BUDGETS = ("worker_group", "preemption")


_num = num


def cut_off(b):
    """A predicate: whether an event may arrive late because a fault cut its process off (a partition,
    a pause, a hang or a degraded link on its node): a process of a group started before the cut, on
    the cut node, from the cut on. A process started later, or an event before the cut, is judged."""

    cut: Dict[Any, Tuple[float, Any]] = {}   # node -> (when it was cut, the seq its injection arrived at)
    for e in b.events:
        if e.get("kind") == "fault_injected" and b.m.declared.kind(e.get("fault_kind")).cuts_off:
            node, when = (e.get("target_hit") or {}).get("node_id"), fault_time(e)
            if node is not None and when is not None and (node not in cut or when < cut[node][0]):
                cut[node] = (when, e.get("seq"))

    def late_ok(e: dict) -> bool:
        """(an event that arrived before the cut was recorded was sent before it: judged, whatever its
        clock says)"""
        if e.get("node_id") not in cut:
            return False
        when, seq = cut[e["node_id"]]
        g = b.m.groups.get(e.get("attempt_id")) if isinstance(e.get("attempt_id"), str) else None
        arrived_after = not (isinstance(seq, (int, float)) and isinstance(e.get("seq"), (int, float))) \
            or e["seq"] > seq
        return (g is None or g.t <= when + TOL_CROSS) and arrived_after
    return late_ok


def check_all(b) -> None:
    """Every rule of this module, in order."""
    for rule in (run_identity, group_size, preemption_notices, failure_charges, collective_order,
                 progress_after_shutdown, checkpoint_cadence, finished_attempt_trained, fault_spec_echo,
                 fault_target_identity, fault_heals, shutdown_errors, failure_details, worker_error_step,
                 restart_count, agent_order, agents, dataset_rows, attempts_started, user_steps_are_reports,
                 one_run_start_per_fit):
        try:
            rule(b)
        except (TypeError, ValueError, KeyError, AttributeError, IndexError) as e:   # odd values: named damage

            b.m.add(RECORDS, "unreadable", f"the record could not be read as a run ({type(e).__name__}: "
                                           f"{str(e)[:120]})")


# -- identity: one run, one storage folder
def run_identity(b) -> None:
    """Every event names the run its run_start named (an event of another run spliced in is damage to
    the record: INCONCLUSIVE), and every registered checkpoint lies in that run's folder under the
    storage path the run_start recorded (the controller registering elsewhere: FAIL)."""

    m = b.m
    starts = [e for e in b.events if e.get("kind") == "run_start"]
    names = {e.get("run_name") for e in starts if isinstance(e.get("run_name"), str)}
    if len(names) > 1:
        m.add(RECORDS, "run-identity", f"the history's run_start events name {len(names)} runs: "
                                       f"{', '.join(sorted(n[:40] for n in names))}")
        return
    if not names:
        return
    run = next(iter(names))
    odd = next((e for e in b._all() if e.get("kind") != "history_end" and "run" in e and e.get("run") != run), None)
    if odd is not None:
        m.add(RECORDS, "run-identity", f"{odd.get('kind')} seq {odd.get('seq')} belongs to run "
                                       f"{str(odd.get('run'))[:40]}, the history's run is {run[:40]}")
    storage = next((e.get("storage_path") for e in starts if isinstance(e.get("storage_path"), str)), None)
    for e in b.events:
        if e.get("kind") != "checkpoint_registered" or not isinstance(e.get("path"), str) or not e["path"]:
            continue
        path = e["path"].rstrip("/")
        parent = os.path.basename(os.path.dirname(path))
        where = f"checkpoint_registered seq {e.get('seq')} ({str(e.get('checkpoint'))[:40]})"
        if parent != run:
            m.add(SYSTEM, "registration", f"{where}: its path lies in the folder {parent[:40]!r}, not the run's "
                                          f"({run[:40]})")
        elif isinstance(storage, str) and storage.startswith("/") and path.startswith("/") \
                and os.path.normpath(os.path.dirname(os.path.dirname(path))) != os.path.normpath(storage):
            m.add(SYSTEM, "registration", f"{where}: its path lies under {os.path.dirname(os.path.dirname(path))[-50:]},"
                                          f" not the run's storage path {storage[-50:]}")


# -- scaling: a group is what the scaling config allows
def group_size(b) -> None:
    """A worker group's world size is the scenario's `num_workers` (a fixed size), or within its
    [min, max] (elastic). Ray never starts a fixed-size group smaller or larger: FAIL."""

    want = b.m.declared.num_workers
    if want is None:
        return
    for g in b.m.groups.values():
        ws = g.world_size if g.world_size is not None else (len(g.workers) or None)
        if ws is None:
            continue
        if isinstance(want, tuple):
            lo, hi = want
            if not lo <= ws <= hi:
                b.m.add(SYSTEM, "group", f"attempt {g.attempt_id[:12]}'s group has {ws} workers, outside the "
                                         f"scenario's elastic range [{lo}, {hi}]")
        elif ws != want:
            b.m.add(SYSTEM, "group", f"attempt {g.attempt_id[:12]}'s group has {ws} workers, the scenario's "
                                     f"num_workers is {want} (not elastic)")


# -- failures: one charge per failed attempt
def failure_charges(b) -> None:
    """A failed attempt is charged once to the budget that restarts it (worker group or preemption:
    a RETRY ends the attempt, the next one has a new id); each charge raises that budget's count by
    one and leaves the others (Ray's FailurePolicy counts each decision once)."""

    m = b.m
    if m.declared.runtime == "torchrun":
        return
    per_attempt: Dict[Any, List[dict]] = defaultdict(list)
    last_counts: Dict[Any, Dict[str, int]] = {}
    for e in b.events:
        if e.get("kind") != "failure" or e.get("source") != "controller":
            continue
        fit = e.get("fit_index")
        if e.get("budget") in RESTARTING_BUDGETS and isinstance(e.get("attempt_id"), str):
            per_attempt[(fit, e["attempt_id"])].append(e)
        counts = e.get("counts")
        if isinstance(counts, dict) and all(type(v) is int for v in counts.values()):
            prev = last_counts.get(fit)
            if prev is not None:
                grew = {k: counts.get(k, 0) - prev.get(k, 0) for k in set(prev) | set(counts)}
                charged = e.get("budget")
                odd = {k: d for k, d in grew.items() if d != (1 if k == charged else 0)}
                if odd and charged != "none":
                    k, d = sorted(odd.items())[0]
                    m.add(SYSTEM, "failure-count", f"failure seq {e.get('seq')} (charged to {charged}): the "
                                                   f"{k} count moved by {d:+d} since the fit's previous failure")
            last_counts[fit] = dict(counts)
    for (fit, aid), fs in per_attempt.items():
        if len(fs) > 1:
            m.add(SYSTEM, "failure-count", f"attempt {aid[:12]} of fit {fit} was charged {len(fs)} times "
                                           f"(failure seq {', '.join(str(f.get('seq')) for f in fs[:3])}); one failed "
                                           f"attempt is one failure")


# -- collectives: across processes, step N+1 begins after every rank finished step N
def collective_order(b) -> None:
    """Every step (a report, for a user's job) is a collective of the attempt's ranks: no rank records
    step N+1 before every rank recorded step N. A process whose whole clock was shifted keeps its own
    order and breaks this one; on one host (or NTP-synchronised hosts) within TOL_CROSS. Nodes a fault
    cut off are left out (their events arrive late)."""

    if not b.small:
        return
    late_ok = cut_off(b)
    times: Dict[Tuple[str, int], Dict[Any, float]] = defaultdict(dict)
    for e in b.h.events:
        if e.get("kind") != "step" or not isinstance(e.get("attempt_id"), str) or type(e.get("step")) is not int:
            continue
        t = _num(e.get("t"))
        if t is None or late_ok(e):
            continue
        times[(e["attempt_id"], e["step"])].setdefault(e.get("rank"), t)
    for (aid, step), ranks in times.items():
        nxt = times.get((aid, step + 1))
        if not nxt or len(set(ranks) | set(nxt)) < 2:
            continue
        late_rank, late = max(ranks.items(), key=lambda kv: kv[1])
        early_rank, early = min(nxt.items(), key=lambda kv: kv[1])
        if early < late - TOL_CROSS and early_rank != late_rank:
            b.m.add(RECORDS, "collective-order", f"rank {early_rank} of attempt {aid[:12]} recorded step {step + 1} "
                                                 f"{late - early:.1f} s before rank {late_rank} recorded step {step} "
                                                 f"(a step is a collective: the two processes' clocks disagree)")
            return


# -- training after the group is gone
def progress_after_shutdown(b) -> None:
    """No rank steps or reports after its attempt's worker group was shut down (beyond the clock
    tolerance), unless a fault cut its node off. Its end or error may follow for a while
    (TOL_SHUTDOWN_END, causal.py's after-shutdown)."""

    ended = shut_before(b)
    late_ok = cut_off(b)
    for e in b._worker_events():
        if e.get("kind") not in ("step", "report", "checkpoint_written"):
            continue
        t = _num(e.get("t"))
        end = ended(e.get("attempt_id"), t)
        if end is None or t is None or late_ok(e):
            continue
        if end + TOL_CROSS < t <= end + TOL_SHUTDOWN_END:   # (later: causal.py's after-shutdown says it)
            b.m.add(SYSTEM, "after-shutdown", f"{e.get('kind')} seq {e.get('seq')} (rank {e.get('rank')}): "
                                              f"{t - end:.1f} s after its attempt's worker group was shut down")
            return


def shut_before(b):
    """(attempt id, t) -> when that attempt's worker group was last shut down before `t`, unless a group
    of that attempt started again since (RESCHEDULING reuses the id); None: its group was up."""
    marks: Dict[str, List[Tuple[float, bool]]] = defaultdict(list)   # attempt -> (t, is a shutdown)
    for e in b.events:
        kind, aid, t = e.get("kind"), e.get("attempt_id"), _num(e.get("t"))
        if kind in ("worker_group_shutdown", "worker_group_started") and isinstance(aid, str) and t is not None:
            marks[aid].append((t, kind == "worker_group_shutdown"))
    for v in marks.values():
        v.sort()

    def ended(aid: Any, t: Optional[float]) -> Optional[float]:
        if t is None or not isinstance(aid, str) or aid not in marks:
            return None
        last = None
        for when, is_shut in marks[aid]:
            if is_shut:
                last = when if last is None else last   # the first shutdown after the group's start
            elif when <= t:
                last = None                             # a group started again: up until its own shutdown
        return last if last is not None and last < t else None
    return ended


# -- the reference job checkpoints at the declared cadence
def checkpoint_cadence(b) -> None:
    """The reference job reports a checkpoint at every `checkpoint_every`-th step and at its last step,
    and at no other step but a preemption's or a deadline's (its own code: harness/job/workload.py).
    A run that checkpointed at another cadence is not the run the scenario declares: INCONCLUSIVE,
    since the lost-work bound is computed from the declared cadence."""

    d = b.m.declared
    every, last = d.checkpoint_every, d.steps
    if not d.holds("fixed-cadence") or not b.small or not isinstance(every, int) or every < 1:
        return
    saved: Dict[Any, Dict[int, dict]] = defaultdict(dict)   # attempt -> step -> a report with a checkpoint
    steps: Dict[Any, set] = defaultdict(set)                # attempt -> steps some rank did
    for e in b.h.events:
        aid = e.get("attempt_id")
        if e.get("kind") == "step" and type(e.get("step")) is int:
            steps[aid].add(e["step"])
        elif e.get("kind") == "report" and type(e.get("step")) is int and e.get("checkpoint") is not None:
            saved[aid].setdefault(e["step"], e)
    for aid, reports in saved.items():   # (rank 0 writes the reference job's checkpoint)
        for step, r in sorted(reports.items()):
            reason = (r.get("metrics") or {}).get("reason") if isinstance(r.get("metrics"), dict) else None
            if step % every and step != last and reason not in ("preemption", "deadline"):
                b.m.add(RECORDS, "cadence", f"report seq {r.get('seq')} (rank {r.get('rank')}): a checkpoint at step "
                                            f"{step}, the scenario's checkpoint_every is {every}")
                return
    for aid, done in steps.items():
        for step in sorted(done):
            if step % every == 0 and step + 1 in done and step not in saved.get(aid, {}):
                b.m.add(RECORDS, "cadence", f"attempt {str(aid)[:12]} did steps {step} and {step + 1} with no "
                                            f"checkpoint reported at step {step} (checkpoint_every {every})",
                        absence=True)
                return


# -- a finished fit trained in its last attempt
def finished_attempt_trained(b) -> None:
    """A fit() that succeeded on Ray Train finished its last attempt: that attempt's group started,
    and each of its ranks started and ended its train function (Ray's FINISHED comes from the ranks'
    returns). Without them the success rests on nothing the workers did."""

    if b.m.declared.runtime == "torchrun" or not b.small:
        return
    for fit in b.h.fits.values():
        if (fit.end or {}).get("outcome") != "succeeded":
            continue
        atts = [a for a in b.h.ordered() if a.key[0] == fit.index and a.start is not None]
        if not atts:
            continue
        last = atts[-1]
        if not last.groups:
            b.m.add(SYSTEM, "finished", f"fit {fit.index} succeeded, and its last attempt "
                                        f"({b.h.label(last.key)}) never started a worker group", absence=True)
            continue
        ranks = {w.get("rank") for g in last.groups for w in (g.get("workers") or []) if isinstance(w, dict)}
        heard = {e.get("rank") for e in last.events if e.get("source") == "worker"}
        silent = sorted(ranks - heard, key=str) if ranks else []
        if not heard or silent:
            b.m.add(SYSTEM, "finished", f"fit {fit.index} succeeded, and {'rank(s) ' + str(silent) if heard else 'no rank'}"
                                        f" of its last attempt ({b.h.label(last.key)}) recorded anything: its train "
                                        f"function never ran there", absence=True)
        if heard and not silent and not any(e.get("kind") == "worker_end" for e in last.events):

            b.m.add(RECORDS, "worker-end", f"fit {fit.index} succeeded, and no rank of its last attempt "
                                           f"({b.h.label(last.key)}) recorded its end", absence=True)


# -- Ray's own accounts of one failure agree
def shutdown_errors(b) -> None:
    """The ranks whose errors a group's shutdown lists are the ranks the controller's failure state of
    that attempt named (two records of Ray's for one failure: FAIL when they disagree)."""

    named: Dict[Any, set] = {}
    for e in b.events:
        aid = e.get("attempt_id")
        if e.get("kind") == "controller_state" and isinstance(e.get("worker_failures"), dict) \
                and e["worker_failures"] and isinstance(aid, str):
            named.setdefault(aid, set(map(str, e["worker_failures"])))
        elif e.get("kind") == "worker_group_shutdown" and isinstance(e.get("errors"), dict) and e["errors"] \
                and isinstance(aid, str):
            t = _num(e.get("t"))
            raised = {str(x.get("rank")): (_num(x.get("t")), str(x.get("error_type"))) for x in b.events
                      if x.get("kind") == "worker_error" and x.get("attempt_id") == aid}
            # the shutdown lists the error the rank raised (its type opens Ray's repr): it was raised before
            # (Ray's own error for a rank, a failed health check, says nothing of when the rank raised)
            late = sorted(r for r, rep in e["errors"].items() if str(r) in raised and t is not None
                          and raised[str(r)][0] is not None and raised[str(r)][0] > t + TOL_CROSS
                          and str(rep).startswith(raised[str(r)][1] + "("))
            late = [str(r) for r in late]
            if late:
                b.m.add(SYSTEM, "shutdown-errors", f"worker_group_shutdown seq {e.get('seq')} lists the error of "
                                                   f"rank {late[0]}, which that rank recorded "
                                                   f"{raised[late[0]][0] - t:.1f} s later")
            if aid not in named:
                continue
            listed = set(map(str, e["errors"]))
            if listed != named[aid]:
                b.m.add(SYSTEM, "shutdown-errors", f"worker_group_shutdown seq {e.get('seq')}: errors of rank(s) "
                                                   f"{sorted(listed)}, the failure state named {sorted(named[aid])}")


def failure_details(b) -> None:
    """A failure decision agrees with the state it was taken in and with what was done: its
    controller failure is the state's; the ranks it says died of a preemption were on a node drained
    before it; a drain it says timed out had its deadline passed when it was decided (FAIL)."""

    m = b.m
    state_cf: Dict[Any, Any] = {}
    for e in b.events:
        aid = e.get("attempt_id")
        if e.get("kind") == "controller_state" and e.get("source") == "controller" and e.get("error_type"):
            state_cf[aid] = e.get("controller_failure")
            continue
        if e.get("kind") != "failure" or e.get("source") != "controller":
            continue
        where = f"failure seq {e.get('seq')}"
        if aid in state_cf and "controller_failure" in e and state_cf[aid] is not None \
                and e.get("controller_failure") != state_cf[aid]:
            m.add(SYSTEM, "failure-detail", f"{where}: controller failure {str(e.get('controller_failure'))[:40]}, "
                                            f"its state carried {str(state_cf[aid])[:40]}")
        t = _num(e.get("t"))
        group = m.groups.get(aid) if isinstance(aid, str) else None
        deaths = e.get("preempted_deaths")
        if isinstance(deaths, list) and deaths and group is not None and t is not None:
            drained = {n for n, (deadline, at) in m.drains.items() if at <= t + TOL_CROSS}
            off = [r for r in deaths if (group.workers.get(r) or group.workers.get(str(r)) or (None, None))[1]
                   not in drained]
            if off:
                m.add(SYSTEM, "failure-detail", f"{where}: rank(s) {off[:4]} died of a preemption, and no node of "
                                                f"theirs was drained before it")
        if e.get("drain_timed_out") is True and t is not None and group is not None:
            nodes = {n for _, n in group.workers.values()}
            deadlines = [d / 1000.0 for n, (d, at) in m.drains.items() if n in nodes and at <= t + TOL_CROSS]
            if deadlines and t < min(deadlines) - TOL_CROSS:
                m.add(SYSTEM, "failure-detail", f"{where}: a drain timed out {min(deadlines) - t:.1f} s before "
                                                f"its deadline")


# -- a rank's own record: its error and its restart count
def worker_error_step(b) -> None:
    """A train function's error is recorded at the step its rank had reached: its last recorded step,
    or the one it was entering (a user's job counts a report before it returns), or the step it
    restored (ftharness's instrumentation: INCONCLUSIVE otherwise)."""

    if not b.small:
        return
    last: Dict[Any, int] = {}
    for e in b.h.events:
        em = e.get("emitter")
        if e.get("source") != "worker" or em is None:
            continue
        if e.get("kind") == "worker_start":
            last[em] = e.get("restored_step") if type(e.get("restored_step")) is int else 0
        elif e.get("kind") == "step" and type(e.get("step")) is int:
            last[em] = e["step"]
        elif e.get("kind") in ("worker_error", "preemption_notice") and type(e.get("step")) is int \
                and em in last:
            ok = (last[em], last[em] + 1) if e["kind"] == "worker_error" else (last[em],)
            if e["step"] not in ok:
                b.m.add(RECORDS, "worker-step", f"{e['kind']} seq {e.get('seq')} (rank {e.get('rank')}) at step "
                                                f"{e['step']}, that process's last step was {last[em]}")


def dataset_rows(b) -> None:
    """A rank whose first `get_dataset_shard` says its rows are recorded (`dataset_shard.row_id`) records
    the rows of every later step (an empty list for a step that read none): a step without them is a
    gap in ftharness's record of that shard (INCONCLUSIVE)."""
    if not b.small:
        return
    recorded = set()
    asked = set()
    for e in b.h.events:
        em = e.get("emitter")
        if e.get("kind") == "dataset_shard":   # noted once per dataset and process (instrument.on_dataset_shard)
            if (em, e.get("dataset")) in asked:
                b.m.add(RECORDS, "dataset-rows", f"dataset_shard seq {e.get('seq')} (rank {e.get('rank')}): that "
                                                 f"process's shard of {str(e.get('dataset'))[:30]} noted twice")
            asked.add((em, e.get("dataset")))
        if e.get("kind") == "dataset_shard" and e.get("row_id") is not None:
            recorded.add(em)
        elif e.get("kind") == "step" and em in recorded and "rows" not in e:
            b.m.add(RECORDS, "dataset-rows", f"step seq {e.get('seq')} (rank {e.get('rank')}): its rank records its "
                                             f"dataset shard's rows, and this step has none recorded")
            return
        elif e.get("kind") == "step" and e.get("rows") and em not in recorded and not b.m.declared.reference:
            # (a user's job records rows only through a shard it asked for: the reference job's are its own)
            b.m.add(RECORDS, "dataset-rows", f"step seq {e.get('seq')} (rank {e.get('rank')}): rows recorded, and its "
                                             f"rank never asked for a dataset shard whose rows are recorded")
            return


def attempts_started(b) -> None:
    """Every attempt an event names was started in this history (an attempt_start): a worker training,
    or a controller deciding, for an attempt nobody started has nothing its facts can be held against
    (FAIL; unknown when the history has a gap, which may have lost the start)."""
    if not b.m.attempt_t:
        return
    seen = set()
    for e in b.events if not b.small else b.h.events:
        aid = e.get("attempt_id")
        if not isinstance(aid, str) or aid in b.m.attempt_t or aid in seen or e.get("kind") == "failure":
            continue   # (a failure's own rule is failure-attempt)
        if e.get("source") not in ("worker", "controller"):
            continue
        seen.add(aid)
        b.m.add(SYSTEM, "attempt-order", f"{e.get('kind')} seq {e.get('seq')} names attempt {aid[:12]}, which no "
                                         f"attempt_start of this history started", absence=True)


def user_steps_are_reports(b) -> None:
    """A user's job has no steps of its own: each `ray.train.report` call records its report, then the
    step it counts (instrument.after_report), so one process's steps are its reports' steps, in order
    (the last report may lack its step when the process died between the two): ftharness's record
    of the job otherwise, INCONCLUSIVE."""
    if b.m.declared.reference or not b.small or b.m.declared.runtime == "torchrun":
        return
    seq: Dict[Any, List[Tuple[str, Any]]] = defaultdict(list)
    for e in b.h.events:
        if e.get("source") == "worker" and e.get("kind") in ("report", "step") and e.get("emitter") is not None:
            seq[e["emitter"]].append((e["kind"], e.get("step"), e.get("seq")))
    for em, got in seq.items():
        reports = [s for k, s, _ in got if k == "report"]
        steps = [s for k, s, _ in got if k == "step"]
        if steps != reports and steps != reports[:-1]:
            b.m.add(RECORDS, "report", f"the process {str(em)[:30]} recorded reports of steps {reports[:6]} and steps "
                                       f"{steps[:6]}: a user job's step is its report")
            continue
        for (k1, s1, q1), (k2, s2, _) in zip(got, got[1:]):
            if k1 == k2:
                b.m.add(RECORDS, "report", f"{k2} seq {q1} of {str(em)[:30]}: two {k1}s in a row (each report call "
                                           f"records a report, then its step)")
                break


def one_run_start_per_fit(b) -> None:
    """Each fit() is started once: two run_start events of one fit are ftharness's record damaged."""
    seen: Dict[Any, Any] = {}
    for e in b.events:
        if e.get("kind") == "run_start":
            fit = e.get("fit_index")
            if fit in seen:
                b.m.add(RECORDS, "fit-order", f"fit {fit} has two run_start events (seq {seen[fit]} and {e.get('seq')})")
            seen[fit] = e.get("seq")
