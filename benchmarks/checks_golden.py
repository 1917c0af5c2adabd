"""Golden outputs of the checks, to show that a change to how they compute left what they say alone.

It judges ~250 histories: synthetic runs of many plans (`ftharness.scenarios.synthetic`,
both data sources, every fault class, elastic world sizes, controller kills),
a third of them with a planted defect (a step dropped or repeated, rows shared,
an older checkpoint restored, a failure mis-charged, a zombie report, an event
removed ...), and the recorded histories in tests/data. For each it keeps
everything a verdict and the reports derive: `ftharness.scenarios.verdict.evaluate` (the
properties with status, explanation, findings and violations, the fault
landings, the final state, `run_metrics`), `run_checks` over the synthetic
context, and the frames of `ftharness.reports.metrics`; plus the reference data
(`global_batch`, `rank_slice`, `expected_accumulators`) for a range of configs,
and `read_history` over the recorded files, intact and damaged in many ways.

    .venv/bin/python benchmarks/checks_golden.py --record /tmp/golden.json [--root OLD_CHECKOUT]
    .venv/bin/python benchmarks/checks_golden.py --compare /tmp/golden.json   # exit 1 on any difference

`--root` imports the code from another checkout (e.g. `git archive` of the
commit before a change), so the golden file can be recorded from the old code.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CASES = 200
KINDS = {
    "worker_group": {"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 1}},
    "preemption": {"kind": "preempt_node", "target": {"rank": 0}, "at": {"step": 1}},
    "preemption_death": {"kind": "preempt_node", "target": {"rank": 0}, "at": {"step": 1}},
    "controller": {"kind": "starve_resources", "at": {"step": 1}},
    "controller_fatal": {"kind": "storage_errors", "ops": ["write"], "path_glob": "*", "error_rate": 1.0,
                         "duration_s": 3, "at": {"step": 1}},
    "controller_kill": {"kind": "kill_controller", "resume": True, "at": {"step": 1}},
}


def plan_of(rng: random.Random):
    from ftharness.scenarios.reference_data import WorkloadConfig
    from ftharness.scenarios.synthetic import FAULTS, Fault, Plan

    steps = rng.randint(1, 40)
    data = "ray_data" if rng.random() < 0.2 else "resumable"
    cfg = WorkloadConfig(steps=steps, batch_size=rng.choice([4, 6, 8, 12, 32]), epochs=rng.randint(1, min(4, steps)),
                         checkpoint_every=rng.randint(1, 5), data=data, seed=rng.randint(0, 3),
                         rows_per_epoch=rng.choice([None, None, None, 48, 96]))
    classes = sorted(FAULTS)
    faults = [Fault(rng.choice(classes), after_steps=rng.randint(0, steps), after_checkpoint=rng.random() < 0.5,
                    recovery_s=round(rng.uniform(0.5, 5.0), 3),
                    world_size=rng.choice([None, None, 1, 2, 3, 4]))
              for _ in range(rng.randint(0, 5))]
    fc = {k: rng.choice([-1, 0, 1, 2, 3, 5]) for k in ("max_failures", "max_preemption_failures",
                                                         "controller_failure_limit")}
    return Plan(cfg, num_workers=rng.randint(1, 4), failure_config=fc, faults=faults,
                step_s=rng.choice([0.05, 0.1, 0.3]))


def hit_targets(events, rng: random.Random) -> None:
    """What an injector records it hit: rank 0 of the running group (sometimes nothing)."""
    group = None
    for e in events:
        if e["kind"] == "worker_group_started":
            group = e
        elif e["kind"] == "fault_injected" and group is not None and rng.random() < 0.8:
            w = group["workers"][0]
            if e["fault_kind"] == "kill_worker":
                e["target_hit"] = {"pid": w["pid"], "node_id": w["node_id"], "rank": w["rank"], "how": "SIGKILL"}
            elif e["fault_kind"] == "preempt_node":
                e["target_hit"] = {"node_id": w["node_id"], "ranks": [w["rank"]], "deadline_ms": 0}
            elif e["fault_kind"] == "kill_controller":
                e["target_hit"] = {"pid": 99, "how": "SIGKILL"}


def mutate(events, rng: random.Random) -> str:
    """Plant one defect; its name."""
    def pick(kind):
        found = [i for i, e in enumerate(events) if e.get("kind") == kind]
        return rng.choice(found) if found else None

    how = rng.choice(["drop_step", "repeat_step", "share_rows", "older_restore", "budget", "zombie_report",
                      "remove_event", "step_number", "no_run_end", "shuffle_t", "drop_registered", "epoch"])
    if how == "drop_step" and (i := pick("step")) is not None:
        del events[i]
    elif how == "repeat_step" and (i := pick("step")) is not None:
        events.insert(i + 1, dict(events[i], seq=events[i]["seq"] + 0.5))
    elif how == "share_rows":
        steps = [e for e in events if e.get("kind") == "step" and e.get("rows")]
        if len(steps) > 1:
            a, b = rng.sample(steps, 2)
            b["rows"] = list(b["rows"]) + [a["rows"][0]]
    elif how == "older_restore":
        regs = [e["checkpoint"] for e in events if e.get("kind") == "checkpoint_registered"]
        starts = [e for e in events if e.get("kind") == "worker_start" and e.get("restored_checkpoint")]
        if regs and starts:
            rng.choice(starts)["restored_checkpoint"] = regs[0] if rng.random() < 0.7 else "checkpoint_nowhere"
    elif how == "budget" and (i := pick("failure")) is not None:
        events[i]["budget"] = rng.choice(["worker_group", "preemption", "controller", "none", "bogus"])
    elif how == "zombie_report":
        ends = [e for e in events if e.get("kind") == "worker_group_shutdown"]
        reports = [e for e in events if e.get("kind") == "report"]
        if ends and reports:
            late = dict(rng.choice(reports), checkpoint="checkpoint_zombie", seq=ends[-1]["seq"] + 0.5,
                        t=ends[-1]["t"] + 0.01, attempt_id=ends[0]["attempt_id"])
            events.append(late)
    elif how == "remove_event" and events:
        del events[rng.randrange(len(events))]
    elif how == "step_number" and (i := pick("step")) is not None:
        events[i]["step"] += rng.choice([-2, -1, 1, 3])
    elif how == "no_run_end" and (i := pick("run_end")) is not None:
        del events[i]
    elif how == "shuffle_t" and (i := pick("step")) is not None:
        events[i]["t"] -= rng.uniform(0, 3)
    elif how == "drop_registered" and (i := pick("checkpoint_registered")) is not None:
        del events[i]
    elif how == "epoch" and (i := pick("step")) is not None:
        events[i]["epoch"] = (events[i].get("epoch") or 0) + 1
    events.sort(key=lambda e: e.get("seq", 0))
    for n, e in enumerate(events, 1):
        e["seq"] = n
    return how


def scenario_of(plan, outcome):
    from ftharness.scenarios.schema import parse_scenario

    cfg = plan.workload
    return parse_scenario({
        "name": "golden",
        "cluster": {"nodes": 4, "cpus_per_node": 1},
        "workload": {"kind": "reference", "num_workers": plan.num_workers, "steps": cfg.steps,
                     "batch_size": cfg.batch_size, "epochs": cfg.epochs, "checkpoint_every": cfg.checkpoint_every,
                     "data": cfg.data},
        "failure_config": dict(plan.failure_config),
        "faults": [KINDS[f.cls] for f in plan.faults],
        "expect": {"outcome": outcome},
    })


def frames(events):
    from ftharness.reports import metrics

    out = {"run_metrics": metrics.run_metrics(events), "outages": metrics.outages(events),
           "lost_work": metrics.lost_work(events), "ettr": metrics.ettr(events),
           "annotate": metrics.annotate(events)}
    for name in ("recovery_table", "step_table"):
        try:
            out[name] = getattr(metrics, name)(events).to_json(orient="split")
        except Exception as e:  # noqa: BLE001
            out[name] = f"error {type(e).__name__}: {e}"
    return out


def checks(events, context):
    from ftharness.scenarios.properties import run_checks

    return {name: [r.status, r.explanation, r.findings, r.violations]
            for name, r in run_checks(events, context).items()}


#: --columns: the synthetic histories are judged as `read_history` gives a file of them
#: (steps in ftharness.history.columns), which must say exactly what the dicts say
COLUMNS = {"on": False, "used": 0}


def as_read(events):
    """`events` written as history lines and read back into columns (with --columns; else as they are)."""
    if not COLUMNS["on"]:
        return events
    import tempfile

    from ftharness.history.records import HistoryReader

    with tempfile.NamedTemporaryFile(suffix=".jsonl") as f:
        try:
            f.write(b"".join(json.dumps(e, allow_nan=True).encode() + b"\n" for e in events))
        except (TypeError, ValueError):
            return events
        f.flush()
        reader = HistoryReader(f.name, columnar=True)
        reader.read(final=True)
        read = reader.columns()
    if reader.problems or list(read) != list(events):   # not what a file of them reads back as
        return events
    COLUMNS["used"] += 1
    return read


def synthetic_case(i: int) -> dict:
    from ftharness.scenarios.synthetic import generate
    from ftharness.scenarios.verdict import evaluate

    rng = random.Random(i)
    plan = plan_of(rng)
    syn = generate(plan)
    events = syn.events
    hit_targets(events, rng)
    planted = mutate(events, rng) if i % 3 == 2 else None
    context = dict(syn.context)
    outcome = {"outcome": context["outcome"], "error_type": context["error_type"], "error": None,
               "return_value": {"acc": context["final"]}}
    case = {"planted": planted, "checks": checks(as_read(copy.deepcopy(events)), context),
            "frames": frames(as_read(events))}
    try:
        scenario = scenario_of(plan, context["outcome"] or "succeeded")
    except Exception as e:  # noqa: BLE001
        case["scenario_error"] = f"{type(e).__name__}: {e}"
        return case
    case["summary"] = evaluate(scenario, as_read(copy.deepcopy(events)), outcome)
    return case


def recorded_case(name: str) -> dict:
    import yaml

    from ftharness.history.records import read_history
    from ftharness.scenarios.schema import parse_scenario
    from ftharness.scenarios.verdict import evaluate

    folder = os.path.join(ROOT, "tests", "data", name)
    read = read_history(folder)
    with open(os.path.join(folder, "scenario.yaml")) as f:
        scenario = parse_scenario(yaml.safe_load(f))
    with open(os.path.join(folder, "summary.json")) as f:
        old = json.load(f)
    outcome = {k: old.get(k) for k in ("outcome", "error", "error_type", "metrics")}
    outcome["return_value"] = {"acc": (old.get("final_state") or {}).get("accumulators")}
    return {"summary": evaluate(scenario, read.events, outcome, read.problems), "frames": frames(read.events),
            "problems": read.problems}


def read_cases(tmp: str) -> dict:
    """`read_history` (events and problems) over the recorded files, intact and damaged."""
    from ftharness.history.records import read_history

    out = {}
    for name in ("kill-worker", "preempt-node"):
        with open(os.path.join(ROOT, "tests", "data", name, "history.jsonl"), "rb") as f:
            raw = f.read()
        lines = raw.split(b"\n")[:-1]
        obj = json.loads(lines[7])
        obj["_line"], obj["_digest_before"] = 3, "x"
        variants = {
            "intact": raw,
            "remove": b"\n".join(lines[:4] + lines[5:]) + b"\n",
            "duplicate": b"\n".join(lines[:5] + lines[4:]) + b"\n",
            "swap": b"\n".join(lines[:4] + [lines[5], lines[4]] + lines[6:]) + b"\n",
            "torn": raw[:-10],
            "no_final_newline": raw[:-1],
            "garble": b"\n".join(lines[:6] + [lines[6][:20] + b"#" + lines[6][21:]] + lines[7:]) + b"\n",
            "blank": b"\n".join(lines[:3] + [b"  "] + lines[3:]) + b"\n",
            "alter": raw.replace(b'"step": 3,', b'"step": 4,', 1),
            "not_object": b"\n".join(lines[:2] + [b"[1, 2]"] + lines[2:]) + b"\n",
            "bad_utf8": b"\n".join(lines[:2] + [b'{"a": "\xff"}'] + lines[2:]) + b"\n",
            "empty": b"",
            "no_end": b"\n".join(lines[:-1]) + b"\n",
            "dup_seqs": b"\n".join(lines + lines[3:9]) + b"\n",
            "private_keys": b"\n".join(lines[:7] + [json.dumps(obj).encode()] + lines[8:]) + b"\n",
            "crlf": raw.replace(b"\n", b"\r\n"),
            "blank_torn": raw + b"   ",
        }
        for how, data in variants.items():
            path = os.path.join(tmp, f"{name}-{how}.jsonl")
            with open(path, "wb") as f:
                f.write(data)
            read = read_history(path)
            out[f"{name}/{how}"] = {"events": list(read.events), "problems": read.problems}
    out["missing"] = read_history(os.path.join(tmp, "nowhere.jsonl")).problems[0].replace(tmp, "TMP")
    return out


def reference_case() -> dict:
    import numpy as np

    from ftharness.scenarios.reference_data import WorkloadConfig, expected_accumulators, global_batch, rank_slice

    out = {}
    configs = [WorkloadConfig(steps=s, batch_size=b, epochs=e, seed=seed, rows_per_epoch=r)
               for s, b, e, seed, r in [(1, 4, 1, 0, None), (7, 6, 3, 1, None), (30, 32, 1, 0, None),
                                        (100, 32, 4, 2, None), (50, 10, 2, 0, 95), (40, 8, 1, 3, 64),
                                        (600, 1000, 3, 5, None), (300, 4096, 1, 7, 1_000_000),
                                        (200, 5000, 1, 1, None)]]
    for cfg in configs:
        key = json.dumps(cfg.to_dict(), sort_keys=True)
        batches = {s: global_batch(cfg, s).tolist() for s in sorted({0, 1, cfg.steps // 2, cfg.steps - 1})
                   if cfg.batch_size <= 4096}
        slices = {f"{s}/{r}/{ws}": rank_slice(global_batch(cfg, s), r, ws).tolist()
                  for s in (0, cfg.steps - 1) for ws in (1, 3, 4, 5) for r in range(ws)
                  if cfg.batch_size <= 64}
        out[key] = {"expected": [float(x).hex() for x in expected_accumulators(cfg)], "batches": batches,
                    "slices": slices}
    out["odd_slices"] = [np.asarray(rank_slice(np.arange(n), r, ws)).tolist()
                         for n in (0, 1, 5, 8) for ws in (1, 2, 3, 7) for r in (-1, 0, ws - 1)]
    return out


def run_all() -> dict:
    out = {f"synthetic-{i}": synthetic_case(i) for i in range(CASES)}
    for name in ("kill-worker", "preempt-node"):
        out[f"recorded-{name}"] = recorded_case(name)
    out["reference"] = reference_case()
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        out["read_history"] = read_cases(tmp)
    return json.loads(json.dumps(out, default=str, sort_keys=True))


def diff(a, b, path="", out=None, limit=20):
    out = [] if out is None else out
    if len(out) >= limit:
        return out
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'new' if k in b else 'golden'}")
            else:
                diff(a[k], b[k], f"{path}/{k}", out, limit)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, f"{path}[{i}]", out, limit)
    elif a != b:
        out.append(f"{path}: golden {str(a)[:300]!r} != new {str(b)[:300]!r}")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--record", metavar="FILE")
    g.add_argument("--compare", metavar="FILE")
    p.add_argument("--root", help="import the code from this checkout instead (for recording old code)")
    p.add_argument("--columns", action="store_true",
                   help="judge the synthetic histories as read back from a file (steps in columns)")
    a = p.parse_args(argv)
    COLUMNS["on"] = a.columns
    global ROOT
    ROOT = os.path.abspath(a.root) if a.root else ROOT
    sys.path.insert(0, ROOT)
    result = run_all()
    if a.record:
        with open(a.record, "w") as f:
            json.dump(result, f, sort_keys=True)
        print(f"recorded {len(result)} cases from {ROOT} into {a.record}")
        return 0
    with open(a.compare) as f:
        golden = json.load(f)
    problems = diff(golden, result)
    for line in problems:
        print(line)
    via = f"; {COLUMNS['used']} synthetic judgements read back into columns" if a.columns else ""
    print(f"{len(result)} cases: {'identical' if not problems else 'DIFFERENT'} ({ROOT} against {a.compare}{via})")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
