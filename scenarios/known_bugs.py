"""The corpus of known Ray Train V2 fault-tolerance behaviours (scenarios/known_bugs.yaml).

Each entry names a scenario that reproduces it, a standalone reproduction
(scenarios/known/repro/<id>.py: Ray, torch and the standard library only), its
kind in upstream's own words (KINDS) with upstream's sentence quoted, the
releases it affects and the one that fixes it (read from the releases' own
code: `evidence`, VERSION:PATH:LINE), and what ftharness must show on each side.
An `unreported` entry has a draft upstream report in docs/known-bugs/reports/.
`ftharness list known --ray VERSION` prints the entries that affect a release;
scripts/gen_known_bugs.py renders docs/known-bugs.md from the corpus, its last
measured results (scenarios/known/measured.json) and the standalone scripts'
exit codes (scenarios/known/repro.json).
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
REPRO_RESULTS = os.path.join(HERE, "known", "repro.json")
#: the repository root the corpus's scenario paths are relative to
ROOT = os.path.dirname(HERE)
#: upstream's own word for an entry (a closed list): what a Ray maintainer following the link would call it
KINDS = ("fixed upstream", "open upstream bug", "unreported", "documented behaviour", "missing feature")
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
    upstream_quote: str = ""
    fixed_by: str = ""
    fixed_by_title: str = ""
    upstream_note: str = ""
    related: List[Dict[str, str]] = field(default_factory=list)
    repro: str = ""
    report: str = ""
    #: a regression: the first release of the good behaviour the entry broke (its scripts then expect
    #: "fixed" from here to first_affected); "" when the behaviour did not exist before first_affected
    unaffected_from: str = ""

    def affects(self, version: str) -> bool:
        v = releases.parse(version)
        return releases.parse(self.first_affected) <= v <= releases.parse(self.last_affected) \
            and (self.fixed is None or v < releases.parse(self.fixed))

    @property
    def scenario_path(self) -> str:
        return os.path.join(ROOT, self.scenario)

    @property
    def repro_path(self) -> str:
        return os.path.join(ROOT, self.repro)

    @property
    def report_path(self) -> str:
        return os.path.join(ROOT, self.report) if self.report else ""

    def expectation(self, version: str) -> Optional[str]:
        """What the standalone reproduction must see on `version`: affected, fixed, or None (before the entry)."""
        v = releases.parse(version)
        if v < releases.parse(self.first_affected):
            good = self.unaffected_from and v >= releases.parse(self.unaffected_from)
            return "fixed" if good else None
        return "affected" if self.affects(version) else "fixed"

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
            up = b["upstream"]
            bug = KnownBug(b["id"], b["kind"], b["scenario"], " ".join(str(b["summary"]).split()),
                           up["ref"], up["title"], first, last or first, b.get("fixed"),
                           b["status"], list(b.get("evidence") or []), b.get("on_affected", ""), b.get("on_fixed", ""),
                           up["quote"], up.get("fixed_by", ""), up.get("fixed_by_title", ""), up.get("note", ""),
                           [dict(r) for r in up.get("related") or []], b["repro"], b.get("report", ""),
                           str(b.get("unaffected_from") or ""))
        except (KeyError, TypeError) as e:
            raise ScenarioError(f"{where}: missing {e}") from None
        for v in (bug.first_affected, bug.last_affected, *([bug.fixed] if bug.fixed else []),
                  *([bug.unaffected_from] if bug.unaffected_from else [])):
            if v not in releases.ALL_RELEASES:
                raise ScenarioError(f"{where}: {v} is not a release of {releases.RANGE_TEXT}")
        if bug.unaffected_from and releases.parse(bug.unaffected_from) >= releases.parse(bug.first_affected):
            raise ScenarioError(f"{where}: unaffected_from {bug.unaffected_from} must come before the first "
                                f"affected release {bug.first_affected}")
        if bug.kind not in KINDS or bug.status not in STATUSES:
            raise ScenarioError(f"{where}: kind must be one of {KINDS}, status one of {STATUSES}")
        problem = _kind_problem(bug)
        if problem:
            raise ScenarioError(f"{where} ({bug.id}): {problem}")
        if not os.path.isfile(bug.scenario_path):
            raise ScenarioError(f"{where}: scenario {bug.scenario}: no such file")
        if not os.path.isfile(bug.repro_path):
            raise ScenarioError(f"{where}: repro {bug.repro}: no such file")
        out.append(bug)
    return out


def _kind_problem(bug: KnownBug) -> Optional[str]:
    """What the entry lacks for its kind (None: nothing)."""
    if not bug.upstream_quote.strip():
        return "upstream.quote is empty: quote upstream's sentence (issue, PR or doc)"
    if bug.kind == "fixed upstream" and not (bug.fixed and bug.fixed_by):
        return "a fixed upstream entry needs `fixed` and upstream.fixed_by (the fixing PR)"
    if bug.kind != "fixed upstream" and bug.fixed_by:
        return f"upstream.fixed_by belongs to fixed upstream entries, not to this {bug.kind} one"
    if bug.kind not in ("fixed upstream", "unreported") and bug.fixed:
        # an unreported entry may be fixed in code with no report or PR found (a silent fix)
        return f"this {bug.kind} entry names a fix release: only fixed upstream or unreported entries do"
    if bug.kind == "open upstream bug" and "#" not in bug.upstream_ref:
        return "an open upstream bug names its issue (upstream.ref owner/repo#N)"
    if bug.kind == "unreported":
        # (the report lives in the repository's docs/: an installed wheel has the corpus without it)
        if not bug.report or (os.path.isdir(os.path.join(ROOT, "docs")) and not os.path.isfile(bug.report_path)):
            return "an unreported entry needs its draft report (report: docs/known-bugs/reports/<id>.md)"
    elif bug.report:
        return f"only unreported entries carry a draft report, not a {bug.kind} one"
    return None


def rejected(path: str = CORPUS) -> List[Dict[str, str]]:
    with open(path) as f:
        return list((yaml.safe_load(f) or {}).get("rejected") or [])


def measured(path: str = MEASURED) -> Dict[str, Dict[str, Any]]:
    """bug id -> release -> {verdict, outcome, charged, seconds, command}: the last measured results."""
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


def repro_results(path: str = REPRO_RESULTS) -> Dict[str, Dict[str, Any]]:
    """bug id -> release -> {rc, expect, seconds, line, python}: the standalone scripts' last runs."""
    if not os.path.isfile(path):
        return {}
    with open(path) as f:
        return json.load(f)


def fix_text(b: KnownBug) -> str:
    if b.kind == "fixed upstream":
        return f"fixed in {b.fixed} by {b.fixed_by}"
    return {"open upstream bug": "reported, not fixed", "unreported": "draft report: " + b.report,
            "documented behaviour": "as upstream documents it, not fixed",
            "missing feature": "requested upstream, not built"}[b.kind] + (
                f" (fixed in {b.fixed}, no PR found)" if b.kind == "unreported" and b.fixed else "")


def _at(rel: str) -> str:
    """A corpus path as its reader can open it: as written where it resolves from here (a
    checkout), else the file the installed package holds (a wheel keeps scenarios/ inside it)."""
    if not rel.startswith("scenarios/") or os.path.exists(rel):
        return rel
    installed = os.path.join(os.path.dirname(os.path.abspath(__file__)), rel[len("scenarios/"):])
    return installed if os.path.exists(installed) else rel


def listing(version: Optional[str]) -> List[str]:
    """`ftharness list known --ray VERSION`: the entries that affect the release: kind, reference, quote."""
    version = version or releases.installed()
    if not version or version not in releases.ALL_RELEASES:
        raise ScenarioError(f"--ray: {version or 'none installed'} is not a supported release; allowed: "
                            f"{releases.ALL_RELEASES[0]} to {releases.ALL_RELEASES[-1]} ({releases.RANGE_TEXT})")
    bugs = [b for b in load() if b.affects(version)]
    lines = [f"known on Ray {version}: {len(bugs)} ({_at('scenarios/known_bugs.yaml')})"]
    for b in bugs:
        lines.append(f"  {b.id:<36} [{b.kind}] {fix_text(b)}")
        lines.append(f"  {'':<36} {b.summary}")
        lines.append(f"  {'':<36} upstream: {b.upstream_ref}: {b.upstream_title}")
        lines.append(f"  {'':<36} quote: \"{b.upstream_quote}\"")
        lines.append(f"  {'':<36} scenario: {_at(b.scenario)}; standalone: python {_at(b.repro)}")
    return lines
