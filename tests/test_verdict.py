"""The verdict rests on evidence: a recorded real history (a worker kill on the
embedded cluster, tests/data/kill-worker) is PASS as recorded, and never PASS
once an event is removed, duplicated, reordered, corrupted or altered; a
consistently re-written history that charges the failure to the wrong budget
is FAIL. Pinned violations count only with their reason; an expected property
that judged nothing, or a fault that did not land, is INCONCLUSIVE."""

import json
import os
import re
import shutil
import types

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ftharness.harness.frontends.cli import main
from ftharness.history.records import read_history, sealed_lines
from ftharness.scenarios.verdict import evaluate
from ftharness.scenarios.schema import parse_scenario

DATA = os.path.join(os.path.dirname(__file__), "data")
KILL = os.path.join(DATA, "kill-worker")


def lines_of(folder):
    with open(os.path.join(folder, "history.jsonl"), "rb") as f:
        return f.read().split(b"\n")[:-1]


def copy_with(tmp_path, lines, src=KILL, name="run"):
    dst = tmp_path / name
    shutil.copytree(src, dst)
    (dst / "history.jsonl").write_bytes(b"".join(line + b"\n" for line in lines))
    return str(dst)


def reseal(events):
    """Lines for `events` with a fresh, consistent history_end: what a harness
    recording a different (e.g. mis-charged) run would have written."""
    return sealed_lines(events)


def verdict(folder, capsys=None):
    code = main(["check", folder])
    out = capsys.readouterr().out if capsys else ""
    return code, out


def test_recorded_history_is_complete_and_passes(capsys):
    read = read_history(KILL)
    assert read.problems == []
    code, out = verdict(KILL, capsys)
    assert code == 0 and out.strip().splitlines()[-1] == "PASS kill-worker"
    assert "LANDED fault 0 (kill_worker)" in out


MUTATIONS = ["remove", "duplicate", "swap", "truncate", "garble", "alter"]


@settings(max_examples=int(os.environ.get("FTHARNESS_MUTATIONS", "150")), deadline=None)
@given(how=st.sampled_from(MUTATIONS), data=st.data())
def test_a_damaged_history_is_never_pass(tmp_path_factory, how, data):
    lines = lines_of(KILL)
    i = data.draw(st.integers(0, len(lines) - 1), label="line")
    if how == "remove":
        lines = lines[:i] + lines[i + 1:]
    elif how == "duplicate":
        lines = lines[:i + 1] + [lines[i]] + lines[i + 1:]
    elif how == "swap":
        j = data.draw(st.integers(0, len(lines) - 1).filter(lambda j: lines[j] != lines[i]), label="other")
        lines[i], lines[j] = lines[j], lines[i]
    elif how == "truncate":
        lines[i] = lines[i][: len(lines[i]) // 2]
    elif how == "garble":
        lines[i] = lines[i].replace(b'"', b"'", 1)
    else:  # alter one value inside a well-formed event
        e = json.loads(lines[i])
        key = data.draw(st.sampled_from(sorted(k for k in e if k not in ("kind",))), label="key")
        e[key] = "tampered" if e[key] != "tampered" else 0
        lines[i] = json.dumps(e).encode()
    folder = copy_with(tmp_path_factory.mktemp("h"), lines)
    code, _ = verdict(folder)
    # a damaged record proves nothing either way: INCONCLUSIVE, never PASS and never FAIL
    # (docs/history.md); before, a lost step made a Ray violation out of the damage
    assert code == 3, f"{how} line {i}: exit {code}"


@pytest.mark.parametrize("content", [None, b"", b"\x00\x01garbage\xff\n", b"not json\n{}\n", b"[1, 2]\n"])
def test_check_on_a_missing_empty_or_garbage_history_is_inconclusive(tmp_path, content, capsys):
    folder = tmp_path / "run"
    shutil.copytree(KILL, folder)
    if content is None:
        os.remove(folder / "history.jsonl")
    else:
        (folder / "history.jsonl").write_bytes(content)
    code, out = verdict(str(folder), capsys)
    assert code == 3 and "INCONCLUSIVE" in out and "PASS kill-worker" not in out


def test_check_on_a_folder_that_is_no_results_folder_is_bad_input(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope")]) == 2
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and all(len(line) <= 300 for line in err.splitlines())


def test_worker_kill_charged_to_the_preemption_budget_fails(tmp_path, capsys):
    """A history shaped exactly like the real one, consistent in itself (counts,
    manifest, digest), but with Ray charging the SIGKILL to max_preemption_failures."""
    events = read_history(KILL).events
    for e in events:
        if e["kind"] == "failure":
            e.update(budget="preemption", counts={"worker_group": 0, "preemption": 1, "controller": 0})
    folder = copy_with(tmp_path, reseal(events))
    scenario = os.path.join(folder, "scenario.yaml")
    text = open(scenario).read().replace("max_preemption_failures: 0", "max_preemption_failures: 1")
    open(scenario, "w").write(text)
    assert read_history(folder).problems == []
    code, out = verdict(folder, capsys)
    assert code == 1 and "FAIL budget_accounting" in out
    assert "the injected kill_worker is charged to worker_group" in out


def scenario(**expect):
    # the limits tests/data/kill-worker was recorded with (before ftharness left the other two to Ray's -1)
    return parse_scenario({"name": "kill-worker", "workload": {"num_workers": 2, "steps": 12, "checkpoint_every": 2},
                           "failure_config": {"max_failures": 1, "max_preemption_failures": 0,
                                              "controller_failure_limit": 0},
                           "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 5}}],
                           "expect": {"outcome": "succeeded", **expect}})


def judged(sc, events=None, outcome=None, problems=None):
    read = read_history(KILL)
    summary = json.load(open(os.path.join(KILL, "summary.json")))
    out = outcome or {"outcome": "succeeded", "error": None, "error_type": None,
                      "return_value": {"acc": summary["final_state"]["accumulators"]}}
    return evaluate(sc, events if events is not None else read.events, out,
                    read.problems if problems is None else problems)


def test_default_expectation_is_every_applicable_property():
    s = judged(scenario())
    assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]
    assert s["expected_properties"] == ["exactly_once_restore", "budget_accounting", "shard_reassignment",
                                        "no_zombie_writes", "recovers", "bounded_lost_work"]


def test_a_fault_that_did_not_land_is_inconclusive():
    events = [e for e in read_history(KILL).events if e["kind"] != "fault_injected"]
    s = judged(scenario(), events, problems=[])
    assert s["verdict"] == "INCONCLUSIVE"
    assert any("fault 0 (kill_worker) did not land: never fired" in r for r in s["inconclusive"])


def test_outcome_mismatch_without_evidence_is_inconclusive_not_fail():
    events = [e for e in read_history(KILL).events if e["kind"] != "fault_injected"]
    s = judged(scenario(), events, {"outcome": "failed", "error_type": "X", "error": "x"}, problems=[])
    assert s["verdict"] == "INCONCLUSIVE" and any("evidence is incomplete" in r for r in s["inconclusive"])


def test_an_outcome_that_was_not_recorded_is_named_so():
    s = judged(scenario(), outcome={"error": None, "error_type": None})   # a run_end without its outcome
    lines = s["mismatches"] + s["inconclusive"]
    assert "outcome not recorded (expected succeeded)" in lines and not any("outcome None" in m for m in lines), lines


def test_an_expected_property_that_judged_nothing_is_inconclusive():
    events = [dict(e, rows=None) if e["kind"] == "step" else e for e in read_history(KILL).events]
    s = judged(scenario(properties=["shard_reassignment"]), events, problems=[])
    assert s["verdict"] == "INCONCLUSIVE" and "not judged" in s["inconclusive"][0]


def test_pinned_violation_counts_only_with_its_reason():
    events = read_history(KILL).events
    for e in events:  # plant a digest mismatch on the restore
        if e["kind"] == "worker_start" and e.get("restored_checkpoint"):
            e["restored_intact"] = False
    pin = [{"property": "exactly_once_restore", "reason": "digest mismatch"}]
    assert judged(scenario(violations=pin, properties=["budget_accounting"]), events, problems=[])["verdict"] == "PASS"
    other = [{"property": "exactly_once_restore", "reason": "applied twice"}]
    s = judged(scenario(violations=other, properties=["budget_accounting"]), events, problems=[])
    assert s["verdict"] == "FAIL" and "not pinned" in s["mismatches"][0]
    clean = judged(scenario(violations=pin, properties=["budget_accounting"]))
    assert clean["verdict"] == "FAIL" and "gap may have closed" in clean["mismatches"][0]
    # the violation did not occur because the fault never landed: that proves nothing
    unlanded = [e for e in read_history(KILL).events if e["kind"] != "fault_injected"]
    s = judged(scenario(violations=pin, properties=["budget_accounting"]), unlanded, problems=[])
    assert s["verdict"] == "INCONCLUSIVE" and any("gap may have closed" in r for r in s["inconclusive"])


def test_a_crashed_check_satisfies_no_pin():
    events = read_history(KILL).events
    for e in events:
        if e["kind"] == "step":
            e["step"] = "x"  # the checks cannot compare steps: they crash
    s = judged(scenario(violations=[{"property": "exactly_once_restore", "reason": "crash"}],
                        properties=["budget_accounting"]), events, problems=[])
    assert s["verdict"] == "INCONCLUSIVE"   # odd values: named damage, and no property decides by crashing
    assert any("odd-value" in r and "step is 'x'" in r for r in s["inconclusive"]), s["inconclusive"]


def test_a_suite_goes_on_past_a_scenario_that_crashes(tmp_path, monkeypatch, capsys):
    """ftharness itself breaking on one scenario: that one is ERROR with its
    traceback kept, the others still run, and the suite exits 4."""
    import contextlib

    from ftharness.harness.run import runner

    class Runner:
        def __init__(self, scenario, cluster, options):
            self.scenario, self.options = scenario, options

        def run(self):
            if self.scenario.name == "boom":
                raise RuntimeError("harness bug")
            return {"scenario": self.scenario.name, "verdict": "PASS", "outcome": "succeeded", "attempts": 1,
                    "budgets": {}, "mismatches": [], "inconclusive": []}

    monkeypatch.setattr(runner, "ScenarioRunner", Runner)   # the Ray Train runtime's (runner.RayTrain)
    monkeypatch.setattr(runner, "open_cluster", lambda spec, address=None: contextlib.nullcontext(types.SimpleNamespace(heal=list, heal_timing={})))
    for name in ("a-first", "boom", "c-last"):
        (tmp_path / f"{name}.yaml").write_text(f"name: {name}\n")
    code = main(["suite", str(tmp_path), "--out", str(tmp_path / "out"), "--quiet"])
    out = capsys.readouterr().out
    assert code == 4 and "2 passed, 0 failed, 0 inconclusive, 1 errors" in out
    assert "RuntimeError: harness bug" in (tmp_path / "out" / "boom" / "error.txt").read_text()
    assert json.load(open(tmp_path / "out" / "boom" / "summary.json"))["verdict"] == "ERROR"


PREEMPT = os.path.join(DATA, "preempt-node")


def test_preemption_charged_to_max_failures_fails(tmp_path, capsys):
    """A real spot preemption (node killed at its drain deadline), re-recorded
    consistently with Ray charging it to max_failures instead of the preemption budget."""
    assert main(["check", PREEMPT]) == 0
    capsys.readouterr()
    events = read_history(PREEMPT).events
    for e in events:
        if e["kind"] == "failure":
            e.update(budget="worker_group", counts={"worker_group": 1, "preemption": 0, "controller": 0})
    folder = copy_with(tmp_path, reseal(events), src=PREEMPT)
    scenario = os.path.join(folder, "scenario.yaml")
    text = open(scenario).read().replace("max_failures: 0", "max_failures: 1")
    open(scenario, "w").write(text)
    code, out = verdict(folder, capsys)
    assert code == 1 and "FAIL budget_accounting" in out
    assert "the injected preempt_node is charged to preemption" in out


@pytest.mark.parametrize("folder,seconds", [(KILL, 18.953317), (PREEMPT, 22.578198)], ids=["kill", "preempt"])
def test_recovers_reports_the_recovery_time_of_the_metrics_table(folder, seconds):
    """One recovery, one number: the `recovers` property, summary.json and the
    reports' recovery table measure a real recorded recovery the same way
    (ftharness.history.model). Before they shared it, the property said 18.7 s
    (kill) and 18.9 s (preempt) where the table said 18.95 s and 22.58 s."""
    from ftharness.reports.metrics import recovery_table
    from ftharness.scenarios.properties import CHECKS

    events = read_history(folder).events
    table = list(recovery_table(events)["recovery_s"].dropna())
    assert table == [pytest.approx(seconds, abs=1e-6)]
    start = next(e for e in events if e["kind"] == "run_start")
    context = {"outcome": "succeeded", "failure_config": start["failure_config"]}
    held = CHECKS["recovers"](events, context)
    assert held.passed and f"slowest {seconds:.2f} s" in held.explanation
    # over a bound it cannot meet, the property states the time of each recovery it owes
    missed = CHECKS["recovers"](events, dict(context, recovery_bound_s=0.001))
    assert [float(t) for t in re.findall(r"took ([0-9.]+) s", missed.explanation)] == [round(seconds, 2)]
    sc = parse_scenario(yaml.safe_load(open(os.path.join(folder, "scenario.yaml"))))
    s = evaluate(sc, events, {"outcome": "succeeded", "error": None, "error_type": None})
    assert s["recovery_times_s"] == [round(seconds, 3)]
    assert s["run_metrics"]["recovery_s"] == [pytest.approx(seconds, abs=1e-6)]


# ---------------------------------------- issue 22, "What was seen": each fails on the code before it
from test_mutations import Run  # noqa: E402 - the recorded runs, edited and sealed again


def checked(run, tmp_path, capsys, name="run"):
    """`ftharness check` on the edited run: (exit code, output)."""
    code = main(["check", run.write(tmp_path / name)])
    return code, capsys.readouterr().out


def test_seen_2_lost_work_is_bounded_by_the_cadence_not_by_the_run_judged(tmp_path, capsys):
    """The restart restores the latest registered checkpoint (step 2: every later one was
    registered late) and redoes 26 of 28 steps with a checkpoint every 2. Before, the bound
    (gap + the lag measured on this run) was 28 and it passed."""
    run = Run("preempt-node")
    first = run.all("checkpoint_registered")[0]
    start2 = run.one("attempt_start", n=1)
    for e in run.all("checkpoint_registered"):
        if e is not first and e["seq"] < start2["seq"]:
            run.move_to_end(e)
    for e in run.restarted():
        e.update(restored_checkpoint=first["checkpoint"], restored_step=first["step"])
    run.expect(properties=["bounded_lost_work"])
    code, out = checked(run, tmp_path, capsys)
    assert code == 1 and "26 step(s) lost (steps 3-28), over the bound of 4 (checkpoint cadence 2" in out


def test_seen_2_recovers_has_a_default_bound_and_zero_recoveries_is_no_pass(tmp_path, capsys):
    run = Run("kill-worker")   # training came back 1000 s after the kill; no bound declared
    run.shift_after(run.all("failure")[0]["seq"], 1000.0)
    code, out = checked(run, tmp_path, capsys, "slow")
    assert code == 1 and "over the 300 s bound (default 300 s)" in out
    run = Run("kill-worker")   # the outage was never recorded: the fault landed, nothing recovered
    for e in run.all("controller_state"):
        if e.get("cur") == "RESTARTING" or e.get("error_type"):
            run.drop(e)
    code, out = checked(run, tmp_path, capsys, "none")
    assert code == 1 and "landed (failure seq 27) but no recovery was recorded" in out


def test_seen_3_check_judges_the_history_not_an_edited_summary(tmp_path, capsys):
    """The history's final state is wrong; summary.json says the right one, or null."""
    for i, final in enumerate(({"accumulators": [384.0, 73536.0, 18800704.0, 73536.0]}, None)):
        run = Run("kill-worker")
        run.one("run_end")["return_value"]["acc"][1] += 5.0
        folder = run.write(tmp_path / f"r{i}")
        with open(os.path.join(folder, "summary.json"), "w") as f:
            json.dump({"scenario": "kill-worker", "verdict": "PASS", "final_state": final}, f)
        assert main(["check", folder]) == 1
        assert "final accumulators differ from the exactly-once value: sum_ids 73541.0 != 73536.0" in \
            capsys.readouterr().out


def test_seen_3_a_soak_is_judged_again_exactly(tmp_path, capsys):
    """A soak: the run stops on its deadline (step 12 of 1,000,000) and its faults come from
    the fault process, not scenario.yaml. Before, check dropped the step the run stopped at
    and the injected faults, and gave a false FAIL."""
    run = Run("kill-worker")
    start, end = run.one("run_start"), run.one("run_end")
    start["workload"].update(steps=1_000_000, rows_per_epoch=12 * 32, stop_at=start["t"] + 60.0)
    start["soak"] = {"seed": 1, "duration_s": 60.0, "mtbf_s": 20.0, "planned": 1}
    end["fault_specs"] = run.scenario.pop("faults")
    run.scenario["faults"] = []
    run.scenario["workload"].update(steps=1_000_000, duration_s=60.0, rows_per_epoch=12 * 32)
    run.scenario["name"] = start["scenario"] = "kill-worker-soak"
    folder = run.write(tmp_path / "soak")
    with open(os.path.join(folder, "summary.json"), "w") as f:   # as the run wrote it (an output only)
        json.dump({"scenario": "kill-worker-soak", "verdict": "PASS",
                   "final_state": {"accumulators": end["return_value"]["acc"]}}, f)
    code, out = main(["check", folder]), capsys.readouterr().out
    assert code == 0 and "LANDED fault 0 (kill_worker)" in out and "PASS kill-worker-soak" in out, out


def test_seen_3_a_scenario_yaml_without_the_faults_the_history_injected_is_inconclusive(tmp_path, capsys):
    """scenario.yaml swapped for one that declares no fault: the kill the history records
    is judged by nobody, so its landing is unknown (before: PASS, the fault never judged)."""
    run = Run("kill-worker")
    run.scenario["faults"] = []
    folder = run.write(tmp_path / "nofaults")
    code, out = main(["check", folder]), capsys.readouterr().out
    assert code == 3 and "fault(s) 0 were injected but neither the history" in out, out


def test_seen_4_missing_evidence_is_never_a_pass(tmp_path, capsys):
    def restored_intact_unknown(run):
        run.restarted()[0]["restored_intact"] = None

    def count_missing(run):
        del run.all("failure")[0]["count"]

    def rank_stepped_without_starting(run):
        run.drop(run.restarted()[1])

    for i, edit in enumerate((restored_intact_unknown, count_missing, rank_stepped_without_starting)):
        run = Run("kill-worker")
        edit(run)
        code, out = checked(run, tmp_path, capsys, f"r{i}")
        assert code == 3 and "not judged" in out, (edit.__name__, out)


def test_seen_4_what_the_history_says_against_the_rules(tmp_path, capsys):
    def limit_not_the_configured_one(run):
        run.all("failure")[0]["limit"] = 5

    def recorded_config_allows_no_retry(run):      # scenario.yaml still says max_failures 1
        run.one("run_start")["failure_config"]["max_failures"] = 0

    def registered_but_reported_by_nobody(run):
        run.all("checkpoint_registered")[-1]["checkpoint"] = "checkpoint_from_nowhere"

    def restored_digest_not_the_reported_one(run):
        name = run.restarted()[0]["restored_checkpoint"]
        for e in run.restarted():
            e["restored_digests"] = {str(r["rank"]): "0" * 64 for r in run.all("report", checkpoint=name)}

    for i, edit in enumerate((limit_not_the_configured_one, recorded_config_allows_no_retry,
                              registered_but_reported_by_nobody, restored_digest_not_the_reported_one)):
        run = Run("kill-worker")
        edit(run)
        code, out = checked(run, tmp_path, capsys, f"r{i}")
        assert code == 1, (edit.__name__, out)


def test_seen_4_a_torchrun_kill_relabelled_as_membership_fails(tmp_path, capsys):
    run = Run("torchrun-kill-worker")
    run.all("failure")[0].update(budget="membership", error_type="MembershipChange", count=0, limit=None, counts={})
    code, out = checked(run, tmp_path, capsys)
    assert code == 1 and "charged to membership (counted by nothing), but node 1's own workers failed" in out


def test_seen_4_limits_edited_in_scenario_yaml_are_not_the_run(tmp_path, capsys):
    run = Run("kill-worker")
    run.scenario["failure_config"]["max_failures"] = 3
    code, out = checked(run, tmp_path, capsys)
    assert code == 3 and "recorded failure_config.max_failures 1, the scenario says 3" in out


def test_seen_5_a_lost_event_is_a_gap_not_a_violation(tmp_path, capsys):
    run = Run("kill-worker")
    run.drop(run.all("step", attempt=2, rank=1)[3], lost=True)   # step 6 of rank 1 never arrived
    code, out = checked(run, tmp_path, capsys)
    assert code == 3 and "never reached the history" in out
    assert "  - " not in out   # no violation stated as the verdict's reason
    # a violation the gap cannot explain still fails: the restore read files other than reported
    run.restarted()[0]["restored_intact"] = False
    code, out = checked(run, tmp_path, capsys, "with-violation")
    assert code == 1 and "digest mismatch" in out


def test_seen_6_a_failure_nobody_asked_for_is_shown(tmp_path, capsys):
    """A job that never reports a checkpoint, killed once, expecting exactly_once_restore only:
    bounded_lost_work fails; the verdict is still the asked one, the failure is not hidden."""
    from ftharness.scenarios.synthetic import Fault, Plan, generate
    from ftharness.scenarios.reference_data import WorkloadConfig

    syn = generate(Plan(WorkloadConfig(steps=12, batch_size=4, checkpoint_every=2), num_workers=2,
                        failure_config={"max_failures": 1}, faults=[Fault("worker_group", after_steps=6)],
                        defect="no_checkpoints"))
    for e in syn.events:   # the kill the scenario declares, as the injector records what it was asked
        if e["kind"] == "fault_injected":
            e["target_asked"] = {"rank": 1}
    sc = parse_scenario({"name": "synthetic", "workload": {"num_workers": 2, "steps": 12, "checkpoint_every": 2, "batch_size": 4},
                         "failure_config": {"max_failures": 1},
                         "faults": [{"kind": "kill_worker", "at": {"step": 6}, "target": {"rank": 1}}],
                         "expect": {"outcome": "succeeded", "properties": ["budget_accounting"]}})
    s = evaluate(sc, syn.events, {"outcome": "succeeded", "error": None, "error_type": None,
                                  "return_value": {"acc": syn.context["final"]}})
    # the reference job checkpoints every checkpoint_every steps: one that never did is not the run the
    # scenario declares (model: cadence), so the verdict is INCONCLUSIVE, never PASS; the failure the
    # scenario did not ask for is still shown
    assert s["verdict"] == "INCONCLUSIVE"
    assert any("model: cadence" in u for u in s["inconclusive"]) and not s["mismatches"]
    assert [u["property"] for u in s["unasked_failures"]] == ["bounded_lost_work"]
    assert "no checkpoint was ever reported" in s["unasked_failures"][0]["explanation"]
    from ftharness.harness.frontends.cli_shared import print_summary
    print_summary(dict(s, wall_time_s=1.0), str(tmp_path))
    assert "WARNING bounded_lost_work: failed, but the scenario did not ask for it" in capsys.readouterr().out


@pytest.mark.parametrize("expect", [{"properties": []},
                                    {"properties": ["budget_accounting"], "monotonic": ["count"]},
                                    {"properties": ["budget_accounting"], "recovery_bound_s": 30},
                                    {"properties": ["recovers"], "max_lost_steps": 2}],
                         ids=["empty", "monotonic", "recovery-bound", "max-lost-steps"])
def test_seen_6_contradictory_expectations_are_refused_in_one_line(tmp_path, expect, capsys):
    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump({"name": "k", "expect": expect}))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "expect." in err[0] and "Traceback" not in err[0]


def test_an_elastic_restart_retried_smaller_under_one_attempt_id_is_no_contradiction():
    """A real elastic-shrink run (tests/data/elastic-shrink, Ray 2.60.0): after the node's death
    the restart asked for 3 workers, timed out (controller budget), and Ray retried it under the
    same attempt id asking for 2, which started. The causal model compared the first start with
    the group and judged the run FAIL ("asks for 3 workers, its group has 2"); the group is what
    the start just before it asked for."""
    import os

    from ftharness.reports.judgement import rejudge

    folder = os.path.join(os.path.dirname(__file__), "data", "elastic-shrink")
    judged = rejudge(folder)
    assert judged["verdict"] == "PASS", judged["mismatches"] + judged["inconclusive"]
    starts = [e for e in map(__import__("json").loads, open(os.path.join(folder, "history.jsonl")))
              if e["kind"] == "attempt_start"]
    assert [s["num_workers"] for s in starts][-2:] == [3, 2] and starts[-1]["attempt_id"] == starts[-2]["attempt_id"]


def test_the_group_rule_still_fails_an_edited_start_of_the_real_elastic_run(tmp_path):
    """Mutants of the real elastic-shrink history (resealed, as the mutation engine makes them)
    that the rule must catch: the start just before a group asking for another size is FAIL;
    the start that failed before any group (what the older rule took for a contradiction) may
    say anything."""
    import copy
    import os

    from ftharness.reports import mutation

    events, scenario = mutation.load(os.path.join(os.path.dirname(__file__), "data", "elastic-shrink"))
    starts = [i for i, e in enumerate(events) if e["kind"] == "attempt_start"]

    def judged(index, value):
        edited = copy.deepcopy(events)
        edited[index]["num_workers"] = value
        m = mutation.Mutant("elastic-shrink", "revalue", "attempt_start", "num_workers", f"seq {index} = {value}", edited)
        return mutation.judge(m, scenario, str(tmp_path / f"e{index}-{value}"))

    last = judged(starts[-1], 3)                     # the retried start, just before its group of 2
    assert last.verdict == "FAIL" and any("asks for 3 workers, its group has 2" in r for r in last.reasons), last.reasons
    first = judged(starts[0], 2)                     # the first attempt's start, before its group of 3
    assert first.verdict == "FAIL" and any("asks for 2 workers, its group has 3" in r for r in first.reasons)
    failed = judged(starts[-2], 1)                   # the start that timed out before any group
    assert not any("asks for" in r for r in failed.reasons), failed.reasons
    assert failed.verdict == "PASS", failed.reasons
