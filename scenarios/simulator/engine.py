"""The discrete-event run of a training job under failures, many jobs at once.

Why vectorised: a 16,384-accelerator job meets a failure every few hours, so a
plan needs thousands of job-months; each run is a row of numpy arrays and each
failure a column, played in one pass.

Model of one job (times in wall seconds, horizon `days`):

- Training alternates `interval_s` of step work and a checkpoint costing
  `checkpoint_s`; a checkpoint becomes restorable `registration_lag_s` after it
  is written (Ray registers a report once every rank has reported).
- Failures arrive as independent Poisson processes per cause (rates.py). Each
  is decided by the Ray failure policy (ftharness.scenarios.policy_model: its class
  table, its limits and its decide()); RAISE ends the run.
- On a retried failure the work since the latest registered checkpoint is lost
  and training resumes after a recovery time resampled from the calibration
  (plus the wait for a replacement node when a node is lost and the job is not
  elastic; each `startup_timeout_s` of that wait is a worker-group startup
  timeout charged to the controller budget, as Ray does).
- A spot reclaim arrives `drain_notice_s` before its failure; training goes on
  until the deadline (Ray's PREEMPTING), and with `checkpoint_on_notice` the
  work up to the notice is saved when the notice covers a checkpoint and its
  registration.
- Elastic jobs restart at once without the lost node and resize back (a full
  restart from the latest checkpoint, charged to no budget) once it is replaced.
- A failure during a recovery restarts the recovery; failures keep their
  Poisson arrival in wall time whatever the job is doing, so the interruption
  count matches the published one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional

import numpy as np

from ftharness.history.model import BUDGETS, NOT_RETRYABLE
from ftharness.scenarios.policy_model import CLASSES, decide, limits
from ftharness.scenarios.simulator.calibration import Calibration
from ftharness.scenarios.simulator.rates import CAUSES

DAY_S = 86_400.0
MONTH_DAYS = 30.0
RESIZE = "resize"
#: event class codes: policy_model's classes, then a resize (charged to no budget)
CLASS_NAMES = (*CLASSES, RESIZE)
CODE = {name: i for i, name in enumerate(CLASS_NAMES)}


def raise_count(limit: int) -> float:
    """The budget count at which policy_model.decide first says RAISE (inf:
    never); decide() is monotone in the count, so a binary search finds it."""
    if decide(1 << 62, limit) == "RETRY":
        return float("inf")
    lo, hi = 1, 1 << 62
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if decide(mid, limit) == "RAISE" else (mid + 1, hi)
    return float(lo)


@dataclass(frozen=True)
class Job:
    """The job to plan: its size, wall-clock horizon and settings."""

    accelerators: int
    days: float
    interval_s: float                       # step work between checkpoints
    failure_config: Optional[Mapping] = None
    spot_fraction: float = 0.0
    accelerators_per_node: int = 8
    elastic: bool = False
    checkpoint_on_notice: bool = True

    def __post_init__(self):
        if not (isinstance(self.accelerators, int) and self.accelerators > 0):
            raise ValueError(f"--accelerators: {self.accelerators!r} is not a positive integer")
        if not self.days > 0 or not np.isfinite(self.days):
            raise ValueError(f"--days: {self.days!r} is not a positive number")
        if not self.interval_s > 0:
            raise ValueError(f"checkpoint interval {self.interval_s!r} s is not > 0")
        if not 0 <= self.spot_fraction <= 1:
            raise ValueError(f"--spot-fraction: {self.spot_fraction!r} is not between 0 and 1")

    @property
    def horizon_s(self) -> float:
        return self.days * DAY_S


@dataclass
class Events:
    """Failures of `runs` jobs as (runs, K) arrays, each row sorted by `t`
    (the decision time; padding is inf). `resume`: when training can go on
    again if nothing else happens; `save_t`: the work done up to this time is
    saved by a checkpoint on notice (-inf: none); `primary`: an interruption
    (not a derived startup timeout or resize)."""

    t: np.ndarray
    code: np.ndarray
    resume: np.ndarray
    save_t: np.ndarray
    primary: np.ndarray

    @classmethod
    def concat(cls, parts) -> "Events":
        """The parts side by side, each row sorted by `t`."""
        parts = [p for p in parts if p.t.shape[1]] or list(parts[:1])
        t = np.concatenate([p.t for p in parts], axis=1)
        order = np.argsort(t, axis=1, kind="stable")
        take = lambda name: np.take_along_axis(np.concatenate([getattr(p, name) for p in parts], axis=1), order, 1)
        return cls(take("t"), take("code"), take("resume"), take("save_t"), take("primary"))


def _work(d: np.ndarray, interval: float, cycle: float) -> np.ndarray:
    """Step work done in `d` seconds of training from a (re)start."""
    full = np.floor(d / cycle)
    return full * interval + np.minimum(d - full * cycle, interval)


def play(ev: Events, horizon_s: float, interval_s: float, cal: Calibration,
         failure_config: Optional[Mapping]) -> Dict[str, np.ndarray]:
    """Play every row of `ev`: policy decisions, progress and losses per run."""
    runs, k = ev.t.shape
    cycle = interval_s + cal.checkpoint_s
    valid = ev.t <= horizon_s
    t = np.where(valid, ev.t, horizon_s)
    resume = np.where(valid, ev.resume, -np.inf)
    start = np.zeros_like(t)
    if k:
        start[:, 1:] = np.maximum(np.maximum.accumulate(resume, axis=1)[:, :-1], 0.0)
    d = np.clip(t - start, 0.0, None)
    saved = np.floor(np.clip(d - cal.registration_lag_s, 0.0, None) / cycle) * interval_s
    noticed = np.isfinite(ev.save_t) & valid
    at_notice = np.clip(np.where(noticed, ev.save_t, 0.0) - start, 0.0, None)
    saved = np.where(noticed, np.maximum(saved, _work(at_notice, interval_s, cycle)), saved)
    done = _work(d, interval_s, cycle)

    # the policy: per budget, the count at which decide() raises
    lim = limits(failure_config)
    raising = np.zeros((runs, k), bool)
    charged = {}
    for budget in BUDGETS:
        mine = np.isin(ev.code, [CODE[c] for c, (b, _) in CLASSES.items() if b == budget]) & valid
        charged[budget] = np.cumsum(mine, axis=1)
        raising |= mine & (charged[budget] >= raise_count(lim[budget]))
    raising |= np.isin(ev.code, [CODE[c] for c, (b, _) in CLASSES.items() if b == NOT_RETRYABLE]) & valid
    failed = raising.any(axis=1)
    first = np.where(failed, raising.argmax(axis=1), k) if k else np.zeros(runs, int)
    reached = valid & (np.arange(k)[None, :] <= first[:, None])
    last = np.where(failed, first, valid.sum(axis=1) - 1)

    resumed = np.maximum(np.where(reached, resume, 0.0).max(axis=1, initial=0.0), 0.0)
    tail = np.where(failed, 0.0, _work(np.clip(horizon_s - resumed, 0.0, None), interval_s, cycle))
    wall = np.where(failed, np.take_along_axis(t, np.minimum(first, max(k - 1, 0))[:, None], 1)[:, 0]
                    if k else horizon_s, horizon_s)
    productive = np.where(reached, saved, 0.0).sum(axis=1) + tail
    trained = np.where(reached, d, 0.0).sum(axis=1) + np.where(failed, 0.0, np.clip(horizon_s - resumed, 0, None))
    counts = {b: np.where(last >= 0, np.take_along_axis(c, np.clip(last, 0, None)[:, None], 1)[:, 0], 0)
              if k else np.zeros(runs, int) for b, c in charged.items()}
    error_code = np.where(failed, np.take_along_axis(ev.code, np.minimum(first, max(k - 1, 0))[:, None], 1)[:, 0]
                          if k else -1, -1)
    return {"failed": failed, "error_code": error_code, "decisions": reached.sum(axis=1),
            "interruptions": (reached & ev.primary).sum(axis=1), "wall_s": wall, "productive_s": productive,
            "lost_s": np.where(reached, done - saved, 0.0).sum(axis=1), "down_s": wall - trained,
            **{f"count_{b}": v for b, v in counts.items()}}


def cause_rates(job: Job, rates: Mapping[str, float]) -> Dict[str, float]:
    """Cause -> failures per second for the whole job."""
    out = {}
    for name, rate in rates.items():
        n = job.accelerators * (job.spot_fraction if CAUSES[name].spot_only else 1.0)
        if rate > 0 and n > 0:
            out[name] = rate * n / 3600.0
    return out


#: runs x failures of a run that one plan simulates at most (about 160 MB an array)
MAX_EVENTS = 20_000_000


def sample(job: Job, cal: Calibration, rates: Mapping[str, float], runs: int,
           rng: np.random.Generator) -> Events:
    """Failure events of `runs` independent jobs (they do not depend on the
    checkpoint interval, so one sample serves a whole cadence sweep)."""
    per_s = cause_rates(job, rates)
    names = list(per_s)
    total = sum(per_s.values()) * job.horizon_s
    n = rng.poisson(total, runs) if names else np.zeros(runs, int)
    k = int(n.max(initial=0))
    if runs * k > MAX_EVENTS:   # a few float arrays of runs x k: refused before they take the memory
        raise ValueError(f"--runs {runs}: up to {k:,} failures a run, {runs * k:,} events to simulate (at most "
                         f"{MAX_EVENTS:,}); give fewer --runs, fewer --days or fewer --accelerators")
    arrive = np.where(np.arange(k)[None, :] < n[:, None], rng.uniform(0.0, job.horizon_s, (runs, k)), np.inf)
    which = rng.choice(len(names), size=(runs, k), p=np.array([per_s[c] for c in names]) / sum(per_s.values())) \
        if names else np.zeros((runs, k), int)
    causes = [CAUSES[c] for c in names]
    code = np.array([CODE[c.failure_class] for c in causes] or [0])[which]
    node_loss = np.array([c.node_loss for c in causes] or [False])[which]
    spot = np.array([c.spot_only for c in causes] or [False])[which]
    recovery = np.zeros((runs, k))
    for i, c in enumerate(causes):
        values = np.asarray(cal.recovery_samples(c.kind))
        mask = which == i
        recovery[mask] = values[rng.integers(len(values), size=int(mask.sum()))]
    notice = cal.drain_notice_s
    t = np.where(spot, arrive + notice, arrive)
    can_save = job.checkpoint_on_notice and notice >= cal.checkpoint_s + cal.registration_lag_s
    save_t = np.where(spot & can_save, arrive, -np.inf)
    wait = cal.replacement_s if not job.elastic else 0.0
    resume = t + recovery + np.where(node_loss, wait, 0.0)
    parts = [Events(t, code, resume, save_t, np.ones((runs, k), bool))]
    lost_node = node_loss & np.isfinite(t)
    if job.elastic and cal.replacement_s > 0:           # resize back once the node is replaced
        rt = np.where(lost_node, t + cal.replacement_s, np.inf)
        restart = np.asarray(cal.recovery_samples(RESIZE))[rng.integers(len(cal.recovery_samples(RESIZE)),
                                                                         size=(runs, k))]
        parts.append(Events(rt, np.full((runs, k), CODE[RESIZE]), rt + restart, np.full((runs, k), -np.inf),
                            np.zeros((runs, k), bool)))
    elif not job.elastic:                                # startup timeouts while waiting for the node
        for i in range(1, int(cal.replacement_s // cal.startup_timeout_s) + 1):
            tt = np.where(lost_node, t + i * cal.startup_timeout_s, np.inf)
            parts.append(Events(tt, np.full((runs, k), CODE["controller"]), resume, np.full((runs, k), -np.inf),
                                np.zeros((runs, k), bool)))
    return Events.concat(parts)


@dataclass
class Runs:
    """Monte Carlo results: one entry per simulated run."""

    job: Job
    values: Dict[str, np.ndarray]
    seed: int

    def __len__(self) -> int:
        return len(self.values["failed"])

    @property
    def job_months(self) -> float:
        return len(self) * self.job.days / MONTH_DAYS

    def exhausted(self, budget: str) -> float:
        """Share of runs that raised on a failure of `budget`."""
        codes = [CODE[c] for c, (b, _) in CLASSES.items() if b == budget]
        return float(np.isin(self.values["error_code"], codes).mean())

    def error_type(self, run: int) -> Optional[str]:
        code = int(self.values["error_code"][run])
        return None if code < 0 else CLASSES[CLASS_NAMES[code]][1]

    def mean_interval(self, key: str, level: float = 0.95):
        v = self.values[key]
        lo, hi = np.percentile(v, [(1 - level) / 2 * 100, (1 + level) / 2 * 100])
        return float(v.mean()), float(lo), float(hi)

    def goodput(self) -> float:
        """Mean ETTR: productive (saved) step time over wall time."""
        return float((self.values["productive_s"] / self.values["wall_s"]).mean())


def simulate(job: Job, cal: Calibration, rates: Mapping[str, float], runs: int = 1000, seed: int = 0,
             events: Optional[Events] = None, batch: int = 2000) -> Runs:
    """`runs` independent runs of `job`, reproducible from `seed` (or played
    on the given `events`, for common random numbers across settings)."""
    if events is not None:
        return Runs(job, play(events, job.horizon_s, job.interval_s, cal, job.failure_config), seed)
    rng = np.random.default_rng(seed)
    chunks = []
    for start in range(0, runs, batch):
        ev = sample(job, cal, rates, min(batch, runs - start), rng)
        chunks.append(play(ev, job.horizon_s, job.interval_s, cal, job.failure_config))
    values = {key: np.concatenate([c[key] for c in chunks]) for key in chunks[0]} if chunks else {}
    return Runs(job, values, seed)
