"""exactly_once_restore: each restart resumes from the latest registered
checkpoint, intact, and the kept lineage applies every step exactly once.

Evidence it needs, and what it says without it (absence is never a pass): a
restore whose files nobody hashed (`restored_intact` null: the digests were not
read) or a rank that recorded steps without a `worker_start` leaves the property
not judged unless a violation stands anyway; so do a succeeded reference run
whose final accumulators the history does not hold (`return_value.acc` of
`run_end`, or of rank 0's last `worker_end`).
Where a `worker_start` records `restored_digests` ({rank: digest of that rank's
files as restored}), each is compared with the digest that rank's `report`
recorded for the checkpoint."""

from __future__ import annotations

from collections import defaultdict
from typing import Dict, List, Optional, Tuple

import numpy as np

from ftharness.history.columns import having
from ftharness.history.model import Attempt, History, Key, as_history
from ftharness.scenarios.properties.base import (CheckResult, Events, PropertyContext, always, lineage, not_judged, segments,
                                                 unknown_or_result, workload_config)
from ftharness.scenarios.reference_data import ACC_FIELDS


applies = always   # every scenario can judge it


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Each restart resumes from the latest registered checkpoint, and the kept
    lineage applies every step exactly once."""
    h = as_history(events)
    if not any(a.worker_starts or a.steps for a in h.ordered()):
        return not_judged("exactly_once_restore", "no worker started and no step was recorded")
    violations: List[str] = []
    findings: List[str] = []
    unknown: List[str] = []
    standing: List[str] = []
    digests = _reported_digests(h)
    for att in h.ordered():
        violations += _restore_violations(h, att, findings, unknown, standing, digests)
        violations += _sequence_violations(h, att)
        unknown += _unstarted(h, att)
    kept, gaps = lineage(h)
    violations += gaps
    violations += _final_violations(h, kept, context, unknown)
    if not violations and not any(a.steps for a in h.ordered()):   # nothing restored into, no lineage: never a pass
        unknown.append("no step was recorded: no restore or lineage to judge")
    restarts = sum(1 for a in h.ordered() if a.worker_starts) - 1
    summary = (f"{max(restarts, 0)} restart(s) each restored the latest registered checkpoint on every "
               f"rank; lineage steps contiguous ({segments(h, kept) or 'no steps'})")
    if context.get("expected_final") is not None and context.get("final") is not None:
        summary += "; final accumulators exact"
    return unknown_or_result("exactly_once_restore", violations, unknown, findings, summary, standing)


def _reported_digests(h: History) -> Dict[str, Dict[str, str]]:
    """checkpoint name -> {rank (as text): the digest its report recorded}."""
    out: Dict[str, Dict[str, str]] = defaultdict(dict)
    for att in h.ordered():
        for e in having(att.reports, "checkpoint", ("digest", "rank")):
            if e.get("digest"):
                out[str(e["checkpoint"])].setdefault(str(e.get("rank")), e["digest"])
    return out


def _unstarted(h: History, att: Attempt) -> List[str]:
    """Ranks that recorded steps in `att` without a worker_start: what they restored is unknown."""
    started = {e.get("rank") for e in att.worker_starts}
    stepped = sorted(set(h.column(att, "rank")) - started, key=str)
    if not stepped:
        return []
    return [f"{h.label(att.key)} rank{'s' if len(stepped) > 1 else ''} {', '.join(map(str, stepped))} recorded "
            f"steps but no worker_start: what {'they' if len(stepped) > 1 else 'it'} restored is unknown"]


def _restore_violations(h: History, att: Attempt, findings: List[str], unknown: List[str], standing: List[str],
                        digests: Dict[str, Dict[str, str]]) -> List[str]:
    """Every started rank restored the checkpoint latest registered before the attempt, with
    the files that were reported (`restored_intact`, and `restored_digests` where recorded)."""
    if not att.worker_starts:
        return []
    want = h.latest_registered(att.start_seq)
    run_start = h.fits[att.key[0]].start or {}
    if want is None and run_start.get("resume_of"):
        findings.append(f"{h.label(att.key)} resumes {run_start['resume_of']}: its restore is not checked")
        return []
    problems = []
    marked: List[str] = []   # the problems that stand on present evidence (a digest mismatch)
    for ws in att.worker_starts:
        got = ws.get("restored_checkpoint")
        if got != (want or {}).get("checkpoint"):
            problems.append((ws, f"restored {got or 'nothing'} but {_latest_text(h, want, got)}"))
        elif want and want.get("step") is not None and ws.get("restored_step") != want["step"]:
            problems.append((ws, f"restored {got} at step {ws.get('restored_step')}, "
                                 f"registered at step {want['step']}"))
        if got is None:
            continue
        if ws.get("restored_intact") is False:
            problems.append((ws, f"restored {got} whose files differ from what was reported (digest mismatch)"))
            marked.append(problems[-1][1])
        elif ws.get("restored_intact") is not True:
            unknown.append(f"{h.label(att.key)} rank {ws.get('rank')} (seq {ws.get('seq')}) restored {got} but "
                           f"whether its files are those reported is unknown (restored_intact "
                           f"{ws.get('restored_intact')!r}: its digests were not read)")
        restored = ws.get("restored_digests")
        if isinstance(restored, dict):
            for rank, want_digest in sorted(digests.get(str(got), {}).items()):
                have = restored.get(rank)
                if have is None:
                    unknown.append(f"{h.label(att.key)} rank {ws.get('rank')} restored {got} without hashing "
                                   f"rank {rank}'s files")
                elif have != want_digest:
                    problems.append((ws, f"restored {got} whose rank {rank} files hash to {str(have)[:12]}, "
                                         f"reported as {str(want_digest)[:12]} (digest mismatch)"))
                    marked.append(problems[-1][1])
    out = _by_rank(h.label(att.key), problems)
    standing += [line for line in out if any(line.endswith(t) for t in marked)]
    return out


def _by_rank(label: str, problems: List[Tuple[dict, str]]) -> List[str]:
    """One line per distinct problem, naming the ranks (and their events) that share it."""
    ranks: Dict[str, List[dict]] = defaultdict(list)
    for e, text in problems:
        ranks[text].append(e)
    out = []
    for text, es in ranks.items():
        names = ", ".join(str(e.get("rank")) for e in es)
        seqs = ", ".join(str(e.get("seq")) for e in es)
        out.append(f"{label} rank{'s' if len(es) > 1 else ''} {names} (seq {seqs}): {text}")
    return out


def _latest_text(h: History, want: Optional[dict], got: Optional[str]) -> str:
    latest = (f"the latest registered checkpoint was {want['checkpoint']} (step {want.get('step')}, "
              f"seq {want.get('seq')})" if want else "no checkpoint was registered yet")
    names = [e.get("checkpoint") for e in h.registered]
    if got is not None and got not in names:
        return latest + f"; {got} was never registered"
    if got is not None and want is not None and names.index(got) < names.index(want.get("checkpoint")):
        return latest + f"; {got} is older"
    return latest


def _sequence_violations(h: History, att: Attempt) -> List[str]:
    """Each worker's steps run restored_step+1, +2, ... with none skipped or repeated."""
    starts = {(e.get("rank"), e.get("pid")): e for e in att.worker_starts}
    default_base = att.restored_step() or 0
    if _each_in_sequence(h, att, starts, default_base):
        return []
    by_worker: Dict[tuple, List[dict]] = defaultdict(list)
    for worker, e in zip([(e.get("rank"), e.get("pid")) for e in att.steps], att.steps):
        by_worker[worker].append(e)
    problems = []
    for (rank, pid), steps in sorted(by_worker.items(), key=lambda kv: str(kv[0])):
        ws = starts.get((rank, pid))
        base = (ws.get("restored_step") or 0) if ws else default_base
        problem = _first_gap([e.get("step") for e in steps], base)
        if problem:
            problems.append((steps[problem[0]], problem[1]))
    return _by_rank(h.label(att.key), problems)


def _each_in_sequence(h: History, att: Attempt, starts: Dict[tuple, dict], default_base) -> bool:
    """True when each worker's steps run base+1, base+2, ... (what
    `_sequence_violations` finds no gap in), for steps, ranks and pids that
    are ints, from arrays; False when that is not sure."""
    steps, ranks, pids = (h.column(att, name) for name in ("step", "rank", "pid"))
    if not steps or not all(h.all_int(att, name) for name in ("step", "rank", "pid")):
        return False
    try:
        rank, pid, step = (np.array(c, dtype=np.int64) for c in (ranks, pids, steps))
        order = np.lexsort((pid, rank))   # by worker, each in the attempt's order (a stable sort)
        rank, pid, step = rank[order], pid[order], step[order]
        first = np.flatnonzero(np.r_[True, (rank[1:] != rank[:-1]) | (pid[1:] != pid[:-1])])
        bases = []
        for i in first:
            ws = starts.get((int(rank[i]), int(pid[i])))
            base = (ws.get("restored_step") or 0) if ws else default_base
            if type(base) is not int:
                return False
            bases.append(base)
        counts = np.diff(np.r_[first, len(step)])
        # step k of a worker (from 0) should be its base + 1 + k
        want = np.repeat(np.array(bases, dtype=np.int64) + 1 - first, counts) + np.arange(len(step))
        return bool(np.array_equal(step, want))
    except Exception:  # noqa: BLE001 - the worker-by-worker check decides (and raises)
        return False


def _first_gap(steps: List[int], base: int) -> Optional[Tuple[int, str]]:
    """(index, problem) of the first step that is not the next one after `base`."""
    if type(base) is int and steps == list(range(base + 1, base + 1 + len(steps))):
        return None   # each the next one (a quick answer for the usual case)
    for i, got in enumerate(steps):
        want = base + 1 + i
        if got == want:
            continue
        if i == 0 and got <= base:
            return i, f"first step was {got} after restoring step {base}: {_span(got, base)} applied twice"
        if i == 0:
            return i, f"first step was {got} after restoring step {base}: {_span(want, got - 1)} skipped"
        if got in steps[:i]:
            return i, f"{_span(got, got)} applied twice"
        if got > want:
            return i, f"{_span(want, got - 1)} skipped after step {steps[i - 1]}"
        return i, f"went back from step {steps[i - 1]} to {got}"
    return None


def _span(first: int, last: int) -> str:
    return f"step {first}" if first == last else f"steps {first}-{last}"


def _final_violations(h: History, kept: Dict[int, Optional[Key]], context: PropertyContext,
                      unknown: List[str]) -> List[str]:
    out = []
    expected, final = context.get("expected_final"), context.get("final")
    outcome, _ = h.outcome(h.last_fit(), context)
    wl = context.get("workload") or {}
    if context.get("workload_missing"):
        unknown.append(f"{context['workload_missing']}: the final state and the lineage's end are not judged")
    if wl and outcome == "succeeded" and final is None:
        unknown.append("the run succeeded but its final accumulators were not recorded (`return_value.acc` of "
                       "run_end or rank 0's worker_end): "
                       "exactly-once is not established on the final state")
    elif wl and outcome == "succeeded" and expected is None and wl.get("stop_at") is not None:
        unknown.append("the run stopped on its deadline without recording the step it stopped at "
                       "(run_end.return_value.step): what a fault-free run ends with is unknown")
    if expected is not None and final is not None:
        diffs = [f"{name} {f!r} != {x!r}" for name, f, x in zip(ACC_FIELDS, final, expected)
                 if float(f) != float(x)]
        if len(final) != len(expected):
            diffs.append(f"{len(final)} values, expected {len(expected)}")
        if diffs:
            out.append("final accumulators differ from the exactly-once value: " + ", ".join(diffs))
    cfg = workload_config(context)
    top = max(kept, default=0)
    if cfg is not None and outcome == "succeeded" and top != cfg.steps:
        out.append(f"the run succeeded but its lineage ends at step {top}, not {cfg.steps}")
    return out
