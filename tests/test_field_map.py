"""The field map of the model (history/fields.py) against the writer and the judge (issue 46, item 1).

Pure and fast: an AST scan of the sources and the recorded histories of tests/data, no Ray.

- every field the history writer can write is in the map: the keyword arguments and dict keys
  of every emit call site (harness/, faults/, history/), the dicts fault kinds return as what
  they hit or did, and every field path of every tests/data/**/history.jsonl; a miss names the
  kind and the field;
- no field is left `Unread`: marked xfail(strict=True) while the bucket holds fields (the count
  is in the reason), so the day the last one gets its rule the test passes, strict turns that
  XPASS into an error, and the mark is to be removed;
- every rule a `Read` names exists: a code the causal model adds (`.add(SYSTEM|RECORDS, "code", ...)`
  in history/*.py), a property of the registry, `landing:<kind>` of a registered fault kind
  (`landing:*`: the attribution they share), or a family (integrity, verdict, agreement);
- each rule a `Read` names holds the field's name as a string in the source of one of its
  modules (a cheap guard against a claim gone stale);
- docs/verdicts.md's generated section is what scripts/gen_field_map.py writes.
"""

from __future__ import annotations

import ast
import glob
import gzip
import importlib.util
import json
import os
from collections import defaultdict
from functools import lru_cache
from typing import Dict, Iterable, Iterator, List, Set, Tuple

import pytest

from ftharness.history import fields as F
from ftharness.history.book import KINDS as BOOK_KINDS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: where events are emitted (the history actor's clients, the injector, the torchrun runtime, the book)
WRITER_DIRS = ("harness", "faults", "history")
#: calls that hand an event to the history: emit(kind, **fields), _emit(...), hand_over(...)
EMIT_CALLS = {"emit", "_emit", "hand_over"}
#: what fault kinds return as what they hit (fault_injected.target_hit) ...
HIT_FUNCTIONS = {"inject", "hit_in_worker", "isolate", "_pause_processes"}
#: ... and as what a follow-up or a heal did (fault_action / fault_healed `detail`)
DETAIL_FUNCTIONS = {"heal", "_resume", "heal_now", "kill", "again", "poll"}
KNOWN_KINDS = set(BOOK_KINDS) | set(F.EXTRA_KINDS)


def _py(dirs: Iterable[str]) -> List[str]:
    out = []
    for d in dirs:
        out += sorted(glob.glob(os.path.join(REPO, d, "**", "*.py"), recursive=True))
    return out


@lru_cache(maxsize=None)
def _tree(path: str) -> ast.Module:
    with open(path) as f:
        return ast.parse(f.read(), filename=path)


def _parents(tree: ast.AST) -> Dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing(node: ast.AST, parents) -> ast.AST:
    while node in parents and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        node = parents[node]
    return node


def _keys(node: ast.AST, scope: ast.AST, depth: int = 0) -> Set[str]:
    """The string keys a `**node` spreads into an event, where the source says them: a dict literal,
    either branch of `a if c else b`, `a or b`, or a name assigned such a value in the same function."""
    if depth > 4:
        return set()
    if isinstance(node, ast.Dict):
        out = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        for k, v in zip(node.keys, node.values):
            if k is None:   # {**other, ...}
                out |= _keys(v, scope, depth + 1)
        return out
    if isinstance(node, ast.IfExp):
        return _keys(node.body, scope, depth + 1) | _keys(node.orelse, scope, depth + 1)
    if isinstance(node, ast.BoolOp):
        return set().union(*(_keys(v, scope, depth + 1) for v in node.values))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
        return {k.arg for k in node.keywords if k.arg} | set().union(
            *(_keys(a, scope, depth + 1) for a in node.args)) if node.args or node.keywords else set()
    if isinstance(node, ast.Name):
        out: Set[str] = set()
        for n in ast.walk(scope):
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in n.targets):
                out |= _keys(n.value, scope, depth + 1)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "update" \
                    and isinstance(n.func.value, ast.Name) and n.func.value.id == node.id:
                out |= {k.arg for k in n.keywords if k.arg}
        return out
    return set()


def _returned(fn: ast.AST) -> Iterator[ast.AST]:
    """What `fn` returns (not what the functions defined inside it return: those are scanned on their own)."""
    if isinstance(fn, ast.Lambda):
        yield fn.body
        return
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Return) and n.value is not None:
            yield n.value
        todo.extend(ast.iter_child_nodes(n))


def writer_fields() -> Tuple[Dict[str, Set[Tuple[str, str]]], Set[Tuple[str, str]]]:
    """({kind: {(field path, where)}} from the emit call sites (a path "" for the kind itself),
    {(common field, where)} from the emitters' base fields) over the writer's sources."""
    per_kind: Dict[str, Set[Tuple[str, str]]] = defaultdict(set)
    common: Set[Tuple[str, str]] = set()
    for path in _py(WRITER_DIRS):
        tree = _tree(path)
        parents = _parents(tree)
        rel = os.path.relpath(path, REPO)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            where = f"{rel}:{node.lineno}"
            scope = _enclosing(node, parents)
            name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
            for kw in node.keywords:   # an emitter's base fields: on every event it writes
                if kw.arg == "base" and isinstance(kw.value, ast.Dict):
                    common |= {(k, where) for k in _keys(kw.value, scope)}
            if name not in EMIT_CALLS or not node.args:
                continue
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue   # the kind is a variable: a forwarder (its callers are scanned)
            kind = first.value
            per_kind[kind].add(("", where))
            for kw in node.keywords:
                if kw.arg == "wait":
                    continue
                if kw.arg is None:
                    per_kind[kind] |= {(k, where) for k in _keys(kw.value, scope)}
                    continue
                per_kind[kind].add((kw.arg, where))
                if isinstance(kw.value, ast.Dict):   # a dict field written in place: its keys too
                    per_kind[kind] |= {(f"{kw.arg}.{k}", where) for k in _keys(kw.value, scope)}
                elif isinstance(kw.value, ast.Name):
                    per_kind[kind] |= {(f"{kw.arg}.{k}", where) for k in _keys(kw.value, scope)}
        for node in ast.walk(tree):   # `self._emitter.base = {...}`
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "base"
                                                    for t in node.targets):
                common |= {(k, f"{rel}:{node.lineno}") for k in _keys(node.value, _enclosing(node, parents))}
    return per_kind, common


def fault_fields() -> Dict[str, Set[Tuple[str, str]]]:
    """{'target_hit' | 'detail': {(key, where)}}: the keys of the dicts fault kinds return as what
    they hit (fault_injected.target_hit) and as what a follow-up or heal did (`detail`), and of
    what the attribution adds to a hit (`hit.setdefault(key, ...)`)."""
    out: Dict[str, Set[Tuple[str, str]]] = defaultdict(set)
    for path in _py(("faults",)):
        tree = _tree(path)
        parents = _parents(tree)
        rel = os.path.relpath(path, REPO)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name in HIT_FUNCTIONS | DETAIL_FUNCTIONS:
                role = "target_hit" if fn.name in HIT_FUNCTIONS else "detail"
                for value in _returned(fn):
                    out[role] |= {(k, f"{rel}:{value.lineno}") for k in _keys(value, fn)}
            if isinstance(fn, ast.FunctionDef) and fn.name == "attribution":
                for n in ast.walk(fn):
                    if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "setdefault" \
                            and n.args and isinstance(n.args[0], ast.Constant):
                        out["target_hit"].add((n.args[0].value, f"{rel}:{n.lineno}"))
            if isinstance(fn, ast.Call) and isinstance(fn.func, ast.Attribute) and fn.func.attr == "schedule" \
                    and len(fn.args) >= 2 and isinstance(fn.args[1], ast.Lambda):
                out["detail"] |= {(k, f"{rel}:{fn.lineno}") for k in _keys(fn.args[1].body, fn.args[1])}
            if isinstance(fn, ast.Call) and isinstance(fn.func, ast.Attribute) and fn.func.attr == "record" \
                    and len(fn.args) >= 2:
                out["detail"] |= {(k, f"{rel}:{fn.lineno}") for k in _keys(fn.args[1], _enclosing(fn, parents))}
    return out


def recorded_histories() -> List[str]:
    return sorted(glob.glob(os.path.join(REPO, "tests", "data", "**", "history.jsonl*"), recursive=True))


def _lines(path: str) -> Iterator[dict]:
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if isinstance(e, dict):
                yield e


# ---------------------------------------------------------------- (a) the writer's fields are mapped
def test_the_emit_call_sites_write_only_mapped_fields():
    per_kind, common = writer_fields()
    assert len(per_kind) >= 15, f"the scan found emit calls of only {sorted(per_kind)}: is EMIT_CALLS stale?"
    missing = []
    for kind, found in sorted(per_kind.items()):
        if kind not in F.FIELD_MAP:
            missing.append(f"kind {kind} (emitted at {sorted(w for _, w in found)[0]}) is not in the field map")
            continue
        for path, where in sorted(found):
            if path and F.lookup(kind, path) is None:
                missing.append(f"{kind}.{path} (written at {where})")
    for path, where in sorted(common):
        if path not in F.COMMON:
            missing.append(f"every event's {path} (an emitter's base field, {where})")
    assert not missing, "fields the writer writes and history/fields.py does not map: " + "; ".join(missing[:20])


def test_what_fault_kinds_hit_and_do_is_mapped():
    found = fault_fields()
    assert found["target_hit"] and found["detail"], "the scan of faults/*.py found no hit or detail dict"
    missing = [f"fault_injected.target_hit.{k} ({where})" for k, where in sorted(found["target_hit"])
               if F.lookup("fault_injected", f"target_hit.{k}") is None]
    missing += [f"fault_action/fault_healed.detail.{k} ({where})" for k, where in sorted(found["detail"])
                if F.lookup("fault_action", f"detail.{k}") is None and F.lookup("fault_healed", f"detail.{k}") is None]
    assert not missing, "fields fault kinds record and history/fields.py does not map: " + "; ".join(missing[:20])


def test_every_field_of_the_recorded_histories_is_mapped():
    paths = recorded_histories()
    assert paths, "no recorded history under tests/data"
    missing: Dict[str, Set[str]] = defaultdict(set)
    for path in paths:
        where = os.path.relpath(path, REPO)
        for e in _lines(path):
            kind = e.get("kind")
            if kind not in F.FIELD_MAP:
                missing[f"kind {kind}"].add(where)
                continue
            for p in F.uncovered(kind, F.paths_of(e)):
                missing[f"{kind}.{p}"].add(where)
    assert not missing, "fields of recorded histories history/fields.py does not map: " + "; ".join(
        f"{k} ({sorted(v)[0]})" for k, v in sorted(missing.items())[:20])


def test_every_kind_of_the_book_is_mapped():
    assert set(F.FIELD_MAP) == KNOWN_KINDS, (f"kinds without a map: {sorted(KNOWN_KINDS - set(F.FIELD_MAP))}; "
                                            f"mapped kinds nobody writes: {sorted(set(F.FIELD_MAP) - KNOWN_KINDS)}")


def test_entries_say_why():
    for kind, path, e in F.entries():
        assert isinstance(e, (F.Read, F.Free, F.Unread)), (kind, path)
        if isinstance(e, F.Read):
            assert e.rules and all(isinstance(r, str) and r for r in e.rules), (kind, path)
        else:
            assert len(e.reason if isinstance(e, F.Free) else e.note) > 15, f"{kind}.{path}: say why"


def test_lookup_prefers_the_kinds_own_entry_and_the_exact_path():
    assert F.lookup("report", "metrics.step") == F.FIELD_MAP["report"]["metrics.step"]
    assert F.lookup("report", "metrics.sum_ids") == F.FIELD_MAP["report"]["metrics.*"]
    assert F.lookup("run_end", "fault_specs[].at.step") == F.FIELD_MAP["run_end"]["fault_specs[].*"]
    assert F.lookup("step", "pid") == F.COMMON["pid"]
    assert F.lookup("step", "no_such_field") is None
    assert F.uncovered("history_end", ["emitters.worker-1-abc", "emitters"]) == []


# ---------------------------------------------------------------- (b) no fact is left unread
UNREAD = F.unread()


def test_no_field_is_unread():
    """Every fact of the run is read by a rule or declared free: a field the writer gains goes into
    `Unread` (with what an edit of it could hide) until a rule reads it, and this test fails meanwhile."""
    assert not UNREAD, f"{len(UNREAD)} unread: " + "; ".join(f"{k}.{p}" for k, p, _ in UNREAD[:40])


# ---------------------------------------------------------------- (c) the rules named exist
@lru_cache(maxsize=None)
def model_codes() -> Dict[str, Tuple[str, ...]]:
    """{code: modules that add it}: the string codes of `.add(SYSTEM|RECORDS, "code", ...)` and
    `Finding(SYSTEM|RECORDS, "code", ...)` in history/*.py."""
    found: Dict[str, Set[str]] = defaultdict(set)
    for path in _py(("history",)):
        for n in ast.walk(_tree(path)):
            if not isinstance(n, ast.Call) or len(n.args) < 2:
                continue
            name = n.func.attr if isinstance(n.func, ast.Attribute) else getattr(n.func, "id", None)
            blame = n.args[0]
            blamed = (isinstance(blame, ast.Name) and blame.id in ("SYSTEM", "RECORDS")) or \
                (isinstance(blame, ast.Attribute) and blame.attr in ("SYSTEM", "RECORDS"))
            if name in ("add", "Finding") and blamed and isinstance(n.args[1], ast.Constant) \
                    and isinstance(n.args[1].value, str):
                found[n.args[1].value].add(os.path.relpath(path, REPO))
    return {k: tuple(sorted(v)) for k, v in found.items()}


def existing_rules() -> Set[str]:
    from ftharness.faults import FAULT_KINDS
    from ftharness.scenarios.properties import PROPERTIES

    return set(model_codes()) | set(PROPERTIES) | {f"landing:{k}" for k in FAULT_KINDS} | \
        {F.LANDING_ANY, *F.FAMILIES}


def test_model_codes_are_found():
    codes = model_codes()
    for code in ("process", "group", "registration", "clock", "odd-value", "state-chain"):
        assert code in codes, f"the scan of history/*.py misses the model code {code}: is model_codes stale?"


def test_every_rule_named_exists():
    known = existing_rules()
    wrong = sorted({f"{kind}.{path}: {r}" for kind, path, e in F.entries() if isinstance(e, F.Read)
                    for r in e.rules if r not in known})
    assert not wrong, ("rules history/fields.py names that do not exist (model codes of history/*.py, "
                       "properties, landing:<fault kind>, integrity, verdict, agreement): " + "; ".join(wrong[:20]))


# ---------------------------------------------------------------- (d) the rule's modules name the field
@lru_cache(maxsize=None)
def _strings(rel: str) -> frozenset:
    path = os.path.join(REPO, rel)
    if not os.path.isfile(path):
        return frozenset()
    return frozenset(n.value for n in ast.walk(_tree(path)) if isinstance(n, ast.Constant) and isinstance(n.value, str))


def _landing_module(kind: str):
    import inspect

    from ftharness.faults import REGISTRY

    cls = REGISTRY.get(kind)
    return os.path.relpath(inspect.getsourcefile(cls), REPO) if cls is not None else None


def _property_module(name: str):
    import inspect

    from ftharness.scenarios.properties import REGISTRY

    mod = REGISTRY.get(name)
    return os.path.relpath(inspect.getsourcefile(mod), REPO) if mod is not None else None


#: model rules whose fields the fault kinds declare (Fault.echoes, read through Declared.echoes)
DECLARED_BY_KINDS = {"fault-spec"}


def with_parts(mods: Iterable[str]) -> Tuple[str, ...]:
    """`mods`, each of history/causal.py and history/model.py followed by the modules it is split into
    (history/causal_*.py: the causal model's steps; history/model_*.py: the history model's parts):
    a rule of one part may read a fact another part gathered (a drain, a death, a group); faults/base.py
    is followed by the modules it is split into (the landing view, the spec models, the context)."""
    out: List[str] = []
    for m in mods:
        out.append(m)
        if m in ("history/causal.py", "history/model.py"):
            out += sorted(os.path.relpath(p, REPO) for p in glob.glob(os.path.join(REPO, m[:-3] + "_*.py")))
        if m == "faults/base.py":
            out += ["faults/landing.py", "faults/specs.py", "faults/context.py"]
    return tuple(dict.fromkeys(out))


def rule_modules(rule: str) -> Tuple[str, ...]:
    from ftharness.faults import FAULT_KINDS

    codes = model_codes()
    if rule in codes:
        kinds = tuple(sorted({m for m in map(_landing_module, FAULT_KINDS) if m})) if rule in DECLARED_BY_KINDS else ()
        return with_parts(codes[rule] + ("history/causal.py",) + kinds)
    return with_parts(F.modules_of(rule, _landing_module, _property_module))


def test_each_rule_named_reads_the_field():
    stale = []
    for kind, path, e in F.entries():
        if not isinstance(e, F.Read):
            continue
        name = F.field_name(path)
        for rule in e.rules:
            if rule not in existing_rules():
                continue   # named by test_every_rule_named_exists
            mods = rule_modules(rule)
            if not any(name in _strings(m) for m in mods):
                stale.append(f"{kind}.{path}: {rule} ({', '.join(mods)} never name {name!r})")
    assert not stale, "Read claims no source backs: " + "; ".join(stale[:20])


# ---------------------------------------------------------------- (e) the generated section is current
def _generator():
    spec = importlib.util.spec_from_file_location("gen_field_map", os.path.join(REPO, "scripts", "gen_field_map.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_docs_section_is_current():
    gen = _generator()
    with open(gen.PAGE) as f:
        page = f.read()
    assert page.count(gen.START) == 1 and page.count(gen.END) == 1, \
        f"docs/verdicts.md needs one {gen.START} ... {gen.END} section: run `{gen.COMMAND}`"
    assert gen.splice(page, gen.render()) == page, \
        f"docs/verdicts.md's field map is stale (history/fields.py changed): run `{gen.COMMAND}`"


def test_the_section_states_the_totals():
    gen = _generator()
    n = F.totals()
    assert f"**{n['read']} fields read, {n['free']} free, {n['unread']} unread**" in gen.render()


def test_every_reference_workload_setting_has_its_own_entry():
    """`workload.*` covers a user job's own train_loop_config (free); the reference workload's settings
    (WorkloadConfig) each need their own entry, so a new setting cannot slip in as a user's key."""
    import dataclasses

    from ftharness.scenarios.reference_data import WorkloadConfig

    mapped = F.FIELD_MAP["run_start"]
    missing = [f.name for f in dataclasses.fields(WorkloadConfig) if f"workload.{f.name}" not in mapped]
    assert not missing, f"run_start.workload settings of the reference workload without an entry: {missing}"
