"""A regression in the known-bug corpus (`unaffected_from`, issue 47): its standalone script expects
the good behaviour from the release that had it until the change, and nothing before; an
`unaffected_from` that is no release, or not before the first affected one, is refused at load.
Pure: reads scenarios/known_bugs.yaml, runs nothing."""

import pytest
import yaml

from ftharness.errors import ScenarioError
from ftharness.scenarios import known_bugs


def test_a_regression_expects_the_good_behaviour_before_it():
    bug = {b.id: b for b in known_bugs.load()}["collective-timeout-minus-one"]
    assert bug.unaffected_from == "2.52.0"
    assert [bug.expectation(v) for v in ("2.51.2", "2.52.0", "2.55.1", "2.56.0", "2.60.0")] == \
        [None, "fixed", "fixed", "affected", "affected"]
    other = {b.id: b for b in known_bugs.load()}["bad-reclaim-charged-to-max-failures"]
    assert other.unaffected_from == "" and other.expectation("2.57.1") is None


@pytest.mark.parametrize("value, words", [("2.56.0", "must come before the first affected release 2.56.0"),
                                          ("2.49.0", "2.49.0 is not a release")])
def test_a_bad_unaffected_from_is_refused(tmp_path, value, words):
    data = yaml.safe_load(open(known_bugs.CORPUS))
    entry = next(b for b in data["bugs"] if b["id"] == "collective-timeout-minus-one")
    entry["unaffected_from"] = value
    path = tmp_path / "known_bugs.yaml"
    path.write_text(yaml.safe_dump({"bugs": [entry]}))
    with pytest.raises(ScenarioError, match=words):
        known_bugs.load(str(path))
