"""`ftharness explore`: Hypothesis searches fault schedules on a base scenario, each example
a real run, and shrinks what fails to the smallest schedule that still fails.

Hypothesis's own engine drives the search: a `@given` test over the schedules of
ftharness.scenarios.explore_strategies whose body runs one example (through an
`Executor`: the real one runs it as `suite` does, on one cluster kept between examples,
healed in between) and raises a `Finding` of the example's signature when it failed.
`report_multiple_bugs` keeps one minimal example per signature, `target()` steers toward
what the failure-policy model marks as budget edges and toward (kind, phase) pairs not run
yet, and the example database lives in OUT/.hypothesis, so a second explore into the same
folder replays what failed first and goes on from there.

The budget bounds search and shrinking together: once it is spent an example is not run
(it passes at once, which ends shrinking with the smallest failure found so far), and time
for one confirming repeat per finding is held back. A finding is reported only after that
repeat: failing again with the same signature it is `confirmed`, else `flaky`. Examples
run with identical scenarios are run once (a cache), so Hypothesis's replays cost nothing.
"""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Dict, List, Optional, Protocol

import yaml

from ftharness.errors import STOP_REQUESTED
from ftharness.inputs import read_bounded
from ftharness.outputs import OutputRefused, make_folder, write_file
from ftharness.safety import redact, redact_secrets
from ftharness.scenarios import explore_strategies as es
from ftharness.scenarios.schema import Scenario, parse_scenario
from ftharness.harness.run.explore_ledger import Ledger, covered, parts
from ftharness.harness.run.explore_spending import spending

EXPLORE_FILE, PAGE_FILE = "explore.json", "explore.html"
DB_DIR = ".hypothesis"
#: an example is never quicker than this; it sizes Hypothesis's max_examples from the budget
MIN_EXAMPLE_S = 10.0
#: share of the budget left when a round finds its first gap that the round may spend shrinking
SHRINK_SHARE = 0.5
#: rounds at most (each finds at least one new signature, or the exploration ends)
MAX_ROUNDS = 50


class Executor(Protocol):
    """Runs one example scenario into `folder` and returns its summary (summary.json's content)."""

    def run(self, scenario: Scenario, folder: str) -> Dict[str, Any]: ...

    def rejudge(self, folder: str, outcome: str) -> Dict[str, Any]:
        """The verdict of the run in `folder` judged again from its history, expecting `outcome`."""


class Finding(Exception):
    """An example failed; one subclass per signature, so Hypothesis shrinks each gap apart."""

    record: "Example"


_FINDING_TYPES: Dict[str, type] = {}


def finding_type(signature: str) -> type:
    if signature not in _FINDING_TYPES:
        name = "Finding_" + re.sub(r"\W", "_", signature)[:80]
        _FINDING_TYPES[signature] = type(name, (Finding,), {})
    return _FINDING_TYPES[signature]


@dataclass
class Example:
    """One example run: its schedule, what it showed, and its time."""

    index: int
    name: str
    faults: List[Dict[str, Any]]
    phases: List[str]
    status: str                      # PASS | FAIL | INCONCLUSIVE | ERROR
    signature: str = ""
    verdict: Optional[str] = None
    outcome: Optional[str] = None
    error_type: Optional[str] = None
    expected_outcomes: List[str] = field(default_factory=list)
    reasons: List[str] = field(default_factory=list)
    landed: List[bool] = field(default_factory=list)
    folder: str = ""
    wall_s: float = 0.0
    at_s: float = 0.0                # seconds from the start of this explore to its end
    purpose: str = "search"          # search | confirm
    session: int = 1
    workload: Dict[str, Any] = field(default_factory=dict)   # the reference job's drawn settings

    @property
    def gap(self) -> str:
        """The signature without the workload it was found on: one gap whatever the workload."""
        return self.signature[:len(self.signature) - len(es.workload_text(self.workload))]


@dataclass
class FoundGap:
    """A finding: its signature, the smallest example, its replayable scenario and the repeat."""

    signature: str
    example: Example
    scenario_file: str
    repeat: Optional[Example]
    status: str                      # confirmed | flaky | unconfirmed (no time to repeat)
    first_found_s: float
    examples_before: int


class StopExploring(BaseException):
    """The cluster cannot run another example (it could not be healed, or running one raised):
    the search ends there. A BaseException, so Hypothesis does not take it for a failing
    example and shrink it: each shrink step would meet the same broken cluster."""


@dataclass
class Exploration:
    base: str
    seed: int
    budget_s: float
    max_faults: int
    kinds: List[str]
    left_out: Dict[str, str]
    examples: List[Example]
    findings: List[FoundGap]
    wall_s: float
    out: str
    session: int = 1
    earlier: List[Dict[str, Any]] = field(default_factory=list)   # examples of earlier sessions
    stopped: Optional[str] = None    # why the search ended before its budget (StopExploring)
    first_pass: int = 0              # examples of the coverage pass (every kind once) before the search
    spending: Dict[str, Any] = field(default_factory=dict)   # Explorer.spending: examples per gap, skips

    def counts(self) -> Dict[str, int]:
        runs = [e for e in self.examples if e.purpose == "search"]
        return {s: sum(1 for e in runs if e.status == s) for s in ("PASS", "FAIL", "INCONCLUSIVE", "ERROR")}

    def exit_code(self) -> int:
        """1 a failure was found, 3 only inconclusive (or nothing run), 0 all passed."""
        c = self.counts()
        if self.findings or c["FAIL"]:
            return 1
        if c["ERROR"]:
            return 4
        if self.stopped:
            return 3
        if c["INCONCLUSIVE"] or not any(c.values()):
            return 3
        return 0

    def coverage(self) -> Dict[str, Dict[str, List[int]]]:
        """kind -> phase -> [faults run, faults landed], over this session's examples."""
        table: Dict[str, Dict[str, List[int]]] = {k: {} for k in self.kinds}
        for e in self.examples:
            for f, phase, landed in zip(e.faults, e.phases, e.landed + [False] * len(e.faults)):
                cell = table.setdefault(f["kind"], {}).setdefault(phase, [0, 0])
                cell[0] += 1
                cell[1] += int(bool(landed))
        return table

    def to_dict(self) -> Dict[str, Any]:
        return {**{k: v for k, v in asdict(self).items() if k not in ("examples", "findings", "earlier")},
                "counts": self.counts(), "exit_code": self.exit_code(), "coverage": self.coverage(),
                "examples": self.earlier + [asdict(e) for e in self.examples],
                "findings": [asdict(f) for f in self.findings]}


class Explorer:
    """One exploration of `base` into `out`, within `budget_s`, seeded by `seed`."""

    def __init__(self, base: Scenario, executor: Executor, out: str, budget_s: float, seed: int = 0,
                 max_faults: int = 2, clock: Callable[[], float] = time.monotonic,
                 say: Callable[[str], None] = lambda line: print(line, file=sys.stderr, flush=True),
                 ray_version: Optional[str] = None, cover_first: bool = True,
                 earlier: Optional[tuple] = None):
        self.base, self.executor, self.out = base, executor, os.path.abspath(out)
        self.budget_s, self.seed, self.max_faults = float(budget_s), int(seed), int(max_faults)
        self.clock, self.say, self.ray_version = clock, say, ray_version
        self.support = es.supported(base, ray_version)
        self.every = base.workload.checkpoint_every if base.workload.kind == "reference" else 1
        self.fc = base.failure_config.model_dump()
        self.examples: List[Example] = []
        self.cache: Dict[str, Example] = {}
        self.first_found: Dict[str, tuple] = {}   # signature -> (seconds, examples run before)
        self.covered: Dict[tuple, int] = {}
        # what earlier explores into OUT left (harness/run/explore_state.py: checked, data only);
        # `earlier`: the same, read by the command before its cluster started
        self.earlier, self.earlier_findings = earlier if earlier is not None else self._earlier()
        for e in self.earlier:      # a second explore into OUT runs no scenario the first one ran
            if e.get("purpose") == "search" and e.get("name"):
                self.cache[e["name"]] = Example(**{k: v for k, v in e.items() if k in Example.__dataclass_fields__})
        self.session = 1 + max((e.get("session", 1) for e in self.earlier), default=0)
        self.t0 = 0.0
        self.shrink_until: Optional[float] = None   # when this round stops shrinking
        self.known: set = set()                     # gaps (Example.gap) earlier rounds found
        self.stopped: Optional[str] = None          # set by StopExploring: no more examples
        self.cover_first = cover_first
        self.first_pass = 0                         # examples the coverage pass ran
        self.ledger = Ledger()                      # confirmed gaps, and the candidates skipped for them
        self.gaps: Dict[str, FoundGap] = {}         # signature -> its finding, once repeated
        self._courses: Dict[str, "es.Course"] = {}

    # -- the search
    def explore(self) -> Exploration:
        """Rounds of Hypothesis search until the budget is spent: each round ends when the gaps it
        found are shrunk; the next one (seed + 1) looks for other gaps, the known ones passing."""
        import hypothesis.internal.conjecture.engine as engine

        make_folder(self.out, DB_DIR, 0o700)   # the one writer: no symlink followed out of OUT
        self.t0 = self.clock()
        found: Dict[str, Example] = self.cover_kinds() if self.cover_first else {}
        kept = engine.MAX_SHRINKING_SECONDS   # Hypothesis's own 300 s: the budget bounds shrinking here
        engine.MAX_SHRINKING_SECONDS = max(kept, int(self.budget_s) + 600)
        try:
            for round_ in range(0 if self.stopped else MAX_ROUNDS):
                new = self.search_round(round_, {ex.gap for ex in found.values()})
                for sig, ex in new.items():
                    found.setdefault(sig, ex)
                for ex in distinct(new).values():   # repeated now: a confirmed gap gates the next rounds
                    self.settle(ex)
                if not new or self.stopped or self.remaining_s() <= self.reserve_s():
                    break
        finally:
            engine.MAX_SHRINKING_SECONDS = kept
        findings = [self.settle(ex) for ex in distinct(found).values()]
        result = Exploration(self.base.name, self.seed, self.budget_s, self.max_faults, list(self.support.kinds),
                             dict(self.support.left_out), self.examples, findings,
                             round(self.clock() - self.t0, 3), self.out, self.session, self.earlier, self.stopped,
                             self.first_pass, self.spending(findings))
        self.write(result)
        return result

    def cover_kinds(self) -> Dict[str, Example]:
        """Before the search: every supported kind once in its simplest schedule
        (`es.first_schedules`), so that no kind waits on Hypothesis's draw. What fails here is
        at most two faults already, and the search looks for other gaps. One that a single fault
        token shows is repeated at once, so that the rest of the pass skips the kinds that could
        only show it again (`Ledger`); the others are confirmed with the search's findings."""
        found: Dict[str, Example] = {}
        for faults, workload in es.first_schedules(self.base, self.support):
            if self.stopped or self.remaining_s() <= self.reserve_s():
                break
            expected = es.expectation(self.fc, faults, self.ray_version)
            if self.gate(faults, expected, workload, "coverage pass"):
                continue
            ran = len(self.examples)
            try:
                example = self.execute(faults, expected, workload, "coverage")
            except Exception as e:  # noqa: BLE001 - the cluster's or ftharness's, never the schedule's
                if STOP_REQUESTED.is_set():
                    raise KeyboardInterrupt("signal") from None
                self.stopped = f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[0][:240]}"
                self.say(f"explore: stopped: {self.stopped}")
                break
            if example is None:
                break
            self.first_pass += len(self.examples) > ran   # run now (an earlier session's is no example of this one)
            if example.status == "FAIL" and example.signature:
                new = (example.signature not in found and example.signature not in self.gaps
                       and not self.ledger.known(example.gap))   # (known gaps, on another workload: learned)
                found.setdefault(example.signature, example)
                if new and len(self.course_of(example.faults, example.workload).tokens) == 1:
                    self.settle(example)
        self.shrink_until = None
        return found

    def search_round(self, round_: int, known: set) -> Dict[str, Example]:
        """One Hypothesis run over the schedules; returns the smallest example of each new signature."""
        from hypothesis import HealthCheck, Phase, Verbosity, example, given, reject, seed, settings, target
        from hypothesis.database import DirectoryBasedExampleDatabase
        from hypothesis.errors import Unsatisfiable

        strategy = es.schedules(self.base, self.support, self.max_faults)
        workloads = es.workloads(self.base)
        self.shrink_until = None
        self.known = known

        @settings(max_examples=max(1, min(5000, int(self.budget_s / MIN_EXAMPLE_S))), deadline=None,
                  database=DirectoryBasedExampleDatabase(os.path.join(self.out, DB_DIR)),
                  phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target, Phase.shrink],
                  report_multiple_bugs=True, suppress_health_check=list(HealthCheck), derandomize=False,
                  print_blob=False, verbosity=Verbosity.quiet)
        @given(faults=strategy, workload=workloads)
        @seed(self.seed + round_)   # under @given: above it, @seed would turn the example database off
        def explore_schedules(faults, workload):
            if self.stopped or self.remaining_s() <= self.reserve_s():
                return      # the budget is spent: Hypothesis's remaining examples pass at once
            expected = es.expectation(self.fc, faults, self.ray_version)
            if self.gate(faults, expected, workload, "search"):
                reject()    # not run: it could only show a confirmed gap again; Hypothesis draws another
            target(es.guide(expected, faults, self.covered, self.every), label="model: budget edges, new kind x phase")
            try:
                example = self.execute(faults, expected, workload, "shrink" if hypothesis_phase() == "shrink" else "search")
            except Exception as e:  # noqa: BLE001 - the cluster's or ftharness's, never the schedule's
                if STOP_REQUESTED.is_set():     # an interrupt that came out of Ray's call as an error
                    raise KeyboardInterrupt("signal") from None
                first = (str(e).strip().splitlines() or [""])[0][:240]
                raise StopExploring(f"{type(e).__name__}: {first}") from e
            if example is not None and example.status == "FAIL" and not covered(example.gap, known):
                # one kind of failure per gap whatever the workload, so that shrinking takes a
                # drawn workload back to the base's when the gap shows there too
                err = finding_type(example.gap)(f"{example.signature} ({example.name})")
                err.record = example
                raise err

        if round_ == 0:   # what earlier explores into OUT found comes first (their records: no rerun)
            for faults, workload in self.earlier_findings:
                explore_schedules = example(faults=faults, workload=workload)(explore_schedules)
        minimal: Dict[str, Example] = {}
        try:
            explore_schedules()
        except Unsatisfiable:   # every candidate of the round could only show a confirmed gap again
            return minimal
        except StopExploring as e:
            self.stopped = str(e)
            self.say(f"explore: stopped: {self.stopped}")
            for ex in self.examples:   # what this round found before the stop: reported, not shrunk
                if ex.status == "FAIL" and ex.purpose == "search" and not covered(ex.gap, known):
                    kept = minimal.get(ex.signature)
                    if kept is None or len(ex.faults) < len(kept.faults):
                        minimal[ex.signature] = ex
        except Exception as e:  # noqa: BLE001 - a Finding, or a group of them; anything else is ours
            found = [x for x in getattr(e, "exceptions", [e]) if isinstance(x, Finding)]
            if not found:
                raise
            for x in found:
                minimal.setdefault(x.record.signature, x.record)
        return minimal

    def _searched(self) -> int:
        return sum(1 for e in self.examples if e.purpose == "search")

    def remaining_s(self) -> float:
        return self.budget_s - (self.clock() - self.t0)

    def reserve_s(self) -> float:
        """Time held back for one confirming repeat of every finding so far."""
        runs = [e.wall_s for e in self.examples if e.purpose == "search"]
        mean = sum(runs) / len(runs) if runs else 0.0
        return mean * sum(1 for sig in self.first_found if sig not in self.gaps)

    def execute(self, faults: List[Dict[str, Any]], expected: "es.Expected",
                workload: Optional[Dict[str, Any]] = None, label: str = "search") -> Optional[Example]:
        """Run one example (once per distinct scenario); None once the budget is spent. `label`:
        the pass it is run for (coverage, search, shrink), said on its line."""
        data = es.example_scenario(self.base, faults, expected, self.ray_version, workload)
        if data["name"] in self.cache:
            known = self.cache[data["name"]]
            if known.status == "FAIL" and known.signature not in self.first_found:   # an earlier session's
                self.first_found[known.signature] = (round(self.clock() - self.t0, 3), self._searched())
            return known
        if self.remaining_s() <= self.reserve_s():
            return None
        if self.shrink_until is not None and self.clock() > self.shrink_until:
            return None       # this round's share of shrinking is spent: the rest goes to new search
        example = self.run_example(data, expected, "search", workload, label)
        self.cache[data["name"]] = example
        if example.status == "FAIL" and not covered(example.gap, self.known) and self.shrink_until is None:
            self.shrink_until = self.clock() + SHRINK_SHARE * self.remaining_s()
        return example

    def run_example(self, data: Dict[str, Any], expected: "es.Expected", purpose: str,
                    workload: Optional[Dict[str, Any]] = None, label: Optional[str] = None) -> Example:
        scenario = parse_scenario(data, source="explore", base_dir=self.base.base_dir)
        index = len(self.earlier) + len(self.examples) + 1
        folder = os.path.join(self.out, "examples", f"{index:04d}-{data['name']}" + ("-repeat" if purpose == "confirm" else ""))
        faults = data["faults"]
        phases = [es.phase_of(f, faults[i - 1] if i else None, self.every) for i, f in enumerate(faults)]
        self.say(f"explore [{index}] {label or purpose}: " + ", ".join(f"{f['kind']}@{p}" for f, p in zip(faults, phases))
                 + es.workload_text(workload or {}) + f"  ({self.remaining_s():.0f}s left)")
        make_folder(self.out, "examples")
        taken, n = folder, 1
        while os.path.lexists(folder):   # an earlier session's that was never recorded (or something planted)
            n += 1
            folder = f"{taken}-{n}"
            if n > 100:
                raise OutputRefused(f"{taken}: already exists; explore writes each example into a new folder")
        t = self.clock()
        summary = self.executor.run(scenario, folder)
        summary = self._allowed_outcome(summary, expected, folder)
        example = Example(index=index, name=data["name"], faults=faults, phases=phases,
                          status=status_of(summary), signature=es.signature(summary, workload),
                          verdict=summary.get("verdict"), outcome=summary.get("outcome"),
                          error_type=summary.get("error_type"), expected_outcomes=list(expected.outcomes),
                          reasons=[str(m) for m in (summary.get("mismatches") or []) + (summary.get("inconclusive") or [])]
                          + [f"{u.get('property')} failed (not asked): {u.get('explanation')}"
                             for u in summary.get("unasked_failures") or [] if isinstance(u, dict)],
                          landed=[bool(f.get("landed")) for f in summary.get("faults") or []],
                          folder=folder, wall_s=round(self.clock() - t, 3), at_s=round(self.clock() - self.t0, 3),
                          purpose=purpose, session=self.session, workload=dict(workload or {}))
        if example.status != "FAIL":
            example.signature = ""
        elif not example.signature:
            example.signature = "verdict:FAIL"
        self.examples.append(example)
        if purpose == "search" and self.ledger.known(example.gap):
            self.ledger.learn(example, self.course_of(example.faults, example.workload))
        for f, p, landed in zip(faults, phases, example.landed):
            if landed:
                self.covered[(f["kind"], p)] = self.covered.get((f["kind"], p), 0) + 1
        if example.status == "FAIL" and example.signature not in self.first_found and purpose == "search":
            self.first_found[example.signature] = (example.at_s, self._searched())
        self.say(f"  {example.status} {example.name}: {example.outcome} ({example.error_type or 'no error'})"
                 + (f"  finding: {example.signature}" if example.signature else "") + f"  {example.wall_s:.0f}s")
        return example

    def _allowed_outcome(self, summary: Dict[str, Any], expected: "es.Expected", folder: str) -> Dict[str, Any]:
        """The outcome against the model: a run that failed raising what no allowed course raises
        fails (with complete evidence); a schedule whose faults may or may not fail the run
        allows both outcomes, and a run that ended in the other allowed one is judged again (from
        its history) expecting that one."""
        raised = summary.get("error_type")
        if (summary.get("outcome") == "failed" and expected.errors and raised not in expected.errors
                and summary.get("verdict") in ("PASS", "FAIL")):
            why = f"outcome failed raising {raised} (the model allows {', '.join(expected.errors)})"
            return dict(summary, verdict="FAIL", mismatches=list(summary.get("mismatches") or []) + [why])
        if (summary.get("verdict") != "FAIL" or summary.get("outcome") not in expected.outcomes
                or summary.get("outcome") == expected.outcomes[0]):
            return summary
        judged = self.executor.rejudge(folder, summary["outcome"])
        merged = dict(summary, **{k: judged[k] for k in ("verdict", "matches_expectation", "mismatches", "inconclusive",
                                                          "properties", "expected_properties", "unasked_failures")
                                  if k in judged})
        write_file(self.out, os.path.join(os.path.relpath(folder, self.out), "summary.json"),
                   json.dumps(redact(merged), indent=2, default=str), overwrite=True)
        return merged

    # -- the budget: what a candidate can show, before it runs
    def course_of(self, faults: List[Dict[str, Any]], workload: Optional[Dict[str, Any]]) -> "es.Course":
        from ftharness.scenarios.verdict import applicable_properties as judged

        key = json.dumps([faults, workload or {}], sort_keys=True, default=str)
        if key not in self._courses:
            expected = es.expectation(self.fc, faults, self.ray_version)
            self._courses[key] = es.course(self.base, faults, expected, workload, self.ray_version, judged)
        return self._courses[key]

    def gate(self, faults: List[Dict[str, Any]], expected: "es.Expected", workload: Optional[Dict[str, Any]],
             stage: str) -> bool:
        """True when the candidate is not to run: it could only show a confirmed gap again
        (`Ledger.redundant`); the skip is recorded once and said. A scenario run before (the
        cache) costs nothing and is never skipped."""
        if not self.ledger.confirmed:
            return False
        from ftharness.errors import ScenarioError

        data = es.example_scenario(self.base, faults, expected, self.ray_version, workload)
        if data["name"] in self.cache:
            return False
        try:
            course = self.course_of(faults, workload)
        except ScenarioError:
            return False      # what the run would refuse is the run's to say
        hit = self.ledger.redundant(course, workload)
        if hit is None:
            return False
        sig, why = hit
        if self.ledger.skip(data["name"], data["faults"], workload, sig, why, course.by, stage,
                            self.clock() - self.t0):
            self.say(f"explore: skipped ({stage}, {course.by}): "
                     + ", ".join(f"{f['kind']}@{es.phase_of(f, data['faults'][i - 1] if i else None, self.every)}"
                                 for i, f in enumerate(data["faults"]))
                     + es.workload_text(workload or {}) + f": could only show {sig} again")
        return True

    def settle(self, example: Example) -> FoundGap:
        """The finding of `example`'s signature, repeated once (`confirm`) the first time; once
        confirmed, the examples that showed it tell the ledger which candidates to skip."""
        sig = example.signature
        if sig not in self.gaps:
            self.gaps[sig] = gap = self.confirm(example)
            if gap.status == "confirmed" and not self.ledger.known(example.gap):
                for p in parts(example.gap):
                    self.ledger.confirmed.setdefault(p, round(self.clock() - self.t0, 3))
                for ex in [e for e in self.examples if e.purpose == "search" and self.ledger.known(e.gap)]:
                    self.ledger.learn(ex, self.course_of(ex.faults, ex.workload))
        return self.gaps[sig]

    def spending(self, findings: List[FoundGap]) -> Dict[str, Any]:
        """Where this session's budget went (explore_spending.spending)."""
        return spending(self.examples, findings, self.ledger, self.first_found, self.clock() - self.t0,
                        self.course_of)

    # -- after the search
    def confirm(self, example: Example) -> FoundGap:
        """The smallest example of a signature, repeated once; written as a replayable scenario."""
        faults = example.faults
        expected = es.expectation(self.fc, faults, self.ray_version)
        data = es.example_scenario(self.base, faults, expected, self.ray_version, example.workload)
        if self.stopped:   # the cluster cannot run the repeat: the finding stands unconfirmed
            repeat, status = None, "unconfirmed"
        else:
            repeat = self.run_example(data, expected, "confirm", example.workload)
            status = "confirmed" if (repeat.status == "FAIL" and repeat.signature == example.signature) else "flaky"
        first_s, before = self.first_found.get(example.signature, (example.at_s, example.index))
        path = self.write_finding(data, example, status)
        return FoundGap(example.signature, example, path, repeat, status, first_s, before)

    def write_finding(self, data: Dict[str, Any], example: Example, status: str) -> str:
        folder = os.path.join(self.out, "findings")
        slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", example.signature)[:60].strip("-") or "finding"
        data = dict(data, name=f"finding-{slug}-{example.name.split('-')[-1]}"[:100],
                    description=f"found by ftharness explore from {self.base.name} (seed {self.seed}); {status}: "
                                f"{example.signature}")
        path = os.path.join(folder, f"{data['name']}.yaml")
        # the one writer: no symlink followed, secrets redacted (the base's storage credentials,
        # keys named like secrets in train_loop_config): a replay takes them from the environment
        text = (f"# {status} finding of ftharness explore: {example.signature}\n"
                f"# replay: ftharness run {path}\n" + yaml.safe_dump(redact_secrets(data), sort_keys=False))
        write_file(self.out, os.path.join("findings", os.path.basename(path)), text, overwrite=True, secrets=True)
        self._copy_modules(folder)
        return path

    def _copy_modules(self, folder: str) -> None:
        """What the base ships beside the finding, laid out as the base's folder (its modules and
        packages, its `working_dir`, its `workload.files`), so `ftharness run` of the finding finds
        them there: copied by the bounded copy (usercode.ship) into a temp folder, then each file
        through the one reader and the one writer; one a finding before wrote is kept."""
        import shutil
        import tempfile

        from ftharness.errors import ScenarioError
        from ftharness.harness.run.usercode import MAX_CODE_BYTES, ship

        if self.base.workload.kind == "reference" or not self.base.base_dir:
            return
        tmp = tempfile.mkdtemp(prefix="ftharness-finding-")
        try:
            staged = os.path.join(tmp, "code")
            ship(self.base, staged, replay=True)
            for here, _dirs, names in os.walk(staged):
                for name in names:
                    rel = os.path.relpath(os.path.join(here, name), staged)
                    if not os.path.lexists(os.path.join(folder, rel)):
                        raw = read_bounded(os.path.join(here, name), MAX_CODE_BYTES)   # the one reader
                        write_file(self.out, os.path.relpath(os.path.join(folder, rel), self.out), raw)
        except (ScenarioError, OutputRefused) as e:   # the finding stands; its replay lacks the files
            self.say(f"ftharness: warning: {os.path.relpath(folder, self.out)}: the job's code and files not "
                     f"copied beside the finding ({e})")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def _earlier(self):
        """(the examples, the smallest failing schedules) of earlier explores into OUT, each value
        one the strategies could have drawn for this base (explore_state.load_state; a file that
        holds anything else is refused in one line, StateRefused, exit 2)."""
        from ftharness.harness.run.explore_state import load_state

        return load_state(self.out, self.base, self.support, self.ray_version)

    def write(self, result: Exploration) -> None:
        """explore.json and explore.html (ftharness.reports.explore)."""
        from ftharness.reports.explore import write_explore_page

        data = redact_secrets(json.loads(json.dumps(result.to_dict(), default=str)))
        # the one writer: replaces an earlier session's explore.json (this exploration continues it)
        write_file(self.out, EXPLORE_FILE, json.dumps(data, indent=2), overwrite=True)
        try:
            write_explore_page(data, os.path.join(self.out, PAGE_FILE))
        except Exception as e:  # noqa: BLE001 - the findings are decided; a page that fails is one warning
            self.say(f"ftharness: warning: explore.html not written ({type(e).__name__}: {e})")


def hypothesis_phase() -> Optional[str]:
    """The phase Hypothesis runs the current example in ("generate", "shrink", ...), read from its
    runner (`_current_phase`, an internal that its own observability reads); None where it is not
    found (another Hypothesis, or no search): the line then says `search`."""
    frame = sys._getframe(1)
    while frame is not None:
        phase = getattr(getattr(frame.f_locals.get("self"), "_runner", None), "_current_phase", None)
        if isinstance(phase, str):
            return phase
        frame = frame.f_back
    return None


def distinct(found: Dict[str, Example]) -> Dict[str, Example]:
    """The gaps found, each once: one found under a drawn workload (Ray Data) is the base job's own
    when the base job showed the same failure with the same fault kinds; it is kept without the
    override (the simpler scenario)."""
    def kinds(ex: Example) -> List[str]:
        return sorted(f["kind"] for f in ex.faults)

    out = {}
    for sig, ex in found.items():
        suffix = es.workload_text(ex.workload)
        twin = found.get(sig[:-len(suffix)]) if suffix and sig.endswith(suffix) else None
        if twin is None or kinds(twin) != kinds(ex):
            out[sig] = ex
    return out


def status_of(summary: Dict[str, Any]) -> str:
    """An example's status: FAIL when the verdict failed or any property failed (asked for or
    not); INCONCLUSIVE, ERROR and PASS as the verdict says."""
    verdict = summary.get("verdict")
    if verdict == "ERROR":
        return "ERROR"
    if verdict == "FAIL" or (summary.get("unasked_failures") and es.signature(summary)):
        return "FAIL"
    return verdict if verdict in ("PASS", "INCONCLUSIVE") else "ERROR"


class ClusterExecutor:
    """Runs examples as `suite` runs scenarios: one open cluster, healed before each run."""

    def __init__(self, cluster, address: Optional[str] = None, address_source: Optional[str] = None,
                 allow_destructive: bool = False, progress: bool = False):
        self.cluster, self.address, self.address_source = cluster, address, address_source
        self.allow_destructive, self.progress = allow_destructive, progress

    def run(self, scenario: Scenario, folder: str) -> Dict[str, Any]:
        from ftharness.harness.run.runner import RunOptions
        from ftharness.harness.run.suite import run_one

        self.cluster.heal()   # every cluster handle has it (RayCluster); an existing one's does nothing
        options = RunOptions(out_dir=folder, address=self.address, address_source=self.address_source,
                             progress=self.progress, allow_destructive=self.allow_destructive)
        return run_one(scenario, self.cluster, options)

    def rejudge(self, folder: str, outcome: str) -> Dict[str, Any]:
        """scenario.yaml's expect.outcome set to `outcome`, then `ftharness check`'s judgement."""
        from ftharness.reports.judgement import rejudge

        from ftharness.inputs import read_input
        from ftharness.scenarios.schema import load_yaml_text

        data = read_input(os.path.join(folder, "scenario.yaml"), "scenario_copy", parse_yaml=load_yaml_text)
        data.setdefault("expect", {})["outcome"] = outcome
        write_file(os.path.dirname(folder), os.path.join(os.path.basename(folder), "scenario.yaml"),
                   yaml.safe_dump(data, sort_keys=False), overwrite=True)
        return rejudge(folder)
