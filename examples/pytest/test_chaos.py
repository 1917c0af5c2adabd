"""Chaos tests with ftharness's pytest plugin (docs/pytest.md): each runs a scenario on the
session's shared embedded cluster and asserts on its verdict. Run with
`pytest -W error examples/pytest` (tests/test_docs.py does, in the real lane)."""


def test_training_survives_a_killed_worker(ftharness_run):
    s = ftharness_run({"name": "kill-rank-1",
                       "workload": {"steps": 8, "checkpoint_every": 2},
                       "failure_config": {"max_failures": 1},
                       "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"step": 4}}]})
    assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]


def test_a_catalog_scenario_with_overrides(ftharness_run):
    import ftharness.scenarios

    catalog = ftharness.scenarios.__path__[0] + "/catalog/kill-worker.yaml"
    s = ftharness_run(catalog, workload={"steps": 10})    # nested keys merge: the rest of workload stays
    assert s["verdict"] == "PASS", s["mismatches"] + s["inconclusive"]

