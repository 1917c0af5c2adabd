"""What the reference workload reads at each step, and what a fault-free run ends with.

Pure arithmetic shared by the two sides of a run: the job (harness/job/workload.py)
trains on these rows, the properties and the synthetic histories judge by them.
Step s of the lineage takes the global batch `perm(epoch)[i*B:(i+1)*B]` and
splits it across the current ranks. Every step all-reduces float64 accumulators
of the row ids it consumed (count, sum, sum of squares, epoch-tagged sum); their
values are integers below 2**53, so the final state equals
`expected_accumulators(config)` exactly when every row of every epoch was
applied once.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional

import numpy as np

ACC_FIELDS = ("count", "sum_ids", "sum_sq_ids", "sum_epoch_ids")


@dataclass
class WorkloadConfig:
    steps: int = 30
    batch_size: int = 32          # global batch: rows per step across all ranks
    epochs: int = 1
    checkpoint_every: int = 1
    model: str = "small"          # small | medium | large (MLP width)
    data: str = "resumable"       # resumable | ray_data
    use_gpu: bool = False
    features: int = 16
    seed: int = 0
    lr: float = 0.05
    step_delay_s: float = 0.0     # extra time per step, to stretch a run for fault timing
    jit_checkpoint: bool = False  # checkpoint as soon as a preemption notice arrives
    rows_per_epoch: Optional[int] = None  # default: enough rows for `steps` over `epochs`

    @property
    def steps_per_epoch(self) -> int:
        if self.rows_per_epoch:
            return max(1, self.rows_per_epoch // self.batch_size)
        return -(-self.steps // self.epochs)

    @property
    def rows(self) -> int:
        return self.steps_per_epoch * self.batch_size

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


def epoch_permutation(cfg: WorkloadConfig, epoch: int) -> np.ndarray:
    return np.random.default_rng([cfg.seed, epoch]).permutation(cfg.rows)


def global_batch(cfg: WorkloadConfig, step_index: int) -> np.ndarray:
    """Row ids of 0-based lineage step `step_index`."""
    epoch, i = divmod(step_index, cfg.steps_per_epoch)
    perm = epoch_permutation(cfg, epoch)
    return perm[i * cfg.batch_size:(i + 1) * cfg.batch_size]


def rank_slice(batch: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    return np.array_split(batch, world_size)[rank]


def accumulate(ids: np.ndarray, epoch: int, rows: int) -> np.ndarray:
    ids = ids.astype(np.float64)
    return np.array([len(ids), ids.sum(), (ids * ids).sum(), (epoch * rows + ids).sum()], dtype=np.float64)


def expected_accumulators(cfg: WorkloadConfig) -> List[float]:
    """The accumulators a fault-free run ends with (resumable data)."""
    total = np.zeros(4, dtype=np.float64)
    for s in range(cfg.steps):
        total += accumulate(global_batch(cfg, s), s // cfg.steps_per_epoch, cfg.rows)
    return total.tolist()


def expected_accumulators_ray_data(cfg: WorkloadConfig, world_size: int) -> Optional[List[float]]:
    """Accumulators of a fault-free run on Ray Data's equal streaming split, or
    None where the split drops rows (rows or batch not divisible by world size)."""
    if cfg.rows % world_size or cfg.batch_size % world_size or cfg.steps % cfg.steps_per_epoch:
        return None
    total = np.zeros(4, dtype=np.float64)
    for epoch in range(cfg.steps // cfg.steps_per_epoch):
        total += accumulate(np.arange(cfg.rows), epoch, cfg.rows)
    return total.tolist()
