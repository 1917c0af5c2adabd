"""Failure processes: which causes interrupt a job, how often, and which budget pays.

Every rate is per accelerator-hour, so it scales with the job's size (failures
independent across accelerators, as advice.py assumes). Causes map to the
fault kind whose measured recovery they borrow and to a failure class of
`ftharness.scenarios.policy_model.CLASSES`, so the budget charged is the policy model's.

Default hardware/software rates: Meta, "The Llama 3 Herd of Models"
(Dubey et al., 2024, arXiv:2407.21783, section 3.3.4, Table 5): 419 unexpected
interruptions in a 54-day snapshot of Llama 3 405B pre-training on 16,384 H100
GPUs. The counts below are Table 5's, as reproduced at
glennklockwood.com/garden/component-reliability (checked against press
reports for GPU 148, HBM3 72, SRAM 19, GPU system processor 17, network 35,
CPU 2; the other rows were not checked against the paper itself). The printed
percentages do not all match the counts (148 of 419 is 35.3%, printed as
30.1%); the counts sum to 419, so the counts are used.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Mapping, Optional, Tuple

from ftharness.faults.node import KillNode, PreemptNode
from ftharness.faults.process import CrashWorker, KillWorker

LLAMA3_INTERRUPTIONS, LLAMA3_DAYS, LLAMA3_GPUS = 419, 54, 16_384
LLAMA3_GPU_HOURS = LLAMA3_DAYS * 24 * LLAMA3_GPUS

#: Table 5 rows: (component, category, interruptions)
LLAMA3_TABLE5: Tuple[Tuple[str, str, int], ...] = (
    ("Faulty GPU", "GPU", 148), ("GPU HBM3 Memory", "GPU", 72), ("Software Bug", "Dependency", 54),
    ("Network Switch/Cable", "Network", 35), ("Host Maintenance", "Unplanned Maintenance", 32),
    ("GPU SRAM Memory", "GPU", 19), ("GPU System Processor", "GPU", 17), ("NIC", "Host", 7),
    ("NCCL Watchdog Timeouts", "Unknown", 7), ("Silent Data Corruption", "GPU", 6),
    ("GPU Thermal Interface + Sensor", "GPU", 6), ("SSD", "Host", 3), ("Power Supply", "Host", 3),
    ("Server Chassis", "Host", 2), ("IO Expansion Board", "Host", 2), ("Dependency", "Dependency", 2),
    ("CPU", "Host", 2), ("System Memory", "Host", 2),
)
#: Table 5 category -> our cause
CATEGORY_CAUSE = {"GPU": "gpu", "Host": "host", "Network": "network", "Unplanned Maintenance": "maintenance",
                  "Dependency": "software", "Unknown": "unknown"}

#: Spot reclaims: no published per-GPU rate is used. AWS's Spot Instance Advisor
#: publishes only buckets of the monthly interruption frequency per instance type
#: (<5%, 5-10%, 10-15%, 15-20%, >20%); the default takes 5% per instance-month (the
#: edge of the lowest bucket) on an instance of `accelerators_per_node` GPUs. It is an
#: assumption, not a measurement: pass --rate spot=... for your provider.
SPOT_PER_INSTANCE_MONTH = 0.05
HOURS_PER_MONTH = 730.0
#: AWS gives a Spot interruption notice two minutes ahead (EC2 user guide, "Spot
#: Instance interruption notices"); GCP Spot VMs get 30 s.
SPOT_NOTICE_S = 120.0


@dataclass(frozen=True)
class Cause:
    """One failure process: its fault kind (for recovery times), its failure
    class (policy_model.CLASSES: the budget), whether the node is lost (so a
    replacement is needed), and whether it applies only to spot accelerators."""

    name: str
    kind: str
    failure_class: str
    node_loss: bool
    spot_only: bool = False
    doc: str = ""


CAUSES: Dict[str, Cause] = {c.name: c for c in (
    Cause("gpu", KillWorker.kind, "worker_group", True, doc="Table 5 GPU rows: the worker dies, its host is replaced"),
    Cause("host", KillNode.kind, "worker_group", True, doc="Table 5 Host rows (NIC, SSD, PSU, CPU, ...)"),
    Cause("network", KillNode.kind, "worker_group", True, doc="Table 5 network switch/cable"),
    Cause("maintenance", KillNode.kind, "worker_group", True, doc="Table 5 unplanned host maintenance"),
    Cause("software", CrashWorker.kind, "worker_group", False, doc="Table 5 software bug and dependency"),
    Cause("unknown", CrashWorker.kind, "worker_group", False, doc="Table 5 NCCL watchdog timeouts"),
    Cause("spot", PreemptNode.kind, "preemption", True, spot_only=True,
          doc="spot reclaim with a drain notice, waited out (PreemptionError)"),
    Cause("controller", "controller", "controller", False,
          doc="worker-group startup failure or timeout; no published rate (default 0)"),
    Cause("fatal", "controller", "controller_fatal", False,
          doc="non-retryable controller error (e.g. snapshot write); no published rate (default 0)"),
)}


def llama3_rates() -> Dict[str, float]:
    """Per accelerator-hour rate of each Table 5 cause."""
    out = {c: 0.0 for c in CATEGORY_CAUSE.values()}
    for _, category, count in LLAMA3_TABLE5:
        out[CATEGORY_CAUSE[category]] += count / LLAMA3_GPU_HOURS
    return out


def default_rates(accelerators_per_node: int = 8) -> Dict[str, float]:
    rates = {name: 0.0 for name in CAUSES}
    rates.update(llama3_rates())
    rates["spot"] = SPOT_PER_INSTANCE_MONTH / HOURS_PER_MONTH / accelerators_per_node
    return rates


def make_rates(overrides: Optional[Mapping[str, float]] = None, mtbf_h: Optional[float] = None,
               accelerators_per_node: int = 8) -> Dict[str, float]:
    """The defaults, rescaled so the Table 5 causes together have a per-accelerator
    MTBF of `mtbf_h` hours, then `overrides` (cause -> per accelerator-hour).
    ValueError names an unknown cause or a bad number."""
    rates = default_rates(accelerators_per_node)
    if mtbf_h is not None:
        if not mtbf_h > 0:
            raise ValueError(f"--mtbf: {mtbf_h} is not a positive number of hours")
        scale = (1 / mtbf_h) / sum(llama3_rates().values())
        for c in CATEGORY_CAUSE.values():
            rates[c] *= scale
    for name, value in (overrides or {}).items():
        if name not in CAUSES:
            raise ValueError(f"--rate: unknown cause {name!r}; expected one of {', '.join(CAUSES)}")
        if not (value >= 0 and value < float("inf")):
            raise ValueError(f"--rate {name}={value}: a rate is a finite number >= 0 per accelerator-hour")
        rates[name] = float(value)
    return rates


def rates_source(overrides: Optional[Mapping[str, float]], mtbf_h: Optional[float]) -> str:
    parts = [f"Llama 3 Table 5 ({LLAMA3_INTERRUPTIONS} interruptions, {LLAMA3_DAYS} days, "
             f"{LLAMA3_GPUS:,} GPUs)" + (f" rescaled to MTBF {mtbf_h:g} h/accelerator" if mtbf_h else "")]
    if "spot" not in (overrides or {}):
        parts.append(f"spot: assumed {SPOT_PER_INSTANCE_MONTH:.0%}/instance-month (AWS Spot Advisor lowest bucket)")
    if overrides:
        parts.append("user rates: " + ", ".join(f"{k}={v:g}" for k, v in overrides.items()))
    return "; ".join(parts)
