"""The rules of `ftharness doctor`: one function per pitfall of Ray Train V2 under faults.

A rule reads one parsed file (`Module`) and yields (node, message). The registry
keeps its id, its severity, why it hurts when something fails, and the fix. Rules
are precise rather than clever: a path, name or rank they cannot tell statically is
left alone, not guessed.
"""

import ast
import re
from dataclasses import dataclass
from typing import Callable, Dict, Iterator, Optional, Tuple

from ftharness.harness.doctor.source import (Module, derived_names, has_star, is_none, kw, refers)

Hit = Tuple[ast.AST, str]


@dataclass(frozen=True)
class Rule:
    id: str
    severity: str  # error | warning | info
    why: str
    fix: str
    check: Optional[Callable[[Module], Iterator[Hit]]]


RULES: Dict[str, Rule] = {}


def rule(id: str, severity: str, why: str, fix: str):
    def register(check):
        RULES[id] = Rule(id, severity, why, fix, check)
        return check
    return register


RULES["syntax"] = Rule("syntax", "error", "The file does not parse, so nothing in it was checked.",
                       "Fix the syntax error (python -m py_compile FILE shows it).", None)


def _short(m: Module, call: ast.Call) -> str:
    return (m.names.call(call) or ast.unparse(call.func)).rpartition(".")[2]


def run_configs(m: Module) -> Iterator[Tuple[ast.Call, Optional[ast.Call]]]:
    """(where, RunConfig call) for each RunConfig, and (trainer, None) for each trainer
    built without a run_config (which is a RunConfig of defaults)."""
    for c in m.calls_to("ray.train.RunConfig"):
        if not has_star(c):
            yield c, c
    for t in m.trainers:
        if not has_star(t) and is_none(kw(t, "run_config")):
            yield t, None


# --- failure budget ---------------------------------------------------------------

@rule("max-failures-default", "error",
      "FailureConfig's max_failures defaults to 0: the first worker that dies (a killed process, "
      "an OOM, a lost node) ends the run, whatever checkpoints exist.",
      "FailureConfig(max_failures=N) with N > 0 (-1 retries without limit).")
def max_failures_default(m: Module) -> Iterator[Hit]:
    for c in m.calls_to("ray.train.FailureConfig"):
        value = c.args[0] if c.args else kw(c, "max_failures")
        if value is None and not has_star(c):
            yield c, "FailureConfig() leaves max_failures at its default 0: no worker failure is retried"
        elif isinstance(value, ast.Constant) and value.value == 0:
            yield value, "max_failures=0: no worker failure is retried"


@rule("no-failure-config", "error",
      "Without a FailureConfig, max_failures is 0: the first worker failure ends the run.",
      "RunConfig(failure_config=FailureConfig(max_failures=3), ...) passed to the trainer as run_config=.")
def no_failure_config(m: Module) -> Iterator[Hit]:
    for where, rc in run_configs(m):
        if rc is None:
            yield where, f"{_short(m, where)}(...) has no run_config, so no FailureConfig: max_failures is 0"
        elif is_none(kw(rc, "failure_config")):
            yield where, "RunConfig has no failure_config: max_failures is 0"


# --- storage and name ---------------------------------------------------------------

_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_SHARED = ("/mnt/", "/nfs", "/efs", "/fsx", "/lustre", "/gpfs", "/shared", "/dbfs")


def _literal_prefix(node: ast.expr) -> Optional[str]:
    """The text a path expression starts with, when it starts with a literal."""
    if isinstance(node, ast.Call) and node.args and ast.unparse(node.func).endswith("Path"):
        node = node.args[0]
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant):
        return str(node.values[0].value)
    return None


@rule("local-storage", "warning",
      "On a cluster of several nodes, checkpoints written to one node's local disk cannot be read "
      "by workers restarted on another node, nor after that node is lost.",
      "storage_path on storage every node reaches: s3://, gs://, abfs://, hdfs:// or an NFS mount.")
def local_storage(m: Module) -> Iterator[Hit]:
    for where, rc in run_configs(m):
        if rc is not None and not is_none(kw(rc, "storage_filesystem")):
            continue  # a custom filesystem: storage_path is relative to it
        path = None if rc is None else kw(rc, "storage_path")
        if is_none(path):
            yield where, "no storage_path: checkpoints go to ~/ray_results on the local disk of the driver's node"
            continue
        text = _literal_prefix(path)
        scheme = _SCHEME.match(text or "")
        if text is None or (scheme and scheme.group(1).lower() != "file"):
            continue
        local = text[len("file://"):] if scheme else text
        mount = next((p for p in _SHARED if local.startswith(p)), None)
        if mount:
            yield path, (f"storage_path {ast.unparse(path)} is shared only if {mount.rstrip('/')} is the same "
                         "network mount on every node; that cannot be told from the code")
        else:
            yield path, f"storage_path {ast.unparse(path)} is a local path"


_VOLATILE_MODULES = {"time", "datetime", "uuid", "random", "secrets"}


def _volatile(m: Module, node: ast.expr, depth: int = 0) -> Optional[str]:
    """The call that makes a value differ at each start (time, uuid, random), if any."""
    for n in ast.walk(node):
        q = m.names.call(n)
        if q and (q.partition(".")[0] in _VOLATILE_MODULES or q in ("os.getpid", "os.urandom")):
            return q
        if isinstance(n, ast.Name) and depth < 3:
            found = next((v for e in m.assigned(n.id) if (v := _volatile(m, e, depth + 1))), None)
            if found:
                return found
    return None


@rule("unstable-name", "info",
      "A run is resumed by calling fit() again with the same RunConfig(name, storage_path); without a "
      "name Ray picks ray_train_run-<date>, so a driver or controller that dies starts over from scratch.",
      "RunConfig(name='my-run', ...): a fixed name, or one passed in by whoever restarts the driver.")
def unstable_name(m: Module) -> Iterator[Hit]:
    for where, rc in run_configs(m):
        name = None if rc is None else kw(rc, "name")
        if is_none(name):
            yield where, "no RunConfig(name=...): a restarted driver cannot resume this run"
        elif (source := _volatile(m, name)):
            yield name, f"the run name comes from {source}(): it differs at every start, so nothing resumes"


# --- V1 APIs ----------------------------------------------------------------------------

_CONTEXT = ("get_world_rank", "get_local_rank", "get_world_size", "get_local_world_size", "get_node_rank")
V1: Dict[str, str] = {
    "ray.air.session": "ray.train's report, get_checkpoint, get_context and get_dataset_shard",
    "ray.air.session.report": "ray.train.report(metrics, checkpoint=...)",
    "ray.air.session.get_checkpoint": "ray.train.get_checkpoint()",
    "ray.air.session.get_dataset_shard": "ray.train.get_dataset_shard(name)",
    **{f"ray.air.session.{f}": f"ray.train.get_context().{f}()" for f in _CONTEXT},
    "ray.air.config": "ray.train's RunConfig, ScalingConfig, FailureConfig and CheckpointConfig",
    **{f"ray.air{mod}.{c}": f"ray.train.{c}" for mod in ("", ".config")
       for c in ("RunConfig", "ScalingConfig", "FailureConfig", "CheckpointConfig")},
    "ray.air.checkpoint": "ray.train.Checkpoint", "ray.air.Checkpoint": "ray.train.Checkpoint",
    "ray.air.result": "ray.train.Result", "ray.air.Result": "ray.train.Result",
    **{f"{c}.from_dict": "write files into a directory, then ray.train.Checkpoint.from_directory(dir)"
       for c in ("ray.train.Checkpoint", "ray.air.Checkpoint", "ray.air.checkpoint.Checkpoint")},
    **{f"{c}.to_dict": "`with checkpoint.as_directory() as d:` and read the files"
       for c in ("ray.train.Checkpoint", "ray.air.Checkpoint", "ray.air.checkpoint.Checkpoint")},
    "ray.train.Trainer": "ray.train.torch.TorchTrainer (or another framework's trainer)",
    "ray.train.lightning.LightningTrainer": "TorchTrainer whose train function builds a pl.Trainer with "
                                            "ray.train.lightning.prepare_trainer and RayTrainReportCallback",
    "ray.train.lightning.LightningConfigBuilder": "a plain pl.Trainer inside a TorchTrainer train function",
    "ray.train.huggingface.TransformersTrainer": "TorchTrainer whose train function uses "
        "ray.train.huggingface.transformers.prepare_trainer and RayTrainReportCallback",
    "ray.train.huggingface.transformers.TransformersTrainer": "TorchTrainer whose train function uses "
        "ray.train.huggingface.transformers.prepare_trainer and RayTrainReportCallback",
    "ray.train.huggingface.AccelerateTrainer": "TorchTrainer, with accelerate used inside the train function",
    "ray.train.torch.TorchCheckpoint": "torch.save into a directory, then ray.train.Checkpoint.from_directory(dir)",
}
_TRIAL = {"get_trial_name": "get_context().get_experiment_name()", "get_trial_id": "train_loop_config",
          "get_trial_dir": "train_loop_config", "get_trial_resources": "train_loop_config",
          "get_metadata": "train_loop_config"}
_REMOVED_KW = {
    "resume_from_checkpoint": "ray.train.get_checkpoint() in the train function, and the same RunConfig(name, "
                              "storage_path) to resume",
    "metadata": "train_loop_config", "label_column": "a train function (train_loop_per_worker)",
    "params": "a train function (train_loop_per_worker)", "num_boost_round": "a train function (train_loop_per_worker)",
}
_REMOVED_CONFIG_KW = {"ray.train.RunConfig": ("sync_config", "verbose", "stop", "progress_reporter", "log_to_file"),
                      "ray.train.CheckpointConfig": ("checkpoint_frequency", "checkpoint_at_end"),
                      "ray.train.FailureConfig": ("fail_fast",)}


def v1_key(q: Optional[str]) -> Optional[str]:
    """The longest V1 name that `q` is or lies under."""
    while q:
        if q in V1:
            return q
        q = q.rpartition(".")[0]
    return None


@rule("v1-api", "error",
      "Ray 2.60 runs Ray Train V2 by default (RAY_TRAIN_V2_ENABLED=1): V1 APIs are gone or raise "
      "DeprecationWarning, so the job fails before or while training.",
      "Use the V2 replacement named in the message (see the Ray Train V2 migration guide).")
def v1_api(m: Module) -> Iterator[Hit]:
    for stmt, q in m.names.imports:
        if (key := v1_key(q)):
            yield stmt, f"{q} is a V1 API: use {V1[key]}"
    for node in ast.walk(m.tree):
        if isinstance(node, (ast.Name, ast.Attribute)) and not isinstance(m.parent.get(node), ast.Attribute):
            key, base = v1_key(m.names.qual(node)), m.names.base(node)
            imported = v1_key(m.names.alias.get(base.id)) if base is not None else None
            if key and (imported is None or len(key) > len(imported)):  # its import was reported already
                yield node, f"{key} is a V1 API: use {V1[key]}"
    contexts = {n.id for c in m.calls_to("ray.train.get_context")
                if isinstance(a := m.parent.get(c), ast.Assign) for n in a.targets if isinstance(n, ast.Name)}
    checkpoints = {n.id for c in m.calls_to("ray.train.get_checkpoint")
                   if isinstance(a := m.parent.get(c), ast.Assign) for n in a.targets if isinstance(n, ast.Name)}
    for node in ast.walk(m.tree):
        if not isinstance(node, ast.Attribute):
            continue
        v = node.value
        if node.attr in _TRIAL and (m.names.call(v) == "ray.train.get_context"
                                    or (isinstance(v, ast.Name) and v.id in contexts)):
            yield node, f"TrainContext.{node.attr}() is V1 (Ray Tune) only and raises in V2: use {_TRIAL[node.attr]}"
        if node.attr == "to_dict" and (m.names.call(v) == "ray.train.get_checkpoint"
                                       or (isinstance(v, ast.Name) and v.id in checkpoints)):
            yield node, "Checkpoint.to_dict() is V1: use `with checkpoint.as_directory() as d:` and read the files"
    for t in m.trainers:
        for k in t.keywords:
            if k.arg in _REMOVED_KW and not is_none(k.value):
                yield k.value, f"{_short(m, t)}({k.arg}=...) is V1 and raises in V2: use {_REMOVED_KW[k.arg]}"
    for q, removed in _REMOVED_CONFIG_KW.items():
        for c in m.calls_to(q):
            for k in c.keywords:
                if k.arg in removed:
                    yield k.value, f"{q.rpartition('.')[2]}({k.arg}=...) was removed in V2 and raises: drop it"


# --- collectives on some ranks only ---------------------------------------------------

COLLECTIVES = {"ray.train.report", "ray.train.get_preemption_info", "ray.train.collective.barrier",
               "ray.train.collective.broadcast_from_rank_zero",
               *(f"torch.distributed.{f}" for f in (
                   "barrier", "all_reduce", "all_gather", "all_gather_object", "all_gather_into_tensor",
                   "broadcast", "broadcast_object_list", "reduce", "reduce_scatter", "reduce_scatter_tensor",
                   "all_to_all", "all_to_all_single", "gather", "gather_object", "scatter", "scatter_object_list"))}
_RANK_METHODS = {"get_world_rank", "get_local_rank", "get_node_rank"}
_EXITS = (ast.Return, ast.Continue, ast.Break)


def _rank_guard(m: Module, fn: ast.AST, call: ast.Call, depends) -> Optional[ast.AST]:
    """The rank test that only some ranks pass on the way to `call`, if any: an `if`
    (or `x if c else y`) around it, or an earlier `if rank...: return/continue`."""
    q = m.names.call(call)

    def also_calls(nodes) -> bool:  # the other branch makes the same collective: every rank does
        return any(m.names.call(n) == q for e in nodes for n in ast.walk(e))

    for child, node in m.ancestors(call, fn):
        if isinstance(node, (ast.If, ast.IfExp)) and child is not node.test and depends(node.test):
            inside = node.body if isinstance(node.body, list) else [node.body]
            other = node.orelse if child in inside else node.body
            if not also_calls(other if isinstance(other, list) else [other]):
                return node
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and child in stmts:
                for s in stmts[:stmts.index(child)]:
                    if (isinstance(s, ast.If) and depends(s.test) and s.body and isinstance(s.body[-1], _EXITS)
                            and not also_calls(s.body)):
                        return s
    return None


@rule("report-some-ranks", "error",
      "In V2, ray.train.report is a collective that every worker must call, as are torch.distributed's "
      "barrier and all_reduce: if only some ranks reach it, the others wait for them forever "
      "(no collective timeout by default), and the run hangs instead of failing or finishing.",
      "Call it on every rank, the same number of times: keep the rank test around the work (writing files), "
      "not around the call; for report, pass checkpoint=None on the other ranks.")
def report_some_ranks(m: Module) -> Iterator[Hit]:
    def is_rank_call(n):
        return isinstance(n, ast.Call) and (
            (isinstance(n.func, ast.Attribute) and n.func.attr in _RANK_METHODS)
            or m.names.call(n) == "torch.distributed.get_rank")

    for fn in m.functions:
        calls = [n for n in m.nodes[fn] if m.names.call(n) in COLLECTIVES]
        if not calls:
            continue
        ranks = derived_names(m, fn, is_rank_call, through_calls=False)
        for call in calls:
            guard = _rank_guard(m, fn, call, lambda e: refers(e, is_rank_call, ranks))
            if guard is not None:
                yield call, (f"{m.names.call(call)}() is reached only on the ranks where "
                             f"`{ast.unparse(guard.test)}` (line {guard.lineno}) holds; the other ranks never call it")


# --- checkpoints: written, reported, restored --------------------------------------------

_SAVE_METHODS = {"save_checkpoint", "save_pretrained", "save_model", "save_state"}
_LOAD_METHODS = {"load_checkpoint", "load_state"}


def _attr_call(node: ast.AST, names) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in names


def _reports_checkpoint(m: Module, fn: ast.AST) -> bool:
    """`fn` (or a helper it calls) hands a checkpoint to Ray: report(checkpoint=...),
    Checkpoint.from_directory, or a framework's RayTrainReportCallback."""
    for f in m.related(fn):
        for n in m.nodes[f]:
            q = m.names.call(n)
            if q == "ray.train.Checkpoint.from_directory":
                return True
            if q == "ray.train.report" and not is_none(kw(n, "checkpoint") or (n.args[1:2] or [None])[0]):
                return True
            if isinstance(n, (ast.Name, ast.Attribute)) and (m.names.qual(n) or "").endswith(".RayTrainReportCallback"):
                return True
    return False


def _restores(m: Module, fn: ast.AST) -> bool:
    return any(m.calls(f, "ray.train.get_checkpoint") for f in m.related(fn))


_BUFFERS = {"io.BytesIO", "io.StringIO"}


def _in_memory(m: Module, e: Optional[ast.expr]) -> bool:
    """`torch.save(obj, io.BytesIO())`, or into a name only ever assigned a buffer: a
    serialisation (to send, to hash), not a checkpoint file."""
    if isinstance(e, ast.Name):
        values = m.assigned(e.id) + [i.context_expr for n in ast.walk(m.tree) if isinstance(n, (ast.With, ast.AsyncWith))
                                     for i in n.items if isinstance(i.optional_vars, ast.Name)
                                     and i.optional_vars.id == e.id]
        return bool(values) and all(m.names.call(v) in _BUFFERS for v in values)
    return m.names.call(e) in _BUFFERS


def _save_target(n: ast.Call) -> Optional[ast.expr]:
    if _attr_call(n, _SAVE_METHODS):
        return n.args[0] if n.args else None
    return n.args[1] if len(n.args) > 1 else kw(n, "f")


def _saves(m: Module, fn: ast.AST):
    return [n for n in m.nodes[fn] if (m.names.call(n) == "torch.save" or _attr_call(n, _SAVE_METHODS))
            and not _in_memory(m, _save_target(n))]


@rule("checkpoint-not-reported", "error",
      "Ray restores only checkpoints passed to ray.train.report: files written beside it are never "
      "registered, so after a failure the restarted workers cannot find them (or find stale ones).",
      "Write the files into a directory, then "
      "ray.train.report(metrics, checkpoint=ray.train.Checkpoint.from_directory(that_dir)).")
def checkpoint_not_reported(m: Module) -> Iterator[Hit]:
    for fn in m.train_fns:
        saves = sorted(_saves(m, fn), key=lambda n: (n.lineno, n.col_offset))
        if saves and not _reports_checkpoint(m, fn):
            yield saves[0], (f"{fn.name}() writes a checkpoint ({ast.unparse(saves[0].func)}) but never reports "
                             "it with ray.train.report(..., checkpoint=...)")


def _fixed(m: Module, e: ast.expr, depth: int = 0) -> bool:
    """A path written into the code: a literal, an f-string or join that starts with one,
    or a name only ever assigned such paths."""
    if isinstance(e, ast.Call) and m.names.call(e) in ("os.path.join", "pathlib.Path") and e.args:
        return _fixed(m, e.args[0], depth)
    if isinstance(e, ast.BinOp):
        return _fixed(m, e.left, depth)
    if isinstance(e, ast.Name) and depth < 3:
        values = m.assigned(e.id)
        return bool(values) and all(_fixed(m, v, depth + 1) for v in values)
    return _literal_prefix(e) is not None


_EXISTS = {"os.path.exists", "os.path.isfile", "os.path.isdir", "os.listdir", "glob.glob"}


def _if_it_exists(m: Module, node: ast.AST, fn: ast.AST) -> bool:
    """The shape of a restore: the load runs only if the file is there (`if os.path.exists(p):`,
    `if p.exists():`, or `try:` with a handler). An unconditional load of a path the job
    never writes is its input (pretrained weights), not a restore."""
    def exists_test(e):
        return any(m.names.call(c) in _EXISTS or _attr_call(c, {"exists", "is_file", "is_dir"}) for c in ast.walk(e))
    return any((isinstance(p, (ast.If, ast.IfExp)) and c is not p.test and exists_test(p.test))
               or (isinstance(p, ast.Try) and c in p.body and p.handlers)
               for c, p in m.ancestors(node, fn))


def _fixed_loads(m: Module, fn: ast.AST) -> Iterator[Hit]:
    def is_get_checkpoint(n):
        return m.names.call(n) == "ray.train.get_checkpoint"

    restores = _restores(m, fn)
    if not restores and not (_saves(m, fn) or _reports_checkpoint(m, fn)):
        return  # it never checkpoints: what it loads is input, not a restore
    derived = derived_names(m, fn, is_get_checkpoint)
    saved = {ast.unparse(t) for f in m.related(fn) for s in _saves(m, f) if (t := _save_target(s)) is not None}
    for n in m.nodes[fn]:
        if not (m.names.call(n) == "torch.load" or _attr_call(n, _LOAD_METHODS)):
            continue
        path = n.args[0] if n.args else (kw(n, "f") or kw(n, "load_dir") or kw(n, "input_dir"))
        if path is None or refers(path, is_get_checkpoint, derived):
            continue
        if not restores:
            if _fixed(m, path) and (ast.unparse(path) in saved or _if_it_exists(m, n, fn)):
                yield n, f"{fn.name}() restores from {ast.unparse(path)}, not from ray.train.get_checkpoint()"
        elif any((isinstance(p, ast.If) and c is not p.test and refers(p.test, is_get_checkpoint, derived))
                 or (isinstance(p, (ast.With, ast.AsyncWith))
                     and any(refers(i.context_expr, is_get_checkpoint, derived) for i in p.items))
                 for c, p in m.ancestors(n, fn)):
            yield n, (f"under the checkpoint from ray.train.get_checkpoint(), {fn.name}() loads "
                      f"{ast.unparse(path)}, which is not a file of that checkpoint")


@rule("fixed-restore-path", "error",
      "A fixed path is not the checkpoint Ray registered: after a restart on another node it is missing, "
      "and on the same node it may hold a newer, never-registered or half-written state.",
      "checkpoint = ray.train.get_checkpoint(); if checkpoint: with checkpoint.as_directory() as d: "
      "load from os.path.join(d, ...).")
def fixed_restore_path(m: Module) -> Iterator[Hit]:
    for fn in m.train_fns:
        yield from _fixed_loads(m, fn)


@rule("no-restore", "warning",
      "A train function that reports checkpoints but never reads ray.train.get_checkpoint() starts "
      "again from step 0 after every restart: the checkpoints cost time and save nothing.",
      "At the start of the train function: checkpoint = ray.train.get_checkpoint(); if checkpoint: load "
      "the model, optimizer and step from it.")
def no_restore(m: Module) -> Iterator[Hit]:
    for fn in m.train_fns:
        if _reports_checkpoint(m, fn) and not _restores(m, fn) and next(_fixed_loads(m, fn), None) is None:
            yield fn, f"{fn.name}() reports checkpoints but never calls ray.train.get_checkpoint()"


# --- datasets -----------------------------------------------------------------------

def _shard_call(m: Module, fn: ast.AST) -> Optional[ast.Call]:
    """A get_dataset_shard call that `fn` (or a helper) makes whatever its config says."""
    return next((c for f in m.helpers(fn) for c in m.calls(f, "ray.train.get_dataset_shard")
                 if not m.conditional(c, f)), None)


@rule("dataset-shard-without-datasets", "error",
      "ray.train.get_dataset_shard(name) reads a dataset the trainer was given with datasets=; without "
      "one, every worker raises KeyError and the run fails (and retries fail the same way).",
      "Pass the dataset to the trainer: TorchTrainer(train_func, datasets={'train': ds}, ...).")
def dataset_shard_without_datasets(m: Module) -> Iterator[Hit]:
    for t in m.trainers:
        if has_star(t) or not is_none(kw(t, "datasets")):
            continue
        fn, where = m.train_fn_of(t), None
        if fn is not None:
            shard = _shard_call(m, fn)
            where = shard and (fn.name, f"line {shard.lineno}")
        else:
            arg = t.args[0] if t.args else kw(t, "train_loop_per_worker")
            module, _, name = (m.names.qual(arg) or "").rpartition(".") if arg is not None else ("", "", "")
            found = m.project.get((module.rpartition(".")[2], name))
            where = found and (name, f"{found[0]}:{found[1]}")
        if where:
            yield t, (f"{where[0]}() calls ray.train.get_dataset_shard ({where[1]}) but "
                      f"{_short(m, t)}(...) is given no datasets=")


def dataset_index(m: Module) -> Dict[tuple, tuple]:
    """(module stem, function) -> (file, line) of its get_dataset_shard call, for other files' trainers."""
    out = {}
    for fn in m.functions:
        if (shard := _shard_call(m, fn)) is not None:
            out[(m.stem, fn.name)] = (m.path, shard.lineno)
    return out
