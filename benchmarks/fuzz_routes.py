"""Seeded fuzzing of every `ftharness` command (issue 49 item 9): per command, cases, exit codes,
internal errors (exit 4), hangs and the largest peak memory of a case.

Every command of `ftharness --help` gets generated hostile input: malformed, huge and deep JSON
and YAML, FIFOs, /dev/zero, /proc files, symlinks out of folders and symlink loops, non-UTF-8
bytes, unknown keys, wrong types and invalid numbers (nan, inf, -1, 1e400) in every option, and
the hostile folders of issue 49 (an explore OUT whose explore.json runs something or is a FIFO,
an `init` whose .github/ links out, a bisect of a foreign cluster.address, `--set
failure_config.max_failures=x`). Each case runs the CLI's own `main` in a forked child of one warm
process (scripts/fuzz_routes.py's machinery: the parent bounds its wall time, reads its peak
memory from wait4 and checks the contract: exit 0, 1, 2 or 3, never 4; no traceback; one line for
an exit 2). Nothing reaches a cluster: everything that would start one (a run, a suite, a soak, a
matrix or bisect cell, explore's cluster, a submitted job) is replaced in the child by a sentinel
that exits 0 with "(would start)", so a case is either refused before any start or would start.

    .venv/bin/python -P benchmarks/fuzz_routes.py --cases 40 --seed 49 [--commands run,explore] [--json FILE]

Prints one row per command: cases, exit codes, exit 4, hangs, peak memory (the child's, MiB) and
its growth over the warm parent, the slowest case; exits 1 on any breach. tests/test_fuzz_routes.py
runs a few seeded cases of each command in the pure lane.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import resource
import shutil
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data", "kill-worker")
PEAK_LIMIT_MB = 1024


def _base():
    """scripts/fuzz_routes.py (issue 40's campaign): its forked runner, its judge and its generators."""
    spec = importlib.util.spec_from_file_location("fuzz_routes_base", os.path.join(REPO, "scripts", "fuzz_routes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


B = _base()
B.HANG_S = 20.0
# one line's bound is the one the messages declare (scenarios/language/messages.py), not a copy of it
from ftharness.scenarios.language.messages import MAX_MESSAGE  # noqa: E402

B.MAX_LINE = MAX_MESSAGE


def install_sentinels() -> None:
    """issue 40's sentinels, and those of the commands added since: suite, soak, explore's cluster,
    a submitted job (in the forked child only)."""
    import ftharness.harness.cluster.handles as handles
    import ftharness.harness.run.soak as soak
    import ftharness.harness.run.submit as submit
    import ftharness.harness.run.suite as suite

    def stop(*a, **k):
        raise B.WouldStart()

    B.base_install_sentinels()
    for module, name in ((suite, "run_suite"), (soak, "run_soak"), (handles, "open_cluster"), (submit, "submit_run")):
        setattr(module, name, stop)


B.base_install_sentinels, B.install_sentinels = B.install_sentinels, install_sentinels


# ================================================================== hostile material
NUMBERS = ["nan", "inf", "-inf", "-1", "0", "1e400", "-1e400", "1e-400", "x", "", " ", "9" * 400, "0x10", "1_000",
           "\u0661", "-0", "2.5", "NaN", "Infinity", "1e3", "3"]
ODD_TEXT = ["\x1b[31mred", "a\nb", "\udcff", "/" + "x" * 3000, "../../etc", "-", "--", "%s%n", "\x7f", "C:\\x"]
SPECIALS = B.SPECIALS


def hostile_json(rng: random.Random) -> bytes:
    """JSON bytes a user could hand over: deep, many containers, huge numbers, NaN, wrong top types,
    non-UTF-8, truncated, unknown keys."""
    return rng.choice([
        b"[" * 100000 + b"]" * 100000, b"{\"a\":" * 5000 + b"1" + b"}" * 5000, b"[{}," * 600_000 + b"{}]",
        b"[" + b"0," * 2_100_000 + b"0]", b"1e400", b"NaN", b"[Infinity, -Infinity]", b"\xff\xfe\x00x",
        b'{"a": "\xff"}', b"{", b"", b"null", b"[]", b"5", b'"x"', b'{"\\ud800": 1}',
        json.dumps({"unknown_key": 1, "verdict": "PASS", "nested": {"x": [1, 2, {"y": None}]}}).encode(),
        b'{"a": 1, "a": 2}', b"9" * 5000, b"\x00" * 100])


def hostile_yaml(rng: random.Random) -> bytes:
    text = B.scenario_text(rng)
    return rng.choice([
        b"[" * 5000 + b"]" * 5000, b"- " * 3000 + b"x", B.ALIAS_BOMB.encode(), b"\xff\xfe bad: [",
        b"name: x\nunknown_key: 1\n" + text.encode(), text.replace("steps: 6", "steps: .nan").encode(),
        text.replace("steps: 6", "steps: 1e400").encode(), text.replace("steps: 6", "steps: -1").encode(),
        text.replace("num_workers: 2", "num_workers: [2]").encode(), b"!!python/object/apply:os.system [ls]",
        b"a: " + b"x" * 300_000, b"- 1\n" * 200_000, b"\x00binary", b"", b"---\n...\n---\n",
        text.replace("kill_worker", "nosuchkind").encode(), text.encode() + b"\nfaults: 5\n",
        text.replace("rank: 1", "rank: 1e400").encode()])


def plant(rng: random.Random, path: str, maker: Callable[[random.Random], bytes]) -> str:
    """`path` made hostile: a special file (FIFO, /dev/zero, /proc, loop, dangling, a folder, sparse
    1.7 GB) or hostile bytes; returns what it is, for the case's name."""
    if rng.random() < 0.4:
        kind = rng.choice(SPECIALS)
        B.special(kind, path)
        return kind
    with open(path, "wb") as f:
        f.write(maker(rng))
    return "bytes"


def scenario(rng: random.Random, tmp: str, hostile: Optional[bool] = None) -> str:
    """A scenario file: good (so the options are what is judged) or hostile."""
    path = os.path.join(tmp, "s.yaml")
    if hostile if hostile is not None else rng.random() < 0.4:
        plant(rng, path, hostile_yaml)
    else:
        with open(path, "w") as f:
            f.write(B.scenario_text(rng))
    return path


def symlink_out(tmp: str, name: str) -> str:
    """A folder `name` in tmp that is a symlink to a folder outside it."""
    outside = tempfile.mkdtemp(prefix="fz49-outside-", dir=os.path.dirname(tmp))
    os.symlink(outside, os.path.join(tmp, name))
    return outside


def odd(rng: random.Random) -> str:
    return rng.choice(NUMBERS + ODD_TEXT)


# ================================================================== one generator per command
def gen_init(rng, tmp):
    argv, check = ["init"], {}
    how = rng.choice(["github-link", "dir-link", "dir-file", "dir-odd", "train", "ci", "force", "plain"])
    if how == "github-link":
        check["cleanup"] = symlink_out(tmp, ".github")
        check["outside"] = check["cleanup"]
    elif how == "dir-link":
        check["cleanup"] = symlink_out(tmp, "chaos")
        check["outside"] = check["cleanup"]
    elif how == "dir-file":
        plant(rng, os.path.join(tmp, "chaos"), hostile_yaml)
    elif how == "dir-odd":
        argv.append(rng.choice(["/proc/self", "/dev", "../..", "/", "a\nb", "x" * 5000, "/etc"]))
    elif how == "train":
        argv += ["--train", rng.choice(["os:system", "json:loads", "nosuch:f", "x", ":", "a:b:c", "os.path:join",
                                        "\x1b[1m:f", "subprocess:run", "builtins:exec"])]
    elif how == "ci":
        argv += ["--ci", odd(rng)]
    elif how == "force":
        os.makedirs(os.path.join(tmp, "chaos"))
        os.symlink("/etc/passwd", os.path.join(tmp, "chaos", "scenario.yaml"))
        argv += ["--force"]
        check["etc"] = True
    return argv, check


def gen_run(rng, tmp):
    how = rng.choice(["scenario", "steps", "resume", "address", "submit", "out", "scenario-dir"])
    if how == "resume":
        argv, check = B.gen_resume(rng, tmp)
        check["route"] = "resume"
        return argv, check
    path = scenario(rng, tmp, hostile=how == "scenario")
    argv = ["run", path, "--out", os.path.join(tmp, "out")]
    if how == "steps":
        argv += ["--steps", odd(rng)]
    elif how == "address":
        argv += ["--address", rng.choice(["ray://h:1", "h:99999", "auto", "h", "http://h:8265", odd(rng)])]
    elif how == "submit":
        argv += ["--submit", rng.choice(["http://127.0.0.1:1", "ftp://h", "h:8265", "", odd(rng)])]
    elif how == "out":
        argv[-1] = rng.choice(["/dev/full", "/proc/self/x", DATA, "/dev/zero", "", odd(rng)])
    else:
        argv += ["--scenario-dir", rng.choice(["/proc", "/nonexistent", tmp, odd(rng)])]
    return argv, {}


def gen_soak(rng, tmp):
    argv = ["soak", scenario(rng, tmp), "--out", os.path.join(tmp, "out")]
    for flag in rng.sample(["--duration", "--mtbf", "--mix", "--seed"], rng.randint(1, 3)):
        value = odd(rng) if flag != "--mix" else rng.choice(
            ["kill_worker:nan", "kill_worker:-1", "nosuch:1", "kill_worker", ":", "kill_worker:1e400",
             "kill_worker:1,kill_worker:2", "kill_node:0", odd(rng)])
        argv += [flag, value]
    return argv, {}


def gen_suite(rng, tmp):
    folder = os.path.join(tmp, "cat")
    os.makedirs(folder)
    for i in range(rng.randint(1, 3)):
        if rng.random() < 0.6:
            plant(rng, os.path.join(folder, f"s{i}.yaml"), hostile_yaml)
        else:
            with open(os.path.join(folder, f"s{i}.yaml"), "w") as f:
                f.write(B.scenario_text(rng, name=f"fz{i}"))
    if rng.random() < 0.3:
        os.symlink(folder, os.path.join(folder, "loop"))
    argv = ["suite", folder, "--out", os.path.join(tmp, "out")]
    if rng.random() < 0.4:
        argv += ["--repeat", odd(rng)]
    return argv, {}


def gen_report(rng, tmp):
    a = os.path.join(tmp, "a")
    B.damaged_folder(rng, a)
    args = [a]
    if rng.random() < 0.4:   # a journal, hostile or naming a folder elsewhere
        journal = os.path.join(tmp, "journal.json")
        if rng.random() < 0.5:
            plant(rng, journal, hostile_json)
        else:
            with open(journal, "w") as f:
                json.dump({"ftharness": {"results_dir": rng.choice(["/proc/self", "/dev/zero", a, 5, ["x"]])}}, f)
        args = [journal]
    argv = ["report", *args, "--out", os.path.join(tmp, "rep")]
    if rng.random() < 0.3:
        argv += ["--junit", rng.choice(["/dev/full", "/proc/x", os.path.join(a, "summary.json"), odd(rng)])]
    return argv, {}


def gen_compare(rng, tmp):
    if rng.random() < 0.7:
        return B.gen_compare(rng, tmp)
    a = os.path.join(tmp, "a")
    B.damaged_folder(rng, a)
    label = rng.choice(["=" + a, "x=", "x=,", f"x={a},{a}", "noequals", f"\x1b[31m={a}", f"a=b=c={a}"])
    return ["compare", label, f"y={a}", "--fail-if", rng.choice(["recovery_s.median > nan%", "x", odd(rng)])], {}


def gen_matrix(rng, tmp):
    argv, check = B.gen_matrix(rng, tmp)
    r = rng.random()
    if r < 0.25:
        argv += ["--cell-timeout", odd(rng)]
    elif r < 0.4:
        lock = os.path.join(tmp, "lock")
        plant(rng, lock, hostile_json)
        argv += ["--host-lock", rng.choice([lock, "/dev/zero", "/proc/self/x", tmp])]
    elif r < 0.55:
        argv += ["--set", f"failure_config.max_failures={rng.choice(['x', 'nan', '1e400', '-2', '[1]', '{a: 1}'])}"]
    return argv, check


def gen_bisect(rng, tmp):
    path = scenario(rng, tmp)
    argv = ["bisect", path, "--out", os.path.join(tmp, "b")]
    how = rng.choice(["ray", "timeout", "lock", "repeat", "address", "plain"])
    if how == "ray":
        argv += ["--ray", rng.choice(["2.60.0..2.51.0", "x..y", "2.51", "..", "2.51.0..", "3.0.0..4.0.0",
                                      "2.060.0..2.60.0", odd(rng)])]
    elif how == "timeout":
        argv += ["--cell-timeout", odd(rng)]
    elif how == "lock":
        argv += ["--host-lock", rng.choice(["/dev/zero", "/proc/self/status", tmp, "", odd(rng)])]
    elif how == "repeat":
        argv += ["--repeat", odd(rng)]
    elif how == "address":
        if os.path.lexists(path):
            os.unlink(path) if not os.path.isdir(path) or os.path.islink(path) else os.rmdir(path)
        with open(path, "w") as f:
            f.write(B.scenario_text(rng).replace("cluster: {", "cluster: {address: '127.0.0.1:6379', "))
        return argv, {"address": True}
    return argv, {}


def gen_explore(rng, tmp):
    out = os.path.join(tmp, "ex")
    os.makedirs(out)
    argv = ["explore", scenario(rng, tmp, hostile=rng.random() < 0.2), "--out", out]
    how = rng.choice(["state", "state", "state-workload", "link", "budget", "faults", "seed"])
    check: Dict = {}
    if how == "state":
        plant(rng, os.path.join(out, "explore.json"), hostile_json)
    elif how == "state-workload":   # a continued state that tries to run something (issue 49's first finding)
        marker = os.path.join(tmp, "EXECUTED")
        state = {"version": 1, "findings": [{"example": {
            "workload": rng.choice([{"entrypoint": "os:system", "train_loop_config": {"cmd": f"touch {marker}"}},
                                    {"storage_path": "s3://victim/x"}, {"working_dir": "/"}, "x", None]),
            "faults": rng.choice([[{"kind": "nosuch"}], "x", [], [{"kind": "kill_worker", "at": {"step": 1e400}}]])}}]}
        with open(os.path.join(out, "explore.json"), "w") as f:
            json.dump(state, f)
        check["marker"] = marker
    elif how == "link":
        outside = tempfile.mkdtemp(prefix="fz49-outside-", dir=os.path.dirname(tmp))
        name = rng.choice(["explore.html", "explore.json", "examples", "findings"])
        os.symlink(os.path.join(outside, name), os.path.join(out, name))
        check["cleanup"] = check["outside"] = outside
    elif how == "budget":
        argv += ["--budget", odd(rng)]
    elif how == "faults":
        argv += ["--max-faults", odd(rng)]
    else:
        argv += ["--seed", odd(rng)]
    return argv, check


def gen_check(rng, tmp):
    a = os.path.join(tmp, "a")
    check = B.damaged_folder(rng, a)
    return ["check", a] + (["--json"] if rng.random() < 0.3 else []), check


def gen_trace(rng, tmp):
    a = os.path.join(tmp, "a")
    check = B.damaged_folder(rng, a)
    argv = ["trace", a]
    if rng.random() < 0.4:
        argv += ["--out", rng.choice(["/dev/full", "/proc/x", os.path.join(a, "history.jsonl"), tmp, odd(rng)])]
    return argv, {k: v for k, v in check.items() if k != "no_pass"}


def gen_verdict(rng, tmp):
    journal = os.path.join(tmp, "journal.json")
    if rng.random() < 0.5:
        plant(rng, journal, hostile_json)
    else:
        a = os.path.join(tmp, "a")
        B.damaged_folder(rng, a)
        body = {"experiment": rng.choice([{"title": "\x1b[31mt"}, "x", None, []]),
                "ftharness": rng.choice([{"results_dir": a}, {"results_dir": rng.choice(["/proc/self", 5, "/dev/zero"])},
                                         {"not_started": True}, "x", {"mismatches": "x"}, {"results_dir": a, "verdict": "PASS"}]),
                "steady_states": rng.choice([{"after": "x"}, {}, None, [1]]), "unknown": 1}
        with open(journal, "w") as f:
            json.dump(body, f)
    return ["verdict", journal], {}


def gen_validate(rng, tmp):
    if rng.random() < 0.5:
        return B.gen_validate(rng, tmp)
    path = os.path.join(tmp, rng.choice(["s.yaml", "e.json"]))
    plant(rng, path, hostile_yaml if path.endswith(".yaml") else hostile_json)
    argv = ["validate", path if rng.random() < 0.7 else tmp]
    if rng.random() < 0.3:
        argv += [rng.choice(["--ray", "--address", "--out"]), odd(rng)]
    return argv, {}


def gen_schema(rng, tmp):
    target = os.path.join(tmp, "schema.json")
    how = rng.random()
    if how < 0.5:
        B.special(rng.choice(["fifo", "zero", "kmsg", "dir", "loop", "dangling"]), target)
    elif how < 0.7:
        target = rng.choice(["/dev/full", "/proc/self/x", "/sys/x", "", odd(rng)])
    return ["schema", "--out", target] if rng.random() < 0.9 else ["schema"], {}


def gen_list(rng, tmp):
    argv = ["list", rng.choice(["all", "faults", "properties", "catalog", "known", odd(rng)])]
    if rng.random() < 0.5:
        argv += ["--ray", rng.choice(B.RELEASES + NUMBERS)]
    return argv, {}


def gen_doctor(rng, tmp):
    r = rng.random()
    if r < 0.5:
        return B.gen_doctor(rng, tmp)
    if r < 0.8:   # the probe's options, refused before it starts (or it would start)
        return ["doctor", "--run", rng.choice(["os:system", "nosuch:f", "x", "json:loads", "ftharness.harness.job.workload:train"]),
                "--config", rng.choice(["[" * 100000, "{" * 5000, "nan", "1e400", "[]", '{"a": NaN}', "\xff", "{}", odd(rng)]),
                "--out", os.path.join(tmp, "p")], {}
    return ["doctor", tmp, "--ray", odd(rng)], {}


def gen_plan(rng, tmp):
    argv = ["plan", "--accelerators", rng.choice(["8", odd(rng)]), "--days", rng.choice(["1", odd(rng)])]
    for flag in rng.sample(["--spot-fraction", "--runs", "--target", "--mtbf", "--interval-s", "--checkpoint-every",
                            "--step-s", "--recovery-s", "--max-failures", "--seed", "--accelerators-per-node"],
                           rng.randint(0, 3)):
        argv += [flag, odd(rng)]
    if rng.random() < 0.3:
        argv += ["--rate", rng.choice(["gpu=nan", "gpu=-1", "nosuch=1", "gpu", "gpu=1e400", odd(rng)])]
    if rng.random() < 0.3:
        a = os.path.join(tmp, "a")
        B.damaged_folder(rng, a)
        argv.append(a)
    argv += ["--runs", "50"]
    return argv, {}


COMMANDS: Dict[str, Callable] = {
    "init": gen_init, "run": gen_run, "soak": gen_soak, "suite": gen_suite, "report": gen_report,
    "compare": gen_compare, "matrix": gen_matrix, "bisect": gen_bisect, "explore": gen_explore, "check": gen_check,
    "verdict": gen_verdict, "validate": gen_validate, "schema": gen_schema, "list": gen_list, "doctor": gen_doctor,
    "trace": gen_trace, "plan": gen_plan}


def judge(command: str, argv: List[str], check: Dict, res: Dict, base_kb: int) -> List[str]:
    """issue 40's contract (scripts/fuzz_routes.py judge) and issue 49's promises."""
    route = check.pop("route", command)
    bad = B.judge(route, argv, check, res, base_kb)
    if res["peak_kb"] >> 10 > PEAK_LIMIT_MB:
        bad.append(f"peak memory {res['peak_kb'] >> 10} MiB")
    outside = check.get("outside")
    if outside and os.path.isdir(outside) and os.listdir(outside):
        bad.append(f"wrote through a symlink out of its folder: {os.listdir(outside)[:3]}")
    if command in ("bisect",) and check.get("address") and res["code"] == 0:
        bad.append("bisect planned a foreign cluster.address without --allow-destructive")
    return bad


def campaign(cases: int, seed: int, commands: Optional[List[str]] = None, say=print, show: bool = False) -> Dict:
    """`cases` seeded cases per command; the counts and the breaches."""
    import contextlib
    import io

    import ftharness.harness.run.runner  # noqa: F401 - warm: Ray, torch
    import ftharness.reports.html  # noqa: F401 - pandas
    from ftharness.harness.frontends.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["check", DATA])   # warm the reading path
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    stats: Dict = {"seed": seed, "cases_per_command": cases, "base_peak_mb": base_kb >> 10, "commands": {},
                   "breaches": []}
    for command in commands or list(COMMANDS):
        rng = random.Random(f"{seed}-{command}")   # each command its own stream: a subset reproduces the same cases
        s = stats["commands"].setdefault(command, {"cases": 0, "exit_codes": {}, "exit_4": 0, "hangs": 0,
                                                   "peak_mb": 0, "peak_growth_mb": 0, "slowest_s": 0.0,
                                                   "slowest_case": "", "breaches": 0})
        for _ in range(cases):
            tmp = tempfile.mkdtemp(prefix="fz49-")
            cwd = os.getcwd()
            check: Dict = {}
            try:
                argv, check = COMMANDS[command](rng, tmp)
                os.chdir(tmp)
                res = B.run_case(argv, check.get("env") or {})
                bad = judge(command, argv, dict(check), res, base_kb)
            finally:
                os.chdir(cwd)
                shutil.rmtree(tmp, ignore_errors=True)
                if check.get("cleanup"):
                    shutil.rmtree(check["cleanup"], ignore_errors=True)
            if show:
                say(f"{command} exit {res['code']} {' '.join(a[:40] for a in argv)[:160]!r}: "
                    f"{(res['err'].strip().splitlines() or [''])[-1][:160]}")
            s["cases"] += 1
            key = "hang" if res["hung"] else str(res["code"])
            s["exit_codes"][key] = s["exit_codes"].get(key, 0) + 1
            s["exit_4"] += res["code"] == 4
            s["hangs"] += res["hung"]
            s["peak_mb"] = max(s["peak_mb"], res["peak_kb"] >> 10)
            s["peak_growth_mb"] = max(s["peak_growth_mb"], (res["peak_kb"] - base_kb) >> 10)
            if res["seconds"] > s["slowest_s"]:
                s["slowest_s"], s["slowest_case"] = round(res["seconds"], 2), " ".join(a[:50] for a in argv)[:200]
            if bad:
                s["breaches"] += 1
                stats["breaches"].append({"command": command, "argv": [a[:200] for a in argv], "breaches": bad,
                                          "stderr": res["err"][-600:]})
                say(f"BREACH {command} {[a[:80] for a in argv]}: {bad}")
    return stats


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=40, help="cases per command (default 40)")
    p.add_argument("--seed", type=int, default=49)
    p.add_argument("--commands", help="comma list of " + ", ".join(COMMANDS))
    p.add_argument("--json", help="also write the counts to this file")
    p.add_argument("--show", action="store_true", help="print every case: its exit and last stderr line")
    args = p.parse_args(argv)
    t0 = time.time()
    stats = campaign(args.cases, args.seed, args.commands.split(",") if args.commands else None, show=args.show)
    stats["wall_s"] = round(time.time() - t0, 1)
    print(f"{'command':<9} {'cases':>5}  {'exit codes':<34} {'exit4':>5} {'hangs':>5} {'peakMB':>6} {'+MB':>5} "
          f"{'slowest_s':>9}")
    for command, s in stats["commands"].items():
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(s["exit_codes"].items()))
        print(f"{command:<9} {s['cases']:>5}  {codes:<34} {s['exit_4']:>5} {s['hangs']:>5} {s['peak_mb']:>6} "
              f"{s['peak_growth_mb']:>5} {s['slowest_s']:>9}")
    print(f"{len(stats['breaches'])} breach(es); warm parent {stats['base_peak_mb']} MiB; {stats['wall_s']} s "
          f"(seed {args.seed}, {args.cases} cases per command)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=2)
    return 1 if stats["breaches"] else 0


if __name__ == "__main__":
    sys.exit(main())
