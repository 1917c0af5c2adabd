"""A LightGBM job for `LightGBMTrainer` (Ray Train V2): each worker trains on
its shard with the network parameters Ray sets up (`get_network_params`),
`RayTrainReportCallback` reports and checkpoints every round (one step for
ftharness), and a restart continues from `get_model(get_checkpoint())`."""

import time

from xgboost_job import datasets  # noqa: F401 - the same small tabular dataset (workload.datasets)


def train_func(config):
    import lightgbm
    import ray.train
    from ray.train.lightgbm import RayTrainReportCallback, get_network_params

    def pace(env):
        time.sleep(config.get("round_delay_s", 0.0))

    frame = ray.train.get_dataset_shard("train").materialize().to_pandas()
    train_set = lightgbm.Dataset(frame.drop(columns=["label", "row_id"]), label=frame["label"])
    rounds, model = config.get("rounds", 20), None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        model = RayTrainReportCallback.get_model(checkpoint)
        rounds -= model.current_iteration()
    params = {"objective": "binary", "metric": "binary_logloss", "num_leaves": 7, "verbose": -1,
              "tree_learner": "data_parallel", "pre_partition": True, **get_network_params()}
    lightgbm.train(params, train_set, num_boost_round=rounds, init_model=model, valid_sets=[train_set],
                   valid_names=["train"], callbacks=[RayTrainReportCallback(frequency=1), pace])
