"""Names resolved through a module's imports, without importing anything.

`from ray import train; train.report`, `import ray.train as rt; rt.report` and
`from ray.train import report as r; r` all read as `ray.train.report`, so the
rules match Ray's public names and never a user's own function of the same name.
"""

import ast
from typing import Dict, List, Optional, Tuple

_V2_API = "ray.train.v2.api."
_V2 = "ray.train.v2."


def canon(q: str) -> str:
    """Ray's public name for a re-exported one: `ray.train.v2.api.config.RunConfig`
    is `ray.train.RunConfig`, `ray.train.v2.torch.TorchTrainer` is `ray.train.torch.TorchTrainer`."""
    if q.startswith(_V2_API):
        _, _, rest = q[len(_V2_API):].partition(".")
        return "ray.train." + rest if rest else q
    if q.startswith(_V2):
        return "ray.train." + q[len(_V2):]
    return q


class Names:
    """The dotted name each local name of a module was imported as."""

    def __init__(self, tree: ast.AST):
        self.alias: Dict[str, str] = {}
        self.imports: List[Tuple[ast.stmt, str]] = []  # (statement, dotted name imported)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.partition(".")[0]
                    self.alias[a.asname or top] = a.name if a.asname else top
                    self.imports.append((node, a.name))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    if a.name != "*":
                        self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
                        self.imports.append((node, f"{node.module}.{a.name}"))

    def base(self, node: ast.AST) -> Optional[ast.Name]:
        """The name a chain `a.b.c` starts from."""
        while isinstance(node, ast.Attribute):
            node = node.value
        return node if isinstance(node, ast.Name) else None

    def qual(self, node: ast.AST) -> Optional[str]:
        """`rt.train.report` -> `ray.train.report`; None for what was not imported."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and node.id in self.alias:
            return canon(".".join([self.alias[node.id], *reversed(parts)]))
        return None

    def call(self, node: ast.AST) -> Optional[str]:
        """The dotted name a call calls, or None."""
        return self.qual(node.func) if isinstance(node, ast.Call) else None
