"""The self-consistent operators that change facts together: pairs and relabels.

A part of the mutation engine (`consistent_mutants` in reports/mutation.py uses them): two or more
facts edited so that they agree with each other but not with the rest of the history (a failure's
budget and counts, a report's step and its metrics' step, a restore's checkpoint and step...), and a
whole worker process relabeled as another attempt's or another rank's. Pure.
"""

from __future__ import annotations

import copy
from typing import Any, Dict, Iterator, List

from ftharness.reports.mutation_clocks import _emitters
from ftharness.reports.mutation_parts import STEP_METRICS, Event, Mutant


#: budgets of a failure's `counts` and the failure_config setting that limits each
BUDGET_LIMIT = {"worker_group": "max_failures", "preemption": "max_preemption_failures",
                "controller": "controller_failure_limit"}
#: error types a failure may be recorded with (besides those the history holds)
ERROR_TYPES = ("WorkerGroupError", "PreemptionError", "ControllerError", "WorkerGroupStartupTimeoutError")


# -- two facts changed together: each agrees with the other, not with the rest
def _failure_config(events: List[Event]) -> Dict[str, Any]:
    rs = next((e for e in events if e.get("kind") == "run_start"), {})
    fc = rs.get("failure_config")
    return fc if isinstance(fc, dict) else {}


def _pairs(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Two (or more) facts edited together so that they agree with each other, but not with the rest
    of the history: a failure's budget and its counts (and every later failure's), its count and
    counts, a report's step and its metrics' step, a registration's step and its reports', a restore's
    checkpoint and step, a group's world size and its attempt's num_workers, the victim recorded at a
    kill as another worker of the attempt, an error type on the failure and its controller state, the
    outcome and its error type, a drain deadline and the derived lateness of the kill, a registration
    named as another checkpoint (its path too). Relabels (`relabel`): every event of one worker
    process moved to another attempt, or to another rank."""
    fc = _failure_config(events)
    fails = [i for i, e in enumerate(events) if e.get("kind") == "failure" and isinstance(e.get("counts"), dict)]
    for i in fails:
        e = events[i]
        b = e.get("budget")
        later = [j for j in fails if j >= i and events[j].get("fit_index") == e.get("fit_index")]
        for b2 in e["counts"]:
            if b2 == b or b not in e["counts"]:
                continue
            out = copy.deepcopy(events)
            for j in later:
                c = out[j]["counts"]
                if isinstance(c.get(b), int) and isinstance(c.get(b2), int):
                    c[b] -= 1
                    c[b2] += 1
            out[i]["budget"] = b2
            out[i]["count"] = out[i]["counts"][b2]
            if isinstance(fc.get(BUDGET_LIMIT.get(b2, "")), int):
                out[i]["limit"] = fc[BUDGET_LIMIT[b2]]
            for j in later[1:]:
                if out[j].get("budget") in (b, b2):
                    out[j]["count"] = out[j]["counts"][out[j]["budget"]]
            yield Mutant(source, "pair", "failure", "budget+counts", f"#{i}={b2}", out)
        if isinstance(e.get("count"), int) and isinstance(e["counts"].get(b), int):
            for with_limit in (False, True):
                out = copy.deepcopy(events)
                for j in later:
                    if isinstance(out[j]["counts"].get(b), int):
                        out[j]["counts"][b] += 1
                    if out[j].get("budget") == b and isinstance(out[j].get("count"), int):
                        out[j]["count"] += 1
                        if with_limit and isinstance(out[j].get("limit"), int):
                            out[j]["limit"] += 1
                yield Mutant(source, "pair", "failure", "count+counts" + ("+limit" if with_limit else ""),
                             f"#{i}+1", out)
    for i, e in enumerate(events):
        kind = e.get("kind")
        if kind == "report" and isinstance(e.get("step"), int):
            for d in (1, -1):
                s = e["step"] + d
                if s < 0:
                    continue
                out = copy.deepcopy(events)
                out[i]["step"] = s
                for k in STEP_METRICS:
                    if isinstance(out[i].get("metrics"), dict) and k in out[i]["metrics"]:
                        out[i]["metrics"][k] = s
                yield Mutant(source, "pair", "report", "step+metrics.step", f"#{i}{d:+d}", out)
        elif kind == "checkpoint_registered" and isinstance(e.get("step"), int):
            name = e.get("checkpoint")
            for d in (1, -1):
                s = e["step"] + d
                for written in (False, True):
                    out = copy.deepcopy(events)
                    out[i]["step"] = s
                    for x in out:
                        same = x.get("attempt_id") == e.get("attempt_id") and x.get("step") == e["step"]
                        if x.get("kind") == "report" and same and (x.get("checkpoint") == name or x.get("checkpoint")):
                            x["step"] = s
                            for k in STEP_METRICS:
                                if isinstance(x.get("metrics"), dict) and k in x["metrics"]:
                                    x["metrics"][k] = s
                        elif written and x.get("kind") == "checkpoint_written" and same:
                            x["step"] = s
                    yield Mutant(source, "pair", "checkpoint_registered",
                                 "step+report.step" + ("+written.step" if written else ""), f"#{i}{d:+d}", out)
    registered = [(e.get("checkpoint"), e.get("step")) for e in events if e.get("kind") == "checkpoint_registered"]
    starts = [i for i, e in enumerate(events) if e.get("kind") == "worker_start" and e.get("restored_checkpoint")]
    for i in starts:
        e = events[i]
        alts = [r for r in registered if r[0] != e["restored_checkpoint"]]
        here = next((n for n, r in enumerate(registered) if r[0] == e["restored_checkpoint"]), len(registered))
        alts = sorted(alts, key=lambda r: abs(registered.index(r) - here))[:2]
        for name, step in alts:
            for every in (False, True):
                out = copy.deepcopy(events)
                for j in ([x for x in starts if events[x].get("attempt_id") == e.get("attempt_id")] if every else [i]):
                    out[j]["restored_checkpoint"], out[j]["restored_step"] = name, step
                yield Mutant(source, "pair", "worker_start",
                             "restored_checkpoint+restored_step" + ("(every rank)" if every else ""),
                             f"#{i}={str(name)[-10:]}", out)
    for i, e in enumerate(events):
        if e.get("kind") != "worker_group_started" or not isinstance(e.get("world_size"), int):
            continue
        a = e.get("attempt_id")
        st = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") == "attempt_start"
                   and events[j].get("attempt_id") == a), None)
        for workers_too in (False, True):
            out = copy.deepcopy(events)
            out[i]["world_size"] += 1
            if st is not None and isinstance(out[st].get("num_workers"), int):
                out[st]["num_workers"] += 1
            if workers_too:
                for x in out:
                    if x.get("source") == "worker" and x.get("attempt_id") == a \
                            and isinstance(x.get("world_size"), int):
                        x["world_size"] += 1
            yield Mutant(source, "pair", "worker_group_started",
                         "world_size+num_workers" + ("+workers.world_size" if workers_too else ""), f"#{i}+1", out)
    for i, e in enumerate(events):
        hit = e.get("target_hit")
        if e.get("kind") != "fault_injected" or not isinstance(hit, dict) or "pid" not in hit or "rank" not in hit:
            continue
        group = next((x for x in events if x.get("kind") == "worker_group_started"
                      and x.get("attempt_id") == (hit.get("attempt_id") or x.get("attempt_id"))
                      and any(w.get("pid") == hit["pid"] for w in x.get("workers") or [] if isinstance(w, dict))), None)
        if group is None:
            continue
        for w in group.get("workers") or []:
            if not isinstance(w, dict) or w.get("pid") == hit["pid"]:
                continue
            for asked_too in (False, True):
                out = copy.deepcopy(events)
                h = out[i]["target_hit"]
                for k in ("pid", "rank", "node_id", "actor_id"):
                    if k in h and k in w:
                        h[k] = w[k]
                if asked_too and isinstance(out[i].get("target_asked"), dict) and "rank" in out[i]["target_asked"]:
                    out[i]["target_asked"]["rank"] = w.get("rank")
                yield Mutant(source, "pair", "fault_injected",
                             "target_hit(pid,rank,node)" + ("+target_asked.rank" if asked_too else ""),
                             f"#{i}=rank {w.get('rank')}", out)
            break
    types = list(dict.fromkeys([e.get("error_type") for e in events if isinstance(e.get("error_type"), str)]
                               + list(ERROR_TYPES)))
    for i in fails:
        e = events[i]
        for alt in [x for x in types if x != e.get("error_type")][:2]:
            out = copy.deepcopy(events)
            out[i]["error_type"] = alt
            state = next((j for j in range(i - 1, -1, -1) if events[j].get("kind") == "controller_state"
                          and events[j].get("error_type") == e.get("error_type")
                          and events[j].get("attempt_id") == e.get("attempt_id")), None)
            if state is not None:
                out[state]["error_type"] = alt
            yield Mutant(source, "pair", "failure", "error_type+controller_state.error_type", f"#{i}={alt}", out)
    for i, e in enumerate(events):
        if e.get("kind") != "run_end" or e.get("outcome") not in ("succeeded", "failed"):
            continue
        out = copy.deepcopy(events)
        if e["outcome"] == "succeeded":
            last = next((x for x in reversed(events[:i]) if x.get("kind") == "failure"), {})
            out[i]["outcome"], out[i]["error_type"] = "failed", last.get("error_type") or ERROR_TYPES[0]
        else:
            out[i]["outcome"], out[i]["error_type"], out[i]["error"] = "succeeded", None, None
        yield Mutant(source, "pair", "run_end", "outcome+error_type", f"#{i}={out[i]['outcome']}", out)
    for i, e in enumerate(events):
        hit = e.get("target_hit")
        if e.get("kind") != "fault_injected" or not isinstance(hit, dict) \
                or not isinstance(hit.get("deadline_ms"), int):
            continue
        node = hit.get("node_id")
        for d_ms in (-60_000, -3_000, 3_000, 60_000):
            out = copy.deepcopy(events)
            out[i]["target_hit"]["deadline_ms"] += d_ms
            if isinstance(hit.get("kill_in_s"), (int, float)):
                out[i]["target_hit"]["kill_in_s"] = hit["kill_in_s"] + d_ms / 1000.0
            for x in out:
                det = x.get("detail")
                if x.get("kind") == "fault_action" and isinstance(det, dict) and det.get("node_id") == node \
                        and isinstance(det.get("ms_after_deadline"), (int, float)):
                    det["ms_after_deadline"] = round(det["ms_after_deadline"] - d_ms, 1)
            yield Mutant(source, "pair", "fault_injected", "deadline_ms+kill_in_s+ms_after_deadline",
                         f"#{i}{d_ms:+d}ms", out)
    regs = [i for i, e in enumerate(events) if e.get("kind") == "checkpoint_registered" and e.get("checkpoint")]
    for n, i in enumerate(regs[1:], 1):
        e, prev = events[i], events[regs[n - 1]]
        out = copy.deepcopy(events)
        out[i]["checkpoint"] = prev["checkpoint"]
        if isinstance(e.get("path"), str) and isinstance(prev.get("path"), str):
            out[i]["path"] = prev["path"]
        yield Mutant(source, "pair", "checkpoint_registered", "checkpoint+path", f"#{i}=#{regs[n - 1]}", out)
    yield from _relabels(source, events)


def _relabels(source: str, events: List[Event]) -> Iterator[Mutant]:
    """Every event of one worker process relabeled as a process of another attempt (attempt and
    attempt_id), or of another rank of its attempt: the process agrees with itself, not with its group."""
    attempts = list(dict.fromkeys((e.get("attempt"), e.get("attempt_id")) for e in events
                                  if e.get("source") == "worker" and e.get("attempt_id") is not None))
    for em in _emitters(events):
        mine = [i for i, e in enumerate(events) if e.get("emitter") == em]
        first = events[mine[0]]
        if first.get("source") != "worker" or first.get("attempt_id") is None:
            continue
        here = (first.get("attempt"), first.get("attempt_id"))
        for other in [a for a in attempts if a != here][:2]:
            out = copy.deepcopy(events)
            for i in mine:
                if "attempt" in out[i]:
                    out[i]["attempt"] = other[0]
                out[i]["attempt_id"] = other[1]
            yield Mutant(source, "relabel", "process:worker", "attempt+attempt_id", f"{em}={other[1]}", out)
        ranks = sorted({e.get("rank") for e in events if e.get("source") == "worker"
                        and e.get("attempt_id") == here[1] and isinstance(e.get("rank"), int)})
        for r in [r for r in ranks if r != first.get("rank")][:1]:
            out = copy.deepcopy(events)
            for i in mine:
                out[i]["rank"] = r
            yield Mutant(source, "relabel", "process:worker", "rank", f"{em}={r}", out)
