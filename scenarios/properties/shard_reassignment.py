"""shard_reassignment: ranks never share rows within a step or epoch; with the
resumable sampler the kept lineage consumes every row of every epoch exactly once."""

from __future__ import annotations

from collections import Counter, defaultdict
from itertools import chain
from typing import Dict, List, Optional

import numpy as np

from ftharness.history.columns import EventsAt, non_steps
from ftharness.history.model import History, Key, _all_int, as_history
from ftharness.scenarios.properties.base import (CheckResult, Events, Facts, PropertyContext, lineage, not_judged, result,
                                       segments, unknown_or_result, workload_config)
from ftharness.scenarios.reference_data import WorkloadConfig, epoch_permutation, global_batch, rank_slice


def applies(facts: Facts) -> bool:
    return facts.reference_workload or facts.row_ids


def check(events: Events, context: PropertyContext) -> CheckResult:
    """Ranks never share rows within a step or epoch; with the resumable sampler
    the kept lineage consumes every row of every epoch exactly once."""
    h = as_history(events)
    if not any(e.get("rows") is not None for a in h.ordered() for e in a.steps):
        return not_judged("shard_reassignment", "no step recorded the rows it consumed" + _how_to_record(h, context))
    cfg = workload_config(context)
    mode = context.get("data") or (context.get("workload") or {}).get("data") or "resumable"
    violations = _overlap_violations(h)
    standing = list(violations)   # rows read twice in one attempt: both reads are in the history
    findings: List[str] = []
    kept, _ = lineage(h)
    if mode == "ray_data":
        violations += _range_violations(h, cfg)
        findings += _replay_findings(h, kept) + _drop_findings(h, cfg)
        summary = "within every attempt and epoch the ranks' rows are disjoint (ray_data: no position promised)"
    elif context.get("workload_missing"):   # the sampler's rows are unknown: only overlaps are judged
        return unknown_or_result("shard_reassignment", violations,
                                 [f"{context['workload_missing']}: rows not compared with the sampler"],
                                 findings, "", standing)
    else:
        violations += _slice_violations(h, cfg) + _lineage_row_violations(h, kept, cfg)
        if cfg is None:
            findings.append("no workload config: rows not compared with the sampler, epochs not checked complete")
        summary = (f"rows disjoint across ranks; every row of each epoch consumed exactly once "
                   f"over the kept lineage ({segments(h, kept)})")
    return result("shard_reassignment", violations, findings, summary, standing)


ROW_ID_HINT = ("set `workload.row_id: COLUMN` (a column of workload.datasets holding each row's id) to "
               "record the rows each rank reads and judge this")


def _how_to_record(h: History, context: PropertyContext) -> str:
    """For a user job that read Ray Data without a row-id column: how to get it judged ('' otherwise)."""
    read = sorted({str(e.get("dataset")) for e in non_steps(h.events)
                   if e.get("kind") == "dataset_shard" and e.get("row_id") is None})
    if read:
        return (f": the job read {', '.join(read)} through get_dataset_shard, but no row-id column is "
                f"configured; {ROW_ID_HINT}")
    if context.get("data") == "ray_data" and context.get("workload") is None and "workload" in context:
        return f": the job is given workload.datasets, but no row-id column is configured; {ROW_ID_HINT}"
    return ""


def _overlap_violations(h: History) -> List[str]:
    """Within one attempt and epoch no row is consumed twice (by any rank or step)."""
    out = []
    for att in h.ordered():
        table = _table(h, att)
        if _all_distinct(att) if table is None else table.distinct_by_epoch():
            continue
        seen: Dict[tuple, tuple] = {}
        dups: Dict[int, List[str]] = defaultdict(list)
        for e in att.steps:
            here = (e.get("rank"), e.get("step"), e.get("seq"))
            for row in e.get("rows") or []:
                first = seen.setdefault((e.get("epoch"), row), here)
                if first is not here:
                    dups[e.get("epoch")].append(f"row {row} by rank {first[0]} step {first[1]} (seq {first[2]}) "
                                                f"and rank {here[0]} step {here[1]} (seq {here[2]})")
        out += [f"{h.label(att.key)} epoch {ep}: {len(d)} row(s) consumed twice, e.g. {d[0]}"
                for ep, d in sorted(dups.items(), key=lambda kv: str(kv[0]))]
    return out


def _all_distinct(att) -> bool:
    """No row appears twice in an epoch of the attempt (a quick pass that only
    says so for sure; when it cannot, the caller looks row by row)."""
    try:
        by_epoch: Dict[object, list] = {}
        for e in att.steps:
            rows = e.get("rows")
            if rows:
                by_epoch.setdefault(e.get("epoch"), []).extend(rows)
        return all(_distinct(rows) for rows in by_epoch.values())
    except Exception:  # noqa: BLE001 - odd rows: the row-by-row pass meets them as it always did
        return False


def _int_array(rows: list) -> Optional[np.ndarray]:
    """`rows` as a sorted integer array when every row is a Python int (equal
    rows then equal elements, as in a set); None otherwise."""
    try:
        a = np.array(rows)
    except Exception:  # noqa: BLE001 - ragged or odd rows: no array
        return None
    if a.ndim != 1 or a.dtype.kind not in "iu" or not a.size:
        return None
    a.sort()
    return a


def _distinct(rows: list, ids: Optional[np.ndarray] = None) -> bool:
    """No two rows equal; `ids`: `_int_array(rows)`, when already made."""
    ids = _int_array(rows) if ids is None else ids
    if ids is None:
        return len(set(rows)) == len(rows)
    return not (ids[1:] == ids[:-1]).any()


def _slice_violations(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    """Each step's rows are the sampler's global batch split by rank_slice."""
    if cfg is None:
        return []
    out = []
    batch_of: Optional[tuple] = None   # the last step's global batch: its ranks' events follow one another
    for att in h.ordered():
        table = _table(h, att)
        if table is not None and table.sampled(cfg):
            continue   # every event holds its slice and its epoch: nothing to find event by event
        for e in att.steps:
            step, ws = e.get("step"), e.get("world_size")
            if e.get("rows") is None or not step or not ws:
                continue
            if batch_of is None or batch_of[0] is not type(step) or batch_of[1] != step:
                batch = global_batch(cfg, step - 1)
                batch_of = (type(step), step, batch, batch.tolist())
            rank = e.get("rank") or 0
            if type(rank) is int and type(ws) is int and 0 <= rank < ws:   # rank_slice, on the list
                each, extra = divmod(len(batch_of[3]), ws)
                start = rank * each + min(rank, extra)
                want = batch_of[3][start:start + each + (rank < extra)]
            elif type(rank) is int and type(ws) is int:   # a rank outside its world: the causal model names it
                continue
            else:
                want = rank_slice(batch_of[2], rank, ws).tolist()
            where = f"{h.label(att.key)} rank {e.get('rank')} step {step}"
            if e["rows"] != want:
                missing, extra = sorted(set(want) - set(e["rows"])), sorted(set(e["rows"]) - set(want))
                out.append(f"{where} (seq {e.get('seq')}): rows differ from the sampler's slice "
                           f"(missing {missing[:5]}, unexpected {extra[:5]})")
            elif e.get("epoch") is not None and e["epoch"] != (step - 1) // cfg.steps_per_epoch:
                out.append(f"{where}: epoch {e['epoch']}, expected {(step - 1) // cfg.steps_per_epoch}")
    return out


def _lineage_rows(h: History, kept: Dict[int, Optional[Key]]) -> Dict[int, List[tuple]]:
    """Epoch -> [(row, step, attempt key)] over the kept lineage, in step order."""
    by_step: Dict[tuple, List[dict]] = defaultdict(list)
    for att in h.ordered():
        for e in att.steps:
            by_step[(att.key, e.get("step"))].append(e)
    rows: Dict[int, List[tuple]] = defaultdict(list)
    for s in sorted(kept):
        for e in by_step.get((kept[s], s), []):
            rows[e.get("epoch")] += [(r, s, kept[s]) for r in e.get("rows") or []]
    return rows


def _lineage_steps(h: History, kept: Dict[int, Optional[Key]]) -> Dict[int, List[tuple]]:
    """Epoch -> [(step, step event)] over the kept lineage, in step order (the
    events whose rows `_lineage_rows` lists, in its order)."""
    by_att: Dict[Key, Dict[object, List[dict]]] = {}   # attempt -> step -> its events
    for att in h.ordered():
        mine = by_att[att.key] = {}
        for e in att.steps:
            step = e.get("step")
            if step in mine:
                mine[step].append(e)
            else:
                mine[step] = [e]
    out: Dict[int, List[tuple]] = defaultdict(list)
    for s in sorted(kept):
        for e in by_att.get(kept[s], {}).get(s, []):
            out[e.get("epoch")].append((s, e))
    return out


def _lineage_row_violations(h: History, kept: Dict[int, Optional[Key]],
                            cfg: Optional[WorkloadConfig]) -> List[str]:
    """No row twice in an epoch of the lineage; with a config, complete epochs miss none."""
    if _lineage_whole(h, kept, cfg):
        return []
    out = []
    for epoch, events in sorted(_lineage_steps(h, kept).items(), key=lambda kv: str(kv[0])):
        rows = list(chain.from_iterable(e.get("rows") or [] for _, e in events))
        ids = _int_array(rows)
        present = set(rows) if ids is None else None   # with ids, only made when the quick answer fails
        distinct = len(present) == len(rows) if ids is None else _distinct(rows, ids)
        twice = [] if distinct else sorted(r for r, n in Counter(rows).items() if n > 1)
        if twice:
            steps = [s for s, e in events for r in e.get("rows") or [] if r == twice[0]]
            out.append(f"epoch {epoch}: {len(twice)} row(s) applied more than once in the kept "
                       f"lineage, e.g. row {twice[0]} at steps {steps}")
        if cfg is not None and _epoch_kept(kept, cfg, epoch):
            if distinct and ids is not None and len(ids) == cfg.rows and ids[0] == 0 and ids[-1] == cfg.rows - 1:
                missing = []   # cfg.rows distinct integers in [0, cfg.rows): every row
            else:
                present = set(rows) if present is None else present
                missing = [] if present.issuperset(range(cfg.rows)) else sorted(set(range(cfg.rows)) - present)
            if missing:
                out.append(f"epoch {epoch}: {len(missing)} row(s) never consumed in the kept lineage, "
                           f"e.g. row {missing[0]}")
    return out


def _epoch_kept(kept: Dict[int, Optional[Key]], cfg: WorkloadConfig, epoch) -> bool:
    """All steps of the epoch are in the lineage and recorded in this history."""
    if not isinstance(epoch, int):
        return False
    spe = cfg.steps_per_epoch
    return all(kept.get(s) is not None for s in range(epoch * spe + 1, (epoch + 1) * spe + 1))


def _range_violations(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    if cfg is None:
        return []
    bad = [(a.key, e) for a in h.ordered() for e in a.steps
           if any(not 0 <= r < cfg.rows for r in e.get("rows") or [])]
    return [f"{h.label(k)} rank {e.get('rank')} step {e.get('step')}: row ids outside the dataset "
            f"[0, {cfg.rows})" for k, e in bad]


def _replay_findings(h: History, kept: Dict[int, Optional[Key]]) -> List[str]:
    """Rows a restarted attempt consumed again in an epoch the lineage had begun."""
    out = []
    for epoch, rows in sorted(_lineage_rows(h, kept).items(), key=lambda kv: str(kv[0])):
        first: Dict[int, Key] = {}
        replays: Counter = Counter()
        for r, _, key in rows:
            if first.setdefault(r, key) != key:
                replays[key] += 1
        out += [f"epoch {epoch} replayed {n} rows after {h.label(k)} restart" for k, n in sorted(replays.items())]
    return out


def _drop_findings(h: History, cfg: Optional[WorkloadConfig]) -> List[str]:
    """Rows the equal split left out of an attempt's completed pass over an epoch."""
    if cfg is None:
        return []
    out = []
    for att in h.ordered():
        epochs: Dict[int, set] = defaultdict(set)
        for e in att.steps:
            epochs[e.get("epoch")].update(e.get("rows") or [])
        labels = [ep for ep in epochs if isinstance(ep, int)]
        for ep in sorted(labels):
            dropped = cfg.rows - len(epochs[ep])
            if ep < max(labels) and dropped > 0:
                out.append(f"{h.label(att.key)} epoch {ep}: equal split dropped {dropped} of {cfg.rows} rows")
    return out


# ------------------------------------------------------------------ fast paths
# The checks above look at one event (and one row) at a time. For the usual
# history (every step, rank, world size and epoch an int, every rows list of
# one length, of ints) the same answers come from arrays, when they are that
# nothing is wrong; wherever the arrays cannot say so, the code above looks.



class _Table:
    """An attempt's step events as arrays (in its order)."""

    def __init__(self, steps, ranks, ws, epochs, rows: np.ndarray):
        """Columns of ints (lists, or arrays of stored steps) and the rows, one line per event."""
        self.steps = np.asarray(steps, dtype=np.int64)
        self.epochs = np.asarray(epochs, dtype=np.int64)
        self.ranks = np.asarray(ranks, dtype=np.int64)
        self.ws = np.asarray(ws, dtype=np.int64)
        self.rows = rows

    def distinct_by_epoch(self) -> bool:
        """`_all_distinct` of the attempt: no row twice within one epoch."""
        for epoch in np.unique(self.epochs):
            if not _distinct_ints(self.rows[self.epochs == epoch].ravel()):
                return False
        return True

    def sampled(self, cfg: WorkloadConfig) -> bool:
        """True when every event holds the rows rank_slice gives its rank of the
        sampler's batch, and the epoch of its step (nothing for `_slice_violations`
        to report); False when that is not sure."""
        try:
            size = int(self.ws[0])
            if size <= 0 or (self.ws != size).any() or int(self.steps.min()) < 1:
                return False
            if int(self.ranks.min()) < 0 or int(self.ranks.max()) >= size:
                return False
            b, spe = cfg.batch_size, cfg.steps_per_epoch
            if type(b) is not int or type(spe) is not int or b <= 0 or spe <= 0 or b % size:
                return False
            width = b // size   # every rank's slice, with no remainder to spread
            if self.rows.shape[1] != width:
                return False
            epoch, i = np.divmod(self.steps - 1, spe)
            if not np.array_equal(epoch, self.epochs):
                return False
            start = i * b + self.ranks * width
            for e in np.unique(epoch):
                perm = epoch_permutation(cfg, int(e))
                mine = epoch == e
                if len(perm) != cfg.rows or not np.array_equal(self.rows[mine],
                                                               perm[start[mine][:, None] + np.arange(width)]):
                    return False
            return True
        except Exception:  # noqa: BLE001 - anything unusual: the event-by-event check decides (and raises)
            return False


def _table(h: History, att) -> Optional[_Table]:
    """The attempt's steps as a _Table, or None when they are not all plain (see above)."""
    if isinstance(att.steps, EventsAt):   # built again from the stored columns: all of them would not fit
        return _make_table(h, att)
    tables = h.memo.setdefault("shard_tables", {})
    if att.key not in tables:
        tables[att.key] = _make_table(h, att)
    return tables[att.key]


def _make_table(h: History, att) -> Optional[_Table]:
    if not att.steps:
        return None
    names = ("step", "rank", "world_size", "epoch")
    if isinstance(att.steps, EventsAt):
        stored = _stored_table(att.steps, names)
        if stored is not None:
            return stored
    if not all(h.all_int(att, name) for name in names):
        return None
    steps, ranks, ws, epochs = (h.column(att, name) for name in names)
    rows = [e.get("rows") for e in att.steps]
    if set(map(type, rows)) != {list} or len(set(map(len, rows))) != 1 or not rows[0]:
        return None
    try:
        array = np.array(rows)
        table = _Table(steps, ranks, ws, epochs, array)
    except Exception:  # noqa: BLE001 - ints beyond 64 bits and the like: no table
        return None
    return table if array.ndim == 2 and array.dtype.kind == "i" else None


def _stored_table(steps: EventsAt, names) -> Optional[_Table]:
    """`_make_table` from the columns of stored steps (None: not all stored, or not all alike)."""
    columns = [steps.array(name) for name in names]
    spans = steps.rows()
    if any(c is None or c.dtype.kind != "i" for c in columns) or spans is None:
        return None
    flat, starts, ends = spans
    width = int(ends[0] - starts[0])
    if width <= 0 or ((ends - starts) != width).any():
        return None
    rows = flat[starts[:, None] + np.arange(width)]   # (int32 where the store keeps them so: half the memory)
    return _Table(*columns, rows)


def _distinct_ints(ids: np.ndarray) -> bool:
    """No two equal elements of an int64 array."""
    if not ids.size:
        return True
    low, high = int(ids.min()), int(ids.max())
    if low >= 0 and high < 4 * ids.size + 1024:   # a flag per value: as many set as there are ids
        seen = np.zeros(high + 1, dtype=bool)
        seen[ids] = True
        return int(np.count_nonzero(seen)) == ids.size
    ids = np.sort(ids)
    return not (ids[1:] == ids[:-1]).any()


def _lineage_whole(h: History, kept: Dict[int, Optional[Key]], cfg: Optional[WorkloadConfig]) -> bool:
    """True when `_lineage_row_violations` finds nothing: in each epoch the
    lineage's rows are distinct and, in an epoch kept whole, every row; False
    when that is not sure."""
    try:
        steps_of: Dict[Optional[Key], List[int]] = defaultdict(list)   # attempt -> its steps in the lineage
        for s, key in kept.items():
            steps_of[key].append(s)
        by_epoch: Dict[int, List[np.ndarray]] = defaultdict(list)
        for att in h.ordered():   # one attempt's table at a time (a long history's would not all fit)
            if not att.steps:
                continue
            key, table = att.key, _table(h, att)
            if table is None:
                return False
            mine = steps_of.get(key)
            if not mine:
                continue
            if not _all_int(mine):
                return False
            held = np.isin(table.steps, np.array(mine, dtype=np.int64))
            for epoch in np.unique(table.epochs[held]):
                by_epoch[int(epoch)].append(table.rows[held & (table.epochs == epoch)].ravel())
        for epoch, parts in by_epoch.items():
            ids = np.concatenate(parts)
            if not _distinct_ints(ids):
                return False
            if cfg is not None and _epoch_kept(kept, cfg, epoch):
                if not (len(ids) == cfg.rows and int(ids.min()) == 0 and int(ids.max()) == cfg.rows - 1):
                    return False
        return True
    except Exception:  # noqa: BLE001 - the row-by-row check decides (and raises)
        return False
