"""An XGBoost job for `XGBoostTrainer` (Ray Train V2): each worker trains on its
shard of a Ray Dataset (`get_dataset_shard`), `RayTrainReportCallback` reports
and checkpoints every boosting round (one step for ftharness), and a restart
continues from `RayTrainReportCallback.get_model(get_checkpoint())` with the
rounds that remain. `examples/xgboost-*.yaml` run it under faults."""

import time


def datasets():
    """{"train": a small tabular Ray Dataset}; called where fit() runs (workload.datasets)."""
    import numpy as np
    import pandas as pd
    import ray.data

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2000, 8))
    frame = pd.DataFrame(x, columns=[f"f{i}" for i in range(8)])
    frame["label"] = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(int)
    frame["row_id"] = np.arange(len(frame))      # workload.row_id: lets ftharness see which rank read which row
    return {"train": ray.data.from_pandas(frame)}


def train_func(config):
    import ray.train
    import xgboost
    from ray.train.xgboost import RayTrainReportCallback

    class Pace(xgboost.callback.TrainingCallback):
        """Stretch a round so faults land mid-run."""

        def after_iteration(self, model, epoch, evals_log):
            time.sleep(config.get("round_delay_s", 0.0))
            return False

    frame = ray.train.get_dataset_shard("train").materialize().to_pandas()
    dtrain = xgboost.DMatrix(frame.drop(columns=["label", "row_id"]), label=frame["label"])
    rounds, model = config.get("rounds", 20), None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint is not None:
        model = RayTrainReportCallback.get_model(checkpoint)
        rounds -= model.num_boosted_rounds()
    xgboost.train(
        {"objective": "binary:logistic", "eval_metric": "logloss", "tree_method": "hist", "max_depth": 3},
        dtrain, num_boost_round=rounds, xgb_model=model, evals=[(dtrain, "train")], verbose_eval=False,
        callbacks=[RayTrainReportCallback(frequency=1), Pace()],
    )
