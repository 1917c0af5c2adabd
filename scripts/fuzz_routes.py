"""Fuzz campaign over every route that reads what a user or a handed folder gives
ftharness (issue 40): `validate`, `matrix` (dry run and planned runs, with its axes),
`check`/`report`/`compare`/`trace` on damaged folders, `run --resume`, `doctor`.

Each case runs the CLI's own `main` in a forked child of one warm process (Ray, torch and
pandas imported once), with everything that would start a cluster, build an environment
or write a report replaced by a sentinel (exit 0, "would start"). The parent bounds each
child's wall time (a hang is killed and counted), reads its peak memory from wait4, and
checks the contract: an exit of 0, 1, 2 or 3 (4 is an internal error), no traceback, every
stderr line at most MAX_MESSAGE (400) characters, one line for an exit 2 (validate: one per error).
Route-specific promises are checked too and counted as `violations`: validate never runs
the scenario's module, a refused matrix writes nothing, a handed summary.json never aims a
resumed run's storage outside its folder, a secret never reaches the terminal, a renamed
scenario.yaml or a fault record of no kind never PASSes.

    .venv/bin/python -P scripts/fuzz_routes.py --cases 400 --seed 1 [--json FILE]

Prints counts per route and exit code, internal errors, hangs, the slowest case (wall) and the
most CPU one case used, the largest peak memory growth of a case, and the violations; exits 1
when any of those is not zero.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from typing import Callable, Dict, List, Optional, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, "tests", "data", "kill-worker")
CATALOG = os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml")
HANG_S = 30.0
MEMORY_LIMIT_KB = 1 << 20   # 1 GiB of growth over the warm parent
SECRET = "wJalrXUt/nFEMI+K7MDENG@bPxRfi"   # a secret with '/', '+' and '@'
MAX_LINE = 400   # scenarios/language/messages.py MAX_MESSAGE: one error line, prefix included


class WouldStart(BaseException):
    """Raised by the sentinels: the route got past every check and would start something."""


# ================================================================== generators
NASTY_VALUES = ["2024-01-01", "!!int abc", "9" * 5000, "[" * 40 + "1" + "]" * 40, "!!set {a, b}",
                "!!binary '@@'", "&a [*a]", "!!python/object:os.system ls", "1e99999", ".nan", "~", "",
                "{a: 1}", "[1, 2]", "'x/y'", "'x_y'", "x y", "\x1b[31m", "'" + "z" * 20000 + "'", "0x" + "f" * 60,
                "1:" * 40 + "1", f"s3://AKIA:{SECRET}@bucket/x", f"https://h/x?session_token={SECRET}", "2", "5", "0",
                "-1", "yes", "null"]
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},"
    f"*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)},*{chr(97 + i)}]\n" for i in range(8))
SET_PATHS = ["workload.checkpoint_every", "workload.steps", "failure_config.max_failures", "cluster.nodes",
             "cluster.address", "workload.storage_path", "workload.batch_size", "workload.working_dir",
             "workload.train_loop_config", "timeout_s", "name", "faults.0.kind", "nosuch.field", "cluster"]
RELEASES = ["2.60.0", "2.60", "2.060.0", "\u0662.\u0666\u0660.\u0660", "2.60.0 ", "all", "2.51.2,2.60.0", "3.0.0",
            "2.60.0,2.60.0", "", ",", "2.6e1.0", "02.60.0", "2.60.00", "x"]


def special(kind: str, path: str) -> None:
    """Make `path` one of the files that look like input but must never be read as such."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind in ("kmsg", "zero", "stdin", "urandom", "self-mem", "kcore"):
        target = {"kmsg": "/proc/kmsg", "zero": "/dev/zero", "stdin": "/dev/stdin", "urandom": "/dev/urandom",
                  "self-mem": "/proc/self/mem", "kcore": "/proc/kcore"}[kind]
        os.symlink(target, path)
    elif kind == "sparse":
        with open(path, "wb") as f:
            f.truncate(1700 << 20)   # 1.7 GB that costs no disk
    elif kind == "dir":
        os.mkdir(path)
    elif kind == "dangling":
        os.symlink(path + ".nowhere", path)
    elif kind == "loop":
        os.symlink(path, path)
    else:
        raise ValueError(kind)


SPECIALS = ["fifo", "kmsg", "zero", "stdin", "urandom", "self-mem", "kcore", "sparse", "dir", "dangling", "loop"]


def scenario_text(rng: random.Random, name: str = "fz", extra: str = "") -> str:
    return (f"name: {name}\ncluster: {{nodes: 2, cpus_per_node: 1}}\nworkload: {{num_workers: 2, steps: 6{extra}}}\n"
            f"faults:\n- kind: kill_worker\n  at: {{step: 2}}\n  target: {{rank: 1}}\n")


def gen_validate(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    """A scenario file (special files, entrypoints with side effects, working_dir escapes,
    addresses, secrets, damaged YAML) and `validate` over it."""
    path = os.path.join(tmp, "s.yaml")
    how = rng.choice(["special", "special", "entrypoint", "entrypoint", "working_dir", "address", "secret",
                      "yaml", "proc"])
    check: Dict = {}
    argv = ["validate", path]
    if how == "special":
        special(rng.choice(SPECIALS), path)
    elif how == "proc":
        argv = ["validate", rng.choice(["/proc/kmsg", "/proc/self/environ", "/dev/zero", "/sys/kernel/notes",
                                        "/proc/self/fd/0", "/dev/stdin", "/proc/kcore"])]
    elif how == "entrypoint":
        marker = os.path.join(tmp, "EXECUTED")
        body = rng.choice([
            f"open({marker!r}, 'w').write('x')\ndef train(config):\n    pass\n",
            f"import os\nos.system('touch {marker}')\n",
            f"def train(config):\n    pass\nopen({marker!r}, 'w')\nraise SystemExit(3)\n",
            "def train(:\n", "\x00\x01", "x = 1\n" * 50000, "train = 1\n",
            f"if True:\n    def train(c):\n        open({marker!r}, 'w')\n",
            "from os import *\n", "def __getattr__(name):\n    return print\n"])
        mod = rng.choice(["fzjob", "yaml", "json", "fzpkg.sub", "os"])
        if "." in mod:
            os.makedirs(os.path.join(tmp, "fzpkg"), exist_ok=True)
            with open(os.path.join(tmp, "fzpkg", "__init__.py"), "w") as f:
                f.write(f"open({marker!r}, 'w')\n")
            with open(os.path.join(tmp, "fzpkg", "sub.py"), "w") as f:
                f.write(body)
        else:
            with open(os.path.join(tmp, f"{mod}.py"), "w") as f:
                f.write(body)
        fn = rng.choice(["train", "missing", "x-y"])
        field = rng.choice(["entrypoint", "datasets", "dataset_config"])
        extra = f", entrypoint: '{mod}:{fn}'" if field == "entrypoint" else \
            f", {field}: '{mod}:{fn}'"
        with open(path, "w") as f:
            f.write(scenario_text(rng, extra=extra))
        check["marker"] = marker
    elif how == "working_dir":
        os.makedirs(os.path.join(tmp, "code"), exist_ok=True)
        outside = tempfile.mkdtemp(prefix="issue-40-outside-")
        check["cleanup"] = outside
        os.symlink(outside, os.path.join(tmp, "link"))
        wd = rng.choice(["../secrets", "/root", "code", "link", "code/../..", "code/../link", ".", "code/./.."])
        with open(path, "w") as f:
            f.write(scenario_text(rng, extra=f", working_dir: '{wd}'"))
        check["working_dir"] = wd
    elif how == "address":
        addr = rng.choice(["ray://h:10001", "127.0.0.1:1", "auto", "h:0", "h:99999", f"u:{SECRET}@h:1"])
        with open(path, "w") as f:
            f.write(scenario_text(rng).replace("cluster: {", f"cluster: {{address: '{addr}', "))
        if rng.random() < 0.5:
            argv.append("--allow-destructive")
    elif how == "secret":
        value = rng.choice([f"s3://AKIA:{SECRET}@bucket/p", f"s3://bucket/p?x-amz-security-token={SECRET}",
                            f"https://u:{SECRET}@h/p", f"gs://b/p?access_token={SECRET}&api_key={SECRET}"])
        with open(path, "w") as f:
            f.write(scenario_text(rng, extra=f", storage_path: '{value}', checkpoint_every: 0"))
        check["secret"] = True
    else:
        text = scenario_text(rng)
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(text) + 1)
            text = text[:i] + rng.choice(NASTY_VALUES + ["\n", ":", "- ", "  ", "{", "]", ALIAS_BOMB]) + text[i:]
        with open(path, "w", errors="surrogateescape") as f:
            f.write(text)
    if rng.random() < 0.2:
        argv += ["--ray", rng.choice(RELEASES)]
    return argv, check


def gen_matrix(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    """`matrix` with axes of nasty values, many values, many axes, releases, addresses, --out."""
    path = os.path.join(tmp, "s.yaml")
    with open(path, "w") as f:
        f.write(scenario_text(rng))
    out = os.path.join(tmp, "m")
    argv = ["matrix", path, "--dry-run" if rng.random() < 0.6 else "--quiet-none", "--out", out]
    argv = [a for a in argv if a != "--quiet-none"]
    how = rng.choice(["nasty", "nasty", "many", "product", "collide", "address", "scenario", "out", "ray",
                      "scenario-address", "env-address"])
    check: Dict = {"out": out}
    if how == "nasty":
        for _ in range(rng.randint(1, 3)):
            argv += ["--set", f"{rng.choice(SET_PATHS)}={','.join(rng.choice(NASTY_VALUES) for _ in range(rng.randint(1, 3)))}"]
    elif how == "many":
        argv += ["--set", "workload.checkpoint_every=" + ",".join(str(i) for i in range(rng.choice([50, 3000, 100000])))]
    elif how == "product":
        paths = ["workload.checkpoint_every", "workload.steps", "failure_config.max_failures", "workload.batch_size",
                 "timeout_s", "workload.step_delay_s", "workload.epochs", "cluster.cpus_per_node"]
        for p in paths[: rng.randint(2, 8)]:
            argv += ["--set", f"{p}=" + ",".join(str(i + 1) for i in range(40))]
    elif how == "collide":
        argv += ["--set", rng.choice(["workload.storage_path=a/b,a_b", "workload.storage_path=a b,a_b",
                                      "workload.storage_path=x" * 1 + ",".join("y" * 300 + str(i) for i in range(3)),
                                      "workload.checkpoint_every=1,1", "workload.storage_path=a:b,a;b"])]
    elif how == "address":
        argv += ["--set", f"cluster.address={rng.choice(['127.0.0.1:6379', 'auto', 'ray://h:1', f'u:{SECRET}@h:1'])}"]
        check["address"] = True
    elif how == "scenario-address":
        with open(path, "w") as f:
            f.write(scenario_text(rng).replace("cluster: {", "cluster: {address: '127.0.0.1:6379', "))
        check["address"] = True
    elif how == "env-address":
        check["env"] = {"RAY_ADDRESS": "127.0.0.1:6379"}
    elif how == "scenario":
        os.unlink(path)
        special(rng.choice(SPECIALS), path)
    elif how == "out":
        argv[argv.index("--out") + 1] = rng.choice(["/dev/full", "/proc/self/x", "/sys/x", path, "", "a\nb",
                                                    "/" + "x" * 2000, os.path.join(path, "sub")])
        check.pop("out")
    else:
        argv += ["--ray", rng.choice(RELEASES)]
    if rng.random() < 0.3:
        argv += ["--repeat", rng.choice(["1", "2", "0", "101", "1000000"])]
    if rng.random() < 0.2:
        argv += ["--allow-destructive"]
        check.pop("address", None)
    return argv, check


def damaged_folder(rng: random.Random, folder: str) -> Dict:
    """A copy of the recorded kill-worker folder, damaged: special files, renamed scenarios, fault
    records of no kind, secrets, garbage lines."""
    os.makedirs(folder)
    for name in ("scenario.yaml", "summary.json", "history.jsonl"):
        shutil.copy(os.path.join(DATA, name), os.path.join(folder, name))
    check: Dict = {}
    how = rng.choice(["special", "special", "rename", "kind", "lines", "secret", "summary"])
    if how == "special":
        name = rng.choice(["scenario.yaml", "summary.json", "history.jsonl"])
        os.unlink(os.path.join(folder, name))
        special(rng.choice(SPECIALS), os.path.join(folder, name))
    elif how == "rename":
        with open(os.path.join(folder, "scenario.yaml")) as f:
            text = f.read()
        other = rng.choice(["kill-node", "preempt-node", "x" * 100])
        with open(os.path.join(folder, "scenario.yaml"), "w") as f:
            f.write(text.replace("name: kill-worker", f"name: {other}", 1))
        check["no_pass"] = "renamed"
    elif how == "kind":
        with open(os.path.join(folder, "history.jsonl"), "rb") as f:
            data = f.read()
        value = rng.choice([b"7", b"null", b'["kill_worker"]', b'{"a": 1}', b"true", b'""'])
        data = data.replace(b'"fault_kind": "kill_worker"', b'"fault_kind": ' + value)
        with open(os.path.join(folder, "history.jsonl"), "wb") as f:
            f.write(data)
        check["no_pass"] = "fault kind"
    elif how == "lines":
        with open(os.path.join(folder, "history.jsonl"), "rb") as f:
            lines = f.read().split(b"\n")
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(lines))
            op = rng.choice(["drop", "dup", "garbage", "truncate", "field"])
            if op == "drop":
                del lines[i]
            elif op == "dup":
                lines.insert(i, lines[i])
            elif op == "garbage":
                lines.insert(i, bytes(rng.randrange(256) for _ in range(rng.randint(0, 60))).replace(b"\n", b""))
            elif op == "truncate":
                lines[i] = lines[i][: rng.randint(0, len(lines[i]))]
            else:
                v = rng.choice([b"NaN", b"1e999", b"-1", b'"x"', b"[]", b"{}", b"99999999999999999999999", b"null"])
                k = rng.choice([b"t", b"seq", b"step", b"fault", b"attempt", b"kind", b"rank", b"scenario"])
                lines[i] = lines[i].rstrip(b"}") + b', "' + k + b'": ' + v + b"}"
        with open(os.path.join(folder, "history.jsonl"), "wb") as f:
            f.write(b"\n".join(lines))
    elif how == "secret":
        with open(os.path.join(folder, "history.jsonl"), "ab") as f:
            f.write(json.dumps({"kind": "note", "seq": 10 ** 6, "t": 1.0,
                                "detail": f"s3://AKIA:{SECRET}@b/x"}).encode() + b"\n")
    else:
        with open(os.path.join(folder, "summary.json"), "w") as f:
            f.write(rng.choice(["[]", "{", '{"verdict": "PASS"}', "null", '{"scenario": 5, "verdict": NaN}',
                                json.dumps({"storage_path": "/etc", "run_name": "kill-worker"}),
                                "[" * 100000 + "]" * 100000]))
    return check


def gen_results(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    a = os.path.join(tmp, "a")
    check = damaged_folder(rng, a)
    command = rng.choice(["check", "check", "report", "compare", "trace", "verdict"])
    if command == "check":
        return ["check", a] + (["--json"] if rng.random() < 0.3 else []), check
    if command == "trace":
        return ["trace", a, "--out", os.path.join(tmp, "t.json")], {}
    if command == "report":
        return ["report", a, "--out", os.path.join(tmp, "rep")], {}
    if command == "verdict":
        journal = os.path.join(tmp, "journal.json")
        with open(journal, "w") as f:
            json.dump({"status": "completed", "ftharness": {"results_dir": a, "verdict": "PASS"}}, f)
        return ["verdict", journal], {"no_pass": check.get("no_pass")} if check.get("no_pass") else {}
    b = os.path.join(tmp, "b")
    damaged_folder(rng, b) if rng.random() < 0.5 else shutil.copytree(DATA, b)
    return ["compare", f"base={a}", f"new={b}", "--out", os.path.join(tmp, "cmp")], {}


#: the recorded run's events, and the kinds of events in it (resealed edits keep the history "complete")
FIELD_VALUES = [None, float("nan"), float("inf"), -1, 0, 10 ** 30, "x", "", [], {}, True, 1.5, "kill_worker",
                "PASS", {"a": 1}, [1, 2]]


def resealed_folder(rng: random.Random, folder: str, data: str = DATA) -> None:
    """A copy of a recorded folder whose history is edited (fields set to odd values, events
    dropped or repeated) and sealed again, as a crafted folder would be: complete to the reader,
    so `report` and `compare` judge and plot it."""
    from ftharness.history.records import sealed_lines

    shutil.copytree(data, folder)
    with open(os.path.join(folder, "history.jsonl"), "rb") as f:
        events = [json.loads(line) for line in f.read().splitlines() if line.strip()]
    events = [e for e in events if e.get("kind") != "history_end"]
    for _ in range(rng.randint(1, 3)):
        i = rng.randrange(len(events))
        op = rng.choice(["field", "field", "field", "drop", "dup", "kind"])
        if op == "field":
            key = rng.choice(sorted(events[i]) + ["metrics", "recovery_s", "wall_time_s", "error_type", "outcome"])
            events[i][key] = rng.choice(FIELD_VALUES)
        elif op == "drop":
            del events[i]
        elif op == "dup":
            events.insert(i, dict(events[i]))
        else:
            events[i]["kind"] = rng.choice(["failure", "recovered", "run_end", "step", "report", "fault_injected",
                                            "attempt_start", "controller_state", "checkpoint_written"])
    try:
        lines = sealed_lines(events, renumber=rng.random() < 0.5)
    except TypeError:   # a seq or an emitter of another type cannot close the manifest: the folder as recorded
        return
    with open(os.path.join(folder, "history.jsonl"), "wb") as f:
        f.write(b"\n".join(lines) + b"\n")
    if rng.random() < 0.3:
        os.unlink(os.path.join(folder, "summary.json"))


def gen_compare(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    """`compare` over two folders: recorded, damaged, or edited and sealed again (histories `report`
    handles), of one scenario or of two."""
    folders = []
    for name in ("a", "b"):
        folder = os.path.join(tmp, name)
        how = rng.random()
        source = rng.choice([DATA, DATA, os.path.join(REPO, "tests", "data", "preempt-node"),
                             os.path.join(REPO, "tests", "data", "torchrun-kill-worker")])
        if how < 0.2:
            shutil.copytree(source, folder)
        elif how < 0.4:
            damaged_folder(rng, folder)
        else:
            resealed_folder(rng, folder, source)
        folders.append(folder)
    gates = ["--fail-if", rng.choice(["recovery_s.median > +10%", "lost_steps.p95 > 1", "ettr.median < 50%"])] \
        if rng.random() < 0.4 else []
    pool = ["--pool"] if rng.random() < 0.5 else []
    if rng.random() < 0.3:   # `report` handles these histories: so must `compare`
        return ["report", folders[0], folders[1], "--out", os.path.join(tmp, "rep")], {}
    return ["compare", f"base={folders[0]}", f"new={folders[1]}", "--out", os.path.join(tmp, "cmp"),
            *gates, *pool], {}


def gen_resume(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    """`run --resume FOLDER` where FOLDER's summary.json is special or names storage elsewhere."""
    folder = os.path.join(tmp, "prev")
    os.makedirs(os.path.join(folder, "storage"))
    summary = os.path.join(folder, "summary.json")
    how = rng.choice(["special", "special", "storage", "storage", "storage", "garbage"])
    check: Dict = {}
    if how == "special":
        special(rng.choice(SPECIALS), summary)
    elif how == "storage":
        storage = rng.choice(["/etc", "/", "s3://victim-bucket/x", f"s3://AKIA:{SECRET}@b/x", "../..",
                              os.path.join(folder, "storage"), os.path.join(folder, "storage", "..", ".."),
                              "/old/place/prev/storage", "gs://b", "file:///etc", 5, None, ["x"]])
        with open(summary, "w") as f:
            json.dump({"run_name": rng.choice(["fz-1", "../x", "a\nb", "fz-1"]), "storage_path": storage}, f)
        check["storage"] = storage
        check["own"] = os.path.realpath(os.path.join(folder, "storage"))
    else:
        with open(summary, "wb") as f:
            f.write(rng.choice([b"", b"{", b"[]", b"\xff\xfe", b"[" * 200000]))
    scenario = os.path.join(tmp, "s.yaml")
    with open(scenario, "w") as f:
        f.write(scenario_text(rng))
    return ["run", scenario, "--resume", folder, "--out", os.path.join(tmp, "out")], check


def gen_doctor(rng: random.Random, tmp: str) -> Tuple[List[str], Dict]:
    """`doctor` over special files, large files, many files and odd code."""
    how = rng.choice(["special", "large", "many", "code", "proc"])
    target = os.path.join(tmp, "d")
    os.makedirs(target)
    if how == "special":
        special(rng.choice(SPECIALS), os.path.join(target, "x.py"))
    elif how == "large":
        with open(os.path.join(target, "big.py"), "w") as f:
            f.write("x = 1\n" * rng.choice([1000, 50000, 2_000_000]))
    elif how == "many":
        for i in range(rng.choice([10, 6000])):
            with open(os.path.join(target, f"m{i}.py"), "w") as f:
                f.write("import ray\n")
    elif how == "proc":
        return ["doctor", rng.choice(["/proc/kmsg", "/proc/self/environ", "/dev/zero", "/proc/kcore"])], {}
    else:
        with open(os.path.join(target, "c.py"), "w") as f:
            f.write(rng.choice(["(" * 5000 + ")" * 5000, "def f(:\n", "\x00", "x = [" + "1," * 200000 + "]\n",
                                "from ray.train.torch import TorchTrainer\nTorchTrainer(lambda c: 0).fit()\n"]))
    return ["doctor", target] + (["--ray", rng.choice(RELEASES)] if rng.random() < 0.2 else []), {}


ROUTES: Dict[str, Callable] = {"validate": gen_validate, "matrix": gen_matrix, "results": gen_results,
                               "compare": gen_compare, "resume": gen_resume, "doctor": gen_doctor}


# ================================================================== running one case
def install_sentinels() -> None:
    """Everything that would start a cluster, build an environment or write a report raises WouldStart."""
    import ftharness.harness.matrix.runner as matrix_runner
    import ftharness.harness.run.runner as runner
    import ftharness.reports.html as html
    import ftharness.reports.junit as junit

    def stop(*a, **k):
        raise WouldStart()

    for module, name in ((runner, "run_scenario"), (matrix_runner, "run_matrix"), (html, "write_report"),
                         (junit, "write_junit")):   # compare writes its table and page: that is its route
        setattr(module, name, stop)


def child(argv: List[str], env: Dict[str, str], wfd: int) -> None:
    """In the forked child: run the CLI, send (exit, stdout, stderr) back, exit."""
    os.environ.update(env)
    install_sentinels()   # in the child only: the parent (a pytest process) keeps its real functions
    out, err = io.StringIO(), io.StringIO()
    from ftharness.harness.frontends.cli import main

    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 2
        except WouldStart:
            code = 0
            print("(would start)", file=sys.stdout)
        except BaseException as e:  # noqa: BLE001 - escaped main: counted as an internal error
            code = 4
            print(f"escaped main: {type(e).__name__}: {e}", file=sys.stderr)
    payload = json.dumps({"code": code, "out": out.getvalue()[-20000:], "err": err.getvalue()[-20000:]},
                         default=str).encode()
    with os.fdopen(wfd, "wb") as f:
        f.write(payload)
    os._exit(0)


def run_case(argv: List[str], env: Dict[str, str]) -> Dict:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            child(argv, env, w)
        finally:
            os._exit(70)
    os.close(w)
    os.set_blocking(r, False)
    chunks, t0, hung = [], time.monotonic(), False
    while True:
        try:
            part = os.read(r, 1 << 16)
            if part:
                chunks.append(part)
                continue
            pid_done, status, usage = os.wait4(pid, 0)
            break
        except BlockingIOError:
            pass
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            with contextlib.suppress(BlockingIOError):
                while True:
                    part = os.read(r, 1 << 16)
                    if not part:
                        break
                    chunks.append(part)
            break
        if time.monotonic() - t0 > HANG_S:
            hung = True
            os.kill(pid, signal.SIGKILL)
            _, status, usage = os.wait4(pid, 0)
            break
        time.sleep(0.01)
    os.close(r)
    seconds = time.monotonic() - t0
    try:
        res = json.loads(b"".join(chunks)) if chunks else {"code": None, "out": "", "err": ""}
    except ValueError:
        res = {"code": None, "out": "", "err": ""}
    res.update(seconds=seconds, cpu_s=usage.ru_utime + usage.ru_stime, hung=hung, peak_kb=usage.ru_maxrss,
               status=status)
    return res


def judge(route: str, argv: List[str], check: Dict, res: Dict, base_kb: int) -> List[str]:
    """The contract's breaches for one case (an empty list: it held)."""
    bad = []
    code, err = res["code"], res["err"]
    lines = err.splitlines()
    if res["hung"]:
        return ["hang"]
    if code is None:
        return [f"child died (status {res['status']})"]
    if code == 4 or "internal error" in err or "escaped main" in err:
        bad.append("internal error: " + (lines[-1] if lines else ""))
    if code not in (0, 1, 2, 3, 4):
        bad.append(f"exit {code}")
    if "Traceback" in err:
        bad.append("traceback")
    if any(len(x) > MAX_LINE for x in lines):
        bad.append(f"line of {max(len(x) for x in lines)} characters")
    if code == 2 and argv[0] != "validate" and len(lines) != 1:
        bad.append(f"{len(lines)} lines for an exit 2")
    if res["peak_kb"] - base_kb > MEMORY_LIMIT_KB:
        bad.append(f"peak memory grew {(res['peak_kb'] - base_kb) >> 10} MiB")
    if SECRET in err or SECRET in res["out"]:
        bad.append("secret on the terminal")
    if check.get("marker") and os.path.exists(check["marker"]):
        bad.append("validate ran the scenario's module")
    if check.get("working_dir") and code == 0:
        wd = check["working_dir"]
        if wd.startswith("/") or ".." in wd.split("/") or wd in ("link", "code/../link"):
            bad.append(f"working_dir {wd} accepted")
    if route == "matrix" and code == 2 and check.get("out") and os.path.exists(check["out"]):
        bad.append("a refused matrix wrote its --out")
    if route == "matrix" and check.get("address") and code == 0:
        bad.append("a matrix with a cluster address passed without --allow-destructive")
    if route == "matrix" and check.get("env") and "RAY_ADDRESS" in err:
        pass
    if check.get("no_pass") and code == 0:
        bad.append(f"PASS of a folder with a {check['no_pass']} scenario/history")
    if route == "resume" and "storage" in check and code == 0:
        storage = check["storage"]
        own = check["own"]
        if not (isinstance(storage, str) and "://" not in storage and os.path.realpath(storage) == own) and \
                not (isinstance(storage, str) and storage.endswith("/storage") and "://" not in storage):
            bad.append(f"--resume accepted storage_path {storage!r}")
    return bad


def campaign(cases: int, seed: int, routes: Optional[List[str]] = None, say=print) -> Dict:
    """Run `cases` cases per route (seeded); the counts and the breaches."""
    import ftharness.harness.run.runner  # noqa: F401 - warm: Ray, torch
    import ftharness.reports.html  # noqa: F401 - pandas
    import ftharness.reports.trace  # noqa: F401
    from ftharness.harness.frontends.cli import main

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["check", DATA])   # warm the reading path
    base_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    rng = random.Random(seed)
    stats: Dict = {"seed": seed, "cases_per_route": cases, "routes": {}, "breaches": [], "base_peak_kb": base_kb}
    for route in routes or list(ROUTES):
        s = stats["routes"].setdefault(route, {"cases": 0, "exit_codes": {}, "internal_errors": 0, "hangs": 0,
                                               "over_1gb": 0, "violations": 0, "slowest_s": 0.0, "slowest_case": "",
                                               "most_cpu_s": 0.0,
                                               "largest_peak_growth_mb": 0.0})
        for i in range(cases):
            tmp = tempfile.mkdtemp(prefix="issue-40-fuzz-")
            cwd = os.getcwd()
            try:
                argv, check = ROUTES[route](rng, tmp)
                os.chdir(tmp)
                env = check.get("env") or {}
                res = run_case(argv, env)
            finally:
                os.chdir(cwd)
                shutil.rmtree(tmp, ignore_errors=True)
                if check.get("cleanup"):
                    shutil.rmtree(check["cleanup"], ignore_errors=True)
            bad = judge(route, argv, check, res, base_kb)
            s["cases"] += 1
            key = "hang" if res["hung"] else str(res["code"])
            s["exit_codes"][key] = s["exit_codes"].get(key, 0) + 1
            s["internal_errors"] += any(b.startswith("internal error") for b in bad)
            s["hangs"] += res["hung"]
            s["over_1gb"] += any(b.startswith("peak memory") for b in bad)
            s["violations"] += any(not b.startswith(("internal error", "peak memory", "hang")) for b in bad)
            s["most_cpu_s"] = round(max(s["most_cpu_s"], res["cpu_s"]), 2)
            if res["seconds"] > s["slowest_s"]:
                s["slowest_s"], s["slowest_case"] = round(res["seconds"], 2), " ".join(a[:60] for a in argv)[:300]
            s["largest_peak_growth_mb"] = round(max(s["largest_peak_growth_mb"],
                                                    (res["peak_kb"] - base_kb) / 1024), 1)
            if bad:
                stats["breaches"].append({"route": route, "argv": [a[:200] for a in argv], "breaches": bad,
                                          "stderr": res["err"][-600:]})
                say(f"BREACH {route} {[a[:80] for a in argv]}: {bad}")
    return stats


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=100, help="cases per route (default 100)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--routes", help="comma list of " + ", ".join(ROUTES))
    p.add_argument("--json", help="also write the counts to this file")
    args = p.parse_args(argv)
    t0 = time.time()
    stats = campaign(args.cases, args.seed, args.routes.split(",") if args.routes else None)
    stats["wall_s"] = round(time.time() - t0, 1)
    print(f"{'route':<10} {'cases':>5}  exit codes{'':<30} internal  hangs  >1GB  violations  slowest_s  cpu_s  peak+MB")
    for route, s in stats["routes"].items():
        codes = ", ".join(f"{k}: {v}" for k, v in sorted(s["exit_codes"].items()))
        print(f"{route:<10} {s['cases']:>5}  {codes:<40} {s['internal_errors']:>8} {s['hangs']:>6} {s['over_1gb']:>5} "
              f"{s['violations']:>11} {s['slowest_s']:>10} {s['most_cpu_s']:>6} {s['largest_peak_growth_mb']:>8}")
    print(f"{len(stats['breaches'])} breach(es); {stats['wall_s']} s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(stats, f, indent=2)
    return 1 if stats["breaches"] else 0


if __name__ == "__main__":
    sys.exit(main())
