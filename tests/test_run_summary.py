"""summary.json's keys are declared (ftharness.scenarios.run_summary.RunSummary): every recorded
run's summary, and the summaries the verdict and the suite's ERROR row write, hold no other key.
A key added to a producer without its declaration makes this fail."""

import glob
import json
import os

from ftharness.scenarios.run_summary import DECLARED

DATA = os.path.join(os.path.dirname(__file__), "data")


def test_every_recorded_summary_holds_only_declared_keys():
    files = glob.glob(os.path.join(DATA, "*", "summary.json"))
    assert len(files) >= 4
    for path in files:
        extra = set(json.load(open(path))) - DECLARED
        assert not extra, (path, sorted(extra))


def test_the_verdict_and_the_error_row_write_only_declared_keys(tmp_path):
    from ftharness.harness.run.suite import run_one
    from ftharness.reports.judgement import rejudge

    for folder in sorted(glob.glob(os.path.join(DATA, "*", "history.jsonl"))):
        judged = rejudge(os.path.dirname(folder))
        assert not set(judged) - DECLARED, (folder, sorted(set(judged) - DECLARED))

    class Boom:
        def run_on(self, *a):
            raise RuntimeError("planted")

    import ftharness.harness.run.suite as suite
    from ftharness.harness.run.runner import RunOptions
    from ftharness.scenarios.schema import parse_scenario

    kept = suite.runtime_of
    suite.runtime_of = lambda s: Boom()
    try:
        row = run_one(parse_scenario({"name": "x"}), None, RunOptions(out_dir=str(tmp_path / "x")))
    finally:
        suite.runtime_of = kept
    assert row["verdict"] == "ERROR" and not set(row) - DECLARED, sorted(set(row) - DECLARED)
