"""RunConfig names: missing, or different at every start."""
import time
import uuid
from datetime import datetime

from ray.train import FailureConfig as FC, RunConfig as RC

S = "s3://bucket/runs"
stamp = time.strftime("%Y%m%d-%H%M%S")
run_id = f"job-{uuid.uuid4().hex[:8]}"
STABLE = "nightly-resnet"

RC(storage_path=S, failure_config=FC(max_failures=1))  # expect: unstable-name
RC(storage_path=S, failure_config=FC(max_failures=1), name=f"run-{time.time()}")  # expect: unstable-name
RC(storage_path=S, failure_config=FC(max_failures=1), name="run-" + stamp)  # expect: unstable-name
RC(storage_path=S, failure_config=FC(max_failures=1), name=run_id)  # expect: unstable-name
RC(storage_path=S, failure_config=FC(max_failures=1), name=datetime.now().isoformat())  # expect: unstable-name
RC(storage_path=S, failure_config=FC(max_failures=1), name=STABLE)
RC(storage_path=S, failure_config=FC(max_failures=1), name="fixed")
