"""JUnit XML, the comparison table, the checkpoint advice and the report CLI,
on synthetic results folders (scenarios/synthetic.py). No Ray cluster.

`make_results` is shared with test_reports_render.py.
"""

import argparse
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from ftharness.scenarios.reference_data import WorkloadConfig
from ftharness.reports import advice
from ftharness.reports.cli import add_subcommands
from ftharness.reports.compare import bootstrap_median_diff, compare, write_compare
from ftharness.history.records import read_history, sealed_lines
from ftharness.scenarios.verdict import evaluate
from ftharness.scenarios.properties import OPT_IN, PROPERTIES
from ftharness.scenarios.schema import parse_scenario
from ftharness.scenarios.synthetic import FAULTS, Fault, Plan, generate

approx = pytest.approx
STEPS = 8
#: first step after a fault, less the plan's recovery_s: the synthetic
#: controller's bookkeeping events between the two, 1 ms apart, and the slower rank's first step
RECOVERY_OFFSET = 0.009


def make_results(folder, name, faults=(), failure_config=None, expect=None, edit=None):
    """A results folder as the runner writes it: history.jsonl, summary.json
    (ftharness.scenarios.verdict over the synthetic history) and scenario.yaml.
    `edit(events)` changes the events before they are sealed (the outputs judge the
    history, so a verdict is made there, never by editing summary.json)."""
    fc = dict(failure_config or {"max_failures": len(faults)})
    cfg = WorkloadConfig(steps=STEPS, batch_size=4, checkpoint_every=2)
    syn = generate(Plan(cfg, num_workers=2, failure_config=fc, faults=list(faults)))
    scenario = parse_scenario({"name": name, "failure_config": fc,
                               "faults": [{"kind": FAULTS[f.cls][0], "at": {"step": f.after_steps},
                                           "target": {"rank": 1}} for f in faults],
                               "workload": {"steps": STEPS, "batch_size": 4, "checkpoint_every": 2},
                               "expect": expect or {"properties": [p for p in PROPERTIES if p not in OPT_IN],
                                                     "monotonic": ["step", "count"]}})
    ctx = syn.context
    for e in syn.events:   # the scenario's faults, as the injector records what it was asked
        if e.get("kind") == "fault_injected":
            e["target_asked"] = {"rank": 1}
        if e.get("kind") == "run_start":   # the scenario it ran: a scenario.yaml of another name is refused
            e["scenario"] = name
    if edit is not None:
        edit(syn.events)
    folder.mkdir(parents=True)
    (folder / "history.jsonl").write_bytes(b"".join(line + b"\n" for line in sealed(syn.events)))
    read = read_history(str(folder))   # closed as a run closes it: `check` finds no gap to judge
    summary = evaluate(scenario, read.events, {"outcome": ctx["outcome"], "error_type": ctx["error_type"],
                                               "error": None, "return_value": {"acc": ctx["final"]}}, read.problems)
    (folder / "summary.json").write_text(json.dumps(summary))
    (folder / "scenario.yaml").write_text(yaml.safe_dump(scenario.model_dump(mode="json")))
    return str(folder)


def sealed(events):
    """History lines closed by a consistent history_end, as the history actor writes them."""
    return sealed_lines(events, renumber=False)


def unland(events):
    """The kill recorded as hitting nothing (an empty target_hit): it did not land."""
    for e in events:
        if e.get("kind") == "fault_injected":
            e["target_hit"] = {}


def kill(recovery_s=2.0):
    """A worker-group failure after step 3: step 3 is lost (checkpoints every 2)."""
    return Fault("worker_group", after_steps=3, recovery_s=recovery_s)


# ----------------------------------------------------------------------- junit
@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """Five folders: a clean kill, a run that fails as expected, one that fails
    unexpectedly, one that recovers slower than its bound, and one pinning a
    violation that does not happen."""
    root = tmp_path_factory.mktemp("suite")
    make_results(root / "kill", "kill", [kill()])
    make_results(root / "out-of-budget", "out-of-budget", [kill(), kill()], {"max_failures": 1},
                 {"outcome": "failed", "properties": ["budget_accounting"]})
    make_results(root / "surprise", "surprise", [kill()], {"max_failures": 0}, {"outcome": "succeeded"})
    make_results(root / "slow", "slow", [kill(2.0)], None, {"properties": ["recovers"], "recovery_bound_s": 0.5})
    make_results(root / "pinned", "pinned", [kill()], None,
                 {"properties": ["budget_accounting"],
                  "violations": [{"property": "exactly_once_restore", "reason": "digest mismatch"}]})
    return root


# --------------------------------------------------------------------- compare
@pytest.fixture(scope="module")
def groups(tmp_path_factory):
    """fast: recoveries of 2, 3, 4 s; slow: 5..9 s; one fault per run."""
    root = tmp_path_factory.mktemp("groups")
    fast = [make_results(root / f"fast{i}", "kill", [kill(r)]) for i, r in enumerate((2.0, 3.0, 4.0))]
    slow = [make_results(root / f"slow{i}", "kill", [kill(r)]) for i, r in enumerate((5.0, 6.0, 7.0, 8.0, 9.0))]
    return {"fast": fast, "slow": slow}


def test_compare_gives_medians_p95_and_a_bootstrap_interval(groups):
    df = compare(groups).set_index("configuration")
    assert list(df.index) == ["fast", "slow"]
    assert df.loc["fast", "runs"] == 3 and df.loc["slow", "recoveries"] == 5
    off = RECOVERY_OFFSET
    assert df.loc["fast", "recovery_s_median"] == approx(3.0 + off, abs=1e-5)
    assert df.loc["fast", "recovery_s_p95"] == approx(3.9 + off, abs=1e-5)   # 3 + 0.9 * (4 - 3)
    assert df.loc["slow", "recovery_s_median"] == approx(7.0 + off, abs=1e-5)
    assert df.loc["slow", "recovery_s_p95"] == approx(8.8 + off, abs=1e-5)   # 8 + 0.8 * (9 - 8)
    assert df.loc["slow", "lost_steps_median"] == 1 and df.loc["slow", "ettr_median"] < 1
    assert df.loc["slow", "wall_time_s_median"] > df.loc["fast", "wall_time_s_median"]
    assert math.isnan(df.loc["fast", "recovery_median_diff_s"])
    diff, low, high = df.loc["slow", ["recovery_median_diff_s", "recovery_diff_ci_low_s",
                                      "recovery_diff_ci_high_s"]]
    assert diff == approx(4.0, abs=1e-5)
    # every resampled median of fast lies in [2, 4] and of slow in [5, 9]
    assert 1.0 - 1e-6 <= low <= diff <= high <= 7.0 + 1e-6


def test_bootstrap_is_seeded_and_centred():
    a, b = [1.0, 2.0, 3.0, 4.0, 5.0], [11.0, 12.0, 13.0, 14.0, 15.0]
    assert bootstrap_median_diff(a, b) == bootstrap_median_diff(a, b)
    diff, low, high = bootstrap_median_diff(a, b)
    assert diff == 10.0 and low < 10.0 < high and high - low <= 8.0
    assert all(np.isnan(bootstrap_median_diff([], b)))


def test_write_compare_writes_csv_and_html(groups, tmp_path):
    path = write_compare(groups, tmp_path)
    assert pd.read_csv(tmp_path / "compare.csv")["configuration"].tolist() == ["fast", "slow"]
    text = open(path).read()
    assert 'id="compare"' in text and 'id="recovery"' in text and "<svg" in text


# ---------------------------------------------------------------------- advice
def test_young_and_daly_intervals_by_hand():
    # C = 10 s, M = 5000 s: sqrt(2 * 10 * 5000) = sqrt(100000)
    assert advice.young_interval(10, 5000) == approx(316.227766, abs=1e-6)
    # Daly: 316.227766 * (1 + sqrt(0.001) / 3 + 0.001 / 9) - 10
    assert advice.daly_interval(10, 5000) == approx(309.596236, abs=1e-6)
    assert advice.daly_interval(30, 10) == 10          # C >= 2M: checkpoint once per MTBF


def test_goodput_by_hand():
    # tau = 300, C = 10, R = 60, M = 5000:
    # 300 / (5000 * e^(60/5000) * (e^(310/5000) - 1))
    #   = 300 / (5000 * 1.0120723 * 0.0639623) = 300 / 323.6725
    assert advice.expected_goodput(300, 10, 60, 5000) == approx(0.926863, abs=1e-6)
    # no failures in sight: only the checkpoint cost is lost, tau / (tau + C)
    assert advice.expected_goodput(300, 10, 60, 1e12) == approx(300 / 310, rel=1e-6)


def test_llama3_failure_rate_scales_with_the_cluster():
    # 54 days * 24 h * 16384 GPUs / 419 interruptions
    assert advice.LLAMA3_MTBF_PER_GPU_H == approx(50677.0024, abs=1e-3)
    out = advice.extrapolate(10.0, 60.0, accelerators=16384)
    assert out["cluster_mtbf_s"] == approx(54 * 24 * 3600 / 419)                # 11135.08 s
    assert out["young_interval_s"] == approx(math.sqrt(2 * 10 * 11135.0835), rel=1e-6)
    assert 0 < out["goodput_at_daly"] < 1 and out["goodput_at_current"] is None
    assert advice.extrapolate(None, 60.0, 8)["daly_interval_s"] is None


def history_with_checkpoints():
    """One rank; steps end at 1, 2, 3.5, 4.5, 6, 7 s; checkpoints after steps
    2 and 4 (written, reported, registered), so steps 3 and 5 take 1.5 s and
    the others 1 s."""
    events, t_steps = [], {1: 1.0, 2: 2.0, 3: 3.5, 4: 4.5, 5: 6.0, 6: 7.0}

    def add(kind, t, **fields):
        events.append({"seq": len(events) + 1, "t": t, "kind": kind, "source": "worker", "run": "r",
                       "attempt_id": "a1", "rank": 0, **fields})

    add("run_start", 0.0, fit_index=1)
    add("attempt_start", 0.1)
    for step, t in t_steps.items():
        add("step", t, step=step)
        if step in (2, 4):
            add("checkpoint_written", t + 0.1, step=step)
            add("report", t + 0.2, step=step, checkpoint=f"ck{step}")
            add("checkpoint_registered", t + 0.3, step=step, checkpoint=f"ck{step}")
    return events


def test_checkpoint_cost_and_interval_are_measured_from_the_history(tmp_path):
    steps = advice.step_intervals(history_with_checkpoints())
    assert steps.set_index("step")["checkpointed"].to_dict() == {2: False, 3: True, 4: False, 5: True, 6: False}
    assert advice.checkpoint_intervals(history_with_checkpoints()) == approx([2.5])
    folder = tmp_path / "r"
    folder.mkdir()
    (folder / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in history_with_checkpoints()))
    found = advice.advise([folder], accelerators=1024)
    assert found["checkpoint_cost_s"] == approx(0.5) and found["plain_step_s"] == approx(1.0)
    assert found["current_interval_s"] == approx(2.5) and found["recovery_s"] is None
    assert found["extrapolated"] is True and "Llama 3" in found["basis"]
    assert found["young_interval_s"] == approx(math.sqrt(2 * 0.5 * advice.LLAMA3_MTBF_PER_GPU_H * 3600 / 1024))


# ------------------------------------------------------------------------- cli
def parse(*argv):
    parser = argparse.ArgumentParser(prog="ftharness")
    add_subcommands(parser.add_subparsers(dest="command", required=True))
    return parser.parse_args(list(argv))


def one_error_line(capsys):
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    return err


def test_report_on_a_path_that_is_not_results_is_one_line_and_exit_2(tmp_path, capsys):
    bad = tmp_path / "empty"
    bad.mkdir()
    args = parse("report", str(bad), "--out", str(tmp_path / "rep"))
    assert args.func(args) == 2
    err = one_error_line(capsys)
    assert err.startswith("ftharness: error: ") and str(bad) in err
    assert not (tmp_path / "rep").exists()


def test_report_on_unreadable_results_names_the_folder(tmp_path, capsys):
    bad = tmp_path / "broken"
    bad.mkdir()
    (bad / "summary.json").write_text("{not json")
    args = parse("report", str(bad))
    assert args.func(args) == 2
    assert str(bad) in one_error_line(capsys)


def test_compare_rejects_a_bad_group_and_a_bad_path(tmp_path, capsys, groups):
    args = parse("compare", "no-equals-sign")
    assert args.func(args) == 2 and "LABEL=RESULTS" in one_error_line(capsys)
    missing = str(tmp_path / "missing")
    args = parse("compare", f"a={groups['fast'][0]}", f"b={missing}")
    assert args.func(args) == 2 and missing in one_error_line(capsys)


def test_report_and_compare_commands_write_their_files(suite, groups, tmp_path, capsys):
    args = parse("report", str(suite), "--out", str(tmp_path / "rep"), "--junit", str(tmp_path / "j.xml"))
    assert args.func(args) == 0
    assert (tmp_path / "rep" / "index.html").is_file() and (tmp_path / "j.xml").is_file()
    args = parse("compare", f"fast={','.join(groups['fast'])}", f"slow={groups['slow'][0]}",
                 "--out", str(tmp_path / "cmp"))
    assert args.func(args) == 0
    assert pd.read_csv(tmp_path / "cmp" / "compare.csv")["runs"].tolist() == [3, 1]


def test_report_refuses_a_non_empty_out_unless_forced(suite, tmp_path, capsys):
    out = tmp_path / "rep"
    out.mkdir()
    (out / "mine.txt").write_text("keep me")
    args = parse("report", str(suite), "--out", str(out))
    assert args.func(args) == 2
    assert "--force" in one_error_line(capsys) and not (out / "index.html").exists()
    args = parse("report", str(suite), "--out", str(out), "--force")
    assert args.func(args) == 0 and (out / "index.html").is_file()


# ------------------------------------------- every run and suite leaves a report
def fake_run(monkeypatch, module, name):
    """Replace `module.name` (the runner or the suite) by one that writes
    synthetic results folders: the CLI around it runs as for real, no cluster."""
    import ftharness.harness.run.preflight
    import ftharness.harness.run.runner
    import ftharness.harness.run.suite

    def run_scenario(scenario, options):
        make_results(Path(options.out_dir), "kill", [kill()])
        return summary_of(options.out_dir)

    calls = []

    def run_suite(scenarios, out, address=None, progress=True, **kwargs):
        calls.append(out)   # each round's runs are distinct runs (compare counts a copied history once)
        return [summary_of(make_results(Path(out) / n, n, [kill(2.0 + 0.25 * len(calls))])) for n in ("kill", "kill-again")]

    monkeypatch.setattr(ftharness.harness.run.preflight, "preflight", lambda scenario, **kw: None)   # any host
    target = {"runner": ftharness.harness.run.runner, "suite": ftharness.harness.run.suite}[module]
    monkeypatch.setattr(target, name, {"run_scenario": run_scenario, "run_suite": run_suite}[name])


def summary_of(folder):
    summary = json.loads((Path(folder) / "summary.json").read_text())
    return {**summary, "wall_time_s": 1.0}


def validate_junit(path):
    from test_junit import validate_junit as validate

    return validate(path)


def test_run_and_suite_write_report_html_and_junit_and_print_the_page_last(monkeypatch, tmp_path, capsys):
    from ftharness.harness.frontends.cli import main

    fake_run(monkeypatch, "runner", "run_scenario")
    out = tmp_path / "run"
    assert main(["run", "--out", str(out), "--quiet"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[-1] == f"report: {out / 'report.html'}"
    assert (out / "report.html").is_file() and (out / "report-data" / "steps.csv").is_file()
    assert len(validate_junit(out / "junit.xml").findall("testsuite")) == 1

    fake_run(monkeypatch, "suite", "run_suite")
    out = tmp_path / "suite"
    assert main(["suite", "--out", str(out), "--quiet"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == f"report: {out / 'report.html'}"
    assert len(validate_junit(out / "junit.xml").findall("testsuite")) == 2


def test_a_report_that_cannot_be_written_is_a_warning_not_a_verdict(monkeypatch, tmp_path, capsys):
    import ftharness.reports.html
    from ftharness.harness.frontends.cli import main

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    fake_run(monkeypatch, "runner", "run_scenario")
    monkeypatch.setattr(ftharness.reports.html, "write_report", broken)
    assert main(["run", "--out", str(tmp_path / "run"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out.strip().splitlines()[-1].startswith("results: ")
    (line,) = captured.err.strip().splitlines()
    assert line.startswith("ftharness: warning: report not written (") and "No space left" in line


# ------------------------------------------------------- compare gates CI
def test_compare_prints_a_table_and_a_tripped_gate_exits_1(groups, tmp_path, capsys):
    """slow's median recovery (7 s) is over fast's (3 s) by 133%: "> +10%" trips."""
    args = parse("compare", f"fast={','.join(groups['fast'])}", f"slow={','.join(groups['slow'])}",
                 "--out", str(tmp_path / "cmp"), "--fail-if", "recovery_s.median > +10%",
                 "--fail-if", "lost_steps.median > 3")
    assert args.func(args) == 1
    out = capsys.readouterr().out.splitlines()
    row = next(l.split() for l in out if l.startswith("recovery_s") and "slow" in l)
    assert row[:5] == ["recovery_s", "slow", "5", "7.009", "8.809"] and row[5] == "+4.000"
    low, high = (float(x.strip("[],")) for x in row[6:8])
    assert 1.0 <= low <= 4.0 <= high <= 7.0
    (fail,) = [l for l in out if l.startswith("FAIL")]
    assert "recovery_s median of slow 7.009 against fast 3.009" in fail and "+132.9%" in fail
    assert [l for l in out if l.startswith("ok")] == [
        "ok   --fail-if 'lost_steps.median > 3': lost_steps median of fast 1.000",
        "ok   --fail-if 'lost_steps.median > 3': lost_steps median of slow 1.000"]
    assert out[-1].startswith("compare: ") and (tmp_path / "cmp" / "compare.csv").is_file()


def test_compare_gate_that_holds_exits_0(groups, tmp_path, capsys):
    args = parse("compare", f"fast={','.join(groups['fast'])}", f"slow={','.join(groups['slow'])}",
                 "--out", str(tmp_path / "cmp"), "--fail-if", "recovery_s.median > +200%",
                 "--fail-if", "recovery_s.p95 > +5", "--fail-if", "ettr.median < -90%")
    assert args.func(args) == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and out.count("\nok   --fail-if") == 3


@pytest.mark.parametrize("gate", ["recovery_s.median >> 10%", "recovery_s.mean > 10%", "recovery.median > 1",
                                  "recovery_s.median > ten", "recovery_s.median"])
def test_a_malformed_gate_is_one_line_and_exit_2(groups, tmp_path, capsys, gate):
    args = parse("compare", f"fast={groups['fast'][0]}", "--fail-if", gate, "--out", str(tmp_path / "cmp"))
    assert args.func(args) == 2
    assert "--fail-if" in one_error_line(capsys) and not (tmp_path / "cmp").exists()


def test_compare_with_fewer_than_3_samples_warns_and_shows_no_interval(groups, tmp_path, capsys):
    args = parse("compare", f"fast={','.join(groups['fast'])}", f"one={groups['slow'][0]}",
                 "--out", str(tmp_path / "cmp"))
    assert args.func(args) == 0
    captured = capsys.readouterr()
    (warning,) = captured.err.strip().splitlines()
    assert warning.startswith("ftharness: warning: one: fewer than 3 samples of recovery_s (1)")
    row = next(l.split() for l in captured.out.splitlines() if l.startswith("recovery_s") and "one" in l)
    assert row == ["recovery_s", "one", "1", "5.009", "5.009", "+2.000"]
    df = pd.read_csv(tmp_path / "cmp" / "compare.csv").set_index("configuration")
    assert df.loc["one", "recovery_median_diff_s"] == approx(2.0, abs=1e-5)
    assert math.isnan(df.loc["one", "recovery_diff_ci_low_s"]) and math.isnan(df.loc["one", "recovery_diff_ci_high_s"])
