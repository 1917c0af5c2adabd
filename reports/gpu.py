"""GPU facts of a run, from its history: devices per rank, process-group set-up per
recovery, GPU memory at each (re)start, and zombie GPU memory.

Pure over the events (worker_start's `device`, `gpu` and `pg`, worker_end's peak;
ftharness.harness.job.device records them). `gpu_summary` is what summary.json keeps
under `gpu`; `gpu_lines` the terminal's lines (scripts/gpu-check.sh prints them);
`gpu_section` the report's section (empty on a CPU run with nothing to show).

Zombie GPU memory: a worker of an earlier attempt whose pid nvidia-smi still lists as
holding memory on a GPU when a later attempt's worker starts (Ray once left killed
workers' CUDA contexts alive). It is judged only when nvidia-smi's pids are comparable
with the workers' own (the starting worker finds its own pid in the list; in another PID
namespace it does not), and says so when it cannot judge.
"""

from __future__ import annotations

import html
import os
from typing import Any, Dict, Iterable, List, Optional

from ftharness.history.columns import Events
from ftharness.history.model import History

MIB = 1 << 20


def _mib(v: Any) -> Optional[float]:
    return None if v is None else round(float(v) / MIB, 1)


def rank_rows(h: History) -> List[Dict[str, Any]]:
    """One row per worker start: attempt, rank, pid, device, GPU, memory, process group."""
    rows = []
    for att in h.ordered():
        for e in sorted(att.worker_starts, key=lambda e: (e.get("rank") or 0)):
            gpu, pg = e.get("gpu") or {}, e.get("pg") or {}
            rows.append({"attempt": h.label(att.key), "key": att.key, "rank": e.get("rank"), "pid": e.get("pid"),
                         "device": e.get("device") or gpu.get("device"), "gpu_name": gpu.get("gpu_name"),
                         "gpu_uuid": gpu.get("gpu_uuid"), "mem_allocated_mib": _mib(gpu.get("mem_allocated")),
                         "mem_free_mib": _mib(gpu.get("mem_free")), "mem_total_mib": _mib(gpu.get("mem_total")),
                         "pg_backend": pg.get("backend"), "pg_init_s": pg.get("init_s"),
                         "pg_warmup_s": pg.get("warmup_s"), "pg_error": pg.get("error")})
    return rows


def _pg_setup(rows: List[Dict[str, Any]]) -> Optional[float]:
    """The slowest rank's process-group set-up (init where recorded, plus the first collective)."""
    times = [(r["pg_init_s"] or 0) + r["pg_warmup_s"] for r in rows if r.get("pg_warmup_s") is not None]
    return round(max(times), 4) if times else None


def recovery_rows(h: History, ranks: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    """Per recovery: its parts as the model measured them, and the recovering attempt's
    process-group set-up (part of its restore and first step: Ray builds the group before the
    train function; NCCL makes its communicator at the first collective)."""
    out = []
    for r in h.recoveries():
        mine = [x for x in ranks if r.recovered is not None and x["key"] == r.recovered]
        out.append({"fault_kind": r.fault_kind or r.source, "recovery_s": r.recovery_s,
                    "teardown_s": r.teardown_s, "restore_s": r.restore_s, "first_step_s": r.first_step_s,
                    "pg_backend": next((x["pg_backend"] for x in mine if x["pg_backend"]), None),
                    "pg_setup_s": _pg_setup(mine)})
    return out


def zombies(h: History) -> Dict[str, Any]:
    """{"judged": bool, "why": str, "findings": [...]} (see the module doc)."""
    findings, comparable, listed = [], False, False
    earlier: Dict[Any, Dict[str, Any]] = {}
    for att in h.ordered():
        starts = att.worker_starts
        own = {e.get("pid") for e in starts}
        for e in starts:
            procs = (e.get("gpu") or {}).get("gpu_processes")
            if procs is None:
                continue
            listed = True
            pids = {p.get("pid"): p for p in procs}
            comparable = comparable or e.get("pid") in pids
            for pid, p in pids.items():
                was = earlier.get(pid)
                if was is not None and pid not in own:
                    findings.append({"pid": pid, "rank": was["rank"], "attempt": was["attempt"],
                                     "used_mib": p.get("used_mib"), "gpu_uuid": p.get("gpu_uuid"),
                                     "seen_at": h.label(att.key), "seen_by_rank": e.get("rank")})
        for e in starts:
            earlier.setdefault(e.get("pid"), {"rank": e.get("rank"), "attempt": h.label(att.key)})
    unique = list({(f["pid"], f["seen_at"]): f for f in findings}.values())
    if not listed:
        return {"judged": False, "why": "no worker recorded nvidia-smi's GPU processes", "findings": []}
    if not comparable:
        return {"judged": False, "why": "nvidia-smi lists no live worker's own pid (another PID namespace?)",
                "findings": []}
    return {"judged": True, "why": "", "findings": unique}


def gpu_summary(events: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """summary.json's `gpu`: devices, backend, set-up per recovery, memory, zombie findings
    ({"error": ...} for a history these facts cannot be read from: they never fail a summary)."""
    try:
        return _gpu_summary(events if isinstance(events, Events) else list(events))
    except Exception as e:  # noqa: BLE001 - malformed facts show as such
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}


def _gpu_summary(events: List[Dict[str, Any]]) -> Dict[str, Any]:
    h = History(events)
    ranks = rank_rows(h)
    devices = sorted({str(r["device"]) for r in ranks if r["device"]})
    names = sorted({r["gpu_name"] for r in ranks if r["gpu_name"]})
    z = zombies(h)
    return {
        "devices": devices, "gpu_names": names,
        "backend": next((r["pg_backend"] for r in ranks if r["pg_backend"]), None),
        "pg_setup_first_s": _pg_setup([r for r in ranks if ranks and r["key"] == ranks[0]["key"]]),
        "recoveries": [{k: v for k, v in r.items() if v is not None} for r in recovery_rows(h, ranks)],
        "memory": [{k: r[k] for k in ("attempt", "rank", "device", "mem_allocated_mib", "mem_free_mib")}
                   for r in ranks if r["mem_free_mib"] is not None],
        "zombie_memory": z,
    }


def gpu_lines(s: Dict[str, Any]) -> List[str]:
    """The GPU facts of a summary's `gpu` as terminal lines."""
    if not s:
        return []
    if s.get("error"):
        return [f"GPU facts unreadable ({s['error']})"]
    out = [f"devices {', '.join(s.get('devices') or ['?'])}"
           + (f" ({', '.join(s['gpu_names'])})" if s.get("gpu_names") else "")
           + f"; backend {s.get('backend') or '?'}; first process-group set-up {_s(s.get('pg_setup_first_s'))}"]
    for i, r in enumerate(s.get("recoveries") or []):
        out.append(f"recovery {i + 1} ({r.get('fault_kind')}): {_s(r.get('recovery_s'))}, teardown "
                   f"{_s(r.get('teardown_s'))}, restore {_s(r.get('restore_s'))}, first step "
                   f"{_s(r.get('first_step_s'))}; {r.get('pg_backend') or 'process group'} set-up {_s(r.get('pg_setup_s'))}")
    for m in s.get("memory") or []:
        out.append(f"{m['attempt']} rank {m['rank']} {m['device']}: {m['mem_allocated_mib']} MiB allocated, "
                   f"{m['mem_free_mib']} MiB free on the device")
    z = s.get("zombie_memory") or {}
    if not z.get("judged"):
        out.append(f"zombie GPU memory: not judged ({z.get('why') or 'no GPU facts'})")
    for f in z.get("findings") or []:
        out.append(f"FINDING zombie GPU memory: pid {f['pid']} (rank {f['rank']} of {f['attempt']}) still held "
                   f"{f.get('used_mib')} MiB when {f['seen_at']} started")
    if z.get("judged") and not z.get("findings"):
        out.append("zombie GPU memory: none (no dead worker's pid held GPU memory at a restart)")
    return out


def _s(v: Any) -> str:
    return "?" if v is None else f"{float(v):.2f} s"


def gpu_section(folders: Iterable[str]) -> str:
    """The report's GPU section (HTML) for the results folders whose workers trained on a
    GPU; "" when none did."""
    from ftharness.history.records import HISTORY_FILE, read_events

    parts = []
    for folder in folders:
        path = os.path.join(os.fspath(folder), HISTORY_FILE)
        if not os.path.isfile(path):
            continue
        try:
            s = gpu_summary(read_events(path))
        except Exception:  # noqa: BLE001 - a damaged history shows no GPU facts
            continue
        if not any(d.startswith("cuda") for d in s.get("devices") or []):
            continue   # a CPU run: its gloo times are in summary.json's `gpu`
        items = "".join(f"<li>{html.escape(line)}</li>" for line in gpu_lines(s))
        parts.append(f"<h3>{html.escape(os.path.basename(os.path.normpath(os.fspath(folder))))}</h3><ul>{items}</ul>")
    if not parts:
        return ""
    return ('<section id="gpu"><h2>Devices and process groups</h2><p class="note">Per run: the device of each '
            "rank, the process group's set-up (NCCL on GPUs, gloo on CPU) in each recovery, GPU memory at each "
            "(re)start, and zombie GPU memory (a dead worker's pid still holding memory).</p>"
            + "".join(parts) + "</section>")


def folder_lines(folder: str) -> List[str]:
    """A results folder's verdict, its faults' landing evidence, and its GPU facts (the
    summary's `gpu`, else computed from the history), as terminal lines."""
    from ftharness.history.records import HISTORY_FILE, read_events, read_json_file

    s = read_json_file(os.path.join(folder, "summary.json"))   # bounded: a regular file, at most 64 MiB
    if not isinstance(s, dict):
        return [f"{folder}: no readable summary.json"]
    out = [f"{s.get('verdict')} {s.get('scenario')}: {s.get('outcome')} ({s.get('error_type') or 'no error'}), "
           f"attempts {s.get('attempts')}, budgets {s.get('budgets')}"]
    out += [f"  fault {f.get('index')} {f.get('kind')}: {f.get('status')}: {f.get('evidence')}"
            for f in s.get("faults") or []]
    out += [f"  ! {m}" for m in (s.get("mismatches") or []) + (s.get("inconclusive") or [])]
    g = s.get("gpu")
    if g is None and os.path.isfile(os.path.join(folder, HISTORY_FILE)):
        g = gpu_summary(read_events(os.path.join(folder, HISTORY_FILE)))
    return out + [f"  {line}" for line in gpu_lines(g or {})]


def main(argv: Optional[List[str]] = None) -> int:
    """`python -m ftharness.reports.gpu FOLDER...`: each results folder's lines (scripts/gpu-check.sh)."""
    import sys

    for folder in (sys.argv[1:] if argv is None else argv):
        print("\n".join(folder_lines(folder)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
