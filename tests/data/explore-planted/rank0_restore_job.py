"""A planted bug for `ftharness explore` to find: every rank keeps its own counter of the
steps it trained (`count`, reported each step) in its own file of the checkpoint, but on a
restore only rank 0 loads its file; the other ranks start counting from zero again. Any
fault that restarts the run after a checkpoint exposes it (monotonic_counters: `count`
drops below its value at the restored step)."""

import json
import os
import tempfile
import time


def train_func(config):
    import ray.train

    rank = ray.train.get_context().get_world_rank()
    step, count = 0, 0
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        with checkpoint.as_directory() as d:
            with open(os.path.join(d, "meta.json")) as f:
                step = json.load(f)["step"]
            if rank == 0:   # the bug: only rank 0 restores its own state
                with open(os.path.join(d, f"state-rank{rank}.json")) as f:
                    count = json.load(f)["count"]
    while step < config.get("steps", 12):
        step += 1
        count += 1
        time.sleep(config.get("step_delay_s", 0.2))
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "meta.json"), "w") as f:
                json.dump({"step": step}, f)
            with open(os.path.join(d, f"state-rank{rank}.json"), "w") as f:
                json.dump({"count": count}, f)
            ray.train.report({"step": step, "count": count}, checkpoint=ray.train.Checkpoint.from_directory(d))
