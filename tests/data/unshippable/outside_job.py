"""Imports a module through a sys.path entry of its own: the workers do not have it."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "vendor"))
import vendored_helper  # noqa: E402


def train_func(config):
    import ray.train

    for step in range(config.get("steps", 2)):
        ray.train.report({"step": step + 1, "scale": vendored_helper.SCALE})
