"""Correct: the V2 XGBoostTrainer with a train function and Ray Data."""
import ray
import ray.train
import xgboost
from ray.train import FailureConfig, RunConfig, ScalingConfig
from ray.train.xgboost import RayTrainReportCallback, XGBoostTrainer

STORAGE = "abfs://container@account.dfs.core.windows.net/ray"


def train_fn_per_worker(config: dict):
    train_df = ray.train.get_dataset_shard("train").materialize().to_pandas()
    dtrain = xgboost.DMatrix(train_df.drop("y", axis=1), label=train_df["y"])
    starting_model = None
    checkpoint = ray.train.get_checkpoint()
    if checkpoint:
        starting_model = RayTrainReportCallback.get_model(checkpoint)
    xgboost.train(config["params"], dtrain, num_boost_round=10, xgb_model=starting_model,
                  callbacks=[RayTrainReportCallback()])


ds = ray.data.read_parquet("s3://bucket/train")
trainer = XGBoostTrainer(
    train_fn_per_worker,
    train_loop_config={"params": {"objective": "reg:squarederror"}},
    datasets={"train": ds},
    scaling_config=ScalingConfig(num_workers=2),
    run_config=RunConfig(name="xgb", storage_path=STORAGE,
                         failure_config=FailureConfig(max_failures=2)),
)
trainer.fit()
