"""Where a rank trains and what its GPU holds, for both runtimes.

- The choice: `wants_gpu` (does `workload.use_gpu` take the cluster's GPUs), `choose_device`
  (cpu or cuda:N for a rank), `backend_for` (nccl on CUDA, gloo on CPU). Pure: the CUDA
  facts come in as arguments, so the tests give them without a GPU (`CudaInfo` is the seam).
- The facts recorded on each worker's start (`gpu_facts`): device, GPU name and UUID,
  memory allocated by this process, free and total memory of the device, and the processes
  nvidia-smi says hold memory on it (what tells zombie GPU memory: a dead worker's pid there).
- `pg_warmup`: one all-reduce right after the process group exists, timed: NCCL creates its
  communicator lazily at the first collective, so this is its set-up time.
- Checkpoints: `to_cpu` (CUDA tensors saved as CPU tensors, so any rank or a CPU machine
  can read them), restored with `map_location` onto the rank's own device.
- The GPU faults done inside the worker: `raise_cuda_error` and `stall`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Union

from ftharness.errors import FtharnessError

CPU = "cpu"


class DeviceError(FtharnessError, RuntimeError):
    """The device a worker was asked to train on is not there."""


@dataclass(frozen=True)
class CudaInfo:
    """What this process sees of CUDA; `probe()` reads it from torch, tests build it."""

    available: bool
    device_count: int
    torch_cuda: Optional[str] = None      # torch.version.cuda (None: a CPU build of torch)

    @staticmethod
    def probe() -> "CudaInfo":
        import torch

        ok = bool(torch.cuda.is_available())
        return CudaInfo(ok, torch.cuda.device_count() if ok else 0, torch.version.cuda)

    @staticmethod
    def build() -> "CudaInfo":
        """Only which torch build this is (no CUDA call: a driver that trains nothing stays off the GPU)."""
        import torch

        return CudaInfo(False, 0, torch.version.cuda)


def wants_gpu(use_gpu: Union[bool, str], cluster_gpus: float) -> bool:
    """Whether the workers take GPUs: `true`/`false` as given; `auto` when the cluster has one."""
    if use_gpu == "auto":
        return cluster_gpus >= 1
    return bool(use_gpu)


def gpu_refusal(use_gpu: bool, cluster_gpus: float, local: CudaInfo) -> Optional[str]:
    """Why a run that takes GPUs cannot train on them here (one line), or None. `local` is
    the driver's view: a CPU build of torch cannot drive the GPUs Ray offers."""
    if not use_gpu:
        return None
    if cluster_gpus < 1:
        return "workload.use_gpu: true, but the cluster has no GPU (Ray's resources list GPU: 0)"
    if local.torch_cuda is None:
        return ("workload.use_gpu: the cluster has GPUs but this torch is a CPU build; install a CUDA build "
                "(scripts/gpu-check.sh does) or set workload.use_gpu: false")
    return None


def choose_device(use_gpu: bool, index: int, cuda: CudaInfo) -> str:
    """The device of one rank: `cpu`, or `cuda:index` (`index`: LOCAL_RANK under torchrun,
    the rank's GPU among those Ray made visible under Ray Train)."""
    if not use_gpu:
        return CPU
    if not cuda.available or cuda.device_count < 1:
        build = f"CUDA {cuda.torch_cuda}" if cuda.torch_cuda else "a CPU build of torch"
        raise DeviceError(f"use_gpu is set but this worker sees no CUDA device ({build})")
    if not 0 <= index < cuda.device_count:
        raise DeviceError(f"GPU index {index} but this worker sees {cuda.device_count} CUDA device(s) "
                          f"(one GPU per worker: CUDA_VISIBLE_DEVICES={os.environ.get('CUDA_VISIBLE_DEVICES')})")
    return f"cuda:{index}"


def backend_for(device: str) -> str:
    """The torch.distributed backend for a device: NCCL on CUDA, gloo on CPU."""
    return "nccl" if str(device).startswith("cuda") else "gloo"


def torchrun_index(local_rank: int, rank: int, one_host: bool) -> int:
    """A torchrun worker's GPU: LOCAL_RANK, as torchrun jobs do, unless every agent runs on
    this one host with one worker each (ftharness's own launcher), where each has LOCAL_RANK 0
    and the global rank tells them apart."""
    return rank if one_host else local_rank


# ---------------------------------------------------------------- facts for the history
def parse_compute_apps(text: str) -> List[Dict[str, Any]]:
    """Rows of `nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory --format=csv,noheader,nounits`."""
    out = []
    for line in (text or "").splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 3:
            continue
        uuid, pid, used = parts
        try:
            out.append({"gpu_uuid": norm_uuid(uuid), "pid": int(pid), "used_mib": float(used)})
        except ValueError:   # "[N/A]", "[Not Supported]"
            continue
    return out


def norm_uuid(uuid: Any) -> str:
    """nvidia-smi's `GPU-xxxx` and torch's `xxxx` as one spelling."""
    u = str(uuid).strip().lower()
    return u[4:] if u.startswith("gpu-") else u


def compute_apps(run: Callable[..., Any] = subprocess.run) -> Optional[List[Dict[str, Any]]]:
    """The processes that hold memory on this machine's GPUs, per nvidia-smi; None when it
    cannot say (no nvidia-smi, an error)."""
    if shutil.which("nvidia-smi") is None:
        return None
    try:
        r = run(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid,used_memory", "--format=csv,noheader,nounits"],
                capture_output=True, text=True, timeout=10)
    except Exception:  # noqa: BLE001 - a fact we cannot read is left out
        return None
    return parse_compute_apps(r.stdout) if r.returncode == 0 else None


def gpu_facts(device: str) -> Dict[str, Any]:
    """What the history records about a rank's device at its start (and at its end)."""
    if not str(device).startswith("cuda"):
        return {"device": CPU}
    import torch

    try:
        dev = torch.device(device)
        idx = dev.index if dev.index is not None else torch.cuda.current_device()
        props = torch.cuda.get_device_properties(idx)
        free, total = torch.cuda.mem_get_info(idx)
        uuid = getattr(props, "uuid", None)
        facts: Dict[str, Any] = {
            "device": f"cuda:{idx}", "gpu_name": props.name, "gpu_uuid": norm_uuid(uuid) if uuid else None,
            "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "mem_allocated": int(torch.cuda.memory_allocated(idx)),
            "mem_reserved": int(torch.cuda.memory_reserved(idx)),
            "mem_free": int(free), "mem_total": int(total),
        }
    except Exception as e:  # noqa: BLE001 - recording never breaks the job
        return {"device": str(device), "gpu_error": f"{type(e).__name__}: {str(e)[:200]}"}
    apps = compute_apps()
    if apps is not None:
        facts["gpu_processes"] = [a for a in apps if not facts["gpu_uuid"] or a["gpu_uuid"] == facts["gpu_uuid"]]
    return facts


def peak_facts(device: str) -> Dict[str, Any]:
    """The most memory this process allocated on its GPU (for worker_end)."""
    if not str(device).startswith("cuda"):
        return {}
    try:
        import torch

        return {"mem_peak_allocated": int(torch.cuda.max_memory_allocated(torch.device(device)))}
    except Exception:  # noqa: BLE001
        return {}


def pg_warmup(device: str, init_s: Optional[float] = None) -> Optional[Dict[str, Any]]:
    """Time one all-reduce on the default process group (None without one): NCCL sets up its
    communicator here; gloo connected at init. `init_s`: init_process_group's own time, where
    the caller ran it (torchrun; Ray Train runs it before the train function)."""
    try:
        import torch
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            return None
        if str(device).startswith("cuda"):
            torch.cuda.set_device(torch.device(device))
        t = time.perf_counter()
        x = torch.zeros(1, device=device)
        dist.all_reduce(x)
        if str(device).startswith("cuda"):
            torch.cuda.synchronize(torch.device(device))
        return {"backend": str(dist.get_backend()), "init_s": None if init_s is None else round(init_s, 4),
                "warmup_s": round(time.perf_counter() - t, 4)}
    except Exception as e:  # noqa: BLE001 - a group that fails here fails the job's first collective too
        return {"error": f"{type(e).__name__}: {str(e)[:200]}"}


def ray_train_device() -> str:
    """The device Ray Train gave this worker (ray.train.torch.get_device()), as a string."""
    try:
        import ray.train.torch

        return str(ray.train.torch.get_device())
    except Exception:  # noqa: BLE001 - not a torch worker (xgboost, lightgbm)
        return CPU


# ---------------------------------------------------------------- checkpoints
def to_cpu(obj: Any) -> Any:
    """`obj` with every tensor in it moved to CPU (dicts, lists and tuples walked), so a
    checkpoint written on cuda:1 loads on any rank's device, or on a machine without one."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return obj
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu()
    if isinstance(obj, dict):
        return type(obj)((k, to_cpu(v)) for k, v in obj.items())
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


def load_state(source: Any, device: str) -> Any:
    """torch.load of a checkpoint's state onto this rank's device (`map_location`)."""
    import torch

    return torch.load(source, map_location=torch.device(device), weights_only=False)


# ---------------------------------------------------------------- the GPU faults
def raise_cuda_error(device: str, how: str = "device_assert") -> None:
    """Run a CUDA operation that fails, on `device`; raises torch's CUDA error (never returns).

    `device_assert`: an out-of-bounds index on a CUDA tensor fires a device-side assert; the
    synchronize after it raises `CUDA error: device-side assert triggered` (sticky: this
    process's CUDA context is unusable afterwards, as after a real kernel bug).
    `invalid_device`: an allocation on the ordinal past the visible devices raises
    `CUDA error: invalid device ordinal`."""
    import torch

    if not str(device).startswith("cuda"):
        raise DeviceError(f"cuda_error on a rank that trains on {device} (refused at validation on CPU clusters)")
    dev = torch.device(device)
    if how == "invalid_device":
        torch.empty(1, device=torch.device("cuda", torch.cuda.device_count()))
    else:
        x = torch.zeros(4, device=dev)
        bad = torch.full((1,), 1 << 20, dtype=torch.long, device=dev)
        x[bad] += 1.0
        torch.cuda.synchronize(dev)
    raise DeviceError(f"cuda_error {how} on {device}: the failing CUDA operation did not raise")


def stall(seconds: Optional[float], tick_s: float = 0.5, sleep: Callable[[float], None] = time.sleep) -> float:
    """Block this thread for `seconds` (None: until the process is killed); returns the seconds slept."""
    slept = 0.0
    while seconds is None or slept < seconds:
        step = tick_s if seconds is None else min(tick_s, seconds - slept)
        sleep(step)
        slept += step
    return slept
