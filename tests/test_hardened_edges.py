"""Issue 40, "hardened edges, second round": one test (at least) per item of "What was seen",
each failing without its fix. Pure: no cluster starts (the routes are stopped where they
would start one), every case in bounded time."""

import json
import os
import shutil
import signal
import sys
import time

import pytest

from conftest import REPO
from ftharness.scenarios.language.messages import MAX_MESSAGE

DATA = os.path.join(REPO, "tests", "data", "kill-worker")
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCY"   # an AWS-style secret key: it holds '/' and '+'


class WouldStart(BaseException):
    """Raised where a route would start a cluster, a run or an environment."""


def _stop(*a, **k):
    raise WouldStart()


_WARM: list = []


@pytest.fixture
def cli(capsys, monkeypatch):
    """(exit code, stderr lines, stdout) of the CLI in-process; a route that gets past every
    check and would start something exits 0 with `(would start)`."""
    import ftharness.harness.matrix.command  # noqa: F401 - imported once (Ray, torch), outside the timed calls
    import ftharness.harness.matrix.runner as matrix_runner
    import ftharness.harness.run.runner as runner
    import ftharness.harness.run.suite as suite
    import ftharness.reports.html  # noqa: F401
    from ftharness.scenarios.schema import scenario_json_schema

    if not _WARM:   # the first build reads the models' sources (seconds on a loaded machine): once
        scenario_json_schema()
        _WARM.append(True)

    for module, name in ((runner, "run_scenario"), (matrix_runner, "run_matrix"), (suite, "run_suite")):
        monkeypatch.setattr(module, name, _stop)

    def call(*args, bound_s=10.0):
        from ftharness.harness.frontends.cli import main

        t = time.time()
        try:
            code = main([str(a) for a in args])
        except WouldStart:
            code, _ = 0, print("(would start)")
        assert time.time() - t < bound_s, args
        got = capsys.readouterr()
        err = got.err.strip().splitlines()
        assert all(len(line) <= MAX_MESSAGE for line in err) and "Traceback" not in got.err, err
        return code, err, got.out
    return call


def one_line(code, err, *words):
    assert code == 2 and len(err) == 1, (code, err)
    for w in words:
        assert w in err[0], err[0]
    return err[0]


def edit(path, old, new):
    with open(path) as f:
        text = f.read()
    assert old in text
    with open(path, "w") as f:
        f.write(text.replace(old, new))


def scenario(folder, text="", name="s"):
    path = os.path.join(folder, f"{name}.yaml")
    with open(path, "w") as f:
        f.write(f"name: {name}\ncluster: {{nodes: 2, cpus_per_node: 1}}\nworkload: {{num_workers: 2, steps: 6}}\n"
                f"faults:\n- kind: kill_worker\n  at: {{step: 2}}\n  target: {{rank: 1}}\n" + text)
    return path


# ------------------------------------------------------------------ 1. validate and suite are static
MODULE = "open({marker!r}, 'w').write('ran')\ndef train(config):\n    pass\n"


def test_validate_proves_the_entrypoint_without_running_the_module(tmp_path, cli):
    marker = tmp_path / "RAN"
    (tmp_path / "prjob.py").write_text(MODULE.format(marker=str(marker)))
    path = scenario(tmp_path, name="s").replace("s.yaml", "s.yaml")
    text = open(path).read().replace("steps: 6}", "steps: 6, entrypoint: 'prjob:train'}")
    open(path, "w").write(text)
    code, err, out = cli("validate", path)
    assert code == 0 and "ok" in out, err
    assert not marker.exists() and "prjob" not in sys.modules
    (tmp_path / "prjob.py").write_text(MODULE.format(marker=str(marker)).replace("def train", "def other"))
    one_line(*cli("validate", path)[:2], "workload.entrypoint", "has no function 'train'")
    assert not marker.exists()


def test_suite_checks_every_entrypoint_before_anything_runs_without_running_it(tmp_path, cli):
    marker = tmp_path / "RAN"
    (tmp_path / "prjob2.py").write_text(MODULE.format(marker=str(marker)))
    path = scenario(tmp_path)
    edit(path, "steps: 6}", "steps: 6, entrypoint: 'prjob2:train'}")
    code, err, out = cli("suite", path, "--out", tmp_path / "out")
    assert code == 0 and "(would start)" in out, err   # it got to run_suite, which would import the module itself
    assert not marker.exists() and "prjob2" not in sys.modules


# ------------------------------------------------------------------ 2. matrix: the guard first
def test_matrix_refuses_a_scenario_address_with_faults_in_a_dry_run_before_writing(tmp_path, cli):
    path = scenario(tmp_path)
    edit(path, "cluster: {", "cluster: {address: '127.0.0.1:6379', ")
    out = tmp_path / "m"
    one_line(*cli("matrix", path, "--dry-run", "--out", out)[:2], "127.0.0.1:6379", "--allow-destructive")
    assert not out.exists()


def test_matrix_refuses_a_set_address_before_building_anything(tmp_path, cli, monkeypatch):
    import ftharness.harness.matrix.envs as envs

    monkeypatch.setattr(envs, "ensure_env", _stop)
    out = tmp_path / "m"
    for extra in (["--dry-run"], []):
        one_line(*cli("matrix", scenario(tmp_path), "--set", "cluster.address=127.0.0.1:6379", "--out", out,
                      *extra)[:2], "cluster.address", "--allow-destructive")
        assert not out.exists()


def test_matrix_cells_do_not_inherit_ray_address_nor_put_the_scenario_folder_on_the_path(tmp_path, monkeypatch):
    import subprocess

    from ftharness.harness.matrix.axes import Cell
    from ftharness.harness.matrix.runner import MatrixOptions, run_cell

    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    seen = {}

    def fake_run(cmd, **kw):
        seen.update(cmd=cmd, env=kw["env"])
        return subprocess.CompletedProcess(cmd, 2)

    monkeypatch.setattr(subprocess, "run", fake_run)
    source = scenario(tmp_path)
    data = {"name": "s", "workload": {"steps": 6}}
    run_cell(Cell("s", source, "2.60.0", {}, 1, data), sys.executable, MatrixOptions(out_dir=str(tmp_path / "m")))
    assert "RAY_ADDRESS" not in seen["env"]
    assert str(tmp_path) not in seen["env"].get("PYTHONPATH", "")
    assert seen["cmd"][seen["cmd"].index("--scenario-dir") + 1] == str(tmp_path)


# ------------------------------------------------------------------ 3. --resume trusts nothing it is handed
def _previous(tmp_path, summary=None, make=None):
    folder = tmp_path / "prev"
    (folder / "storage").mkdir(parents=True)
    if make:
        make(str(folder / "summary.json"))
    else:
        (folder / "summary.json").write_text(json.dumps(summary))
    return folder


@pytest.mark.parametrize("make", [os.mkfifo, lambda p: os.symlink("/dev/zero", p),
                                  lambda p: os.symlink("/proc/kmsg", p)], ids=["fifo", "dev-zero", "kmsg"])
def test_resume_reads_summary_json_bounded(tmp_path, cli, make):
    folder = _previous(tmp_path, make=make)
    one_line(*cli("run", scenario(tmp_path), "--resume", folder, "--out", tmp_path / "out")[:2],
             "--resume", "summary.json")


@pytest.mark.parametrize("storage", ["/etc", "s3://victim-bucket/ckpt", "gs://b/x", "file:///root"])
def test_resume_refuses_storage_the_folder_does_not_own(tmp_path, cli, storage):
    folder = _previous(tmp_path, {"run_name": "s-1", "storage_path": storage})
    one_line(*cli("run", scenario(tmp_path), "--resume", folder, "--out", tmp_path / "out")[:2],
             "storage_path", "workload.storage_path")


def test_resume_takes_the_folders_own_storage_or_the_declared_one(tmp_path, cli):
    folder = _previous(tmp_path, {"run_name": "s-1", "storage_path": "/somewhere/else/prev/storage"})
    code, err, out = cli("run", scenario(tmp_path), "--resume", folder, "--out", tmp_path / "out")
    assert code == 0 and "(would start)" in out, err   # moved folder: its own storage
    (folder / "summary.json").write_text(json.dumps({"run_name": "s-1", "storage_path": "/data/ckpt"}))
    path = scenario(tmp_path)
    edit(path, "steps: 6}", "steps: 6, storage_path: /data/ckpt}")
    code, err, out = cli("run", path, "--resume", folder, "--out", tmp_path / "out2")
    assert code == 0 and "(would start)" in out, err


# ------------------------------------------------------------------ 4. working_dir stays in the folder
@pytest.mark.parametrize("wd", ["../secrets", "/root", "code/../..", "out-link", "code/inner-link/.."])
def test_working_dir_is_confined_to_the_scenario_folder(tmp_path, cli, wd):
    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    outside = tmp_path / "secrets"
    outside.mkdir()
    os.symlink(outside, home / "out-link")
    os.symlink(outside, home / "code" / "inner-link")
    path = scenario(home)
    edit(path, "steps: 6}", f"steps: 6, working_dir: '{wd}'}}")
    one_line(*cli("validate", path)[:2], "workload.working_dir")


def test_submit_ships_no_symlink_out_of_the_folder(tmp_path):
    from ftharness.errors import ScenarioError
    from ftharness.harness.run.submit import shipped_code
    from ftharness.scenarios.schema import load_scenario

    home = tmp_path / "home"
    (home / "code").mkdir(parents=True)
    (tmp_path / "creds").write_text("secret")
    os.symlink(tmp_path / "creds", home / "code" / "creds")
    path = scenario(home)
    edit(path, "steps: 6}", "steps: 6, working_dir: code}")
    with pytest.raises(ScenarioError, match="symlink out of the scenario's folder"):
        shipped_code(load_scenario(path))
    os.unlink(home / "code" / "creds")
    assert shipped_code(load_scenario(path)) == []


# ------------------------------------------------------------------ 5. redaction of the awkward forms
AWKWARD = [f"s3://AKIAIOSFODNN7:{SECRET}@bucket/ckpt", f"https://user:p@ss{SECRET}@host:8443/x",
           f"s3://b/x?session_token={SECRET}", f"gs://b/x?access_token={SECRET}&v=1",
           f"https://h/x?api_key={SECRET}", f"https://h/x?client_secret={SECRET}", f"https://h/x?token={SECRET}",
           f"https://h/x?secret={SECRET}", f"https://h/x?password={SECRET}", f"https://h/x?X-Amz-Security-Token={SECRET}",
           f"https://h/x?a=1&Signature={SECRET}", f"u:{SECRET}@10.0.0.1:6379", f"postgres://u:{SECRET}@db:5432/x",
           f"--address=u:{SECRET}@h:1", f"a s3://k:{SECRET}@b/x and https://h/?token={SECRET}"]


@pytest.mark.parametrize("text", AWKWARD)
def test_redact_hides_the_awkward_forms(text):
    from ftharness.safety import redact

    shown = redact(text)
    assert SECRET not in shown and "p@ss" not in shown and "***" in shown, shown
    assert redact(shown) == shown   # stable: a redacted copy redacts to itself (resume compares them)


def test_redact_keeps_what_is_no_secret_and_costs_linear_time():
    from ftharness.safety import redact

    for text in ("s3://bucket/ckpt", "alice@example.com", "max_token=3", "workload.steps=5", "name: kill-worker"):
        assert redact(text) == text
    t = time.process_time()
    for text in ("a://" * 50_000, "?token=a" * 30_000, "a://" + "@" * 100_000, "s3://" + "a:b@" * 30_000):
        redact(text)
    assert time.process_time() - t < 5


def test_secrets_stay_out_of_every_file_of_a_matrix_and_its_folder_names(tmp_path, cli):
    out = tmp_path / "m"
    code, err, stdout = cli("matrix", scenario(tmp_path), "--dry-run", "--out", out,
                            "--set", f"workload.storage_path=s3://AKIA:{SECRET}@b/x,s3://b/y?session_token={SECRET}")
    assert code == 0 and SECRET not in stdout and not any(SECRET in e for e in err), (code, err)


# ------------------------------------------------------------------ 6. matrix: one input path with limits
SETS = {
    "date": ("workload.checkpoint_every=2024-01-01", "workload.checkpoint_every"),
    "bad-int": ("workload.checkpoint_every=!!int abc", "int value"),
    "long-number": ("workload.checkpoint_every=" + "9" * 5000, "characters"),
    "deep": ("workload.train_loop_config=" + "[" * 40 + "1" + "]" * 40, "deep"),
    "set": ("workload.train_loop_config=!!set {a, b}", "set"),
    "alias": ("workload.train_loop_config=[&a [1,1,1,1,1,1,1,1,1], *a, *a]", "aliases"),
}


@pytest.mark.parametrize("case", sorted(SETS))
def test_matrix_set_values_go_through_the_scenario_loader(tmp_path, cli, case):
    value, words = SETS[case]
    one_line(*cli("matrix", scenario(tmp_path), "--dry-run", "--out", tmp_path / "m", "--set", value)[:2], words)


def test_matrix_counts_cells_before_building_them(tmp_path, cli):
    import resource

    sets = []
    for p in ("workload.checkpoint_every", "workload.steps", "failure_config.max_failures", "workload.batch_size",
              "timeout_s", "workload.step_delay_s", "workload.epochs", "cluster.cpus_per_node"):
        sets += ["--set", f"{p}=" + ",".join(str(i + 1) for i in range(40))]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    one_line(*cli("matrix", scenario(tmp_path), "--dry-run", "--out", tmp_path / "m", *sets)[:2], "cells, more than")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000


def test_matrix_reads_its_scenario_files_bounded(tmp_path, cli):
    path = tmp_path / "sparse.yaml"
    with open(path, "wb") as f:
        f.truncate(1700 << 20)
    one_line(*cli("matrix", path, "--dry-run", "--out", tmp_path / "m")[:2], "bytes")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    one_line(*cli("matrix", fifo, "--dry-run", "--out", tmp_path / "m")[:2], "not a regular file")


def test_matrix_refuses_cells_whose_folders_collide(tmp_path, cli):
    one_line(*cli("matrix", scenario(tmp_path), "--dry-run", "--out", tmp_path / "m",
                  "--set", "workload.storage_path=a/b,a_b")[:2], "share the folder name")


@pytest.mark.parametrize("out", ["/dev/full", "/proc/self/x", "FILE"])
def test_matrix_checks_out_as_every_output(tmp_path, cli, out):
    path = scenario(tmp_path)
    one_line(*cli("matrix", path, "--dry-run", "--out", path if out == "FILE" else out)[:2], "--out")


def test_matrix_error_lines_fit_one_line(tmp_path, cli):
    code, err, _ = cli("matrix", scenario(tmp_path), "--dry-run", "--out", tmp_path / "m",
                       "--set", "workload.nosuch" + "x" * 400 + "=1")
    assert code == 2 and len(err) == 1 and len(err[0]) <= MAX_MESSAGE


@pytest.mark.parametrize("ray", ["2.060.0", "\u0662.\u0666\u0660.\u0660", "02.60.0", "2.60.00", "\u0662.\u0666\u0660"])
def test_release_strings_are_strict(tmp_path, cli, ray):
    one_line(*cli("matrix", scenario(tmp_path), "--dry-run", "--out", tmp_path / "m", "--ray", ray)[:2], "--ray")
    one_line(*cli("validate", scenario(tmp_path), "--ray", ray)[:2], "--ray")
    one_line(*cli("doctor", scenario(tmp_path), "--ray", ray)[:2], "--ray")


# ------------------------------------------------------------------ 7. special files that look regular
def _folder(tmp_path, name, target):
    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    (folder / name).unlink()
    os.symlink(target, folder / name)
    return folder


def test_proc_files_are_no_scenario(cli):
    for path in ("/proc/kmsg", "/proc/self/environ", "/dev/zero", "/proc/kcore"):
        one_line(*cli("validate", path)[:2], path)


@pytest.mark.parametrize("name", ["history.jsonl", "summary.json", "scenario.yaml"])
@pytest.mark.parametrize("command", ["check", "report", "compare", "trace"])
def test_proc_files_in_a_results_folder_are_refused_not_waited_on(tmp_path, cli, name, command):
    folder = _folder(tmp_path, name, "/proc/kmsg")
    argv = {"check": ["check", folder], "report": ["report", folder, "--out", tmp_path / "rep"],
            "compare": ["compare", f"a={folder}", f"b={DATA}", "--out", tmp_path / "cmp"],
            "trace": ["trace", folder, "--out", tmp_path / "t.json"]}[command]
    one_line(*cli(*argv)[:2], "under /proc")


def test_the_bounded_reader(tmp_path):
    from ftharness.inputs import InputRefused, read_bounded

    (tmp_path / "f").write_bytes(b"x" * 100)
    assert read_bounded(str(tmp_path / "f"), 100) == b"x" * 100
    with pytest.raises(InputRefused, match="at most 99"):
        read_bounded(str(tmp_path / "f"), 99)
    os.mkfifo(tmp_path / "p")
    for path, words in ((tmp_path / "p", "not a regular file"), ("/proc/kmsg", "under /proc"),
                        ("/sys/kernel/notes", "under /sys"), ("/dev/zero", "under /dev"), (tmp_path, "folder"),
                        (tmp_path / "none", "no such file")):
        with pytest.raises(InputRefused, match=words):
            read_bounded(str(path), 1 << 20)


# ------------------------------------------------------------------ 8. the smaller ones
@pytest.mark.parametrize("kind", [b"7", b"null", b'["kill_worker"]', b"true"])
def test_check_never_passes_a_fault_record_of_no_kind(tmp_path, cli, kind):
    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    history = (folder / "history.jsonl").read_bytes()
    assert b'"fault_kind": "kill_worker"' in history
    (folder / "history.jsonl").write_bytes(history.replace(b'"fault_kind": "kill_worker"', b'"fault_kind": ' + kind))
    code, err, out = cli("check", folder)
    assert code in (2, 3) and "PASS" not in out.splitlines()[-1:], (code, out)


def test_validate_changes_nothing_on_the_host(monkeypatch):
    """The netem probe adds a network link: it is run's, never validate's."""
    from ftharness.harness.cluster import netns
    from ftharness.harness.run.preflight import preflight
    from ftharness.scenarios.schema import parse_scenario

    calls = []
    monkeypatch.setattr(netns, "unavailable", lambda: None)
    monkeypatch.setattr(netns, "nft_missing", lambda: None)
    monkeypatch.setattr(netns, "netem_missing", lambda: calls.append(1))
    sc = parse_scenario({"name": "n", "cluster": {"nodes": 2, "cpus_per_node": 1, "network": "namespaces"},
                         "workload": {"num_workers": 2, "steps": 6},
                         "faults": [{"kind": "network_degrade", "at": {"step": 2}, "target": {"node": 0},
                                     "latency_ms": 50}]})
    preflight(sc, static=True)
    assert calls == []
    preflight(sc)
    assert calls == [1]


@pytest.mark.serial   # adds a real network link and sends itself a signal: not beside the real-cluster lane
def test_the_netem_probe_removes_its_link_when_interrupted(monkeypatch):
    from ftharness.harness.cluster import netns

    done = []

    class P:
        returncode = 0
        stdout = stderr = ""

    def fake_ip(*args, check=True):
        done.append(args[:2])
        return P()

    def fake_run(cmd, check=True, stdin=None):   # Ctrl-C while the probe link exists
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        done.append(("tc",))
        return P()

    monkeypatch.setattr(netns, "_ip", fake_ip)
    monkeypatch.setattr(netns, "_run", fake_run)
    # Ctrl-C's own handler, whatever this process inherited: a run started in the background of
    # a non-interactive shell inherits SIGINT ignored, and then no KeyboardInterrupt comes at all
    kept = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            netns.netem_missing()
    finally:
        signal.signal(signal.SIGINT, kept)
    assert done == [("link", "add"), ("tc",), ("link", "del")]


def test_doctor_is_bounded(tmp_path, cli):
    (tmp_path / "big.py").write_text("x = 1\n" * 2_000_000)
    one_line(*cli("doctor", tmp_path / "big.py")[:2], "big.py", "bytes")
    os.mkfifo(tmp_path / "p.py")
    one_line(*cli("doctor", tmp_path)[:2])
    one_line(*cli("doctor", "/proc/kmsg")[:2], "under /proc")


def _damaged(tmp_path, how):
    """A copy of the recorded run, damaged `how`; the path `compare` is handed."""
    folder = tmp_path / how
    if how == "a file":
        folder.write_text("not a results folder\n")
        return folder
    shutil.copytree(DATA, folder)
    history, summary = folder / "history.jsonl", folder / "summary.json"
    if how == "truncated history":
        history.write_bytes(history.read_bytes()[:3000])
    elif how == "summary a list":
        summary.write_text("[1, 2]\n")
    elif how == "binary garbage":
        for f, n in ((history, 5000), (summary, 500), (folder / "scenario.yaml", 500)):
            f.write_bytes(bytes(range(256)) * (n // 256) + b"\xff\xfe")
    elif how == "history a symlink loop":
        history.unlink()
        os.symlink(history, history)
    elif how == "folder a symlink loop":
        shutil.rmtree(folder)
        os.symlink(folder, folder)
    elif how == "history a folder":
        history.unlink()
        history.mkdir()
        summary.unlink()
    return folder


@pytest.mark.parametrize("how", ["truncated history", "summary a list", "binary garbage", "history a symlink loop",
                                 "folder a symlink loop", "history a folder", "a file"])
def test_compare_refuses_a_damaged_folder_in_one_line(tmp_path, cli, how):
    folder = _damaged(tmp_path, how)
    for groups in ([f"a={folder}", f"b={DATA}"], [f"a={DATA}", f"b={folder}"]):
        code, err, _ = cli("compare", *groups, "--out", tmp_path / "cmp", bound_s=60)
        one_line(code, err, folder.name)   # the line names the folder
    assert not (tmp_path / "cmp").exists()   # nothing half-written


@pytest.mark.parametrize("field,value", [("versions", -1), ("settings", True), ("versions", [1])])
def test_compare_takes_what_report_takes(tmp_path, cli, field, value):
    """A summary.json field of another type: report shows the run, so compare compares it (it
    ended in an internal error)."""
    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    summary = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**summary, field: value}))
    assert cli("report", folder, "--out", tmp_path / "rep", bound_s=60)[0] == 0
    code, err, out = cli("compare", f"a={folder}", f"b={DATA}", "--out", tmp_path / "cmp", bound_s=60)
    assert code == 0 and "compare:" in out, (code, err)


def _sealed_without_kind(tmp_path, kind):
    """The recorded run with its fault records' kind replaced (None: left out), sealed again so
    only the fault record is damaged."""
    from ftharness.history.records import sealed_lines

    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    events = [json.loads(line) for line in (folder / "history.jsonl").read_text().splitlines()]
    for e in events:
        if e.get("fault_kind") == "kill_worker":
            if kind is None:
                del e["fault_kind"]
            else:
                e["fault_kind"] = kind
    (folder / "history.jsonl").write_bytes(b"\n".join(sealed_lines(events, renumber=False)) + b"\n")
    return folder


@pytest.mark.parametrize("kind", [None, "absent", 7, True, ["kill_worker"]])
def test_report_and_check_agree_on_a_fault_record_of_no_kind(tmp_path, cli, kind):
    """The rule lives in the one judgement (reports.judgement.rejudge): check, report and JUnit
    all show INCONCLUSIVE (report showed PASS for a record without its kind)."""
    from ftharness.reports.judgement import folder_statuses

    folder = _sealed_without_kind(tmp_path, None if kind == "absent" else kind)
    code, err, out = cli("check", folder)
    assert code == 3 and any(line.startswith("INCONCLUSIVE ") for line in out.splitlines()), (code, out)
    assert folder_statuses(str(folder))["verdict"] == "INCONCLUSIVE"
    assert cli("report", folder, "--out", tmp_path / "rep", "--junit", tmp_path / "j.xml", bound_s=60)[0] == 0
    junit = (tmp_path / "j.xml").read_text()
    assert "INCONCLUSIVE" in junit and "fault_kind is no fault kind" in junit


def _renamed(tmp_path, name):
    """The recorded run (kill-worker) with its own scenario.yaml carrying `name` instead."""
    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    edit(folder / "scenario.yaml", "name: kill-worker\n", f"name: {name}\n")
    return folder


def test_an_unrenamed_folder_still_passes_everywhere(tmp_path, cli):
    from ftharness.reports.judgement import folder_statuses

    code, err, out = cli("check", DATA)
    assert code == 0 and out.splitlines()[-1] == "PASS kill-worker", (code, out)
    assert folder_statuses(DATA)["verdict"] == "PASS"
    assert cli("report", DATA, "--out", tmp_path / "rep", "--junit", tmp_path / "j.xml", bound_s=60)[0] == 0
    assert "INCONCLUSIVE" not in (tmp_path / "j.xml").read_text()


@pytest.mark.parametrize("name", ["preempt-node", "kill-worker-copy"])
def test_a_scenario_yaml_of_another_name_is_inconclusive_everywhere(tmp_path, cli, name):
    """Its own scenario.yaml is the record of what ran: another scenario's file (other, easier
    expectations) swapped in is INCONCLUSIVE in check, report, JUnit and compare alike
    (reports.judgement.rejudge), one reason naming both names (check PASSed it)."""
    from ftharness.reports.judgement import folder_statuses

    folder = _renamed(tmp_path, name)
    why = f"scenario.yaml names {name}, but the history ran kill-worker"
    code, err, out = cli("check", folder)
    assert code == 3 and out.splitlines()[-2:] == [f"INCONCLUSIVE {name}", f"  ? {why}: a results folder is "
                                                   f"judged with the scenario it ran"], (code, out)
    judged = folder_statuses(str(folder))
    assert judged["verdict"] == "INCONCLUSIVE" and any(why in r for r in judged["reasons"]), judged
    assert cli("report", folder, "--out", tmp_path / "rep", "--junit", tmp_path / "j.xml", bound_s=60)[0] == 0
    junit = (tmp_path / "j.xml").read_text()
    assert "INCONCLUSIVE" in junit and why in junit
    assert why in (tmp_path / "rep" / "index.html").read_text()
    code, err, out = cli("compare", f"a={folder}", f"b={DATA}", "--out", tmp_path / "cmp", bound_s=60)
    assert code == 2 and "verdict INCONCLUSIVE" in err[0], (code, err)   # left out: never compared as a PASS


@pytest.mark.parametrize("name,shown", [("7", "7 (int: no scenario name)"), ("true", "True (bool: no scenario name)"),
                                        ("[kill-worker]", "['kill-worker'] (list: no scenario name)")])
def test_a_scenario_yaml_whose_name_is_no_string_never_passes(tmp_path, cli, name, shown):
    """No valid scenario, so check refuses it (one line, exit 2, as any invalid scenario.yaml of a
    folder) and report/JUnit show the recorded PASS as INCONCLUSIVE; both name what the history ran."""
    from ftharness.reports.judgement import folder_statuses

    folder = _renamed(tmp_path, name)
    why = f"scenario.yaml names {shown}, but the history ran kill-worker"
    one_line(*cli("check", folder)[:2], why)
    judged = folder_statuses(str(folder))
    assert judged["verdict"] == "INCONCLUSIVE" and any(why in r for r in judged["reasons"]), judged
    assert cli("report", folder, "--out", tmp_path / "rep", "--junit", tmp_path / "j.xml", bound_s=60)[0] == 0
    junit = (tmp_path / "j.xml").read_text()
    assert "INCONCLUSIVE" in junit and "the history ran kill-worker" in junit


def test_the_reports_read_scenario_yaml_bounded(tmp_path):
    """judgement.scenario_data reads scenario.yaml as every route does: the scenario cap (it read
    up to 1 MiB), the loader's depth limit (safe_load raised RecursionError), never /proc."""
    from ftharness.reports.judgement import expectations, scenario_data

    shutil.copytree(DATA, tmp_path / "r")
    path = tmp_path / "r" / "scenario.yaml"
    assert expectations(str(tmp_path / "r")) == scenario_data(str(tmp_path / "r"))["expect"]
    for text in ("expect: {outcome: failed}\n" + "# padding\n" * 30_000, "a: " + "[" * 3000 + "]" * 3000 + "\n"):
        path.write_text(text)
        assert scenario_data(str(tmp_path / "r")) == {}
    path.unlink()
    os.symlink("/proc/self/environ", path)
    assert scenario_data(str(tmp_path / "r")) == {}


def test_the_reports_read_summary_json_bounded(tmp_path):
    """frames.read_results (report, compare) reads summary.json through the one bounded reader:
    refused by size before it is read (it was read whole), never under /proc, an object only."""
    from ftharness.inputs import InputRefused
    from ftharness.reports.frames import read_results
    from ftharness.reports.gpu import folder_lines
    from ftharness.reports.matrix import read_rows

    folder = tmp_path / "r"
    shutil.copytree(DATA, folder)
    summary = folder / "summary.json"
    with open(summary, "r+b") as f:
        f.truncate((64 << 20) + 1)   # sparse: nothing written
    with pytest.raises(InputRefused, match="at most"):
        read_results(str(folder))
    assert folder_lines(str(folder)) == [f"{folder}: no readable summary.json"]
    os.rename(summary, folder / "cells.jsonl")
    with pytest.raises(InputRefused, match="at most"):
        read_rows(str(folder))
    os.symlink("/proc/self/environ", summary)
    with pytest.raises(InputRefused, match="under /proc"):
        read_results(str(folder))
    summary.unlink()
    summary.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a JSON object"):
        read_results(str(folder))
