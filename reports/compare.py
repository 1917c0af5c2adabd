"""Metrics compared across configurations (profiles, Ray versions, clusters).

`groups` maps a configuration's label to its results folders (or suite
folders). Each configuration gets the median and 95th percentile of its
recovery and detection times (one sample per recovery) and of its lost steps,
ETTR and wall time (one sample per run). Runs are few and recovery times
skewed, so the difference of median recovery time to the first configuration
comes with a percentile bootstrap 95% interval rather than a t-test; a group
with fewer than MIN_SAMPLES samples gets no interval, since resampling one
value gives a falsely certain [0, 0].

`ftharness compare` prints the same per metric (`metric_rows`, `terminal_table`)
and judges `--fail-if` gates (`parse_gate`, `check_gates`), so CI can hold a
configuration to its baseline; the gates are written into compare.html and
compare.csv too.

Counting is honest (`select_runs`): a run named twice, or copied (the same history digest,
history_end.digest), counts once in a configuration; a label given twice is refused; INCONCLUSIVE,
ERROR and damaged runs (no verdict, an incomplete history) are left out and
listed; runs of different scenarios are never pooled into one configuration
unless asked (`--pool`).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from html import escape
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import pandas as pd

from ftharness.errors import InputError
from ftharness.reports import metrics
from ftharness.reports.frames import Frames, PathLike, missing, read_results, results_folders
from ftharness.reports.html import page, recovery_figure, section, svg, table

RESAMPLES, SEED, LEVEL = 2000, 0, 0.95
#: fewer samples than this in a group: no interval (one sample would give [0, 0])
MIN_SAMPLES = 3
#: per-recovery samples (recovery frame) and per-run samples (scenarios frame)
RECOVERY_METRICS = ("recovery_s", "detection_s")
RUN_METRICS = {"lost_steps": "metrics.lost_steps", "ettr": "metrics.ettr", "wall_time_s": "wall_time_s"}


def bootstrap_median_diff(base: Sequence[float], other: Sequence[float], resamples: int = RESAMPLES,
                          seed: int = SEED, level: float = LEVEL) -> Tuple[float, float, float]:
    """(median(other) - median(base), low, high): the observed difference and
    its percentile bootstrap interval, both samples resampled independently;
    no interval (NaN) when a sample has fewer than MIN_SAMPLES values."""
    a, b = np.asarray(base, dtype=float), np.asarray(other, dtype=float)
    if not len(a) or not len(b):
        return (np.nan, np.nan, np.nan)
    if min(len(a), len(b)) < MIN_SAMPLES:  # resampling one or two values gives a false, tight interval
        return float(np.median(b) - np.median(a)), np.nan, np.nan
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


#: verdicts whose runs are compared: an INCONCLUSIVE or ERROR run's figures prove nothing
COMPARED_VERDICTS = ("PASS", "FAIL")


def _left_out(folder: str) -> Optional[str]:
    """Why a run is not compared (None when it is)."""
    from ftharness.reports.judgement import judged_summary

    try:
        summary = judged_summary(folder)
    except (OSError, ValueError) as e:
        return f"damaged ({type(e).__name__}: {e})"
    if not summary.get("verdict"):
        return "damaged (no verdict in summary.json and none could be judged)"
    if (summary.get("history") or {}).get("complete") is False:
        problems = (summary.get("history") or {}).get("problems") or []
        return f"damaged history ({problems[0] if problems else 'incomplete'})"
    if summary["verdict"] not in COMPARED_VERDICTS:
        return f"verdict {summary['verdict']}"
    return None


def history_digest(folder: str) -> Optional[str]:
    """The digest the history's own history_end records (one run, wherever its folder was
    copied); None without one (a run that never closed its history)."""
    from ftharness.history.records import HISTORY_FILE, open_regular

    path = os.path.join(folder, HISTORY_FILE)
    try:
        with open_regular(path) as f:   # the one input reader: a regular file, never waited on
            f.seek(max(0, os.fstat(f.fileno()).st_size - 65536))
            tail = f.read().decode("utf-8", "replace").splitlines()
    except OSError:
        return None
    import json

    for line in reversed(tail):
        if '"history_end"' not in line:
            continue
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if isinstance(e, dict) and e.get("kind") == "history_end" and isinstance(e.get("digest"), str):
            return e["digest"]
    return None


def select_runs(groups: Mapping[str, Sequence[PathLike]], pool: bool = False
                ) -> Tuple[Dict[str, List[str]], List[Dict[str, str]]]:
    """(label -> its distinct comparable runs, the runs left out with why).
    InputError (a ValueError) when a configuration mixes scenarios and `pool` is off, or has
    no run left to compare."""
    from ftharness.reports.judgement import judged_summary

    kept: Dict[str, List[str]] = {}
    excluded: List[Dict[str, str]] = []
    for label, paths in groups.items():
        seen, mine = set(), []
        by_digest: Dict[str, str] = {}   # a history's digest -> the first folder of this configuration holding it
        for folder in results_folders(paths):
            real = os.path.realpath(folder)
            if real in seen:
                excluded.append({"configuration": label, "results": folder, "reason": "named more than once"})
                continue
            seen.add(real)
            digest = history_digest(folder)
            if digest is not None and digest in by_digest:
                excluded.append({"configuration": label, "results": folder,
                                 "reason": f"the same run as {by_digest[digest]} (history digest {digest[:12]})"})
                continue
            if digest is not None:
                by_digest[digest] = folder
            why = _left_out(folder)
            if why:
                excluded.append({"configuration": label, "results": folder, "reason": why})
            else:
                mine.append(folder)
        names = sorted({str(judged_summary(f).get("scenario")) for f in mine})
        if len(names) > 1 and not pool:
            raise InputError(f"compare: {label} holds runs of {len(names)} scenarios ({', '.join(names)}); "
                             f"give one scenario per configuration, or pass --pool to pool them")
        if not mine:
            raise InputError(f"compare: {label} has no run to compare (PASS or FAIL with a complete history); "
                             f"left out: " + "; ".join(f"{e['results']}: {e['reason']}" for e in excluded
                                                       if e["configuration"] == label))
        kept[label] = mine
    return kept, excluded


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


def _gate_columns(df: pd.DataFrame, judged: Sequence[Tuple[bool, str]]) -> pd.DataFrame:
    """compare.csv's gate columns: per configuration, the --fail-if lines that
    judged it and whether one tripped."""
    lines = {label: [line for _, line in judged if f" of {label} " in line or f" in {label}" in line]
             for label in df["configuration"]}
    tripped = {label: any(hit for hit, line in judged if line in lines[label]) for label in df["configuration"]}
    return df.assign(fail_if=[" | ".join(lines[c]) for c in df["configuration"]],
                     fail_if_tripped=[tripped[c] for c in df["configuration"]])


def write_compare(groups: Mapping[str, Sequence[PathLike]], out_dir: PathLike,
                  resamples: int = RESAMPLES, seed: int = SEED,
                  found: Optional[Dict[str, Dict[str, list]]] = None,
                  gates: Sequence[Tuple[bool, str]] = (), excluded: Sequence[Dict[str, str]] = ()) -> str:
    """compare.csv and compare.html (the table, the --fail-if gates as judged,
    the runs left out, and the recovery times per configuration) in out_dir;
    returns the path of compare.html. `found`: the samples, when the caller
    has loaded them already."""
    out_dir = os.fspath(out_dir)
    os.makedirs(out_dir, exist_ok=True)
    found = samples(groups) if found is None else found
    df = _table(found, resamples, seed)
    _gate_columns(df, gates).to_csv(os.path.join(out_dir, "compare.csv"), index=False)
    gate_html = ("<ul class=\"reasons gates\">" + "".join(
        f'<li class="{"mismatch" if hit else "ok"}">{escape(line)}</li>' for hit, line in gates) + "</ul>"
        if gates else '<p class="note">No --fail-if gate was given.</p>')
    left_out = (table(pd.DataFrame(list(excluded), columns=["configuration", "results", "reason"]), "excluded")
                if excluded else '<p class="note">Every run named was compared.</p>')
    recoveries = {label: s["recovery_s"] for label, s in found.items()}
    first = next(iter(groups), "")
    note = (f'<p class="note">Medians and 95th percentiles; recovery and detection per recovery, the '
            f"rest per run. The difference is of median recovery time against {escape(first)}, with a percentile "
            f"bootstrap {LEVEL:.0%} interval ({resamples} resamples, seed {seed}).</p>")
    body = ("<h1>ftharness comparison</h1>" + compare_banner(groups, gates, excluded)
            + metadata_html(groups, resamples, seed)
            + section("compare", "Metrics per configuration", table(_by_metric(df), "compare") + note)
            + section("gates", "Gates (--fail-if)", gate_html)
            + section("runs", "Runs compared", table(run_list(groups), "runs"))
            + section("excluded", "Runs left out", left_out)
            + section("recovery", "Recovery time per configuration",
                      f'<div class="plot">{svg(recovery_figure(recoveries))}</div>'))
    path = os.path.join(out_dir, "compare.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page("ftharness comparison", body))
    return path


def compare_banner(groups: Mapping[str, Sequence[PathLike]], gates: Sequence[Tuple[bool, str]],
                   excluded: Sequence[Dict[str, str]] = ()) -> str:
    """The page's verdict: FAIL when a --fail-if gate tripped, PASS when every gate held, NOT
    JUDGED without a gate (a comparison alone judges nothing); with the runs counted."""
    tripped = [line for hit, line in gates if hit]
    if tripped:
        head, cls, items = "FAIL", "fail", tripped
    elif gates:
        head, cls, items = "PASS", "pass", []
    else:
        head, cls, items = "NOT JUDGED", "unknown", ["no --fail-if gate was given: the figures are shown, not judged"]
    runs = sum(len(v) for v in groups.values())
    counts = (f"{len(gates) - len(tripped)} of {len(gates)} gates held; " if gates else "") + \
        f"{runs} run(s) in {len(groups)} configuration(s)" + (f", {len(excluded)} left out" if excluded else "")
    li = "".join(f"<li>{escape(i)}</li>" for i in items)
    return f'<div class="banner {cls}"><strong>{head}</strong> ({escape(counts)}){"<ul>" + li + "</ul>" if li else ""}</div>'


def run_list(groups: Mapping[str, Sequence[PathLike]]) -> pd.DataFrame:
    """One row per run compared: its configuration, folder, scenario, verdict, Ray version,
    profile, wall time and the digest that identifies its history."""
    from ftharness.reports.judgement import judged_summary

    rows = []
    for label, folders in groups.items():
        for folder in folders:
            s = judged_summary(str(folder))
            versions, settings = (v if isinstance(v, dict) else {} for v in (s.get("versions"), s.get("settings")))
            rows.append({"configuration": label, "results": str(folder), "scenario": s.get("scenario"),
                         "verdict": s.get("verdict"), "ray": versions.get("ray"), "profile": settings.get("profile"),
                         "wall s": s.get("wall_time_s"),
                         "history digest": (history_digest(str(folder)) or "")[:12]})
    return pd.DataFrame(rows, columns=["configuration", "results", "scenario", "verdict", "ray", "profile",
                                       "wall s", "history digest"])


def metadata_html(groups: Mapping[str, Sequence[PathLike]], resamples: int, seed: int) -> str:
    """When and by what the page was written, and over what."""
    import datetime

    import ftharness

    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    labels = ", ".join(f"{k} ({len(v)})" for k, v in groups.items())
    return (f'<p class="note">generated {when} by ftharness {escape(ftharness.__version__)}; configurations: '
            f"{escape(labels)}; bootstrap {resamples} resamples, seed {seed}</p>")


# ------------------------------------------------------------ terminal and gates
METRICS = (*RECOVERY_METRICS, *RUN_METRICS)
STATISTICS = ("median", "p95")


def metric_rows(found: Dict[str, Dict[str, list]], resamples: int = RESAMPLES, seed: int = SEED) -> pd.DataFrame:
    """One row per metric and configuration: n, median, p95, and the difference
    of medians against the first configuration with its bootstrap interval
    (NaN on the first, and where a group has fewer than MIN_SAMPLES)."""
    first = next(iter(found), None)
    rows = []
    for m in METRICS:
        for label, s in found.items():
            diff = (np.nan,) * 3 if label == first else \
                bootstrap_median_diff(found[first][m], s[m], resamples, seed)
            stats = _stats(s[m], m)
            rows.append({"metric": m, "configuration": label, "n": len(s[m]), "median": stats[f"{m}_median"],
                         "p95": stats[f"{m}_p95"], **dict(zip(("diff", "ci_low", "ci_high"), diff))})
    return pd.DataFrame(rows)


def few_samples(found: Dict[str, Dict[str, list]]) -> List[str]:
    """One warning per configuration that has fewer than MIN_SAMPLES of some
    metric: its intervals are not shown."""
    out = []
    for label, s in found.items():
        thin = [f"{m} ({len(s[m])})" for m in METRICS if len(s[m]) < MIN_SAMPLES]
        if thin:
            out.append(f"{label}: fewer than {MIN_SAMPLES} samples of {', '.join(thin)}; no interval for them")
    return out


def _num(v: float) -> str:
    return "-" if missing(v) else f"{v:.3f}"


def terminal_table(rows: pd.DataFrame) -> str:
    """The comparison as fixed-width text, for the terminal and CI logs."""
    head = ["metric", "configuration", "n", "median", "p95", f"diff of medians [{LEVEL:.0%} CI]"]
    first = rows["configuration"].iloc[0] if len(rows) else None
    body = []
    for r in rows.to_dict("records"):
        if r["configuration"] == first:
            diff = "(baseline)"
        elif missing(r["diff"]):
            diff = "-"
        else:
            ci = "" if missing(r["ci_low"]) else f" [{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
            diff = f"{r['diff']:+.3f}{ci}"
        body.append([r["metric"], str(r["configuration"]), str(r["n"]), _num(r["median"]), _num(r["p95"]), diff])
    widths = [max(len(line[i]) for line in [head, *body]) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) if i < 2 else c.rjust(w) if i < 5 else c
                               for i, (c, w) in enumerate(zip(line, widths))).rstrip() for line in [head, *body])


@dataclasses.dataclass(frozen=True)
class Gate:
    """`--fail-if "METRIC.STAT OP THRESHOLD"`: N% (signed or not) is the change
    against the first configuration, +N / -N the difference in the metric's
    units, a bare N the statistic itself (then every configuration is held to it)."""
    text: str
    metric: str
    statistic: str
    op: str
    value: float
    kind: str  # "relative", "difference" or "absolute"

    def tripped(self, base: float, got: float) -> bool:
        x = {"relative": lambda: _relative(base, got), "difference": lambda: got - base,
             "absolute": lambda: got}[self.kind]()
        return (x > self.value) if self.op == ">" else (x < self.value)


GATE = re.compile(r"\s*(\w+)\.(\w+)\s*([<>])\s*([+-]?)(\d+(?:\.\d*)?|\.\d+)\s*(%?)\s*")


def parse_gate(text: str) -> Gate:
    """A --fail-if expression; ValueError naming what is wrong otherwise."""
    m = GATE.fullmatch(text)
    if not m:
        raise ValueError(f'--fail-if {text!r}: not METRIC.STAT > or < THRESHOLD (e.g. "recovery_s.median > +10%")')
    metric, stat, op, sign, number, pct = m.groups()
    if metric not in METRICS:
        raise ValueError(f"--fail-if {text!r}: unknown metric {metric} (one of {', '.join(METRICS)})")
    if stat not in STATISTICS:
        raise ValueError(f"--fail-if {text!r}: unknown statistic {stat} (median or p95)")
    kind = "relative" if pct else "difference" if sign else "absolute"
    return Gate(text.strip(), metric, stat, op, float(sign + number), kind)


def _relative(base: float, got: float) -> float:
    """Change in percent; from a zero baseline any rise is infinite."""
    if base == 0:
        return 0.0 if got == 0 else math.copysign(math.inf, got)
    return (got - base) / abs(base) * 100


def check_gates(gates: Sequence[Gate], rows: pd.DataFrame) -> List[Tuple[bool, str]]:
    """(tripped, line) per gate and configuration it judges, in gate order;
    the line names the metric, the configurations and the numbers."""
    out = []
    for g in gates:
        sel = rows[rows["metric"] == g.metric].set_index("configuration")[g.statistic]
        base_label, base = sel.index[0], sel.iloc[0]
        judged = list(sel.items()) if g.kind == "absolute" else list(sel.items())[1:]
        for label, got in judged:
            if missing(got) or (g.kind != "absolute" and missing(base)):
                out.append((False, f"?    --fail-if {g.text!r}: no {g.metric} samples to judge in {label}"
                                   f"{'' if g.kind == 'absolute' else ' or ' + str(base_label)}"))
                continue
            against = "" if g.kind == "absolute" else \
                f" against {base_label} {base:.3f} ({_relative(base, got):+.1f}%, {got - base:+.3f})"
            hit = g.tripped(base, got)
            out.append((hit, f"{'FAIL' if hit else 'ok  '} --fail-if {g.text!r}: {g.metric} {g.statistic} "
                             f"of {label} {got:.3f}{against}"))
    return out
