"""A quick subset of the issue-40 fuzz campaign (scripts/fuzz_routes.py): a few seeded cases
per route (validate, matrix, check/report/trace/verdict, compare, run --resume, doctor), each
in a forked child of this process, each held to the contract (no internal error, no hang, no
traceback, lines of at most MAX_MESSAGE (400) characters, one line for an exit 2, peak memory under 1 GiB
of growth) and to its route's promises (validate runs no module, a refused matrix writes
nothing, --resume aims no storage outside its folder, no secret on the terminal, no PASS of
a renamed scenario or a fault record of no kind). The full campaign: see docs/safety.md."""

import importlib.util
import os
import shutil

import pytest

from conftest import REPO

CASES = int(os.environ.get("FTHARNESS_FUZZ_ROUTES", "4"))


def _campaign():
    spec = importlib.util.spec_from_file_location("fuzz_routes", os.path.join(REPO, "scripts", "fuzz_routes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0 and not os.path.exists("/proc/kmsg"),
                    reason="forks a child per case")
def test_every_route_holds_its_contract_on_fuzzed_input():
    stats = _campaign().campaign(CASES, seed=40, say=lambda line: None)
    assert not stats["breaches"], stats["breaches"][:5]
    for route, s in stats["routes"].items():
        assert s["cases"] == CASES and s["internal_errors"] == 0 and s["hangs"] == 0 and s["over_1gb"] == 0, route


COMMAND_CASES = int(os.environ.get("FTHARNESS_FUZZ_COMMANDS", "4"))
#: every command `ftharness --help` lists: the campaign must cover each (a new command fails here)
def _commands_in_help():
    from ftharness.harness.frontends.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    return sorted(sub.choices)


def _every_command_campaign():
    spec = importlib.util.spec_from_file_location("fuzz_commands", os.path.join(REPO, "benchmarks", "fuzz_routes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_campaign_covers_every_command():
    assert sorted(_every_command_campaign().COMMANDS) == _commands_in_help()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per case")
def test_every_command_refuses_hostile_input_before_any_start():
    """issue 49 item 9: seeded hostile input for every command (benchmarks/fuzz_routes.py), each
    case in a forked child whose cluster starts are sentinels: never exit 4, never a hang, never a
    traceback, one line for an exit 2, the child's peak memory under 1 GiB, nothing written through
    a symlink out of a folder, no continued explore state run, no foreign cluster bisected."""
    stats = _every_command_campaign().campaign(COMMAND_CASES, seed=49, say=lambda line: None)
    assert not stats["breaches"], stats["breaches"][:5]
    for command, s in stats["commands"].items():
        assert s["cases"] == COMMAND_CASES and s["exit_4"] == 0 and s["hangs"] == 0, command
        assert s["peak_mb"] < 1024, command
        assert set(s["exit_codes"]) <= {"0", "1", "2", "3"}, (command, s["exit_codes"])


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child per case")
def test_the_campaign_catches_an_internal_error_and_a_hang(monkeypatch):
    """The contract can fail: a command that raises (exit 4) and one that blocks are both counted."""
    module = _every_command_campaign()
    module.B.HANG_S = 3.0

    def raising(rng, tmp):
        return ["doctor", "--run", "x:y", "--config", "{}", "--out", os.path.join(tmp, "p")], {}

    def hanging(rng, tmp):
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        return ["__hang__", fifo], {}

    import ftharness.harness.run.probe as probe

    monkeypatch.setattr(probe, "probe_scenario", lambda *a, **k: 1 / 0)
    real_main = __import__("ftharness.harness.frontends.cli", fromlist=["main"]).main

    def main(argv=None):
        if argv and argv[0] == "__hang__":
            with open(argv[1]) as f:   # a FIFO with no writer: blocks
                return len(f.read())
        return real_main(argv)

    monkeypatch.setattr("ftharness.harness.frontends.cli.main", main)
    monkeypatch.setattr(module, "COMMANDS", {"raising": raising, "hanging": hanging})
    stats = module.campaign(1, seed=1, say=lambda line: None)
    assert stats["commands"]["raising"]["exit_4"] == 1
    assert stats["commands"]["hanging"]["hangs"] == 1


# ------------------------------------------------------------------ issue 49's hostile folders, one each
ADDRESS_SCENARIO = """\
name: fz
cluster: {address: '127.0.0.1:6379', nodes: 2, cpus_per_node: 1}
workload: {num_workers: 2, steps: 6}
faults:
- {kind: kill_worker, at: {step: 2}, target: {rank: 1}}
"""


def _case(tmp_path, argv):
    """`ftharness ARGV` in a forked child whose cluster starts are sentinels (exit 0, "(would start)")."""
    module = _every_command_campaign()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        return module.B.run_case(argv, {})
    finally:
        os.chdir(cwd)


def _refused(res, *words):
    lines = res["err"].strip().splitlines()
    assert res["code"] == 2 and len(lines) == 1 and "Traceback" not in res["err"], res
    assert all(w in lines[0] for w in words), lines


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("extra,words", [
    ([], ("cluster.address", "--allow-destructive")),
    (["--cell-timeout", "nan"], ("--cell-timeout", "finite")),
    (["--cell-timeout", "-1"], ("--cell-timeout", "allowed")),
    (["--host-lock", "/dev/zero"], ("--host-lock", "/dev")),
])
def test_bisect_refuses_what_matrix_refuses(tmp_path, extra, words):
    """issue 49: bisect planned a foreign cluster.address; --cell-timeout and --host-lock were never checked."""
    (tmp_path / "s.yaml").write_text(ADDRESS_SCENARIO if not extra else ADDRESS_SCENARIO.replace(
        "address: '127.0.0.1:6379', ", ""))
    _refused(_case(tmp_path, ["bisect", "s.yaml", "--out", "b", *extra]), *words)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_matrix_set_of_a_wrong_type_is_one_line(tmp_path):
    path = os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml")
    _refused(_case(tmp_path, ["matrix", path, "--set", "failure_config.max_failures=x", "--dry-run"]),
             "failure_config.max_failures")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("state,words", [
    (None, ("explore.json", "regular file")),                          # a FIFO: it hung
    (b"[{}," * 600_000 + b"{}]", ("explore.json",)),                   # 2.4 MB of containers
    (b"{\"findings\": 5}", ("explore.json",)),                         # a malformed entry: it was exit 4
])
def test_explore_refuses_hostile_state_before_a_cluster(tmp_path, state, words):
    out = tmp_path / "ex"
    out.mkdir()
    if state is None:
        os.mkfifo(out / "explore.json")
    else:
        (out / "explore.json").write_bytes(state)
    res = _case(tmp_path, ["explore", os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"),
                           "--out", str(out), "--budget", "60s"])
    _refused(res, *words)
    assert res["seconds"] < 20


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_report_refuses_a_summary_of_millions_of_containers_in_bounded_memory(tmp_path):
    """issue 49: 64 MiB of `[{},...]` took report/compare to 1.75 GB before refusing."""
    folder = tmp_path / "r"
    shutil.copytree(os.path.join(REPO, "tests", "data", "kill-worker"), folder)
    (folder / "summary.json").write_bytes(b"[" + b"{}," * (20 << 20) + b"{}]")   # 60 MiB
    res = _case(tmp_path, ["report", str(folder), "--out", str(tmp_path / "rep")])
    _refused(res, "summary.json", "objects and arrays")
    assert res["peak_kb"] >> 10 < 1024, res["peak_kb"]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_init_writes_nothing_through_a_linked_github_folder(tmp_path):
    outside = tmp_path / "outside"
    repo = tmp_path / "repo"
    outside.mkdir()
    repo.mkdir()
    os.symlink(outside, repo / ".github")
    res = _case(repo, ["init"])
    assert res["code"] == 2 and "Traceback" not in res["err"], res
    assert os.listdir(outside) == []


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("argv,words", [
    (["doctor", "--run", "m:f", "--config", "[" * 100_000], ("--config", "nested")),   # was exit 4
    (["list", "all", "--ray", "Infinity"], ("--ray",)),
])
def test_argument_values_from_input_are_one_line(tmp_path, argv, words):
    _refused(_case(tmp_path, argv), *words)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_verdict_of_a_journal_with_null_sections_is_judged(tmp_path):
    """A journal whose steady_states is null was exit 4 (AttributeError)."""
    (tmp_path / "j.json").write_text('{"experiment": null, "ftharness": {"not_started": true}, "steady_states": null}')
    res = _case(tmp_path, ["verdict", "j.json"])
    assert res["code"] == 3 and "Traceback" not in res["err"], res


# ------------------------------------------------------------------ gaps the closing note's reproductions found
@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("argv,planted", [
    (["explore", "--out", "out", "--budget", "60s"], "logs"),          # the cluster's logs, copied at teardown
    (["run", os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"), "--out", "out"], "scenario.yaml"),
    (["run", os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"), "--out", "out"], "storage"),
    (["matrix", os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"), "--out", "out", "--dry-run"], "cells"),
])
def test_an_output_folder_with_a_link_out_of_it_is_refused_before_a_cluster(tmp_path, argv, planted):
    """issue 49 (writes follow symlinks): a handed OUT whose logs/, storage/ or scenario.yaml links out of it
    would have been written through by plain opens after the cluster started (explore's OUT/logs passed
    its checks and reached the cluster); now one line, exit 2, before anything starts."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(outside if planted in ("logs", "storage", "cells") else outside / "victim", tmp_path / "out" / planted)
    res = _case(tmp_path, argv)
    _refused(res, planted, "symlink out of the folder")
    assert os.listdir(outside) == []


def test_a_link_inside_the_output_folder_or_the_folder_itself_as_a_link_is_no_planted_link(tmp_path):
    from ftharness.outputs import planted_link_problem

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    os.symlink(real / "sub", real / "inner")                 # stays inside
    os.symlink(real, tmp_path / "named")                     # the folder the user named
    assert planted_link_problem(str(tmp_path / "named")) is None
    assert planted_link_problem(str(tmp_path / "absent")) is None
    os.symlink(tmp_path / "nowhere" / "x", real / "sub" / "dangling")   # a dangling link out: a write would create it
    assert "dangling" in planted_link_problem(str(real))
    assert "more than 1 entries" in planted_link_problem(str(tmp_path), limit=1)


SOURCE = "def train(config):\n    pass\n"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("workload,words", [
    ('{entrypoint: "nosuchmodule:train"}', ("workload.entrypoint", "nosuchmodule")),
    ('{entrypoint: "train:train", datasets: "train:nodatasets"}', ("workload.datasets", "nodatasets")),
])
@pytest.mark.parametrize("command", ["matrix", "bisect", "validate"])
def test_matrix_and_bisect_prove_what_validate_proves(tmp_path, workload, words, command):
    """issue 49: `matrix --dry-run` took files `validate` refuses (entrypoint, datasets); bisect too."""
    (tmp_path / "train.py").write_text(SOURCE)
    (tmp_path / "s.yaml").write_text(f"name: s\nworkload: {workload}\n")
    argv = {"matrix": ["matrix", "s.yaml", "--dry-run", "--out", "m"], "bisect": ["bisect", "s.yaml", "--out", "b"],
            "validate": ["validate", "s.yaml"]}[command]
    _refused(_case(tmp_path, argv), *words)
    assert not (tmp_path / "m").exists() and not (tmp_path / "b").exists()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
def test_validate_refuses_a_package_loop_as_run_does(tmp_path):
    """issue 49 (two `-> .` links in a package): `run` refused them before a cluster (its preflight, which the
    sentinels here replace), `validate` said ok: it counts what would ship, statically, as `run` does."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "train.py").write_text(SOURCE)
    os.symlink(".", pkg / "a")
    os.symlink(".", pkg / "b")
    (tmp_path / "s.yaml").write_text('name: s\nworkload: {entrypoint: "pkg.train:train"}\n')
    _refused(_case(tmp_path, ["validate", "s.yaml"]), "symlink loop")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks a child")
@pytest.mark.parametrize("argv,planted", [
    (["report", "r", "--out", "rep", "--force"], "rep/index.html"),      # --force overwrites; it never wrote through
    (["report", "r", "--out", "rep", "--junit", "j.xml"], "j.xml"),
])
def test_report_writes_through_no_planted_link(tmp_path, argv, planted):
    shutil.copytree(os.path.join(REPO, "tests", "data", "kill-worker"), tmp_path / "r")
    (tmp_path / "rep").mkdir()
    (tmp_path / "victim").write_text("ORIGINAL")
    os.symlink(tmp_path / "victim", tmp_path / planted)
    _refused(_case(tmp_path, argv), "symlink")
    assert (tmp_path / "victim").read_text() == "ORIGINAL"
