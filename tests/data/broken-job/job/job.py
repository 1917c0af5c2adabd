"""A user's job that cannot train (tests/test_broken_job.py): it opens its config by a path
relative to the working directory, which Ray Train V2 changes to its own run folder on the
workers, so every attempt raises FileNotFoundError before its first report."""

import yaml


def load_config(path="configs/train.yaml"):
    with open(path) as f:
        return yaml.safe_load(f)


def train_func(config):
    import ray.train

    settings = load_config()
    for step in range(settings["steps"]):
        ray.train.report({"step": step + 1})
