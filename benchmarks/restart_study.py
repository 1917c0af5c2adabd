"""Where a Ray Train worker group's start and restart spend their time, against the floor of each
phase, with and without the settings Ray offers that shorten a phase (a real cluster; no ftharness
runner, a plain TorchTrainer).

    python benchmarks/restart_study.py [--repeats 3] [--variants baseline,no_metrics,...] [--json OUT]

Floors (each a median of --repeats fresh processes, or a plain-Ray operation on an idle cluster):
  process start        `python -c pass`
  worker imports       `python -c "import torch, ray, ray.train.torch"` (what a Train worker process
                       imports before its actor answers)
  worker imports + first optimizer
                       the same, then one torch.optim.SGD: the first optimizer imports torch._dynamo,
                       which a job with an optimizer pays before its first step
  actor via Ray        a plain actor (no runtime env) importing the same modules: Ray's worker start
                       and registration on top of the imports
  placement group      a placement group of the run's bundles, created and ready
  gloo init            torch.distributed.init_process_group(gloo) + one barrier, 2 local processes
                       that imported torch already

Phases of a real fit (TorchTrainer, gloo, 2 workers, rank 0 raises after its first report so the
group restarts once), read from the controller's own debug lines ("[Worker Group Initialization]",
ray/train/v2/_internal/execution/worker_group/worker_group.py) and the workers' clocks:
  placement group      before_worker_group_start -> "Placement group ready"
  worker actors        "... worker actors created in Xs" (process start, imports, registration)
  backend setup        the BackendSetupCallback's share of after_worker_group_start (torch's
                       process group)
  other callbacks      the rest of after_worker_group_start (metrics, datasets, ...)
  launch               "Train function launched on workers in Xs"
  group start          before_worker_group_start -> the train function running on every rank
  first report         the train function's start -> its first report returned (the report barrier)
  detection            rank 0's raise -> the controller's RESTARTING state
  to next group        RESTARTING -> the next before_worker_group_start (the old group's shutdown)

Each variant is a fresh local cluster (ray.init, 4 CPUs) with its settings; a setting that is an
environment variable is set in the driver, which Ray Train propagates to its controller and workers.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

#: the fast profile's Ray Train settings, as ftharness runs the catalog (ftharness/profiles.py)
FAST_TRAIN_ENV = {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.25", "RAY_TRAIN_WORKER_HEALTH_CHECK_TIMEOUT_S": "10",
                  "RAY_TRAIN_PREEMPTION_POLL_INTERVAL_S": "0.5", "RAY_TRAIN_WORKER_GROUP_START_TIMEOUT_S": "20"}

#: each variant: environment over the baseline's, Ray Core _system_config, and why it may help
#: (read in Ray 2.60's own code, see docs/benchmarks.md "A restart's time")
VARIANTS: Dict[str, Dict[str, Any]] = {
    "baseline": {"env": {}, "system_config": {}, "why": "the fast profile as ftharness runs it"},
    "no_metrics": {"env": {"RAY_TRAIN_METRICS_ENABLED": "0"}, "system_config": {},
                   "why": "data_parallel_trainer._create_default_callbacks: no Controller/WorkerMetricsCallback"},
    "no_structured_logging": {"env": {"RAY_TRAIN_ENABLE_CONTROLLER_STRUCTURED_LOGGING": "0",
                                      "RAY_TRAIN_ENABLE_WORKER_STRUCTURED_LOGGING": "0"}, "system_config": {},
                              "why": "logging configured without Ray Train's JSON handlers"},
    "no_print_patch": {"env": {"RAY_TRAIN_ENABLE_PRINT_PATCH": "0"}, "system_config": {},
                       "why": "workers' print() left as is"},
    "poll_0.1": {"env": {"RAY_TRAIN_HEALTH_CHECK_INTERVAL_S": "0.1"}, "system_config": {},
                 "why": "the controller's loop polls every 0.1 s instead of 0.25 s"},
    "prestart": {"env": {}, "system_config": {"enable_worker_prestart": True},
                 "why": "Ray Core keeps idle worker processes started ahead of need"},
    "job_env": {"env": {}, "system_config": {}, "job_env": True,
                "why": "the Train settings in the job's runtime_env too, so a worker's runtime env is the job's"},
}


def median(xs: List[float]) -> float:
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 3) if xs else float("nan")


# ------------------------------------------------------------------------------------------ floors
def time_process(code: str, repeats: int) -> float:
    out = []
    for _ in range(repeats):
        t = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)
        out.append(time.perf_counter() - t)
    return median(out)


#: a job's first torch.optim optimizer: torch's _disable_dynamo wrapper imports torch._dynamo on first use
FIRST_OPTIMIZER = ("import torch, ray, ray.train.torch; "
                   "torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)")


GLOO_CHILD = r"""
import os, sys, time
import torch, torch.distributed as dist
rank = int(sys.argv[1]); port = sys.argv[2]
t = time.perf_counter()
dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
dist.barrier()
print(time.perf_counter() - t)
dist.destroy_process_group()
"""


def gloo_floor(repeats: int) -> float:
    import socket
    out = []
    for _ in range(repeats):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = str(s.getsockname()[1])
        procs = [subprocess.Popen([sys.executable, "-c", GLOO_CHILD, str(r), port], stdout=subprocess.PIPE, text=True)
                 for r in range(2)]
        times = [float(p.communicate(timeout=120)[0].strip().splitlines()[-1]) for p in procs]
        out.append(max(times))
    return median(out)


def ray_floors(repeats: int) -> Dict[str, float]:
    import ray
    from ray.util.placement_group import placement_group, remove_placement_group

    ray.init(num_cpus=4, include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=1)
        class Bare:
            def ready(self):
                return os.getpid()

        @ray.remote(num_cpus=1)
        class Imports:
            def __init__(self):
                import torch  # noqa: F401
                import ray.train.torch  # noqa: F401

            def ready(self):
                return os.getpid()

        out: Dict[str, List[float]] = {"bare actor": [], "actor via Ray": [], "placement group": []}
        for _ in range(repeats):
            for name, cls in (("bare actor", Bare), ("actor via Ray", Imports)):
                t = time.perf_counter()
                actors = [cls.options(runtime_env={"env_vars": {"STUDY": str(time.time())}}).remote() for _ in range(2)]
                ray.get([a.ready.remote() for a in actors])   # a runtime env of its own: a fresh process each
                out[name].append(time.perf_counter() - t)
                for a in actors:
                    ray.kill(a)
            t = time.perf_counter()
            pg = placement_group([{"CPU": 1}, {"CPU": 1}])
            ray.get(pg.ready())
            out["placement group"].append(time.perf_counter() - t)
            remove_placement_group(pg)
            time.sleep(0.5)
        return {k: median(v) for k, v in out.items()}
    finally:
        ray.shutdown()


# ------------------------------------------------------------------------------------------- a fit
def make_callback(log_path: str):
    from ftharness.harness.cluster import ray_private as rp

    class StudyCallback(rp.ControllerCallback, rp.WorkerGroupCallback):
        """Runs in the controller: appends (time, what) lines to log_path, including the worker
        group's own debug lines with their times."""

        def __init__(self, path):
            self.path = path
            self._installed = False

        def _write(self, what: str, **fields) -> None:
            with open(self.path, "a") as f:
                f.write(json.dumps({"t": time.time(), "what": what, **fields}) + "\n")

        def _install(self) -> None:
            if self._installed:
                return
            self._installed = True
            writer = self

            class Handler(logging.Handler):
                def emit(self, record):
                    msg = record.getMessage()
                    if "[Worker Group Initialization]" in msg:
                        writer._write("debug", line=msg, t_record=record.created)

            lg = logging.getLogger("ray.train.v2._internal.execution.worker_group.worker_group")
            lg.setLevel(logging.DEBUG)
            lg.addHandler(Handler(level=logging.DEBUG))

        def before_worker_group_start(self, worker_group_context):
            self._install()
            self._write("before_group_start", attempt=worker_group_context.run_attempt_id)

        def after_worker_group_start(self, worker_group):
            self._write("after_group_start_user")

        def after_controller_state_update(self, previous_state, current_state):
            self._write("state", prev=type(previous_state).__name__, cur=type(current_state).__name__)

    return StudyCallback(log_path)


def train_fn(config):
    import tempfile as tf
    import time as tm

    import psutil
    import ray.train as rt
    import torch.distributed as dist

    t_fn = tm.time()
    rank = rt.get_context().get_world_rank()
    restored = rt.get_checkpoint() is not None

    def note(what, **fields):
        with open(config["worker_log"], "a") as f:
            f.write(json.dumps({"t": tm.time(), "what": what, "rank": rank, "restored": restored, **fields}) + "\n")

    note("fn_start", t_fn=t_fn, proc_start=psutil.Process().create_time())
    t = tm.time()
    dist.barrier()
    note("barrier", s=tm.time() - t)
    with tf.TemporaryDirectory() as d:
        with open(os.path.join(d, "state"), "w") as f:
            f.write("1")
        t = tm.time()
        rt.report({"step": 1}, checkpoint=rt.Checkpoint.from_directory(d))
        note("first_report", s=tm.time() - t)
    if not restored:
        if rank == 0:
            note("raise")
            raise RuntimeError("planted failure: restart the group")
        tm.sleep(60)


def one_fit(variant: Dict[str, Any], workdir: str, cluster: str = "local") -> Dict[str, Any]:
    import ray
    from ray.train import FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    env = dict(FAST_TRAIN_ENV, **variant["env"])
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    ctrl_log, worker_log = os.path.join(workdir, "controller.jsonl"), os.path.join(workdir, "workers.jsonl")
    embedded = None
    try:
        if cluster in ("embedded", "namespaces"):   # the catalog's clusters: ftharness's embedded one
            from ftharness.harness.cluster.handles import EmbeddedCluster

            # 3 one-CPU nodes; the network scenarios' own: 3 two-CPU nodes, each in a namespace
            embedded = (EmbeddedCluster(nodes=3, cpus_per_node=1) if cluster == "embedded" else
                        EmbeddedCluster(nodes=3, cpus_per_node=2, network="namespaces")).start()
        else:
            init = {"num_cpus": 4, "include_dashboard": False, "log_to_driver": False}
            if variant["system_config"]:
                init["_system_config"] = dict(variant["system_config"])
            if variant.get("job_env"):
                init["runtime_env"] = {"env_vars": dict(env)}
            ray.init(**init)
        time.sleep(2.0)   # the node's own start-up settles before the fit is timed
        t0 = time.time()
        trainer = TorchTrainer(
            train_fn, train_loop_config={"worker_log": worker_log},
            scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
            run_config=RunConfig(storage_path=os.path.join(workdir, "storage"), name="study",
                                 failure_config=FailureConfig(max_failures=1),
                                 callbacks=[make_callback(ctrl_log)]))
        trainer.fit()
        wall = time.time() - t0
    finally:
        if embedded is not None:
            embedded.close()
        else:
            ray.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return phases(read_jsonl(ctrl_log), read_jsonl(worker_log), wall)


def read_jsonl(path: str) -> List[dict]:
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


_SECONDS = re.compile(r"in ([0-9.]+)s")


def phases(ctrl: List[dict], workers: List[dict], wall: float) -> Dict[str, Any]:
    """Per attempt (first start, then the restart's start), the seconds of each phase."""
    starts = [e for e in ctrl if e["what"] == "before_group_start"]
    out: Dict[str, Any] = {"wall": wall, "attempts": []}
    for i, s in enumerate(starts):
        end = starts[i + 1]["t"] if i + 1 < len(starts) else float("inf")
        mine = [e for e in ctrl if s["t"] <= e["t"] < end]
        restored = i > 0
        fn = [w for w in workers if w["what"] == "fn_start" and w["restored"] == restored]
        rep = [w for w in workers if w["what"] == "first_report" and w["restored"] == restored]
        a: Dict[str, Any] = {}
        for e in mine:
            line = e.get("line", "")
            m = _SECONDS.search(line)
            if not m:
                continue
            secs = float(m.group(1))
            if "Placement group ready" in line:
                a["placement group"] = secs
            elif "worker actors created" in line:
                a["worker actors"] = secs
            elif "after_worker_group_start callbacks completed" in line:
                backend = re.search(r"BackendSetupCallback: ([0-9.]+)s", line)
                a["backend setup"] = float(backend.group(1)) if backend else None
                a["other callbacks"] = round(secs - (a["backend setup"] or 0.0), 3)
            elif "Train function launched" in line:
                a["launch"] = secs
        if fn:
            a["group start"] = max(w["t_fn"] for w in fn) - s["t"]
            a["process start to fn"] = statistics.median(w["t_fn"] - w["proc_start"] for w in fn)
        if rep:
            a["first report"] = max(w["s"] for w in rep)
        if i > 0:
            raised = [w["t"] for w in workers if w["what"] == "raise"]
            restarting = [e["t"] for e in ctrl if e["what"] == "state" and "Restarting" in e.get("cur", "")]
            if raised and restarting:
                a["detection"] = restarting[0] - raised[0]
                a["to next group"] = s["t"] - restarting[0]
        out["attempts"].append(a)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--variants", default=",".join(VARIANTS))
    p.add_argument("--no-floors", action="store_true")
    p.add_argument("--cluster", choices=("local", "embedded", "namespaces"), default="local",
                   help="local: one ray.init node, no dashboard (the floor's setting); embedded: ftharness's "
                        "embedded cluster as the catalog runs on (a head with the dashboard, 3 one-CPU nodes; "
                        "variants with a Ray Core setting or a job env do not apply); namespaces: the network "
                        "scenarios' cluster (3 two-CPU nodes, each in a network namespace of its own)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    # a local ray.init() of Ray 2.60 turns token authentication on and saves ~/.ray/auth_token,
    # which later `ray start` heads on this host pick up: the study leaves the host as it found it
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    report: Dict[str, Any] = {"ray": None, "cluster": args.cluster, "floors": {}, "variants": {}}
    import ray
    report["ray"] = ray.__version__
    if not args.no_floors:
        f = report["floors"]
        f["process start"] = time_process("pass", args.repeats)
        f["worker imports"] = time_process("import torch, ray, ray.train.torch", args.repeats)
        f["worker imports + first optimizer"] = time_process(FIRST_OPTIMIZER, args.repeats)
        f["gloo init"] = gloo_floor(args.repeats)
        f.update(ray_floors(args.repeats))
        print("floors:", json.dumps(f), flush=True)
    for name in args.variants.split(","):
        runs = []
        for r in range(args.repeats):
            with tempfile.TemporaryDirectory(prefix="restart-study-") as d:
                runs.append(one_fit(VARIANTS[name], d, args.cluster))
        report["variants"][name] = {"why": VARIANTS[name]["why"], "runs": runs, "median": summarize(runs)}
        print(name, json.dumps(report["variants"][name]["median"]), flush=True)
    print_table(report)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=1)
    return 0


PHASES = ("placement group", "worker actors", "backend setup", "other callbacks", "launch", "group start",
          "process start to fn", "first report", "detection", "to next group")


def summarize(runs: List[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {"wall": median([r["wall"] for r in runs])}
    for which, idx in (("start", 0), ("restart", 1)):
        for ph in PHASES:
            vals = [r["attempts"][idx].get(ph) for r in runs if len(r["attempts"]) > idx]
            vals = [v for v in vals if v is not None]
            if vals:
                out[f"{which}: {ph}"] = median(vals)
    return out


def print_table(report: Dict[str, Any]) -> None:
    names = list(report["variants"])
    print(f"\nRay {report['ray']}; floors: {report['floors']}")
    print("phase".ljust(34) + "".join(n[:14].rjust(15) for n in names))
    keys = sorted({k for v in report["variants"].values() for k in v["median"]},
                  key=lambda k: (k != "wall", k.split(":")[0] != "start", PHASES.index(k.split(": ")[1]) if ": " in k else 0))
    for k in keys:
        print(k.ljust(34) + "".join(str(report["variants"][n]["median"].get(k, "")).rjust(15) for n in names))


if __name__ == "__main__":
    sys.exit(main())
