"""storage_path: local, absent, on a shared mount, or remote."""
import os
from pathlib import Path

import ray.train

FC = ray.train.FailureConfig(max_failures=1)
bucket = os.environ["BUCKET"]

ray.train.RunConfig(name="x", failure_config=FC)  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path="/tmp/ray_results")  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path="results")  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path="file:///tmp/r")  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path=Path("/data/r"))  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path=f"/tmp/{bucket}")  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path="/mnt/nfs/ray")  # expect: local-storage
ray.train.RunConfig(name="x", failure_config=FC, storage_path="s3://bucket/ray")
ray.train.RunConfig(name="x", failure_config=FC, storage_path="gs://bucket/ray")
ray.train.RunConfig(name="x", failure_config=FC, storage_path="hdfs://namenode:8020/ray")
ray.train.RunConfig(name="x", failure_config=FC, storage_path=f"s3://{bucket}/ray")
ray.train.RunConfig(name="x", failure_config=FC, storage_path=os.environ["STORAGE"])
ray.train.RunConfig(name="x", failure_config=FC, storage_path="bucket/ray", storage_filesystem=object())
