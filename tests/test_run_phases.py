"""benchmarks/run_phases.py: where a run's time goes, read from its history."""

import importlib.util
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("run_phases", os.path.join(ROOT, "benchmarks", "run_phases.py"))
run_phases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(run_phases)


def ev(t, kind, **kw):
    return {"t": t, "kind": kind, **kw}


RUN = [ev(0, "run_start", runtime="ray_train"), ev(4, "attempt_start"), ev(12, "worker_group_started"),
       ev(13, "worker_start"), ev(15, "step"), ev(20, "step"), ev(20.5, "fault_injected"), ev(23, "failure"),
       ev(23.1, "attempt_start"), ev(30, "worker_group_started"), ev(31, "restored"), ev(33, "step"),
       ev(40, "step"), ev(41, "run_end", outcome="succeeded")]


def test_each_phase_is_read_from_its_events():
    got = run_phases.phases(RUN)
    assert got["fit start"] == 4 and round(got["group start"], 3) == 14.9
    assert got["first step"] == 3 + 1 and got["detection"] == 2.5
    assert round(got["to restart"], 3) == 0.1 and got["end"] == 1 and got["end (failed)"] == 0


def test_a_hung_run_s_wait_is_its_own_phase_and_the_report_prints(tmp_path, capsys):
    hung = RUN[:-1] + [ev(300, "run_end", outcome="failed")]
    assert run_phases.phases(hung)["end (failed)"] == 260
    for name, events in (("a", RUN), ("b", [dict(e, t=e["t"] + 45) for e in RUN])):
        os.makedirs(tmp_path / name)
        (tmp_path / name / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    assert run_phases.main([str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 Ray Train runs" in out and "group start" in out and "between runs" in out and "median 4.0 s" in out
    assert run_phases.main([str(tmp_path / "nothing")]) == 2
