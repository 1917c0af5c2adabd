"""The known-bugs corpus: it loads, every entry has upstream's kind and quote, every scenario
validates on the releases it names, `list known` answers per release with the kind and the quote,
and docs/known-bugs.md and the draft reports are what the generator writes today."""

import os
import subprocess
import sys

import pytest

from ftharness import releases
from ftharness.scenarios import known_bugs
from ftharness.scenarios.schema import load_scenario, release_problem

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_corpus_holds_at_least_ten_entries_each_with_its_evidence():
    bugs = known_bugs.load()
    assert len(bugs) >= 10 and len({b.id for b in bugs}) == len(bugs)
    for b in bugs:
        assert b.evidence and b.on_affected and b.upstream_ref, b.id
        assert b.fixed is None or releases.parse(b.last_affected) < releases.parse(b.fixed), b.id


def test_every_scenario_validates_on_its_affected_and_fixed_releases():
    for b in known_bugs.load():
        sc = load_scenario(b.scenario_path)
        for v in (b.last_affected, *([b.fixed] if b.fixed else [])):
            # elastic scenarios cannot run before 2.55: their entries start there
            assert release_problem(sc, v) is None, (b.id, v)


def test_open_entries_are_pinned_or_expected_failures():
    """An entry still present in the newest release must make its scenario say so (a pinned
    violation, the failed outcome, or the budget it is charged to), so the scenario's verdict
    changes the day Ray changes."""
    for b in known_bugs.load():
        if b.fixed is None and b.status == "confirmed":
            e = load_scenario(b.scenario_path).expect
            assert e.violations or e.outcome == "failed" or "budget_accounting" in e.properties, b.id


def test_every_entry_has_upstreams_kind_and_words():
    bugs = known_bugs.load()
    assert {b.kind for b in bugs} <= set(known_bugs.KINDS)
    for b in bugs:
        assert b.upstream_quote.strip() and b.upstream_title.strip(), b.id
        if b.kind == "fixed upstream":
            assert b.fixed and b.fixed_by.startswith("ray-project/ray#"), b.id
        if b.kind in ("open upstream bug", "missing feature"):
            assert "#" in b.upstream_ref, b.id
        if b.kind == "unreported":
            text = open(b.report_path).read()
            assert f"<!-- script: {b.repro} -->" in text and "### The code responsible" in text, b.id
    kinds = {b.id: b.kind for b in bugs}
    # the five the review (issue 47) re-read against upstream
    assert kinds["ray-data-epoch-replay"] == "missing feature"
    assert kinds["corrupted-checkpoint-restored"] in ("missing feature", "documented behaviour")
    assert kinds["snapshot-write-error-fatal"] == kinds["restart-loops-unbounded"] == "documented behaviour"
    assert kinds["bad-reclaim-charged-to-max-failures"] == "unreported"
    assert "#64360" not in {b.id: b for b in bugs}["bad-reclaim-charged-to-max-failures"].upstream_ref
    assert "#44687" not in {b.id: b for b in bugs}["ray-data-no-cpu-after-node-loss"].upstream_ref


def test_the_loader_refuses_a_kind_outside_the_closed_list(tmp_path):
    import yaml

    from ftharness.errors import ScenarioError

    data = yaml.safe_load(open(known_bugs.CORPUS))
    data["bugs"] = [dict(data["bugs"][0], kind="bug")]
    p = tmp_path / "k.yaml"
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="kind must be one of"):
        known_bugs.load(str(p))
    data["bugs"] = [dict(data["bugs"][0], kind="fixed upstream",
                         upstream=dict(data["bugs"][0]["upstream"], fixed_by=""))]
    p.write_text(yaml.safe_dump(data))
    with pytest.raises(ScenarioError, match="fixing PR"):
        known_bugs.load(str(p))


def test_affects_uses_the_patch_releases():
    bug = {b.id: b for b in known_bugs.load()}["preemption-charged-to-max-failures"]
    assert bug.affects("2.57.1") and bug.affects("2.51.0")
    assert not bug.affects("2.58.0") and not bug.affects("2.60.0")


def test_list_known_prints_the_bugs_of_a_release():
    lines = known_bugs.listing("2.58.0")
    assert lines[0].startswith("known on Ray 2.58.0:")
    text = "\n".join(lines)
    assert "preemption-charged-to-max-failures" not in text and "corrupted-checkpoint-restored" in text
    assert "[documented behaviour]" in text and 'quote: "A reference to data persisted as a directory' in text
    assert "preemption-charged-to-max-failures" in "\n".join(known_bugs.listing("2.57.0"))


def test_list_known_refuses_an_unsupported_release_in_one_line():
    r = subprocess.run([sys.executable, "-P", "-m", "ftharness", "list", "known", "--ray", "2.49.0"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and r.stderr.strip().count("\n") == 0
    assert r.stderr.startswith("ftharness: error: --ray: 2.49.0 is not a supported release")


def test_the_known_bugs_page_is_up_to_date():
    r = subprocess.run([sys.executable, "-P", os.path.join(ROOT, "scripts", "gen_known_bugs.py"), "--check"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
