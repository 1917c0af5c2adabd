"""The axes of a matrix and the cells they span (pure: no Ray, no processes).

An axis is a scenario field and the values it takes: `--ray` (the release),
`--set workload.checkpoint_every=1,5,10` (any scenario field by its dotted
path), `--runtime ray,torchrun` (workload.runtime). A cell is one scenario at
one value of every axis, for one repeat. Everything is checked here, before
anything starts: an unknown release, a path the scenario language does not
have, a value its schema refuses are each one line (ScenarioError, exit 2).
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import re
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import yaml

from ftharness import releases
from ftharness.errors import ScenarioError
from ftharness.inputs import release_text_problem
from ftharness.safety import redact

RUNTIMES = {"ray": "ray_train", "ray_train": "ray_train", "torchrun": "torchrun"}
MAX_CELLS = 2000
MAX_REPEAT = 100


@dataclass(frozen=True)
class Axis:
    """A scenario field (`path`, dotted) and its values, in the order given."""

    path: str
    values: Tuple[Any, ...]

    @property
    def name(self) -> str:
        return self.path


@dataclass
class Cell:
    """One run of the matrix: a scenario, a release, one value per axis, a repeat."""

    scenario: str                      # the scenario's name
    source: str                        # its file
    ray: str                           # the release
    settings: Dict[str, Any]           # axis path -> value
    repeat: int                        # 1..N
    data: Dict[str, Any] = field(default_factory=dict)   # the scenario data with the settings applied
    na: Optional[str] = None          # why the release cannot run it at all (e.g. elastic before 2.55)

    @property
    def config(self) -> str:
        """The configuration the cell belongs to (all but the repeat): what repeats pool into."""
        parts = [f"ray={self.ray}"] + [f"{k}={_shown(_text(v))}" for k, v in sorted(self.settings.items())]
        return " ".join(parts)

    @property
    def cell_id(self) -> str:
        raw = "--".join([self.scenario, f"ray-{self.ray}",
                         *[f"{k}={_shown(_text(v))}" for k, v in sorted(self.settings.items())], f"r{self.repeat}"])
        return re.sub(r"[^A-Za-z0-9_.=-]+", "_", raw)[:180]


def _shown(text: str) -> str:
    """A setting as a folder name may show it: credentials redacted, and then a short hash of
    the value, so two values that differ only in their credentials keep two folders."""
    shown = redact(text)
    return shown if shown == text else f"{shown}-{hashlib.sha256(text.encode()).hexdigest()[:8]}"


def _text(value: Any) -> str:
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def parse_releases(text: Optional[str]) -> List[str]:
    """`--ray`: "all", or a comma list of supported versions (a minor alone, "2.57", means its
    latest patch); default: the installed release."""
    if not text:
        here = releases.installed()
        if not here or releases.release(here) is None:
            raise ScenarioError(f"--ray: the installed Ray ({here or 'none'}) is not supported; name releases "
                                f"({releases.RANGE_TEXT}) or 'all'")
        return [here]
    if text.strip() == "all":
        return list(releases.SUPPORTED)
    out: List[str] = []
    for item in [t.strip() for t in text.split(",") if t.strip()]:
        version = item
        if release_text_problem(item) is None and item.count(".") == 1:
            version = next((v for v in releases.SUPPORTED if v.startswith(item + ".")), item)
        if release_text_problem(version) is not None or version.count(".") != 2 or releases.release(version) is None:
            raise ScenarioError(f"--ray: {item} is not a supported release; allowed: "
                                f"{', '.join(releases.SUPPORTED)} (or another patch of those minors), or all")
        if version not in out:
            out.append(version)
    if not out:
        raise ScenarioError("--ray: no release named; allowed: a comma list of versions, or all")
    return sorted(out, key=releases.parse)


def _split_values(text: str) -> List[str]:
    """`1,5,10` or `[2,3],[1,2]`: commas outside brackets separate the values."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [v.strip() for v in out]


def schema_has(path: str, schema: Dict[str, Any]) -> bool:
    """Whether the scenario JSON Schema has the dotted `path` (following $ref)."""
    defs = schema.get("$defs", {})
    node: Dict[str, Any] = schema
    for part in path.split("."):
        node = _resolve(node, defs)
        props = node.get("properties")
        if not props or part not in props:
            return False
        node = props[part]
    return True


def _resolve(node: Dict[str, Any], defs: Dict[str, Any]) -> Dict[str, Any]:
    while "$ref" in node:
        node = defs.get(node["$ref"].rsplit("/", 1)[-1], {})
    for key in ("anyOf", "allOf", "oneOf"):
        for option in node.get(key, []):
            option = _resolve(option, defs)
            if option.get("properties"):
                return option
    return node


def parse_sets(items: Sequence[str], runtime: Optional[str], schema: Dict[str, Any]) -> List[Axis]:
    """`--set PATH=V1,V2` (repeatable) and `--runtime` as axes."""
    axes: List[Axis] = []
    for item in items or []:
        path, sep, values = item.partition("=")
        path = path.strip()
        if not sep or not path or not values.strip():
            raise ScenarioError(f"--set {item}: expected PATH=VALUE[,VALUE...], e.g. workload.checkpoint_every=1,5,10")
        if path in ("name", "faults", "expect") or path.startswith(("faults.", "expect.")):
            raise ScenarioError(f"--set {path}: the matrix varies the configuration, not the scenario's "
                                f"name, faults or expectations")
        if path == "workload.runtime":
            raise ScenarioError("--set workload.runtime: use --runtime ray,torchrun")
        if not schema_has(path, schema):
            raise ScenarioError(f"--set {path}: no such scenario field (see `ftharness schema`), e.g. "
                                f"workload.checkpoint_every, cluster.storage, failure_config.max_failures")
        texts = _split_values(values)
        if len(texts) > MAX_CELLS:
            raise ScenarioError(f"--set {path}: {len(texts)} values, more than the {MAX_CELLS} cells a matrix may have")
        parsed = tuple(set_value(path, v) for v in texts)
        if any(a.path == path for a in axes):
            raise ScenarioError(f"--set {path}: given twice; list all its values once")
        axes.append(Axis(path, parsed))
    if runtime:
        values = []
        for r in [t.strip() for t in runtime.split(",") if t.strip()]:
            if r not in RUNTIMES:
                raise ScenarioError(f"--runtime: {r} is not a runtime; allowed: ray, torchrun")
            values.append(RUNTIMES[r])
        axes.append(Axis("workload.runtime", tuple(dict.fromkeys(values))))
    return axes


def set_value(path: str, text: str) -> Any:
    """One `--set` value through the scenario loader with its limits (no aliases, bounded size,
    depth, numbers, dates as strings: ftharness.scenarios.schema.load_yaml_text); only what a
    scenario file may hold (None, booleans, numbers, strings, lists and mappings of them)."""
    from ftharness.scenarios.schema import load_yaml_text

    if not text:
        return None
    value = load_yaml_text(text.encode("utf-8", "surrogatepass"), f"--set {path}")
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
        elif v is not None and not isinstance(v, (bool, int, float, str)):
            raise ScenarioError(f"--set {path}: {text[:60]!r} is a {type(v).__name__}; allowed: YAML scalars "
                                f"or flow lists and mappings of them")
    return value


def apply(data: Dict[str, Any], settings: Dict[str, Any]) -> Dict[str, Any]:
    """A copy of scenario `data` with each dotted path set to its value."""
    out = copy.deepcopy(data)
    for path, value in settings.items():
        node = out
        *parents, leaf = path.split(".")
        for p in parents:
            if not isinstance(node.get(p), dict):
                node[p] = {}
            node = node[p]
        node[leaf] = value
    return out


def expand(scenarios: Sequence[Tuple[str, str, Dict[str, Any]]], rays: Sequence[str],
           axes: Sequence[Axis], repeat: int) -> List[Cell]:
    """Every cell, grouped by release (one environment at a time), then scenario, then configuration."""
    from ftharness.harness.run.arguments import check_count

    check_count("--repeat", repeat, MAX_REPEAT)
    total = len(scenarios) * len(rays) * repeat
    for a in axes:   # counted before anything is built: 8 axes of 40 values are 6.5e12 cells
        total *= len(a.values)
    if total > MAX_CELLS:
        raise ScenarioError(f"matrix: {total} cells, more than {MAX_CELLS}; use fewer values, releases or repeats")
    combos = list(itertools.product(*[a.values for a in axes])) or [()]
    cells, ids = [], {}
    for ray in rays:
        for name, source, data in scenarios:
            for combo in combos:
                settings = {a.path: v for a, v in zip(axes, combo)}
                for r in range(1, repeat + 1):
                    cell = Cell(name, source, ray, settings, r, apply(data, settings))
                    other = ids.setdefault(cell.cell_id, cell)
                    if other is not cell:   # two cells, one folder: the second would overwrite the first
                        raise ScenarioError(f"matrix: cells [{other.config}] and [{cell.config}] of {name} share "
                                            f"the folder name {cell.cell_id[:80]}; give values that differ in "
                                            f"letters, digits, '.', '=' or '-'")
                    cells.append(cell)
    return cells
