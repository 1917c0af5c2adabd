"""Rules of the causal model about the faults themselves: what the injector recorded against the
scenario and against the run (history/causal_declared.py runs them with the others).

A drain's deadline is the scenario's notice, a preemption notice is a drain's, a fault was done with
the scenario's parameters on a worker of the group, and its heal undid it. A contradiction here is
damage to ftharness's record of what it did (INCONCLUSIVE), except a notice no drain gave, which
is Ray's (FAIL).
"""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

from ftharness.history.tolerances import RECORDS, SYSTEM, TOL_CROSS, fault_time, num

_num = num
#: seconds of slack on a drain's deadline against the notice the scenario asked for (the deadline
#: is computed as time.time() + notice_s between t_requested and t_done)
NOTICE_SLACK_S = 0.5


# -- preemption: a notice is the drain's, a drain is the scenario's
def preemption_notices(b) -> None:
    """A drain's deadline is `notice_s` after the drain was asked for (as the scenario declares), and
    the node was not dead already when it was drained (the injector's record: INCONCLUSIVE). A rank's
    preemption notice carries the deadline of a drain done before it, of a node of its attempt's
    group, and comes no later than that node's death (Ray's notice with no drain behind it: FAIL)."""

    m = b.m
    specs = m.declared.fault_specs
    drains: List[Tuple[int, float, str, int]] = []   # (deadline_ms, drained at, node, fault index)
    unknown: List[Tuple[float, Any]] = []
    for idx, e in m.injections.items():
        if not m.declared.kind(e.get("fault_kind")).drains_node:
            continue
        hit = e.get("target_hit") if isinstance(e.get("target_hit"), dict) else {}
        deadline, node, when = _num(hit.get("deadline_ms")), hit.get("node_id"), fault_time(e)
        if deadline is None and when is not None:
            unknown.append((when, node))   # a drain whose deadline the injector did not record: no notice is judged
        if deadline is None or node is None or when is None:
            continue
        drains.append((int(deadline), when, node, idx))
        spec = specs[idx] if 0 <= idx < len(specs) and isinstance(specs[idx], dict) else None
        notice_s = _num((spec or {}).get("notice_s"))
        if spec is not None and notice_s is None:
            notice_s = 3.0   # the kind's default (faults/node.py PreemptNodeSpec)
        asked, done = _num(e.get("t_requested")), _num(e.get("t_done"))
        lo = (asked if asked is not None else when) - NOTICE_SLACK_S
        hi = (done if done is not None else when) + NOTICE_SLACK_S
        if notice_s is not None and not lo <= deadline / 1000.0 - notice_s <= hi:
            m.add(RECORDS, "fault-notice", f"fault {idx} (preempt_node): the drain's deadline is "
                                           f"{deadline / 1000.0 - when:+.1f} s from the drain, the scenario's "
                                           f"notice_s is {notice_s:g}")
        death = m.node_deaths.get(node)
        if death is not None and death[0] < when - TOL_CROSS:
            m.add(RECORDS, "fault-notice", f"fault {idx} (preempt_node): node {str(node)[:8]} was drained "
                                           f"{when - death[0]:.1f} s after it was removed")
        if death is not None and spec is not None:
            offset = _num(spec.get("kill_offset_s")) or 0.0
            due = deadline / 1000.0 + offset
            if death[0] < due - NOTICE_SLACK_S - TOL_CROSS:
                m.add(RECORDS, "fault-notice", f"fault {idx} (preempt_node): node {str(node)[:8]} was removed "
                                               f"{due - death[0]:.1f} s before its deadline plus kill_offset_s")
    for e in b.events:
        if e.get("kind") != "preemption_notice":
            continue
        t, deadline = _num(e.get("t")), _num(e.get("deadline_ms"))
        where = f"preemption_notice seq {e.get('seq')} (rank {e.get('rank')})"
        if t is None or deadline is None:
            continue
        group = m.groups.get(e.get("attempt_id")) if isinstance(e.get("attempt_id"), str) else None
        nodes = {n for _, n in group.workers.values()} if group is not None and group.workers else None
        mine = [d for d in drains if abs(d[0] - deadline) <= 1000 and d[1] <= t + TOL_CROSS
                and (nodes is None or d[2] in nodes)]
        if not mine and any(at <= t + TOL_CROSS and (nodes is None or node in nodes) for at, node in unknown):
            continue
        if not mine:
            m.add(SYSTEM, "notice", f"{where}: a notice with deadline {deadline / 1000.0:.3f}, and no node of its "
                                    f"attempt was drained with that deadline before it")
            continue
        death = m.node_deaths.get(mine[-1][2])
        if death is not None and t > death[0] + TOL_CROSS:
            m.add(SYSTEM, "notice", f"{where}: taken {t - death[0]:.1f} s after the drained node "
                                    f"{str(mine[-1][2])[:8]} was removed")


# -- a fault's recorded parameters are the scenario's
def fault_spec_echo(b) -> None:
    """What the injector recorded of a fault's parameters (its `where`, duration, error rate, the
    preemption's kill time, an in-worker fault's step) is what the scenario asked: a fault done with
    other parameters is not the scenario's fault (the injector's record: INCONCLUSIVE)."""

    specs, echoes = b.m.declared.fault_specs, b.m.declared.echoes
    for idx, e in b.m.injections.items():
        spec = specs[idx] if 0 <= idx < len(specs) and isinstance(specs[idx], dict) else None
        hit = e.get("target_hit")
        if spec is None or not isinstance(hit, dict):
            continue
        kind = e.get("fault_kind")
        for field, expected in (echoes[idx] if 0 <= idx < len(echoes) else {}).items():
            if field not in hit or expected is None:
                continue
            got = hit[field]
            same = abs(_num(got) - _num(expected)) <= 1e-6 if _num(got) is not None and _num(expected) is not None \
                else got == expected
            if not same:
                b.m.add(RECORDS, "fault-spec", f"fault {idx} ({kind}) was done with {field} {str(got)[:30]}, the "
                                               f"scenario asks {str(expected)[:30]}")
        at = spec.get("at") if isinstance(spec.get("at"), dict) else {}
        if "where" in hit and hit.get("where") != "on_restore" and type(at.get("step")) is int \
                and "step" in hit and hit["step"] != at["step"]:
            b.m.add(RECORDS, "fault-spec", f"fault {idx} ({kind}) acted at step {str(hit['step'])[:12]}, the "
                                           f"scenario's trigger is step {at['step']}")


def fault_target_identity(b) -> None:
    """A worker a fault hit is one worker of its attempt's group: the pid, the actor and the local rank
    the injector recorded are that worker's; a damaged checkpoint file lies in the checkpoint the fault
    names, in the run's folder (the injector's record: INCONCLUSIVE)."""

    by_pid: Dict[Any, dict] = {}
    for e in b.events:
        if e.get("kind") == "worker_group_started":
            for w in e.get("workers") or []:
                if isinstance(w, dict) and w.get("pid") is not None:
                    by_pid[w["pid"]] = w
    run = next((e.get("run_name") for e in b.events if e.get("kind") == "run_start"), None)
    for idx, e in b.m.injections.items():
        hit = e.get("target_hit") if isinstance(e.get("target_hit"), dict) else {}
        w = by_pid.get(hit.get("pid"))
        if w is not None:
            for field in ("actor_id", "local_rank"):
                if field in hit and field in w and hit[field] != w[field]:
                    b.m.add(RECORDS, "fault-target", f"fault {idx} hit pid {hit.get('pid')} as {field} "
                                                     f"{str(hit[field])[:16]}, its group lists that pid as "
                                                     f"{str(w[field])[:16]}")
        for act in b.events:   # a follow-up acts on the node its fault hit (a replacement node names none)
            detail = act.get("detail") if isinstance(act.get("detail"), dict) else {}
            if act.get("kind") == "fault_action" and act.get("fault") == idx and "dies" in str(act.get("action")) \
                    and detail.get("node_id") is not None and hit.get("node_id") is not None \
                    and detail["node_id"] != hit["node_id"]:
                b.m.add(RECORDS, "fault-target", f"fault {idx}: its node {str(hit['node_id'])[:8]} was drained, and "
                                                 f"the kill action names node {str(detail['node_id'])[:8]}")
        path, name = hit.get("path"), hit.get("checkpoint")
        if b.m.declared.kind(e.get("fault_kind")).damages_checkpoint and isinstance(path, str) and path \
                and not hit.get("in_flight"):
            # (an in-flight damage hits the rank's local files before they are reported)
            parts = path.replace("\\", "/").split("/")
            if isinstance(name, str) and name and name not in parts:
                b.m.add(RECORDS, "fault-target", f"fault {idx} damaged {path[-60:]}, not a file of checkpoint "
                                                 f"{name[:40]}")
            elif isinstance(run, str) and run not in parts and "snapshot" not in str(hit.get("how")):
                b.m.add(RECORDS, "fault-target", f"fault {idx} damaged {path[-60:]}, outside the run's folder")


def fault_heals(b) -> None:
    """A heal undoes its own fault: on the node and the process the fault hit; a paused process was
    resumed (or is named gone) — a hung worker never resumed, or a heal on another node, is not the
    scenario's fault healed (the injector's record: INCONCLUSIVE)."""

    for e in b.events:
        if e.get("kind") != "fault_healed" or type(e.get("fault")) is not int:
            continue
        inj = b.m.injections.get(e["fault"])
        detail = e.get("detail") if isinstance(e.get("detail"), dict) else {}
        hit = (inj or {}).get("target_hit") if isinstance((inj or {}).get("target_hit"), dict) else {}
        where = f"fault {e['fault']} ({e.get('fault_kind')}) healed at seq {e.get('seq')}"
        for field in ("node_id", "pid", "attempt_id"):
            if detail.get(field) is not None and hit.get(field) is not None and detail[field] != hit[field]:
                b.m.add(RECORDS, "fault-heal", f"{where}: on {field} {str(detail[field])[:12]}, the fault hit "
                                               f"{str(hit[field])[:12]}")
        if detail.get("resumed") is False and not (detail.get("gone") is True and _attempt_ended(b, hit, e)):
            # a process named gone must be one Ray ended: its attempt shut down (or a later one started)
            # before the heal; else nothing says the stopped worker did not hang on
            b.m.add(RECORDS, "fault-heal", f"{where}: the stopped process was not resumed"
                    + (", and nothing recorded ended its attempt before the heal" if detail.get("gone") else ""))
        paused = hit.get("paused_pids")
        if isinstance(paused, list) and ("resumed_pids" in detail or "gone_pids" in detail):
            back = set(detail.get("resumed_pids") or []) | set(detail.get("gone_pids") or [])
            if back != set(paused):
                b.m.add(RECORDS, "fault-heal", f"{where}: resumed or gone {sorted(back)[:6]}, paused "
                                               f"{sorted(paused)[:6]}")


def _attempt_ended(b, hit: dict, heal: dict) -> bool:
    """Whether the attempt the fault hit ended before `heal`: its worker group's shutdown, or another
    attempt's start, recorded earlier in the history."""
    aid, seq = hit.get("attempt_id"), heal.get("seq")
    if aid is None or not isinstance(seq, int):
        return False
    return any(isinstance(e.get("seq"), int) and e["seq"] < seq and (
        (e.get("kind") == "worker_group_shutdown" and e.get("attempt_id") == aid)
        or (e.get("kind") in ("attempt_start", "worker_group_started") and e.get("attempt_id") not in (None, aid)))
        for e in b.events)
