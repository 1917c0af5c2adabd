"""A sibling module of the entry module."""

import os


def step_delay(config):
    return float(config.get("step_delay_s", 0.2))


def resume_step(checkpoint):
    """The step after the last checkpointed one (0 without a checkpoint)."""
    if checkpoint is None:
        return 0
    with checkpoint.as_directory() as d:
        with open(os.path.join(d, "step")) as f:
            return int(f.read())
