"""The property context is typed: every key a property reads is declared in
`scenarios/properties/base.py:PropertyContext`, with its type (pure, no Ray).

Two ways to see a read: the source of every module a context reaches (an `ast` scan of
`context.get("k")`, `context["k"]`, `"k" in context`), and the recorded runs of tests/data
judged again with a context that records every key asked of it. `check_context`, the one
place that builds a run's context, builds exactly the declared keys, each of its type.
"""

import ast
import os
import sys
import typing

import pytest

from ftharness.scenarios.properties.base import CONTEXT_KEYS as KEYS, PropertyContext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
RECORDED = sorted(d for d in os.listdir(DATA) if os.path.isfile(os.path.join(DATA, d, "summary.json")))
#: every module a property context is handed to: the properties, the helpers they pass it to,
#: and the toy plugin property (a third party's reads are held to the same keys)
READERS = sorted([os.path.join("scenarios", "properties", f) for f in os.listdir(os.path.join(ROOT, "scenarios", "properties"))
                  if f.endswith(".py")] + ["scenarios/policy_model.py", "scenarios/forked_checks.py",
                                           "history/model.py", "tests/plugin_toy/ftharness_toy.py"])
#: what a context is called where it is read
NAME = "context"
#: calls that copy or walk a mapping: what is read after them no scan can see
COPIES = {"dict", "list", "set", "tuple", "iter", "sorted", "vars"}


def context_reads(source):
    """({key read}, [why a use cannot be scanned]) for the uses of a variable `context` in a source."""
    tree = ast.parse(source)
    parent = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    keys, opaque = set(), []

    def text(node):
        return f"line {node.lineno}: {ast.unparse(parent.get(node, node))}"

    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id == NAME and isinstance(node.ctx, ast.Load)):
            continue
        use, up = node, parent.get(node)
        if isinstance(up, ast.BoolOp) and isinstance(parent.get(up), ast.Attribute):   # (context or {}).get("k")
            use, up = up, parent.get(up)
        if isinstance(up, ast.Attribute) and up.value is use:
            call = parent.get(up)
            if up.attr != "get" or not (isinstance(call, ast.Call) and call.func is up and call.args
                                         and isinstance(call.args[0], ast.Constant)):
                opaque.append(text(node))
            else:
                keys.add(call.args[0].value)
        elif isinstance(up, ast.Subscript) and up.value is use:
            if isinstance(up.slice, ast.Constant):
                keys.add(up.slice.value)
            else:
                opaque.append(text(node))
        elif isinstance(up, ast.Compare) and any(c is use for c in up.comparators):
            if isinstance(up.left, ast.Constant) and all(isinstance(op, (ast.In, ast.NotIn)) for op in up.ops):
                keys.add(up.left.value)
            else:
                opaque.append(text(node))
        elif isinstance(up, (ast.For, ast.comprehension)) and up.iter is use:
            opaque.append(text(node))
        elif isinstance(up, ast.keyword) and up.arg is None:       # f(**context)
            opaque.append(text(node))
        elif isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in COPIES:
            opaque.append(text(node))
    return keys, sorted(opaque, key=lambda o: int(o.split(":")[0].split()[1]))


def test_every_key_a_property_reads_is_declared():
    read, opaque, undeclared = set(), [], []
    for path in READERS:
        keys, hidden = context_reads(open(os.path.join(ROOT, path)).read())
        read |= keys
        opaque += [f"{path}: {h}" for h in hidden]
        undeclared += [f"{path}: reads context[{k!r}]" for k in sorted(keys - KEYS)]
    assert undeclared == [], "declare the key in scenarios/properties/base.py:PropertyContext"
    assert opaque == [], "a use of the context the scan cannot read: read keys by name"
    assert KEYS - read == set(), "declared but read by no property: remove it"


def test_the_scan_sees_every_kind_of_read_and_what_it_cannot_see():
    src = ("def check(events, context):\n"
           "    a = context.get('a')\n"
           "    b = context['b']\n"
           "    if 'c' in context or 'd' not in context:\n"
           "        pass\n"
           "    e = (context or {}).get('e', 1)\n"
           "    context = context or {}\n"
           "    f(context)\n"
           "    other.get('z')\n")
    assert context_reads(src) == ({"a", "b", "c", "d", "e"}, [])
    _, opaque = context_reads("def check(events, context):\n"
                              "    k = 'x'\n"
                              "    context.get(k)\n"
                              "    context[k]\n"
                              "    context.items()\n"
                              "    for key in context: pass\n"
                              "    g(**context)\n"
                              "    dict(context)\n")
    assert [o.split(":")[0] for o in opaque] == ["line 3", "line 4", "line 5", "line 6", "line 7", "line 8"]


def test_a_planted_read_of_an_undeclared_key_is_caught(tmp_path, monkeypatch):
    planted = tmp_path / "planted.py"
    planted.write_text("def check(events, context):\n    return context.get('not_a_key')\n")
    monkeypatch.setattr(sys.modules[__name__], "READERS", READERS + [str(planted)])
    with pytest.raises(AssertionError, match="not_a_key"):
        test_every_key_a_property_reads_is_declared()


def conforms(value, tp) -> bool:
    """Whether `value` is of the declared type `tp` (the forms PropertyContext uses)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is typing.Any:
        return True
    if origin is typing.Union:
        return any(conforms(value, a) for a in args)
    if tp is type(None):
        return value is None
    if typing.is_typeddict(tp):
        hints = typing.get_type_hints(tp)
        return (isinstance(value, dict) and set(value) <= set(hints)
                and set(value) >= tp.__required_keys__ and all(conforms(v, hints[k]) for k, v in value.items()))
    if origin is list:
        return isinstance(value, list) and all(conforms(v, args[0]) for v in value)
    if origin is dict:
        return isinstance(value, dict) and all(conforms(k, args[0]) and conforms(v, args[1]) for k, v in value.items())
    if origin is tuple:
        return isinstance(value, tuple) and len(value) == len(args) and all(map(conforms, value, args))
    if tp is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if tp is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, tp)


def test_the_type_check_can_fail():
    hints = typing.get_type_hints(PropertyContext)
    assert conforms([{"index": 0, "kind": "kill_worker", "failure_seq": 7}], hints["landed"])
    assert not conforms([{"index": 0, "kind": "kill_worker"}], hints["landed"])          # a key missing
    assert not conforms({7: ("worker_group", "kill_worker", "0")}, hints["expected_budgets"])
    assert not conforms(["loss", 3], hints["monotonic"])
    assert conforms(None, hints["max_lost_steps"]) and not conforms(True, hints["max_lost_steps"])


class Recording(dict):
    """A context that records every key asked of it (a property's crash is swallowed by
    run_checks, so a raise alone would not be seen)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.asked = set()

    def get(self, key, default=None):
        self.asked.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.asked.add(key)
        return super().__getitem__(key)

    def __contains__(self, key):
        self.asked.add(key)
        return super().__contains__(key)


def judged_with_recording(folder, monkeypatch):
    """The run of `folder` judged again (`ftharness check`'s judgement), with the context
    `check_context` built for it, and that context."""
    from ftharness.reports.judgement import rejudge
    from ftharness.scenarios import verdict

    built = []
    original = verdict.check_context

    def recording(*args, **kwargs):
        built.append(Recording(original(*args, **kwargs)))
        return built[-1]

    monkeypatch.setattr(verdict, "check_context", recording)
    summary = rejudge(os.path.join(DATA, folder))
    assert len(built) == 1
    return summary, built[0]


@pytest.mark.parametrize("folder", RECORDED)
def test_check_context_builds_every_declared_key_of_its_type(folder, monkeypatch):
    """The one builder: exactly the declared keys, each of the declared type; and every key
    the properties asked of it while judging a recorded run is declared."""
    import json

    summary, context = judged_with_recording(folder, monkeypatch)
    assert set(context) == KEYS
    hints = typing.get_type_hints(PropertyContext)
    wrong = {k: v for k, v in context.items() if not conforms(v, hints[k])}
    assert wrong == {}
    assert context.asked and context.asked <= KEYS, sorted(context.asked - KEYS)
    recorded = json.load(open(os.path.join(DATA, folder, "summary.json")))
    assert summary["verdict"] == recorded["verdict"]   # the typed context changed no judgement


def test_synthetic_contexts_declare_their_keys():
    """Synthetic histories build their own contexts (scenarios/synthetic.py): only declared keys."""
    from ftharness.scenarios.reference_data import WorkloadConfig
    from ftharness.scenarios.synthetic import Fault, Plan, generate

    syn = generate(Plan(WorkloadConfig(steps=6, checkpoint_every=2), num_workers=2,
                        failure_config={"max_failures": 2}, faults=[Fault("worker_group", after_steps=3)]))
    hints = typing.get_type_hints(PropertyContext)
    assert set(syn.context) <= KEYS
    assert {k: v for k, v in syn.context.items() if not conforms(v, hints[k])} == {}
