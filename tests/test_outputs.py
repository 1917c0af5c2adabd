"""Issue 49, items 2 and 4: one writer for output folders (ftharness.outputs: no symlink followed
out of the folder, safe modes, no file overwritten that this run did not create unless asked),
used by `explore` (explore.json, explore.html, findings/, examples/, the example database) and
`init`; one redaction (ftharness.safety.redact_secrets) applied to YAML copies and pages: the
results folder's scenario.yaml, explore's findings/*.yaml, explore.json and explore.html. Pure."""

import json
import os
import stat

import pytest

from test_explore import REF, FakeClock, FakeExecutor

from ftharness.harness.frontends.cli import main
from ftharness.harness.run.explore import Explorer
from ftharness.outputs import OutputRefused, make_folder, write_file
from ftharness.safety import redact_secrets
from ftharness.scenarios.schema import parse_scenario, scenario_data

SECRET = "SEKRIT9zz"


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "victim").write_text("precious\n")
    return d


# ------------------------------------------------------------------ the writer
def test_the_writer_refuses_a_symlinked_file_out_of_the_folder(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside / "victim", out / "explore.json")
    for overwrite in (False, True):
        with pytest.raises(OutputRefused, match="symlink"):
            write_file(str(out), "explore.json", "{}", overwrite=overwrite)
    assert (outside / "victim").read_text() == "precious\n"


def test_the_writer_refuses_a_symlinked_folder_on_the_way(tmp_path, outside):
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside, out / "findings")
    with pytest.raises(OutputRefused, match="symlink"):
        write_file(str(out), "findings/x.yaml", "x")
    with pytest.raises(OutputRefused, match="symlink"):
        make_folder(str(out), "findings/sub")
    assert sorted(os.listdir(outside)) == ["victim"]


@pytest.mark.parametrize("relative", ["../victim", "/etc/passwd", "a/../../victim", ""])
def test_the_writer_stays_in_its_folder(tmp_path, relative):
    with pytest.raises(OutputRefused):
        write_file(str(tmp_path / "out"), relative, "x")


def test_the_writer_overwrites_only_what_it_wrote_unless_asked(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "theirs.txt").write_text("theirs\n")
    with pytest.raises(OutputRefused, match="not written by this run"):
        write_file(str(out), "theirs.txt", "mine")
    assert (out / "theirs.txt").read_text() == "theirs\n"
    write_file(str(out), "theirs.txt", "mine", overwrite=True)
    assert (out / "theirs.txt").read_text() == "mine"
    write_file(str(out), "a/b/new.txt", "1")
    write_file(str(out), "a/b/new.txt", "2")     # this run's own file: written again
    assert (out / "a/b/new.txt").read_text() == "2"
    os.mkfifo(out / "fifo")
    with pytest.raises(OutputRefused, match="not a regular file"):
        write_file(str(out), "fifo", "x", overwrite=True)


def test_the_writer_creates_with_safe_modes(tmp_path):
    old = os.umask(0)
    try:
        path = write_file(str(tmp_path / "out"), "sub/f.txt", "x")
        secret = write_file(str(tmp_path / "out"), "s.txt", "x", mode=0o600)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(tmp_path / "out" / "sub").st_mode) == 0o755


# ------------------------------------------------------------------ explore through the writer
def _explorer(out, base=REF, budget_s=3000):
    clock = FakeClock()
    return Explorer(base, FakeExecutor(clock), str(out), budget_s, seed=3, max_faults=2, clock=clock,
                    say=lambda line: None, ray_version="2.60.0")


@pytest.mark.parametrize("planted", ["explore.json", "explore.html", "findings", "examples", ".hypothesis"])
def test_explore_refuses_a_planted_symlink_before_a_cluster_starts(tmp_path, capsys, monkeypatch, outside, planted):
    import ftharness.harness.cluster.handles as handles

    monkeypatch.setattr(handles, "open_cluster", lambda *a, **k: pytest.fail("a cluster was opened"))
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(outside if planted in ("findings", "examples", ".hypothesis") else outside / "victim", out / planted)
    assert main(["explore", "--out", str(out), "--budget", "90s"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and planted in err[0] and "symlink" in err[0], err
    assert sorted(os.listdir(outside)) == ["victim"] and (outside / "victim").read_text() == "precious\n"


def test_explore_writes_nothing_through_a_symlink_planted_during_the_search(tmp_path, outside):
    out = tmp_path / "out"
    exp = _explorer(out)
    real_write = exp.write_finding

    def plant_then_write(*a, **k):
        findings = out / "findings"
        if not findings.is_symlink():
            os.symlink(outside, findings)
        return real_write(*a, **k)
    exp.write_finding = plant_then_write
    with pytest.raises(OutputRefused, match="symlink"):
        exp.explore()
    assert sorted(os.listdir(outside)) == ["victim"]


def test_explore_findings_json_and_page_hold_no_secret(tmp_path):
    data = scenario_data(REF)
    data["workload"] = {**data["workload"], "storage_path": f"s3://AKIAEXAMPLE:{SECRET}/x+y@bucket/p"}
    base = parse_scenario(data, base_dir=REF.base_dir)
    result = _explorer(tmp_path / "out", base=base).explore()
    assert result.findings
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file() and p.parts[-2] != ".hypothesis"
               and "examples" not in p.parts]
    assert {p.name for p in written} >= {"explore.json", "explore.html"}
    assert any(p.parent.name == "findings" for p in written)
    for p in written:
        assert SECRET not in p.read_text(errors="replace"), p
    finding = (tmp_path / "out" / "findings").glob("*.yaml").__next__().read_text()
    assert "s3://***@bucket/p" in finding


# ------------------------------------------------------------------ one redaction
def test_redaction_covers_keys_environment_assignments_and_urls():
    got = redact_secrets({"workload": {"train_loop_config": {"password": "hunter2", "api_key": "AK1",
                                                             "HF_TOKEN": "hf_1", "Secret": 5, "max_tokens": 512,
                                                             "cmd": "HF_TOKEN=hf_2 python train.py",
                                                             "nested": [{"client_secret": "cs"}]},
                                       "storage_path": f"s3://AKIA:{SECRET}@bucket/p"}})
    tlc = got["workload"]["train_loop_config"]
    assert tlc["password"] == tlc["api_key"] == tlc["HF_TOKEN"] == tlc["Secret"] == "***"
    assert tlc["max_tokens"] == 512 and tlc["cmd"] == "HF_TOKEN=*** python train.py"
    assert tlc["nested"] == [{"client_secret": "***"}]
    assert got["workload"]["storage_path"] == "s3://***@bucket/p"
    text = redact_secrets('password: hunter2\n"api_key": "x"\nAWS_SECRET_ACCESS_KEY=zz kind: kill_worker\n')
    assert text == 'password: ***\n"api_key": "***"\nAWS_SECRET_ACCESS_KEY=*** kind: kill_worker\n'


def test_a_run_s_scenario_copy_holds_no_secret(tmp_path):
    from ftharness.harness.run.shared import write_scenario

    (tmp_path / "job.py").write_text("def train_func(config):\n    pass\n")
    sc = parse_scenario({"name": "u", "workload": {
        "entrypoint": "job:train_func", "num_workers": 2,
        "train_loop_config": {"password": "hunter2", "api_key": "AK123", "env": "HF_TOKEN=hf_abc", "steps": 4}}},
        base_dir=str(tmp_path))
    write_scenario(sc, str(tmp_path / "scenario.yaml"))
    text = (tmp_path / "scenario.yaml").read_text()
    for secret in ("hunter2", "AK123", "hf_abc"):
        assert secret not in text
    assert "steps: 4" in text


# ------------------------------------------------------------------ init
def test_init_writes_nothing_through_a_symlinked_github_folder(tmp_path, monkeypatch, capsys, outside):
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside, repo / ".github")
    monkeypatch.chdir(repo)
    assert main(["init"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and ".github" in err[0] and "symlink" in err[0], err
    assert sorted(os.listdir(outside)) == ["victim"] and not (repo / "chaos").exists()


def test_init_writes_nothing_through_a_symlinked_scenario_folder(tmp_path, monkeypatch, capsys, outside):
    repo = tmp_path / "repo"
    repo.mkdir()
    os.symlink(outside, repo / "chaos")
    monkeypatch.chdir(repo)
    assert main(["init", "--ci", "none"]) == 2
    assert "symlink" in capsys.readouterr().err
    assert sorted(os.listdir(outside)) == ["victim"]
