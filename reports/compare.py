"""Metrics compared across configurations (profiles, Ray versions, clusters).

`groups` maps a configuration's label to its results folders (or suite
folders). Each configuration gets the median and 95th percentile of its
recovery and detection times (one sample per recovery) and of its lost steps,
ETTR and wall time (one sample per run). Runs are few and recovery times
skewed, so the difference of median recovery time to the first configuration
comes with a percentile bootstrap 95% interval rather than a t-test.
"""

from __future__ import annotations

import os
from html import escape
from typing import Dict, Iterable, List, Mapping, Sequence, Tuple

import numpy as np
import pandas as pd

from reports import metrics
from reports.frames import Frames, PathLike, read_results
from reports.html import page, recovery_figure, section, svg, table

RESAMPLES, SEED, LEVEL = 2000, 0, 0.95
#: per-recovery samples (recovery frame) and per-run samples (scenarios frame)
RECOVERY_METRICS = ("recovery_s", "detection_s")
RUN_METRICS = {"lost_steps": "metrics.lost_steps", "ettr": "metrics.ettr", "wall_time_s": "wall_time_s"}


def bootstrap_median_diff(base: Sequence[float], other: Sequence[float], resamples: int = RESAMPLES,
                          seed: int = SEED, level: float = LEVEL) -> Tuple[float, float, float]:
    """(median(other) - median(base), low, high): the observed difference and
    its percentile bootstrap interval, both samples resampled independently."""
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if not len(a) or not len(b):
        return (np.nan, np.nan, np.nan)
    rng = np.random.default_rng(seed)
    diffs = (np.median(rng.choice(b, (resamples, len(b))), axis=1)
             - np.median(rng.choice(a, (resamples, len(a))), axis=1))
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(diffs, [tail, 100 - tail])
    return float(np.median(b) - np.median(a)), float(low), float(high)


def _stats(values: Sequence[float], name: str) -> Dict[str, float]:
    v = np.asarray(values, dtype=float)
    if not len(v):
        return {f"{name}_median": np.nan, f"{name}_p95": np.nan}
    return {f"{name}_median": float(np.median(v)), f"{name}_p95": float(np.percentile(v, 95))}


def _wall_times(folders: Iterable[str]) -> List[float]:
    """The job's wall time per run, from its history (metrics.wall_time)."""
    return [metrics.wall_time(read_results(f)[1]) for f in folders]


def samples(groups: Mapping[str, Sequence[PathLike]]) -> Dict[str, Dict[str, list]]:
    """label -> metric -> its samples, in the order of `groups`."""
    out = {}
    for label, paths in groups.items():
        frames = Frames.load(paths)
        per_run = frames.scenarios.assign(wall_time_s=_wall_times(frames.scenarios["results"]))
        out[label] = {**{m: frames.recovery[m].dropna().tolist() for m in RECOVERY_METRICS},
                      **{m: per_run[col].dropna().tolist() for m, col in RUN_METRICS.items()},
                      "runs": len(frames.scenarios)}
    return out


def compare(groups: Mapping[str, Sequence[PathLike]], resamples: int = RESAMPLES,
            seed: int = SEED) -> pd.DataFrame:
    """One row per configuration: runs, recoveries, median and p95 of each
    metric, and the bootstrap interval of its median recovery time less the
    first configuration's (NaN on the first row)."""
    return _table(samples(groups), resamples, seed)


def _table(found: Dict[str, Dict[str, list]], resamples: int, seed: int) -> pd.DataFrame:
    base = next(iter(found.values()))["recovery_s"] if found else []
    rows = []
    for i, (label, s) in enumerate(found.items()):
        diff = (np.nan,) * 3 if i == 0 else bootstrap_median_diff(base, s["recovery_s"], resamples, seed)
        row = {"configuration": label, "runs": s["runs"], "recoveries": len(s["recovery_s"])}
        for m in (*RECOVERY_METRICS, *RUN_METRICS):
            row.update(_stats(s[m], m))
        row.update(dict(zip(("recovery_median_diff_s", "recovery_diff_ci_low_s", "recovery_diff_ci_high_s"), diff)))
        rows.append(row)
    return pd.DataFrame(rows)


def _by_metric(df: pd.DataFrame) -> pd.DataFrame:
    """A metric per row and a configuration per column: the table stays
    narrow whatever the number of metrics."""
    return df.set_index("configuration").astype(object).T.rename_axis("metric").reset_index()


def write_compare(groups: Mapping[str, Sequence[PathLike]], out_dir: PathLike,
                  resamples: int = RESAMPLES, seed: int = SEED) -> str:
    """compare.csv and compare.html (the table and the recovery times per
    configuration) in out_dir; returns the path of compare.html."""
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    found = samples(groups)
    df = _table(found, resamples, seed)
    df.to_csv(os.path.join(out_dir, "compare.csv"), index=False)
    recoveries = {label: s["recovery_s"] for label, s in found.items()}
    first = next(iter(groups), "")
    note = (f'<p class="note">Medians and 95th percentiles; recovery and detection per recovery, the '
            f"rest per run. The difference is of median recovery time against {escape(first)}, with a percentile "
            f"bootstrap {LEVEL:.0%} interval ({resamples} resamples, seed {seed}).</p>")
    body = ("<h1>ftharness comparison</h1>"
            + section("compare", "Metrics per configuration", table(_by_metric(df), "compare") + note)
            + section("recovery", "Recovery time per configuration",
                      f'<div class="plot">{svg(recovery_figure(recoveries))}</div>'))
    path = os.path.join(out_dir, "compare.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page("ftharness comparison", body))
    return path
