"""The corpus of known Ray Train V2 fault-tolerance bugs (scenarios/known_bugs.yaml).

Each entry names a scenario that reproduces it, the upstream issue or PR, the
releases it affects and the one that fixes it (read from the releases' own
code: `evidence`, VERSION:PATH:LINE), and what ftharness must show on each side.
`ftharness list known --ray VERSION` prints the entries that affect a release;
scripts/gen_known_bugs.py renders docs/known-bugs.md from the corpus and its
last measured results (scenarios/known/measured.json).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

import yaml

from ftharness import releases
from ftharness.errors import ScenarioError

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "known_bugs.yaml")
MEASURED = os.path.join(HERE, "known", "measured.json")
#: the repository root the corpus's scenario paths are relative to
ROOT = os.path.dirname(HERE)
KINDS = ("bug", "behaviour", "behaviour change")
STATUSES = ("confirmed", "candidate")


@dataclass(frozen=True)
class KnownBug:
    id: str
    kind: str
    scenario: str
    summary: str
    upstream_ref: str
    upstream_title: str
    first_affected: str
    last_affected: str
    fixed: Optional[str]
    status: str
    evidence: List[str] = field(default_factory=list)
    on_affected: str = ""
    on_fixed: str = ""

    def affects(self, version: str) -> bool:
        v = releases.parse(version)
        return releases.parse(self.first_affected) <= v <= releases.parse(self.last_affected) \
            and (self.fixed is None or v < releases.parse(self.fixed))

    @property
    def scenario_path(self) -> str:
        return os.path.join(ROOT, self.scenario)

    @property
    def affected_text(self) -> str:
        return f"{self.first_affected} to {self.last_affected}"


def load(path: str = CORPUS) -> List[KnownBug]:
    """The corpus, checked: every release named is a supported one, every scenario exists."""
    with open(path) as f:
        data = yaml.safe_load(f) or {}
    out = []
    for i, b in enumerate(data.get("bugs") or []):
        where = f"known_bugs.yaml bugs[{i}]"
        try:
            first, _, last = str(b["affected"]).partition("..")
            bug = KnownBug(b["id"], b["kind"], b["scenario"], " ".join(str(b["summary"]).split()),
                           b["upstream"]["ref"], b["upstream"]["title"], first, last or first, b.get("fixed"),
                           b["status"], list(b.get("evidence") or []), b.get("on_affected", ""), b.get("on_fixed", ""))
        except (KeyError, TypeError) as e:
            raise ScenarioError(f"{where}: missing {e}") from None
        for v in (bug.first_affected, bug.last_affected, *([bug.fixed] if bug.fixed else [])):
            if v not in releases.ALL_RELEASES:
                raise ScenarioError(f"{where}: {v} is not a release of {releases.RANGE_TEXT}")
        if bug.kind not in KINDS or bug.status not in STATUSES:
            raise ScenarioError(f"{where}: kind must be one of {KINDS}, status one of {STATUSES}")
        if not os.path.isfile(bug.scenario_path):
            raise ScenarioError(f"{where}: scenario {bug.scenario}: no such file")
        out.append(bug)
    return out


def rejected(path: str = CORPUS) -> List[Dict[str, str]]:
    with open(path) as f:
        return list((yaml.safe_load(f) or {}).get("rejected") or [])


def measured(path: str = MEASURED) -> Dict[str, Dict[str, Any]]:
    """bug id -> release -> {verdict, outcome, charged, seconds, command}: the last measured results."""
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


def listing(version: Optional[str]) -> List[str]:
    """`ftharness list known --ray VERSION`: the bugs that affect the release, one line each."""
    version = version or releases.installed()
    if not version or version not in releases.ALL_RELEASES:
        raise ScenarioError(f"--ray: {version or 'none installed'} is not a supported release; allowed: "
                            f"{releases.ALL_RELEASES[0]} to {releases.ALL_RELEASES[-1]} ({releases.RANGE_TEXT})")
    bugs = [b for b in load() if b.affects(version)]
    lines = [f"known on Ray {version}: {len(bugs)} (scenarios/known_bugs.yaml)"]
    for b in bugs:
        fix = f"fixed in {b.fixed}" if b.fixed else "not fixed"
        lines.append(f"  {b.id:<36} {fix:<16} {b.upstream_ref:<24} {b.scenario}")
        lines.append(f"  {'':<36} {b.summary}")
    return lines
