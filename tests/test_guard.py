"""The guard's decision (pure: no cluster), and each item of issue 24's "What was seen"
that needs no cluster: suite grouping by address, CTK and handle checks, results-folder
names, the spool folder, the reaper's protocol, trace through a symlink, secrets."""

import json
import os
import shutil
import stat

import pytest

from ftharness.errors import ScenarioError
from ftharness.harness.run.guard import Target, check_handle, check_live_fault, check_route
from ftharness.scenarios.schema import parse_scenario
from conftest import REPO, run_cli

KILL = [{"kind": "kill_worker", "target": {"rank": 0}, "at": {"step": 2}}]
OP = "10.9.8.7:6379"


def sc(name="s", address=None, faults=KILL, **workload):
    data = {"name": name, "failure_config": {"max_failures": 1}, "faults": faults,
            "workload": {"steps": 4, **workload}}
    if address:
        data["cluster"] = {"address": address}
    return parse_scenario(data)


@pytest.fixture(autouse=True)
def no_ray_address(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


# ------------------------------------------------------------------ check_route
def test_embedded_by_default():
    assert check_route(sc(), False) == Target(None, None, True)


@pytest.mark.parametrize("source", ["--address", "cluster.address", "RAY_ADDRESS"])
def test_each_source_needs_the_flag(monkeypatch, source):
    flag = OP if source == "--address" else None
    s = sc(address=OP if source == "cluster.address" else None)
    if source == "RAY_ADDRESS":
        monkeypatch.setenv("RAY_ADDRESS", OP)
    with pytest.raises(ScenarioError, match=f"{source}: {OP} is a cluster ftharness did not start.*--allow-destructive"):
        check_route(s, False, address=flag)
    t = check_route(s, True, address=flag)
    assert (t.address, t.source, t.allow_destructive) == (OP, source, True)


def test_no_faults_no_flag_but_allow_destructive_is_false_for_later_faults():
    t = check_route(sc(address=OP, faults=[]), False)
    assert t.address == OP and not t.allow_destructive
    with pytest.raises(ScenarioError, match="allow_destructive"):
        check_live_fault(t, "kill_worker")
    with pytest.raises(ScenarioError, match="--allow-destructive"):
        check_route(sc(address=OP, faults=[]), False, has_faults=True)   # a soak's drawn faults


def test_started_by_us_refuses_any_address_rather_than_ignoring_it():
    with pytest.raises(ScenarioError, match="cluster.address: .*starts itself"):
        check_route(sc(address=OP, faults=[]), True, started_by_us=True)
    assert check_route(sc(), False, started_by_us=True).started_by_us


def test_torchrun_refuses_an_address():
    s = parse_scenario({"name": "t", "workload": {"runtime": "torchrun", "steps": 4}})
    with pytest.raises(ScenarioError, match="torchrun"):
        check_route(s, True, address=OP)
    assert check_route(s, False).address is None


def test_credentials_in_an_address_are_redacted():
    with pytest.raises(ScenarioError) as e:
        check_route(sc(), False, address="http://user:hunter2@10.0.0.1:6379")
    assert "hunter2" not in str(e.value) and "***" in str(e.value)


# ------------------------------------------------------------------ suite
def test_suite_groups_by_address_not_shape_and_refuses_per_scenario():
    """What was seen 1: the first scenario's address no longer picks the group's cluster."""
    from ftharness.harness.run.suite import groups_of, targets

    quiet = sc("a", address=OP, faults=[])
    kill = sc("b")   # the same shape, no address: the embedded cluster
    chosen = targets([quiet, kill])
    groups = groups_of([quiet, kill], chosen)
    assert len(groups) == 2
    assert [t.address for g in groups.values() for _, t in g] == [OP, None]
    with pytest.raises(ScenarioError, match="--allow-destructive"):
        targets([quiet, kill], address=OP)   # --address: every scenario goes there, kill-node refused
    with pytest.raises(ScenarioError, match="--allow-destructive"):
        targets([quiet, sc("c", address=OP)])


# ------------------------------------------------------------------ handles
def test_check_handle_refuses_an_existing_cluster_handle_whatever_built_it():
    from ftharness.harness.cluster.handles import ExistingCluster

    with pytest.raises(ScenarioError, match="--allow-destructive"):
        check_handle(sc(), ExistingCluster(OP), allow_destructive=False)
    check_handle(sc(), ExistingCluster(OP), allow_destructive=True)
    check_handle(sc(faults=[]), ExistingCluster(OP), allow_destructive=False)
    with pytest.raises(ScenarioError):
        check_handle(sc(faults=[]), ExistingCluster(OP), allow_destructive=False, has_faults=True)


def test_ctk_session_on_an_address_refuses_faults_without_the_argument(tmp_path):
    from ftharness.harness.frontends.ctk.session import Session

    s = Session.from_arguments({"name": "ctk", "cluster": {"address": OP}}, str(tmp_path / "o"))
    assert s.target.address == OP
    with pytest.raises(ScenarioError, match="allow_destructive"):
        s.inject("kill_worker", {"target": {"rank": 0}})
    allowed = Session.from_arguments({"name": "ctk", "cluster": {"address": OP}}, str(tmp_path / "o"),
                                     allow_destructive=True)
    assert allowed.target.allow_destructive


# ------------------------------------------------------------------ names and folders
@pytest.mark.parametrize("name", ["..", ".", "a/b", "x" * 101, "a\nb"])
def test_names_are_one_path_component(name):
    with pytest.raises(ScenarioError, match="name"):
        parse_scenario({"name": name})


@pytest.mark.parametrize("run_name", ["x/../../victim", "a\n123 456", "..", 7, ""])
def test_resume_refuses_a_run_name_that_is_no_folder_name(tmp_path, run_name):
    from ftharness.harness.run.runner import _read_summary

    (tmp_path / "summary.json").write_text(json.dumps({"run_name": run_name, "storage_path": "/tmp/x"}))
    with pytest.raises(ScenarioError, match="--resume"):
        _read_summary(str(tmp_path))


def test_spool_is_fresh_and_private(tmp_path, monkeypatch):
    import tempfile

    from ftharness.history import spool

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    path = spool.create("run-1")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o700
    assert spool.write("run-1", "w1", {"kind": "x"}) and spool.collect("run-1") == [{"kind": "x"}]
    # a leftover of ours is emptied, never reused
    assert spool.create("run-1") == path and spool.collect("run-1") == []
    # a folder others can write (or a symlink) is refused: a local user could inject events
    os.chmod(path, 0o777)
    with pytest.raises(ScenarioError, match="not a private folder"):
        spool.create("run-1")
    assert not spool.write("run-1", "w1", {"kind": "injected"})
    os.rmdir(path)
    os.symlink(str(tmp_path), path)
    with pytest.raises(ScenarioError):
        spool.create("run-1")
    os.unlink(path)
    # a planted journal that is a symlink is not read
    spool.create("run-2")
    (tmp_path / "elsewhere.jsonl").write_text('{"kind": "planted"}\n')
    os.symlink(str(tmp_path / "elsewhere.jsonl"), os.path.join(spool.spool_dir("run-2"), "x.jsonl"))
    assert spool.collect("run-2") == []


def test_reaper_takes_only_what_the_harness_writes():
    from ftharness.harness.cluster.reaper import message, parse

    assert parse(message(pids=[12, 13]).strip()) == ("pids", [12, 13])
    assert parse(message(dir="/tmp/fth-abc").strip()) == ("dir", "/tmp/fth-abc")
    # a name with a newline cannot split a message or forge one
    line = message(dir="/tmp/ftharness-spool-x\n123 456")
    assert line.count("\n") == 1 and parse(line.strip()) is None
    for forged in ("123 456", "dir /etc", message(dir="/etc"), message(dir="/tmp/fth-x/../../etc"),
                   message(pids=["1"]), message(link="eth0"), "done"):
        assert parse(forged.strip()) is None, forged


def test_trace_never_follows_a_planted_symlink(tmp_path):
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "history.jsonl").write_text('{"seq": 1, "kind": "run_start", "t": 1}\n')
    victim = tmp_path / "victim"
    victim.write_text("keep me")
    os.symlink(str(victim), str(folder / "trace.json"))
    r = run_cli("trace", str(folder), timeout=60)
    assert r.returncode == 2 and "symlink" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert victim.read_text() == "keep me"
    from ftharness.reports.trace import write_trace

    with pytest.raises(OSError):
        write_trace(str(folder))
    assert victim.read_text() == "keep me"


def test_embedded_cluster_temp_dir_is_inside_a_private_folder(monkeypatch):
    """Ray makes its temp dir 0777; the folder around it is the run's own, mode 0700."""
    import inspect

    from ftharness.harness.cluster import handles

    src = inspect.getsource(handles.EmbeddedCluster.start)
    assert "_private_dir = tempfile.mkdtemp(" in src and 'os.path.join(self._private_dir, "r")' in src


# ------------------------------------------------------------------ secrets
def test_redact_everywhere_a_path_is_written(tmp_path):
    from ftharness.harness.run.runner import _resumed_storage, _write_scenario
    from ftharness.safety import redact

    s = parse_scenario({"name": "s3", "workload": {"storage_path": "s3://AKIA:SECRET@bucket/ck"}})
    _write_scenario(s, str(tmp_path / "scenario.yaml"))
    assert "SECRET" not in (tmp_path / "scenario.yaml").read_text()
    assert redact({"a": ["s3://K:S@b/x", "https://h/x?token=abc"]}) == {"a": ["s3://***@b/x", "https://h/x?token=***"]}
    # a resumed run gets its credentials back from the scenario given now, never from disk
    assert _resumed_storage("s3://***@bucket/ck", s) == "s3://AKIA:SECRET@bucket/ck"
    with pytest.raises(ScenarioError, match="credentials"):
        _resumed_storage("s3://***@bucket/ck", parse_scenario({"name": "x"}))


def test_history_lines_are_redacted(tmp_path):
    from ftharness.history.book import HistoryBook

    book = HistoryBook(str(tmp_path / "history.jsonl"))
    book.append({"kind": "run_start", "storage_path": "s3://AKIA:SECRET@bucket/ck"})
    text = (tmp_path / "history.jsonl").read_text()
    assert "SECRET" not in text and "s3://***@bucket/ck" in text


def test_error_lines_are_redacted_and_whole_line_capped(tmp_path):
    r = run_cli("run", "--out", "s3://KEY:SECRET@bucket/" + "x" * 400, "--steps", "0", timeout=60)
    line = r.stderr.strip()
    assert r.returncode == 2 and "SECRET" not in line and len(line) <= 300 and "\n" not in line, line


def test_check_escapes_control_characters():
    from ftharness.harness.frontends.cli_shared import _safe

    assert _safe("evil\x1b]0;pwned\x07\r\nnext") == "evil\\x1b]0;pwned\\x07\\x0d next"


# ------------------------------------------------------------------ --submit
def test_submit_ships_only_what_the_scenario_names(tmp_path):
    from ftharness.harness.run.submit import shipped_code, working_dir
    from ftharness.scenarios.schema import load_scenario

    (tmp_path / "settings.py").write_text("SECRET = 'x'\n")
    (tmp_path / "job.py").write_text("def train(config):\n    pass\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "a.yaml").write_text("name: a\nworkload: {entrypoint: 'job:train', datasets: 'pkg.data:make'}\n")
    s = load_scenario(str(tmp_path / "a.yaml"))
    assert sorted(os.path.basename(p) for p in shipped_code(s)) == ["job.py", "pkg"]
    wd = working_dir(s)
    try:
        assert sorted(os.listdir(wd)) == ["job.py", "pkg", "scenario.yaml"]
    finally:
        shutil.rmtree(wd)
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "job.py").write_text("def train(config):\n    pass\n")
    (tmp_path / "b.yaml").write_text("name: b\nworkload: {entrypoint: 'job:train', working_dir: code}\n")
    assert [os.path.basename(p) for p in shipped_code(load_scenario(str(tmp_path / "b.yaml")))] == ["job.py"]


def test_submit_refuses_another_ray_version_in_one_line():
    from ftharness.errors import ClusterError
    from ftharness.harness.run.submit import check_ray_version

    check_ray_version("http://h:8265", "2.60.0", "2.60.0")
    check_ray_version("http://h:8265", None, "2.60.0")   # not reported: the job checks on the head
    with pytest.raises(ClusterError, match="runs Ray 2.9.0; this ftharness runs Ray 2.60.0"):
        check_ray_version("http://h:8265", "2.9.0", "2.60.0")


def test_job_entry_refuses_another_ray_version(monkeypatch):
    from ftharness.harness.frontends import job_entry

    monkeypatch.setenv("FTHARNESS_RAY_VERSION", "0.0.1")
    assert job_entry.main(["run", "scenario.yaml", "--out", "results"]) == 2


def test_submit_prints_the_job_log_escaped():
    from ftharness.safety import printable

    assert printable("ok\n\x1b[2Jgone") == "ok\n\\x1b[2Jgone"
    assert "printable(text[shown:])" in open(os.path.join(REPO, "harness", "run", "submit.py")).read()
