"""`ftharness explore` without a cluster: the strategies (every supported kind and phase
generated, valid scenarios, shrinking order), the model's expectation, and the Hypothesis
driver over a fake executor (a gap found and shrunk, confirmed or flaky, the database
reused by a second explore, the budget, the exit codes), and bad input on the command line."""

import json
import os

import pytest

from ftharness.errors import ClusterError
from hypothesis import given, settings

from ftharness.faults import FAULT_KINDS
from ftharness.harness.run.explore import Explorer
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import load_scenario, parse_scenario

REF = load_scenario(os.path.join(os.path.dirname(__file__), "..", "scenarios", "catalog", "default.yaml"))
GPU_BASE = parse_scenario({"name": "gpu", "cluster": {"nodes": 3, "gpus_per_node": 1},
                           "workload": {"num_workers": 2, "steps": 12, "collective_timeout_s": 10},
                           "failure_config": {"max_failures": 1}})
NS_BASE = parse_scenario({"name": "ns", "cluster": {"nodes": 3, "network": "namespaces"},
                          "workload": {"num_workers": 2, "steps": 12}})


def test_supported_kinds_come_from_the_registry_and_the_schema():
    sup = es.supported(REF, "2.60.0")
    assert set(sup.kinds) | set(sup.left_out) == set(FAULT_KINDS)
    assert {"network_degrade", "cuda_error", "collective_hang"} <= set(sup.left_out)
    assert "namespaces" in sup.left_out["network_degrade"] and "GPU" in sup.left_out["cuda_error"]
    assert len(sup.kinds) == len(FAULT_KINDS) - len(sup.left_out)
    assert {"cuda_error", "collective_hang"} <= set(es.supported(GPU_BASE, "2.60.0").kinds)
    assert "network_degrade" in es.supported(NS_BASE, "2.60.0").kinds


def _all_generated(base, n=400):
    seen = []

    @settings(max_examples=n, database=None, derandomize=True)
    @given(es.schedules(base, es.supported(base, "2.60.0"), 3))
    def collect(faults):
        expected = es.expectation(base.failure_config.model_dump(), faults)
        parse_scenario(es.example_scenario(base, faults, expected), source="generated")   # always valid
        seen.append(faults)

    collect()
    return seen


@pytest.mark.parametrize("base", [REF, GPU_BASE], ids=["reference", "gpu"])
def test_every_supported_kind_and_every_phase_is_generated(base):
    seen = _all_generated(base)
    kinds = {f["kind"] for s in seen for f in s}
    assert kinds == set(es.supported(base, "2.60.0").kinds)
    phases = {es.phase_of(f, s[i - 1] if i else None, base.workload.checkpoint_every)
              for s in seen for i, f in enumerate(s)}
    assert phases >= set(es.PHASES) - ({"before_first_checkpoint"} if base.workload.checkpoint_every == 1 else set())


def test_no_schedule_holds_a_fault_that_cannot_land():
    """A corrupted checkpoint or read errors with no restart after them, a worker-side crash
    on a driver event, and a crash at a restore with no restart before it never fired in a real
    exploration (INCONCLUSIVE examples): not drawn."""
    seen = _all_generated(REF)
    for s in seen:
        for i, f in enumerate(s):
            if es.needs_restart_after(f):   # a damaged checkpoint, read errors, starved resources
                assert any(es.restarts(g) for g in s[i + 1:]), s
            if f["at"].get("event") in ("attempt_started", "restored"):   # a next attempt, a restore
                assert any(es.restarts(g) for g in s[:i]), s
            if f["at"].get("event") == "restored":                        # ... of a checkpoint
                assert any(es.restarts(g) and es._after_a_checkpoint(g, 1) for g in s[:i]), s
            if f["kind"] == "crash_worker":
                assert f["at"].get("step") is not None or f["at"].get("event") == "restored", s
            if f.get("where") == "on_restore":     # a crash at a restore needs one to come
                assert any(es.restarts(g) and es._after_a_checkpoint(g, 1) for g in s[:i]), s
    assert any(f["kind"] == "corrupt_checkpoint" for s in seen for f in s)   # still drawn, with a restart
    assert any(f["kind"] == "starve_resources" for s in seen for f in s)


def test_shrinking_goes_to_fewer_faults_simpler_kinds_earlier_phases():
    from hypothesis import find

    sup = es.supported(REF, "2.60.0")
    smallest = find(es.schedules(REF, sup, 3), lambda s: True, settings=settings(database=None))
    assert smallest == [{"kind": "kill_worker", "at": {"step": 3}, "target": {"rank": 0}}]
    corrupt_then_kill = find(es.schedules(REF, sup, 3),
                             lambda s: len(s) >= 2 and s[0]["kind"] == "corrupt_checkpoint"
                             and es.failure_of(s[1])[0] == "worker_group",
                             settings=settings(database=None, max_examples=5000))
    assert len(corrupt_then_kill) == 2
    assert corrupt_then_kill[1]["kind"] == "kill_worker"
    first = corrupt_then_kill[0]
    assert (first["which"], first["how"]) == ("latest", "bitflip")      # each argument's first value
    assert corrupt_then_kill[1]["target"] == {"rank": 0}


def test_the_model_gives_the_outcomes_and_the_budget_edges():
    fc = {"max_failures": 1, "controller_failure_limit": 0}
    kill = {"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 3}}
    one = es.expectation(fc, [kill])
    assert one.outcomes == ("succeeded",) and one.edge == 1.0          # the last retry
    two = es.expectation(fc, [kill, dict(kill, at={"step": 5})])
    assert two.outcomes == ("failed",) and two.edge == 1.5            # the first over-budget failure
    three = es.expectation(fc, [kill, dict(kill, at={"step": 6}), dict(kill, at={"step": 9})])
    assert three.unreached == (2,)                                      # after the RAISE: never fires
    close = es.expectation(fc, [kill, dict(kill, at={"step": 4})])      # may land in the same attempt
    assert close.outcomes == ("succeeded", "failed") and close.unreached == ()
    storage = {"kind": "storage_errors", "at": {"step": 3}, "duration_s": 3.0}
    assert es.expectation(fc, [storage]).outcomes == ("succeeded",)
    assert es.expectation(fc, [kill, storage]).outcomes == ("succeeded", "failed")   # it may or may not fail it
    preempt = {"kind": "preempt_node", "target": {"rank": 0}, "at": {"step": 3}}
    assert es.expectation({"max_failures": 1, "max_preemption_failures": 1}, [preempt, kill]).edge >= 2.0
    assert es.expectation(fc, [{"kind": "kill_controller", "at": {"step": 2}}]).outcomes == ("failed",)


# ---------------------------------------------------------------- the driver, faked
class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


class FakeExecutor:
    """A run takes `run_s` fake seconds; a corrupted checkpoint followed by a failure that
    restarts the run fails exactly_once_restore; kill_controller without resume fails the outcome."""

    def __init__(self, clock, run_s=30.0, flaky=False, inconclusive=False, snapshot=False):
        self.clock, self.run_s, self.flaky, self.inconclusive = clock, run_s, flaky, inconclusive
        self.snapshot = snapshot     # a failed write of the checkpoint snapshot is fatal too
        self.runs = []

    def run(self, scenario, folder):
        self.clock.t += self.run_s
        faults = [f.model_dump(mode="json", exclude_none=True) for f in scenario.faults]
        self.runs.append(faults)
        os.makedirs(folder, exist_ok=True)
        bad = any(f["kind"] == "corrupt_checkpoint" and any(es.failure_of(g)[0] == "worker_group" for g in faults[i + 1:])
                  for i, f in enumerate(faults))
        if self.flaky and len([r for r in self.runs if r == faults]) > 1:
            bad = False
        fatal = self.snapshot and any(f.get("path_glob") == "*checkpoint_manager_snapshot.json*" for f in faults)
        props = {"exactly_once_restore": {"status": "failed" if bad else "passed"},
                 "budget_accounting": {"status": "passed"}}
        verdict = "FAIL" if bad or fatal else ("INCONCLUSIVE" if self.inconclusive else "PASS")
        mismatches = (["outcome failed (expected succeeded)"] if fatal else []) + (
            ["property exactly_once_restore failed: digest mismatch"] if bad else [])
        self.last = {"verdict": verdict, "outcome": "failed" if fatal else "succeeded",
                     "error_type": "ControllerError" if fatal else None, "properties": props,
                     "mismatches": mismatches, "inconclusive": ["fault 0 did not land"] if self.inconclusive else [],
                     "faults": [{"landed": True} for _ in faults]}
        return self.last


    def rejudge(self, folder, outcome):
        """Judged again expecting the outcome the run had: the outcome mismatch goes."""
        s = dict(self.last)
        s["mismatches"] = [m for m in s["mismatches"] if not m.startswith("outcome ")]
        s["verdict"] = "FAIL" if s["mismatches"] else "PASS"
        return s


def base_gap(signature):
    """A finding's signature without the drawn workload it was found on."""
    return signature.split(" [")[0]


def explorer(tmp_path, budget_s=3000, **kw):
    clock = FakeClock()
    ex = FakeExecutor(clock, **kw)
    return Explorer(REF, ex, str(tmp_path / "out"), budget_s, seed=3, max_faults=2, clock=clock,
                    say=lambda line: None, ray_version="2.60.0"), ex


def test_a_gap_is_found_shrunk_to_its_two_faults_and_confirmed(tmp_path):
    exp, ex = explorer(tmp_path)
    result = exp.explore()
    assert result.exit_code() == 1
    [gap] = result.findings
    assert gap.signature == "exactly_once_restore" and gap.status == "confirmed"
    assert [f["kind"] for f in gap.example.faults] == ["corrupt_checkpoint", "kill_worker"]
    assert gap.example.faults[1]["target"] == {"rank": 0}
    replay = load_scenario(gap.scenario_file)       # `ftharness run` replays it
    assert [f.kind for f in replay.faults] == ["corrupt_checkpoint", "kill_worker"]
    assert result.wall_s <= 3000 + 30                # the budget bounded it (one repeat held back)
    saved = json.load(open(tmp_path / "out" / "explore.json"))
    assert saved["exit_code"] == 1 and saved["findings"][0]["status"] == "confirmed"
    assert saved["coverage"]["corrupt_checkpoint"]


def test_rounds_find_two_gaps_each_shrunk_apart(tmp_path):
    result = explorer(tmp_path, budget_s=6000, snapshot=True)[0].explore()
    # (the fake's gaps show on any workload: each is found once, on the base job's or on Ray Data)
    gaps = {base_gap(g.signature): g for g in result.findings}
    assert set(gaps) == {"exactly_once_restore", "outcome:failed:ControllerError"}
    # (how far each shrinks in its share of the budget depends on Hypothesis's wall-clock
    # heuristics; what each keeps is its own gap's fault)
    snapshot = gaps["outcome:failed:ControllerError"].example.faults
    assert snapshot[0]["kind"] == "storage_errors" and len(snapshot) <= 2
    assert snapshot[0]["path_glob"] == "*checkpoint_manager_snapshot.json*"
    assert [f["kind"] for f in gaps["exactly_once_restore"].example.faults][0] == "corrupt_checkpoint"
    assert all(g.status == "confirmed" for g in gaps.values())


def test_a_second_explore_into_the_same_folder_continues(tmp_path):
    first, ex1 = explorer(tmp_path)
    first.explore()
    again, ex = explorer(tmp_path, budget_s=300)
    result = again.explore()
    # the finding comes back at once from OUT (explore.json and OUT/.hypothesis), without a rerun
    # of its search; only its confirming repeat runs it again
    assert result.session == 2 and [g.status for g in result.findings] == ["confirmed"]
    assert result.findings[0].first_found_s == 0 and result.findings[0].examples_before == 0
    searched = [(e.faults, e.workload) for e in result.examples if e.purpose == "search"]
    assert searched and not [f for f in searched if f in [(e.faults, e.workload) for e in first.examples]]
    assert len(json.load(open(tmp_path / "out" / "explore.json"))["examples"]) > len(result.examples)


def test_a_failure_that_does_not_repeat_is_named_flaky(tmp_path):
    result = explorer(tmp_path, flaky=True)[0].explore()
    assert [g.status for g in result.findings] == ["flaky"]


def test_only_inconclusive_examples_exit_3_and_nothing_run_is_no_pass(tmp_path):
    exp, ex = explorer(tmp_path, budget_s=100, inconclusive=True)
    exp.support = es.Support(("kill_worker",), {"kill_worker": ("step",)})
    result = exp.explore()
    assert result.counts()["INCONCLUSIVE"] >= 1 and result.exit_code() == 3
    nothing = explorer(tmp_path / "b", budget_s=0)[0].explore()
    assert nothing.examples == [] and nothing.exit_code() == 3


def test_the_budget_stops_new_examples(tmp_path):
    exp, ex = explorer(tmp_path, budget_s=95)
    exp.support = es.Support(("kill_worker",), {"kill_worker": ("step",)})
    exp.explore()
    assert len(ex.runs) == 4      # 30 s each: started at 0, 30, 60 and 90 s


class BreakingExecutor(FakeExecutor):
    """The cluster stops working after `good` runs: every later run raises, as a heal that
    cannot free the cluster's CPUs does (ClusterError)."""

    def __init__(self, clock, good=3, error=None, **kw):
        super().__init__(clock, **kw)
        self.good, self.error, self.calls = good, error, 0

    def run(self, scenario, folder):
        self.calls += 1
        if self.calls > self.good:
            self.clock.t += 60.0
            raise self.error or ClusterError("embedded cluster: not idle after 60 s (abc 0/1 CPUs free)")
        return super().run(scenario, folder)


def test_a_cluster_that_breaks_stops_the_search_once_instead_of_shrinking_it(tmp_path):
    """Found on a real exploration: a run left Ray Train actors holding CPUs, the next heal
    timed out, and Hypothesis took the error for a failing example and shrank it: the same
    60 s error, example after example, to the end of the budget."""
    clock = FakeClock()
    ex = BreakingExecutor(clock, good=3)
    result = Explorer(REF, ex, str(tmp_path / "out"), 3000, seed=3, max_faults=2, clock=clock,
                      say=lambda line: None, ray_version="2.60.0").explore()
    assert ex.calls == 4                                  # the one run that met the broken cluster
    assert result.stopped and result.stopped.startswith("ClusterError: embedded cluster: not idle")
    found = [e for e in result.examples if e.status == "FAIL"]
    assert result.exit_code() == (1 if found else 3)      # nothing found, nothing judged past it: no PASS
    assert [g.status for g in result.findings] == ["unconfirmed"] * len({e.signature for e in found})
    saved = json.load(open(tmp_path / "out" / "explore.json"))
    assert saved["stopped"] == result.stopped
    from ftharness.reports.explore import terminal_text

    assert "stopped before the budget was spent: ClusterError" in terminal_text(saved)


def test_what_was_found_before_the_cluster_broke_is_reported_unconfirmed(tmp_path):
    """A real exploration found a gap at its 6th example and stopped at its 21st on a broken
    cluster; the gap must still be a finding (not shrunk, not repeated: unconfirmed)."""
    clock = FakeClock()
    ex = BreakingExecutor(clock, good=40)
    result = Explorer(REF, ex, str(tmp_path / "out"), 30000, seed=3, max_faults=2, clock=clock,
                      say=lambda line: None, ray_version="2.60.0").explore()
    failed = {e.signature for e in result.examples if e.status == "FAIL"}
    assert result.stopped and failed, "the fake cluster broke before any gap was found: raise `good`"
    assert {base_gap(g.signature) for g in result.findings} == {base_gap(s) for s in failed}
    assert all(g.status == "unconfirmed" and g.repeat is None for g in result.findings)
    assert result.exit_code() == 1
    assert all(os.path.isfile(g.scenario_file) for g in result.findings)


def test_a_stop_asked_while_ray_turned_the_interrupt_into_an_error_ends_as_an_interrupt(tmp_path):
    from ftharness.errors import STOP_REQUESTED

    clock = FakeClock()
    ex = BreakingExecutor(clock, good=1, error=RuntimeError("grpc: interrupted call"))
    exp = Explorer(REF, ex, str(tmp_path / "out"), 3000, seed=3, max_faults=2, clock=clock,
                   say=lambda line: None, ray_version="2.60.0")
    STOP_REQUESTED.set()
    try:
        with pytest.raises(KeyboardInterrupt):
            exp.explore()
    finally:
        STOP_REQUESTED.clear()
    assert ex.calls == 2


def test_budget_parsing():
    from ftharness.harness.run.explore_command import parse_budget

    assert parse_budget("30m") == 1800 and parse_budget("90s") == 90 and parse_budget("1h") == 3600


@pytest.mark.parametrize("args, words", [
    (["--budget", "soon"], "--budget"), (["--budget", "0"], "--budget"), (["--budget", "1000000h"], "--budget"),
    (["--max-faults", "0"], "--max-faults"), (["--max-faults", "9"], "--max-faults"),
    (["nope.yaml"], "nope.yaml"), (["--out", "/proc/self/x"], "/proc"), (["--out", "FILE"], "is a file"),
    (["--out", "a\nb"], "control character"), (["--address", "ray://h:10001"], "ray://")])
def test_bad_input_is_one_line_exit_2_before_anything_starts(tmp_path, capsys, args, words):
    from ftharness.harness.frontends.cli import main

    (tmp_path / "FILE").write_text("x")
    args = [str(tmp_path / "FILE") if a == "FILE" else a for a in args]
    out = [] if "--out" in args else ["--out", str(tmp_path / "o")]
    assert main(["explore", *args, *out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and words in err[0] and "Traceback" not in err[0], err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------ the reference job's workload axis
def test_the_reference_job_s_data_source_is_drawn_beside_the_faults_a_user_job_s_never():
    from hypothesis import find

    assert find(es.workloads(REF), lambda w: True) == {}          # shrinks to the base's own
    assert find(es.workloads(REF), lambda w: w.get("data") == "ray_data") == {"data": "ray_data"}
    user = parse_scenario({"name": "u", "workload": {"entrypoint": "m:f"}}, source="t")
    from hypothesis.errors import NoSuchExample

    with pytest.raises(NoSuchExample):                            # a user's job is run as written
        find(es.workloads(user), lambda w: w != {})
    data = es.example_scenario(REF, [{"kind": "kill_worker", "at": {"step": 3}, "target": {"rank": 0}}],
                               es.expectation(REF.failure_config.model_dump(), [], "2.60.0"), "2.60.0",
                               {"data": "ray_data"})
    assert data["workload"]["data"] == "ray_data"
    assert parse_scenario(data).workload.data == "ray_data"    # the replayable scenario carries it
    assert es.signature({"properties": {"exactly_once_restore": {"status": "failed"}}}, {"data": "ray_data"}) \
        == "exactly_once_restore [data=ray_data]"
    assert es.signature({"properties": {}}, {"data": "ray_data"}) == ""


def test_a_gap_found_on_ray_data_and_on_the_base_job_with_the_same_kinds_is_reported_once():
    from ftharness.harness.run.explore import Example, distinct

    def ex(sig, kinds, workload):
        return Example(index=1, name=sig, faults=[{"kind": k} for k in kinds], phases=[], status="FAIL",
                       signature=sig, workload=workload)

    both = {"exactly_once_restore": ex("exactly_once_restore", ["corrupt_checkpoint", "kill_worker"], {}),
            "exactly_once_restore [data=ray_data]": ex("exactly_once_restore [data=ray_data]",
                                                       ["kill_worker", "corrupt_checkpoint"], {"data": "ray_data"})}
    assert list(distinct(both)) == ["exactly_once_restore"]
    replay = dict(both, **{"exactly_once_restore [data=ray_data]": ex(
        "exactly_once_restore [data=ray_data]", ["kill_worker"], {"data": "ray_data"})})
    assert set(distinct(replay)) == set(replay)      # Ray Data's own gap: another fault list


def test_an_example_times_out_sooner_than_a_run_unless_the_base_says_otherwise():
    kill = [{"kind": "kill_worker", "at": {"step": 3}, "target": {"rank": 0}}]
    expected = es.expectation(REF.failure_config.model_dump(), kill, "2.60.0")
    assert es.example_scenario(REF, kill, expected, "2.60.0")["timeout_s"] == es.EXAMPLE_TIMEOUT_S < 600
    own = parse_scenario(dict(es.base_data(REF), name="b", timeout_s=900))
    assert es.example_scenario(own, kill, expected, "2.60.0")["timeout_s"] == 900


def test_the_coverage_pass_runs_every_supported_kind_once_before_the_search():
    """No kind waits on Hypothesis's draw: each supported kind in its simplest schedule, a kind
    that lands only through a restart with a worker failure after it, the first kind once more on
    each other workload; every schedule a valid scenario."""
    sup = es.supported(REF, "2.60.0")
    first = es.first_schedules(REF, sup)
    leads = [faults[0]["kind"] for faults, workload in first if not workload]
    assert leads == list(sup.kinds)
    assert [(faults[0]["kind"], workload) for faults, workload in first if workload] == [("kill_worker", {"data": "ray_data"})]
    for faults, workload in first:
        expected = es.expectation(REF.failure_config.model_dump(), faults)
        parse_scenario(es.example_scenario(REF, faults, expected, workload=workload), source="generated")
        if es.needs_restart_after(faults[0]):
            assert len(faults) == 2 and es.restarts(faults[1])
            assert es.phase_of(faults[1], faults[0], REF.workload.checkpoint_every) == "close_pair"
        else:
            assert len(faults) == 1
        assert es.phase_of(faults[0], None, REF.workload.checkpoint_every) in ("steady", "checkpoint_register")


def test_a_gap_the_coverage_pass_found_is_not_searched_again_on_another_workload(tmp_path):
    exp, ex = explorer(tmp_path, budget_s=3000)
    result = exp.explore()
    assert result.first_pass == len(es.first_schedules(REF, exp.support))
    def kinds_at(faults):
        return [(f["kind"], f["at"].get("step")) for f in faults]

    assert [kinds_at(r) for r in ex.runs[:result.first_pass]] == [kinds_at(f) for f, _ in es.first_schedules(REF, exp.support)]
    found = [e for e in result.examples if e.status == "FAIL" and e.purpose == "search"]
    assert found[0].index <= result.first_pass
    # once found (on the base job), the same gap on Ray Data is no new finding: not shrunk again
    assert [base_gap(g.signature) for g in result.findings] == ["exactly_once_restore"]
    no_pass = Explorer(REF, FakeExecutor(FakeClock()), str(tmp_path / "b"), 300, seed=3, cover_first=False,
                       say=lambda line: None, ray_version="2.60.0").explore()
    assert no_pass.first_pass == 0
