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

import functools
from dataclasses import asdict, dataclass, replace
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
    stop_at: Optional[float] = None       # unix time: all ranks stop at the first step they agree is past it (soak)

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

    def ended_at(self, final_step: Optional[int]) -> "WorkloadConfig":
        """The config of a run that stopped at `final_step` on its deadline
        (`stop_at`): `steps` is where it ended, and the epoch length stays what
        the run trained with, so every check reads the same batches."""
        if self.stop_at is None or final_step is None:
            return self
        return replace(self, steps=int(final_step), rows_per_epoch=self.steps_per_epoch * self.batch_size)


def epoch_permutation(cfg: WorkloadConfig, epoch: int) -> np.ndarray:
    """The order in which epoch `epoch` reads the rows (read-only: it is shared; int32 where
    the ids fit, `global_batch` gives int64)."""
    return _permutation(cfg.seed, cfg.rows, epoch)


@functools.lru_cache(maxsize=8, typed=True)   # (typed: epoch 1.0 is no cached epoch 1, as numpy refuses it)
def _permutation(seed: int, rows: int, epoch: int) -> np.ndarray:
    # One draw per epoch, not per step: a run, its checks and its synthetic
    # histories all ask for the batches of one epoch in turn.
    rng = np.random.default_rng([seed, epoch])
    if rows <= np.iinfo(np.int32).max:   # kept as int32 (the same ids): a long run's epochs are large
        # (`permutation(rows)` is `shuffle(arange(rows))`, the same swaps whatever the dtype: an
        # int32 shuffled in place is the same ids with half the memory to move)
        perm = np.arange(rows, dtype=np.int32)
        rng.shuffle(perm)
    else:
        perm = rng.permutation(rows)
    perm.flags.writeable = False
    return perm


def forget_permutations() -> None:
    """Drop the cached epochs (a long run's are hundreds of MB): for a process whose
    remaining readers of them are elsewhere (ftharness.scenarios.forked_checks)."""
    _permutation.cache_clear()


def global_batch(cfg: WorkloadConfig, step_index: int) -> np.ndarray:
    """Row ids of 0-based lineage step `step_index` (a fresh array the caller may keep)."""
    epoch, i = divmod(step_index, cfg.steps_per_epoch)
    perm = epoch_permutation(cfg, epoch)
    return perm[i * cfg.batch_size:(i + 1) * cfg.batch_size].astype(np.int64)


def rank_slice(batch: np.ndarray, rank: int, world_size: int) -> np.ndarray:
    """This rank's part of a global batch: `np.array_split(batch, world_size)[rank]`."""
    if type(rank) is int and type(world_size) is int and 0 <= rank < world_size and batch.ndim == 1:
        each, extra = divmod(len(batch), world_size)   # the first `extra` ranks take one more
        start = rank * each + min(rank, extra)
        return batch[start:start + each + (rank < extra)]
    return np.array_split(batch, world_size)[rank]


def accumulate(ids: np.ndarray, epoch: int, rows: int) -> np.ndarray:
    ids = ids.astype(np.float64)
    return np.array([len(ids), ids.sum(), (ids * ids).sum(), (epoch * rows + ids).sum()], dtype=np.float64)


def expected_accumulators(cfg: WorkloadConfig) -> List[float]:
    """The accumulators a fault-free run ends with (resumable data).

    The sum over steps of `accumulate(global_batch(cfg, s), ...)`, in step
    order, computed one epoch at a time: each step's four sums are those
    `accumulate` takes over its batch (a row of the epoch's permutation), and
    they are added up in the same order, so the float64 result is the same to
    the last bit even where the sums pass 2**53."""
    total = np.zeros(4, dtype=np.float64)
    spe, b = cfg.steps_per_epoch, cfg.batch_size
    chunk = max(1, _SUM_ROWS // max(1, b))   # steps summed at a time: float64 copies of a chunk, not an epoch
    for epoch in range(-(-cfg.steps // spe)):
        n = min(spe, cfg.steps - epoch * spe)     # steps of this epoch that the run takes
        perm = epoch_permutation(cfg, epoch)
        for first in range(0, n, chunk):
            m = min(chunk, n - first)
            ids = perm[first * b:(first + m) * b].reshape(m, b).astype(np.float64)
            sums = np.empty((m + 1, 4), dtype=np.float64)
            sums[0] = total
            sums[1:, 0] = b
            sums[1:, 1] = ids.sum(axis=1)
            sums[1:, 2] = (ids * ids).sum(axis=1)
            sums[1:, 3] = (epoch * cfg.rows + ids).sum(axis=1)
            total = np.add.accumulate(sums, axis=0)[-1]   # left to right, as `total += ...` per step
    return total.tolist()


#: rows of ids that `expected_accumulators` holds as float64 at a time
_SUM_ROWS = 1 << 20


def expected_accumulators_ray_data(cfg: WorkloadConfig, world_size: int) -> Optional[List[float]]:
    """Accumulators of a fault-free run on Ray Data's equal streaming split, or
    None where the split drops rows (rows or batch not divisible by world size)."""
    if cfg.rows % world_size or cfg.batch_size % world_size or cfg.steps % cfg.steps_per_epoch:
        return None
    total = np.zeros(4, dtype=np.float64)
    for epoch in range(cfg.steps // cfg.steps_per_epoch):
        total += accumulate(np.arange(cfg.rows), epoch, cfg.rows)
    return total.tolist()
