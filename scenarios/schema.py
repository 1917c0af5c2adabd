"""The scenario file contract (docs/scenarios.md) and its validation.

`load_scenario(path)` returns a validated `Scenario` or raises `ScenarioError`
whose message is one line naming the field and what is allowed. Nothing is
started before a scenario validates.
"""

from __future__ import annotations

import os
from typing import Any, Dict, Optional, Tuple

from pydantic import ValidationError

from ftharness.errors import ScenarioError
# the contract's parts, one job a module (scenarios/language/); re-exported: callers import them from here
from ftharness.faults import FAULT_KINDS, REGISTRY, FaultSpec
from ftharness.scenarios.language.cluster import ClusterSpec, address_form_problem, ray_client_refusal
from ftharness.scenarios.language.expect import ExpectSpec, PinnedViolation
from ftharness.scenarios.language.failure_config import FailureConfigSpec
from ftharness.scenarios.language.json_schema import FIELD_DOCS, SCHEMA_ID, field_docs, scenario_json_schema
from ftharness.scenarios.language.messages import MAX_MESSAGE, one_line, scenario_error
from ftharness.scenarios.language.release_rules import adapt_to_release, release_problem, require_release
from ftharness.scenarios.language.scenario import Scenario
from ftharness.scenarios.language.torchrun_rules import (
    TORCHRUN_COLLECTIVE_TIMEOUT_S, TORCHRUN_FAULTS, TORCHRUN_REFUSED, torchrun_problem)
from ftharness.scenarios.language.validation_errors import (
    MAX_ERRORS, format_validation_error, validation_problems)
from ftharness.scenarios.language.workload import WorkloadSpec, working_dir_problem
from ftharness.scenarios.language.yaml_reader import (
    MAX_DEPTH, MAX_FILE_BYTES, MAX_ITEMS, MAX_NODES, MAX_NUMBER_CHARS, MAX_SCALAR, load_yaml_text)

#: the scenario language's entry: its own functions, and the parts of scenarios/language/ that callers
#: import from here
__all__ = [
    "parse_scenario", "load_scenario", "read_scenario_file", "default_scenario_path", "scenario_data",
    "Scenario", "ScenarioError", "FAULT_KINDS", "REGISTRY", "FaultSpec",
    "ClusterSpec", "address_form_problem", "ray_client_refusal", "ExpectSpec", "PinnedViolation", "FailureConfigSpec",
    "FIELD_DOCS", "SCHEMA_ID", "field_docs", "scenario_json_schema", "MAX_MESSAGE", "one_line", "scenario_error",
    "adapt_to_release", "release_problem", "require_release",
    "TORCHRUN_COLLECTIVE_TIMEOUT_S", "TORCHRUN_FAULTS", "TORCHRUN_REFUSED", "torchrun_problem",
    "MAX_ERRORS", "format_validation_error", "validation_problems", "WorkloadSpec", "working_dir_problem",
    "MAX_DEPTH", "MAX_FILE_BYTES", "MAX_ITEMS", "MAX_NODES", "MAX_NUMBER_CHARS", "MAX_SCALAR", "load_yaml_text",
]


def _depth(data: Any, limit: int) -> int:
    """Nesting depth of plain data, giving up past `limit` (iterative: no recursion)."""
    deepest, stack = 0, [(data, 1)]
    while stack:
        node, d = stack.pop()
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        if isinstance(node, dict):
            stack.extend((v, d + 1) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, d + 1) for v in node)
    return deepest


def parse_scenario(data: Any, source: str = "scenario", base_dir: Optional[str] = None) -> Scenario:
    """A validated Scenario from a dict of the scenario language; ScenarioError (one line naming
    the field, `source` its origin) otherwise. `base_dir`: where its relative paths start."""
    if not isinstance(data, dict):
        raise ScenarioError(f"{source}: must be a mapping with at least 'name'")
    if _depth(data, MAX_DEPTH) > MAX_DEPTH:
        raise ScenarioError(f"{source}: nested more than {MAX_DEPTH} levels deep")
    if "base_dir" in data:   # set from the file's folder; a file that gives one would be overruled silently
        raise ScenarioError(f"{source}: base_dir: unknown key (the scenario's folder, set by ftharness)")
    try:
        sc = Scenario.model_validate({**data, "base_dir": base_dir})
    except ValidationError as e:
        problems = [one_line(f"{source}: {p}") for p in validation_problems(e)]
        raise scenario_error(problems[0], problems, len(problems) if len(problems) < MAX_ERRORS else e.error_count()) from None
    except (RecursionError, TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as e:
        raise ScenarioError(one_line(f"{source}: cannot be read as a scenario ({type(e).__name__})")) from None
    return sc


def load_scenario(path: str) -> Scenario:
    """A validated Scenario from a YAML file, read through the one bounded reader
    (ftharness.inputs.read_bounded: a regular file, not under /proc, /sys or /dev, never
    waited on, at most MAX_FILE_BYTES of it)."""
    return read_scenario_file(path)[1]


def read_scenario_file(path: str) -> Tuple[Dict[str, Any], Scenario]:
    """(the file's data, its validated Scenario), read as load_scenario reads it: for a
    caller that rewrites the data (a matrix cell, a bisect probe: one per release)."""
    from ftharness.inputs import read_bounded

    shown = _shown_path(path)
    if not isinstance(path, str) or not path or not os.path.lexists(path):
        raise ScenarioError(one_line(f"{shown}: no such scenario file"))
    raw = read_bounded(path, MAX_FILE_BYTES, shown, "more than a scenario may hold")
    data = load_yaml_text(raw, shown)
    return data, parse_scenario(data, source=shown,
                                base_dir=os.path.dirname(os.path.abspath(path)))


def _shown_path(path: Any, limit: int = 120) -> str:
    """A path as an error line shows it: control characters escaped, long ones cut in the middle."""
    from ftharness.safety import printable, redact

    text = printable(redact(str(path)), keep_newlines=False)
    return text if len(text) <= limit else text[: limit // 2 - 2] + "..." + text[-(limit // 2 - 2):]


def default_scenario_path() -> str:
    return os.path.join(os.path.dirname(__file__), "catalog", "default.yaml")


def scenario_data(sc: Scenario) -> Dict[str, Any]:
    """`sc` as plain data holding only what its file set (and what validators derived), to edit
    and parse again. A full dump would mark every default as set: a FailureConfig field the
    scenario leaves to Ray would then be passed to Ray, and refused on a release that lacks it
    (max_preemption_failures before 2.58: every matrix cell and bisect probe there)."""
    return sc.model_dump(mode="json", exclude_unset=True, exclude_none=True, exclude={"base_dir"})
