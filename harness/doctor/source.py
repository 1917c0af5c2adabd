"""A parsed user file and the facts the rules share: its functions and their own
statements, the Ray Train trainers it builds, and which functions run on the workers.
"""

import ast
import os
from typing import Dict, Iterator, List, Optional

from ftharness.harness.doctor.imports import Names

#: worker-side ray.train calls: a function that makes one is a train function
WORKER_API = {"ray.train.report", "ray.train.get_checkpoint", "ray.train.get_context",
              "ray.train.get_dataset_shard", "ray.train.torch.prepare_model",
              "ray.train.torch.prepare_data_loader", "ray.train.lightning.prepare_trainer",
              "ray.train.huggingface.transformers.prepare_trainer"}
#: V1 trainers: the v1-api rule reports them; the configuration rules leave them alone
V1_TRAINERS = {"ray.train.Trainer", "ray.train.lightning.LightningTrainer",
               "ray.train.huggingface.TransformersTrainer", "ray.train.huggingface.AccelerateTrainer",
               "ray.train.huggingface.transformers.TransformersTrainer"}

FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)


def kw(call: ast.Call, name: str) -> Optional[ast.expr]:
    return next((k.value for k in call.keywords if k.arg == name), None)


def has_star(call: ast.Call) -> bool:
    """`f(**opts)` or `f(*args)`: what it passes cannot be known."""
    return any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args)


def is_none(node: Optional[ast.expr]) -> bool:
    return node is None or (isinstance(node, ast.Constant) and node.value is None)


def own_nodes(fn: ast.AST) -> List[ast.AST]:
    """A function's own nodes: nested functions and classes are functions of their own."""
    out, stack = [], [n for n in fn.body if not isinstance(n, (*FUNCS, ast.ClassDef))]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(c for c in ast.iter_child_nodes(n) if not isinstance(c, (*FUNCS, ast.ClassDef)))
    return out


def is_trainer(q: Optional[str]) -> bool:
    return bool(q and q.startswith("ray.train.") and q.endswith("Trainer") and q not in V1_TRAINERS)


class Module:
    """One parsed file; `project` maps (module stem, function) to a train function's
    get_dataset_shard call, across every file analysed together."""

    def __init__(self, path: str, tree: ast.Module):
        self.path, self.tree, self.names = path, tree, Names(tree)
        self.stem = os.path.splitext(os.path.basename(path))[0]
        self.functions = [n for n in ast.walk(tree) if isinstance(n, FUNCS)]
        self.nodes = {fn: own_nodes(fn) for fn in self.functions}
        self.parent = {c: p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
        self.all_calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
        self.trainers = [c for c in self.all_calls if is_trainer(self.names.call(c))]
        passed = {self.train_fn_of(t) for t in self.trainers}
        self.train_fns = [fn for fn in self.functions
                          if fn in passed or self.calls(fn, *WORKER_API)]
        self.project: Dict[tuple, tuple] = {}

    def calls_to(self, *quals: str) -> Iterator[ast.Call]:
        return (c for c in self.all_calls if self.names.call(c) in quals)

    def calls(self, fn: ast.AST, *quals: str) -> List[ast.Call]:
        return [n for n in self.nodes[fn] if isinstance(n, ast.Call) and self.names.call(n) in quals]

    def helpers(self, fn: ast.AST) -> List[ast.AST]:
        """`fn` and the module's functions it calls by name (one level)."""
        called = {n.func.id for n in self.nodes[fn] if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
        return [fn] + [f for f in self.functions if f.name in called and f is not fn]

    def related(self, fn: ast.AST) -> List[ast.AST]:
        """`fn`, its helpers, the functions it is nested in and those nested in it: a
        closure that reports belongs to the train function that restores."""
        outer = [p for _, p in self.ancestors(fn, self.tree) if isinstance(p, FUNCS)]
        inner = [f for f in ast.walk(fn) if isinstance(f, FUNCS) and f is not fn]
        return list(dict.fromkeys(self.helpers(fn) + outer + inner))

    def conditional(self, node: ast.AST, fn: ast.AST) -> bool:
        """Whether `node` runs only when some test in `fn` passes."""
        return any(isinstance(p, (ast.If, ast.IfExp, ast.ExceptHandler)) and c is not getattr(p, "test", None)
                   for c, p in self.ancestors(node, fn))

    def function_named(self, name: str) -> Optional[ast.AST]:
        found = [f for f in self.functions if f.name == name]
        return found[-1] if found else None

    def train_fn_of(self, trainer: ast.Call) -> Optional[ast.AST]:
        arg = trainer.args[0] if trainer.args else kw(trainer, "train_loop_per_worker")
        return self.function_named(arg.id) if isinstance(arg, ast.Name) else None

    def assigned(self, name: str) -> List[ast.expr]:
        """Every value the module assigns to `name` (any scope)."""
        return [n.value for n in ast.walk(self.tree)
                if isinstance(n, (ast.Assign, ast.AnnAssign)) and n.value is not None
                and any(isinstance(t, ast.Name) and t.id == name
                        for t in (n.targets if isinstance(n, ast.Assign) else [n.target]))]

    def ancestors(self, node: ast.AST, stop: ast.AST) -> Iterator[tuple]:
        """(child, parent) pairs from `node` up to `stop`."""
        child = node
        while child is not stop and child in self.parent:
            yield child, self.parent[child]
            child = self.parent[child]


def derived_names(m: Module, fn: ast.AST, seed, through_calls: bool = True) -> set:
    """Names in `fn` whose value comes from an expression `seed` accepts, directly or
    through other such names (`rank = ctx.get_world_rank(); first = rank == 0`).
    Without `through_calls`, a value that passes through any other call (`model = build(rank)`)
    does not count."""
    names: set = set()

    def plain(value):
        inside = {id(x) for n in ast.walk(value) if seed(n) for x in ast.walk(n)}
        return all(id(n) in inside for n in ast.walk(value) if isinstance(n, ast.Call))
    pairs = []
    for n in m.nodes[fn]:
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and n.value is not None:
            pairs += [(t, n.value) for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
        elif isinstance(n, ast.NamedExpr):
            pairs.append((n.target, n.value))
        elif isinstance(n, (ast.With, ast.AsyncWith)):
            pairs += [(i.optional_vars, i.context_expr) for i in n.items if i.optional_vars is not None]
    for _ in range(4):  # a fixed point: chains are short
        for target, value in pairs:
            if refers(value, seed, names) and (through_calls or plain(value)):
                names |= {t.id for t in ast.walk(target) if isinstance(t, ast.Name)}
    return names


def refers(e: ast.AST, seed, names: set) -> bool:
    """Whether expression `e` holds a node `seed` accepts or one of `names`."""
    return any(seed(n) or (isinstance(n, ast.Name) and n.id in names) for n in ast.walk(e))
