"""What a run cost, from its history model: each step's span (and the steps a rollback threw
away), lost work, ETTR, wall time, the failure budgets used, and summary.json's `run_metrics`.

A part of the history model: `RunMetrics` is a base of `History` (history/model.py), whose
attempts, steps and recoveries it reads. Pure.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Dict, List, Mapping, Optional, Tuple

import numpy as np

from ftharness.history.columns import EventsAt
from ftharness.history.model_budgets import BUDGETS, LIMIT_FIELD, NOT_RETRYABLE, TORCHRUN_BUDGET
from ftharness.history.model_parts import PARTS, Key, StepSpan, _all_int, span


class RunMetrics:
    """The steps, lost work, ETTR and budgets of a `History` (a base of it: the methods read its model)."""

    # -- steps, lost work, budgets
    def step_spans(self) -> List[StepSpan]:
        """Steps as the worker groups did them, by (fit, attempt, step)."""
        if self._spans is None:
            self._spans = self._step_spans()
        return list(self._spans)

    def _step_spans(self) -> List[StepSpan]:
        try:
            return self._step_spans_by_attempt()
        except Exception:  # noqa: BLE001 - keys or steps that are not ints: the general pass (and its error)
            return self._step_spans_all()

    def _step_spans_by_attempt(self) -> List[StepSpan]:
        """`_step_spans_all` one attempt at a time, where every attempt key and
        step is an int (it raises otherwise)."""
        groups, last_rank = self._span_groups()
        out: List[StepSpan] = []
        for i, ((fit, attempt), steps_in_order, latest, seconds) in enumerate(groups):
            out += [StepSpan(fit, attempt, n, begin, end, span_s, i < last_rank[n])
                    for n, begin, end, span_s in zip(steps_in_order, [None] + latest[:-1], latest, seconds)]
        return out

    def _span_totals(self) -> Tuple[int, Any, Any]:
        """(lost steps, the sum of their seconds, the sum of the seconds of the others): what
        `lost_work` and `ettr` add up over `step_spans()`, in its order, without a StepSpan
        per step (a long history has millions)."""
        if self._spans is None and type(self)._step_spans_by_attempt is _SPANS_BY_ATTEMPT:
            if "span_totals" in self.memo:
                return self.memo["span_totals"]
            try:
                found = self._span_totals_arrays()
            except Exception:  # noqa: BLE001 - the pass below decides
                found = None
            if found is not None:
                self.memo["span_totals"] = found
                return found
            try:
                groups, last_rank = self._span_groups()
            except Exception:  # noqa: BLE001 - the general pass decides (below)
                groups = None
            if groups is not None:
                def spans():   # (lost, seconds) per span, in step_spans' order
                    for i, (_, steps, _, seconds) in enumerate(groups):
                        for n, span_s in zip(steps, seconds):
                            yield i < last_rank[n], span_s
                found = self.memo["span_totals"] = (
                    sum(1 for was, _ in spans() if was), sum(v for was, v in spans() if was and v is not None),
                    sum(v for was, v in spans() if not was and v is not None))
                return found
        spans = self.step_spans()
        lost = [s for s in spans if s.lost]
        return (len(lost), sum(s.seconds for s in lost if s.seconds is not None),
                sum(s.seconds for s in spans if not s.lost and s.seconds is not None))

    def _span_totals_arrays(self) -> Optional[Tuple[int, Any, Any]]:
        """`_span_totals` where every attempt's steps are stored rows (their columns: no list
        or dict per step, which for a day of soak would be the peak of judging); None otherwise.
        The seconds are added by `sum` in the same order, so the floats are the same."""
        groups = self._span_groups(arrays=True)
        if groups is None:
            return None
        if not groups:
            return 0, 0, 0
        steps = np.concatenate([g[1] for g in groups])
        group = np.repeat(np.arange(len(groups)), [len(g[1]) for g in groups])
        order = np.lexsort((group, steps))   # by step, then group: each step's last group ends its run
        s = steps[order]
        ends = np.flatnonzero(np.append(s[1:] != s[:-1], True))
        last = np.empty(len(steps), dtype=np.int64)
        last[order] = np.repeat(group[order][ends], np.diff(np.append(-1, ends)))
        lost = group < last
        del steps, group, order, s, last

        def seconds(want: bool):   # the spans' seconds (the first of each attempt has none), in order
            at = 0
            for _, _, latest in groups:
                mine = lost[at + 1:at + len(latest)]
                yield from np.diff(latest)[mine if want else ~mine].tolist()
                at += len(latest)
        return int(lost.sum()), sum(seconds(True)), sum(seconds(False))

    def _span_groups(self, arrays: bool = False):
        """Per attempt with steps, in key order: (key, its distinct steps ascending, each one's
        latest time, seconds since the previous one), and step -> the last group that has it."""
        groups: List[Tuple[Key, List[int], List[Any], List[Any]]] = []   # attempts with steps, in key order:
        for key in sorted(self.attempts):                                   # steps ascending, their ends, seconds
            if type(key[0]) is not int or type(key[1]) is not int:
                raise TypeError("not an int key")
            att = self.attempts[key]
            steps = times = None
            if arrays and att.steps and not isinstance(att.steps, EventsAt):
                return None   # (`arrays`: (key, distinct steps, latest times) as arrays, or None)
            if isinstance(att.steps, EventsAt):   # stored: the columns as they are (floats without NaN)
                steps, times = att.steps.array("step"), att.steps.array("t")
                if steps is None or times is None or steps.dtype.kind != "i" or times.dtype.kind != "f" \
                        or not len(steps) or np.isnan(times).any() or not times.min() > 0:
                    steps = times = None
                else:
                    steps, times = steps.astype(np.int64), times.astype(np.float64)
            if steps is None and arrays and att.steps:
                return None
            if steps is None:
                numbers, ts = self.column(att, "step"), self.column(att, "t")
                if numbers and self.all_int(att, "step") and set(map(type, ts)) == {float} and min(ts) > 0:
                    steps, times = np.array(numbers, dtype=np.int64), np.array(ts, dtype=np.float64)
            if steps is not None:
                # numpy: each step's latest time (no NaN, no -0.0: the max is the one value max() keeps)
                order = np.argsort(steps, kind="stable")
                distinct, first = np.unique(steps[order], return_index=True)
                latest = np.maximum.reduceat(times[order], first)
                if len(distinct) and arrays:
                    groups.append((key, distinct, latest))
                elif len(distinct):
                    groups.append((key, distinct.tolist(), latest.tolist(), [None] + np.diff(latest).tolist()))
                continue
            if not _all_int([n for n in numbers if n is not None]):
                raise TypeError("not an int step")
            ends: Dict[int, Any] = {}
            for n, e in zip(numbers, att.steps):
                if n is not None:
                    ends[n] = max(ends[n], e["t"]) if n in ends else e["t"]
            if ends:
                steps_in_order = sorted(ends)
                latest = [ends[n] for n in steps_in_order]
                groups.append((key, steps_in_order, latest,
                               [None] + [b - a for a, b in zip(latest, latest[1:])]))
        if arrays:
            return groups
        last_rank: Dict[int, int] = {}
        for i, (_, steps_in_order, _, _) in enumerate(groups):
            last_rank.update(dict.fromkeys(steps_in_order, i))
        return groups, last_rank

    def _step_spans_all(self) -> List[StepSpan]:
        ends: Dict[Tuple[int, int, int], float] = {}
        for e, _, key in self._of("step"):
            if key is not None and e.get("step") is not None:
                k = (int(key[0]), int(key[1]), int(e["step"]))
                ends[k] = max(ends[k], e["t"]) if k in ends else e["t"]
        order = {k: i for i, k in enumerate(sorted({k[:2] for k in ends}))}
        last_rank: Dict[int, int] = {}
        for k in ends:
            last_rank[k[2]] = max(last_rank.get(k[2], -1), order[k[:2]])
        out: List[StepSpan] = []
        prev: Optional[Tuple[Tuple[int, int], float]] = None
        for k in sorted(ends):
            begin = prev[1] if prev is not None and prev[0] == k[:2] else None
            out.append(StepSpan(k[0], k[1], k[2], begin, ends[k], None if begin is None else ends[k] - begin,
                                order[k[:2]] < last_rank[k[2]]))
            prev = (k[:2], ends[k])
        return out

    def lost_work(self) -> Dict[str, Any]:
        """Steps computed and thrown away (computed again by a later attempt), and
        their seconds. Work of a step cut off by the failure is not a step and is
        not counted; it is part of the recovery time instead."""
        lost, lost_s, _ = self._span_totals()
        return {"lost_steps": lost, "lost_step_s": round(float(lost_s), 6)}

    def ettr(self) -> Dict[str, Any]:
        """Effective training time ratio: productive step time over wall time.

        Meta's ETTR (Kokolis et al., "Revisiting Reliability in Large-Scale Machine
        Learning Research Clusters", HPCA 2025, arXiv:2410.21680) is productive
        runtime over the wall-clock time available to the job, where productive
        runtime leaves out retraining from the last checkpoint and initialization
        after restarts. Google's ML Productivity Goodput (Google Cloud blog,
        "Introducing ML Productivity Goodput", April 2024; the ml-goodput-measurement
        library) is the product of scheduling, runtime and program goodput; its
        runtime goodput is the same ratio, time making preserved forward progress
        over time allocated, with start-up and disruption recovery as badput.

        Here productive time is the `seconds` of the steps not lost (step_spans),
        and wall time is `wall_time`.
        """
        productive = round(float(self._span_totals()[2]), 6)
        wall = self._wall_time()
        return {"productive_s": productive, "wall_time_s": wall,
                "ettr": round(productive / wall, 6) if wall else None}

    def _wall_time(self) -> Optional[float]:
        """`wall_time(self.events)`, from the run_start and run_end events the model indexed."""
        events = self.events
        starts = [events[i]["t"] for i in self._kinds.get("run_start", ())] or [e["t"] for e in events]
        ends = [events[i]["t"] for i in self._kinds.get("run_end", ())] or [e["t"] for e in events]
        return span(min(starts), max(ends)) if starts else None

    def budget_use(self, failure_config: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """Failures charged per budget class against the configured limit.

        Ray counts failures per controller, i.e. per fit(): `left` is the limit
        less the retries of the fit that used the most (None when unlimited, -1,
        or not configured); `exhausted` when a failure of the class was raised.
        """
        config = failure_config or {}
        failures = [(e, fit) for e, fit, _ in self._of("failure")]
        out = {}
        torchrun = any(e.get("budget") == TORCHRUN_BUDGET for e, _ in failures)
        for cls in (*BUDGETS, NOT_RETRYABLE, *((TORCHRUN_BUDGET,) if torchrun else ())):
            limit_key = LIMIT_FIELD.get(cls, "max_failures" if cls == TORCHRUN_BUDGET else None)
            mine = [(e, fit) for e, fit in failures if e.get("budget") == cls]
            # a torchrun agent counts its own failures: the most retries of one agent use the budget
            retries = Counter((fit, e.get("agent")) if cls == TORCHRUN_BUDGET else fit
                              for e, fit in mine if e.get("decision") == "RETRY")
            limit = config.get(limit_key) if limit_key else None
            out[cls] = {
                "limit": limit,
                "charged": len(mine),
                "retries": sum(retries.values()),
                "left": limit - max(retries.values(), default=0) if limit is not None and limit >= 0 else None,
                "exhausted": any(e.get("decision") == "RAISE" for e, _ in mine),
            }
        return out

    def run_metrics(self, failure_config: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """The metrics of one run, as one JSON-able dict (summary.json's
        `run_metrics`). `failure_config` supplies the limits; the first
        run_start's does when it is None. Lists hold one value per recovery
        that has it; the means ignore recoveries without a value."""
        if not failure_config:
            failure_config = self.failure_config()
        recoveries = self.recoveries()
        values = {c: [float(v) for r in recoveries if (v := getattr(r, c)) is not None]
                  for c in (*PARTS, "recovery_s")}
        return {
            "fits": len({fit for _, fit, _ in self._of("run_start")}),
            "attempts": len({key for _, _, key in self._of("attempt_start")}),
            "failures": len(self._of("failure")),
            "faults_injected": len(self._of("fault_injected")),
            "last_step": self._last_recorded_step(),
            "detection_s": values["detection_s"],
            "recovery_s": values["recovery_s"],
            "mean_recovery_s": _mean(values["recovery_s"]),
            "max_recovery_s": max(values["recovery_s"], default=None),
            "recovery_parts_mean_s": {p: _mean(values[p]) for p in PARTS},
            **self.lost_work(),
            **self.ettr(),
            "budgets": self.budget_use(failure_config),
        }

    def _last_recorded_step(self) -> int:
        """The highest step recorded (0 for none), of the steps that have one."""
        steps = self._step_values()
        if isinstance(steps, tuple):
            values, stored, _ = steps
            values = [s for s in values if s is not None]
            if _all_int(values):
                return max(max(values, default=0), int(stored.max()) if len(stored) else 0)
        else:
            steps = [s for s in steps if s is not None]
            if _all_int(steps):
                return max(steps, default=0)
        return max((int(e["step"]) for e, _, _ in self._of("step") if e.get("step") is not None), default=0)


#: the method as defined here: `_span_totals` takes its fast paths only while it is the one in use
_SPANS_BY_ATTEMPT = RunMetrics._step_spans_by_attempt


def _mean(values: List[float]) -> Optional[float]:
    return round(sum(values) / len(values), 6) if values else None

