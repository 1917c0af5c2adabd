"""`ftharness run --submit ADDRESS`: the harness itself runs as a Ray Job on the cluster.

The driver, the Train controller and the history then sit on the cluster's head,
as they must: the history actor writes on the head's disk, and drains go to the
GCS from there. This process only submits, streams the job's log as progress,
and brings the results folder back. The results travel in the log itself (a
base64 tar between two marker lines, written by `python -m
ftharness.harness.frontends.job_entry` on the head), so nothing but the Jobs API (the dashboard's port) is needed
between here and the cluster: no shared disk, no SSH. Checkpoints (`storage/`)
do not travel; they are removed with the job's folder on the head, unless
`workload.storage_path` names storage of the user's own.

A Ctrl-C here stops the job: a submitted run never outlives its submitter.

What travels is what a run ships to its workers (ftharness.harness.run.usercode): the
modules of `workload.entrypoint`, `datasets` and `dataset_config` and the modules and
packages of the scenario's folder they import (a file `mod.py` or a package folder `mod/`),
or all of the folder `workload.working_dir` declares, and the data `workload.files` declares;
never the other files beside it (a `settings.py` with a secret stays here), virtualenvs, `.git`,
credential files or results. The cluster's Ray version
must equal this client's (the job's driver is this ftharness, pickling against
this Ray); another is refused in one line before anything is sent, and the job
checks it again on the head (FTHARNESS_RAY_VERSION). The job's log is printed
with control characters escaped.
"""

from __future__ import annotations

import base64
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time
from typing import List, Optional

import yaml

from ftharness.errors import ClusterError, ScenarioError
from ftharness.safety import printable, redact

BEGIN, END = "=====ftharness-results-begin=====", "=====ftharness-results-end====="
#: the results (without checkpoints) that may travel back in the job's log
MAX_RESULTS_BYTES = 64 * 1024 * 1024
JOB_RESULTS = "results"   # the results folder, in the job's working dir on the head
TERMINAL = ("SUCCEEDED", "FAILED", "STOPPED")


def dashboard_url(address: str) -> str:
    """`http://HOST:PORT` of the Jobs API from what the user gave (a bare HOST:PORT works)."""
    address = address.strip()
    if not address.split("://", 1)[-1].strip("/"):
        raise ScenarioError(f"--submit: {address or 'an empty address'} names no host; allowed: "
                            f"http://HOST:PORT or HOST:PORT of the Ray dashboard")
    if address.startswith("ray://"):
        raise ScenarioError(f"--submit: {address}: give the dashboard's address (http://HOST:8265), "
                            f"not a Ray Client one")
    if "://" not in address:
        address = f"http://{address}"
    if not address.startswith(("http://", "https://")):
        raise ScenarioError(f"--submit: {address}: allowed: http://HOST:PORT or HOST:PORT of the Ray dashboard")
    return address.rstrip("/")


def job_argv(allow_destructive: bool, quiet: bool) -> List[str]:
    """The `ftharness run` the job runs on the head."""
    argv = ["run", "scenario.yaml", "--address", "auto", "--out", JOB_RESULTS]
    return argv + (["--allow-destructive"] if allow_destructive else []) + (["--quiet"] if quiet else [])


def shipped_code(scenario) -> List[str]:
    """The files and folders --submit ships beside scenario.yaml: what a run ships to its
    workers (ftharness.harness.run.usercode.units): all of `workload.working_dir` when declared,
    else the top-level modules and packages of the scenario's folder that the scenario's
    module:function references name or the job imports (import it first: resolve_job)."""
    from ftharness.harness.run.usercode import units

    return units(scenario)


def resolve_job(scenario) -> None:
    """Import the job's functions here, so its neighbours are known (and a broken one is
    refused in one line before anything is sent)."""
    from ftharness.harness.run.functions import resolve_dataset_config_fn, resolve_datasets_fn, resolve_train_fn

    resolve_train_fn(scenario)
    resolve_datasets_fn(scenario)
    resolve_dataset_config_fn(scenario)


def working_dir(scenario) -> str:
    """A temp folder the job gets as its working dir: the scenario as resolved here (with
    --steps applied), the code it names (shipped_code) and its declared `workload.files`, laid
    out as the scenario's folder (`working_dir` and the files keep their places), copied by the
    bounded copy (ftharness.harness.run.usercode.ship); nothing else."""
    from ftharness.harness.run.usercode import ship
    from ftharness.scenarios.schema import scenario_data

    wd = tempfile.mkdtemp(prefix="ftharness-submit-")
    try:
        ship(scenario, wd, replay=True, fresh=False)
        data = scenario_data(scenario)
        data.get("cluster", {}).pop("address", None)   # the job runs on the cluster it was sent to
        with open(os.path.join(wd, "scenario.yaml"), "w") as f:   # (a shipped one of the folder is replaced)
            yaml.safe_dump(data, f, sort_keys=False)
    except BaseException:   # a half-staged folder is not left behind (Ctrl-C included)
        shutil.rmtree(wd, ignore_errors=True)
        raise
    return wd


def cluster_ray_version(url: str, timeout_s: float = 10.0) -> Optional[str]:
    """The Ray version the dashboard at `url` reports (its /api/version), None if unknown."""
    import urllib.request

    try:
        with urllib.request.urlopen(f"{url}/api/version", timeout=timeout_s) as r:  # noqa: S310 - http(s) only
            data = json.loads(r.read(65536))
    except Exception:  # noqa: BLE001 - unreachable: the client's own error says so
        return None
    v = data.get("ray_version") if isinstance(data, dict) else None
    return v if isinstance(v, str) and len(v) < 64 else None


def check_ray_version(url: str, theirs: Optional[str], ours: str) -> None:
    if theirs is not None and theirs != ours:
        raise ClusterError(f"--submit: {redact(url)} runs Ray {printable(theirs, False)}; this ftharness runs "
                           f"Ray {ours}, and a submitted run needs the same version on both sides")


def pack(folder: str) -> str:
    """The results folder without checkpoints, as one base64 line."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in sorted(os.listdir(folder)):
            if name != "storage":
                tar.add(os.path.join(folder, name), arcname=name)
    data = buf.getvalue()
    if len(data) > MAX_RESULTS_BYTES:
        raise ClusterError(f"results of {len(data)} bytes exceed {MAX_RESULTS_BYTES}; they stay on the head "
                           f"in {os.path.abspath(folder)}")
    return base64.b64encode(data).decode()


def unpack(log: str, out: str) -> bool:
    """Extract the results a job printed into `out`; False if the log holds none."""
    if BEGIN not in log or END not in log:
        return False
    blob = log.split(BEGIN, 1)[1].split(END, 1)[0].strip()
    os.makedirs(out, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(base64.b64decode(blob)), mode="r:gz") as tar:
        tar.extractall(out, filter="data")
    return True


def visible(log: str) -> str:
    """The log as a person should see it: the results blob left out."""
    if BEGIN not in log:
        return log
    head, rest = log.split(BEGIN, 1)
    return head + (rest.split(END, 1)[1] if END in rest else "")


def submit_run(scenario, address: str, out: str, allow_destructive: bool, quiet: bool = False,
               poll_s: float = 1.0) -> Optional[int]:
    """Submit, stream, fetch. Returns the job's exit status as far as it is known (None: the
    job ended without results), after the results folder has been written to `out`."""
    from ray.job_submission import JobSubmissionClient

    import ray

    url = dashboard_url(address)
    resolve_job(scenario)    # a module that does not import: refused before anything is sent
    try:
        client = JobSubmissionClient(url)
    except Exception as e:  # noqa: BLE001 - unreachable, not a dashboard, wrong version
        raise ClusterError(f"--submit: {redact(url)}: no Ray Jobs API there ({type(e).__name__}: "
                           f"{str(e).strip().splitlines()[0][:160] if str(e).strip() else 'no answer'})")
    check_ray_version(url, cluster_ray_version(url), ray.__version__)
    wd = working_dir(scenario)
    job_id = None
    try:
        entry = " ".join(["python", "-m", "ftharness.harness.frontends.job_entry", *job_argv(allow_destructive, quiet)])
        job_id = client.submit_job(entrypoint=entry,
                                   runtime_env={"working_dir": wd, "env_vars": {"FTHARNESS_RAY_VERSION": ray.__version__}},
                                   metadata={"ftharness": scenario.name, "ray_version": ray.__version__})
        print(f"submitted {scenario.name} to {redact(url)} as job {job_id}", file=sys.stderr, flush=True)
        shown = 0
        while True:
            status = str(client.get_job_status(job_id)).split(".")[-1]
            log = client.get_job_logs(job_id)
            text = visible(log)
            if len(text) > shown:
                sys.stderr.write(printable(text[shown:]))
                sys.stderr.flush()
                shown = len(text)
            if status in TERMINAL:
                break
            time.sleep(poll_s)
        if not unpack(client.get_job_logs(job_id), out):
            info = client.get_job_info(job_id)
            raise ClusterError(f"--submit: job {job_id} ended {status} without results"
                               + (f": {printable(info.message, False)}" if getattr(info, "message", None) else ""))
        job_id = None   # done: nothing to stop
        return None
    except KeyboardInterrupt:
        raise
    finally:
        if job_id is not None:
            try:
                client.stop_job(job_id)
            except Exception:  # noqa: BLE001 - best effort; the job may be over already
                pass
        shutil.rmtree(wd, ignore_errors=True)
