"""Doctor rules that depend on the Ray release the code will run on.

The release is the installed one unless `doctor --ray VERSION` names another
(`set_target`). Each rule reads the facts of ftharness.releases: a setting
that release lacks (fit() raises TypeError before training), an API it does
not have, an environment variable it ignores or reads differently.
"""

import ast
from typing import Iterator, Optional

from ftharness import releases
from ftharness.harness.doctor.rules import Hit, rule
from ftharness.harness.doctor.source import Module, has_star, kw

_target: Optional[str] = None


def set_target(version: Optional[str]) -> None:
    """The release the rules judge for (None: the installed one)."""
    global _target
    _target = version


def target() -> Optional[releases.Release]:
    return releases.release(_target or releases.installed())


def _version() -> str:
    return _target or releases.installed() or "?"


@rule("release-missing-setting", "error",
      "A FailureConfig setting the release does not have: ray.train.FailureConfig raises TypeError, so "
      "the trainer never starts (max_preemption_failures arrived in 2.58, the preemption grace settings in 2.60).",
      "Leave the setting out on this release (preemptions are then charged to max_failures), or upgrade Ray.")
def missing_setting(m: Module) -> Iterator[Hit]:
    rel = target()
    if rel is None:
        return
    for c in m.calls_to("ray.train.FailureConfig"):
        for k in c.keywords:
            if k.arg and k.arg not in rel.failure_config and k.arg in _KNOWN_FC:
                since = releases.field_needs(k.arg)
                yield k.value, (f"FailureConfig({k.arg}=...) does not exist on Ray {_version()}"
                                f"{f' (it arrived in {since.name})' if since else ''}")


_KNOWN_FC = set().union(*(r.failure_config for r in releases.RELEASES.values()))


@rule("release-elastic", "error",
      "ScalingConfig(num_workers=(min, max)) is elastic training, which the release does not have "
      "(from 2.55): the tuple is refused before training starts.",
      "Use a fixed num_workers on this release, or upgrade Ray to 2.55 or later.")
def elastic(m: Module) -> Iterator[Hit]:
    rel = target()
    if rel is None or rel.elastic:
        return
    for c in m.calls_to("ray.train.ScalingConfig"):
        value = c.args[0] if c.args else kw(c, "num_workers")
        if isinstance(value, (ast.Tuple, ast.List)):
            yield value, f"num_workers={ast.unparse(value)} is elastic, which Ray {_version()} does not have"


@rule("release-missing-api", "error",
      "The train function calls an API the release does not have; it raises AttributeError or TypeError "
      "on every worker, which Ray then retries as a worker failure until max_failures is spent.",
      "Guard the call by the release (hasattr) or upgrade Ray.")
def missing_api(m: Module) -> Iterator[Hit]:
    rel = target()
    if rel is None:
        return
    if not rel.get_preemption_info:
        for c in m.calls_to("ray.train.get_preemption_info"):
            yield c, f"ray.train.get_preemption_info() does not exist on Ray {_version()} (from 2.58)"
    if releases.parse(_version()) < (2, 56, 0):
        for c in m.calls_to("ray.train.get_all_reported_checkpoints"):
            if kw(c, "timeout_s") is not None and not has_star(c):
                yield c, f"get_all_reported_checkpoints(timeout_s=...) does not exist on Ray {_version()} (from 2.56)"


def _env_settings(m: Module) -> Iterator[tuple]:
    """(node, name, value) for string environment settings: os.environ["X"] = "v",
    os.environ.setdefault("X", "v"), and {"X": "v"} in dict literals (runtime_env env_vars)."""
    for node in ast.walk(m.tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and isinstance(t.slice, ast.Constant) and isinstance(t.slice.value, str):
                    yield node, t.slice.value, str(node.value.value)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setdefault":
            if len(node.args) == 2 and all(isinstance(a, ast.Constant) for a in node.args):
                yield node, str(node.args[0].value), str(node.args[1].value)
        elif isinstance(node, ast.Dict):
            for k, v in zip(node.keys, node.values):
                if isinstance(k, ast.Constant) and isinstance(k.value, str) and isinstance(v, ast.Constant):
                    yield k, k.value, str(v.value)


_TIMEOUT_VARS = ("RAY_TRAIN_COLLECTIVE_TIMEOUT_S", "RAY_TRAIN_REPORT_BARRIER_TIMEOUT_S")


@rule("release-collective-timeout", "error",
      "The collective timeout is read by another name, or differently, on the release: 2.51 reads "
      "RAY_TRAIN_REPORT_BARRIER_TIMEOUT_S, 2.52 and later RAY_TRAIN_COLLECTIVE_TIMEOUT_S; from 2.56 the value "
      "-1 no longer means 'no timeout' but makes every report and barrier time out at once.",
      "Set the variable the release reads; for no timeout on 2.56+, leave it unset.")
def collective_timeout(m: Module) -> Iterator[Hit]:
    rel = target()
    if rel is None:
        return
    for node, name, value in _env_settings(m):
        if name not in _TIMEOUT_VARS:
            continue
        if name != rel.collective_timeout_env:
            yield node, f"{name} does nothing on Ray {_version()}, which reads {rel.collective_timeout_env}"
        elif value.strip() == "-1" and releases.parse(_version()) >= (2, 56, 0):
            yield node, f"{name}=-1 makes every report and barrier time out at once on Ray {_version()}"


@rule("release-sync-shutdown-callback", "error",
      "From 2.55 ControllerCallback.before_controller_shutdown is a coroutine the controller awaits; a "
      "plain def override returns None there, and the controller's shutdown fails with a TypeError.",
      "Define it as `async def before_controller_shutdown(self)`.")
def sync_shutdown(m: Module) -> Iterator[Hit]:
    if releases.parse(_version() if _version() != "?" else "0.0") < (2, 55, 0):
        return
    for cls in ast.walk(m.tree):
        if isinstance(cls, ast.ClassDef) and any("ControllerCallback" in ast.unparse(b) for b in cls.bases):
            for fn in cls.body:
                if isinstance(fn, ast.FunctionDef) and fn.name == "before_controller_shutdown":
                    yield fn, f"{cls.name}.before_controller_shutdown is a plain def; Ray {_version()} awaits it"
