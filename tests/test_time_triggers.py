"""`at: {time_s: N}` counts from when training started (the first step recorded), as the schema
says, not from fit(): on a real cluster the first worker group starts 10-25 s after fit(), and a
time fault of a few seconds fired before any ran (skipped: "no worker group is running"). Pure:
the torchrun injector's local history collector, no Ray."""

import threading
import time
from types import SimpleNamespace

from ftharness.harness.run.torchrun_runner import TorchrunInjector
from ftharness.harness.torchrun.client import CollectorClient, TcpEmitter
from ftharness.harness.torchrun.collector import Collector
from ftharness.scenarios.schema import parse_scenario


def test_a_time_trigger_waits_for_training_to_start(tmp_path):
    sc = parse_scenario({"name": "t", "workload": {"runtime": "torchrun", "num_workers": 2, "steps": 10},
                         "cluster": {"nodes": 2}, "failure_config": {"max_failures": 1},
                         "faults": [{"kind": "kill_worker", "target": {"rank": 1}, "at": {"time_s": 0.2}}]})
    col = Collector(str(tmp_path / "history.jsonl"), "run")
    fired = []

    class Probe:
        index, kind, target, duration_s = 0, "kill_worker", {}, None

        def inject(self, ctx):
            fired.append(time.time())
            return {"probe": 0}

    try:
        inj = TorchrunInjector(sc, SimpleNamespace(rescheduled=[]), col, "run", str(tmp_path / "run"),
                               str(tmp_path / "history.jsonl"))
        inj.faults = {0: Probe()}
        inj.arm()
        inj.start()
        time.sleep(0.4)                       # past time_s counted from fit(): no step yet
        inj.tick()
        assert fired == [] and inj.t_train is None
        worker = TcpEmitter(CollectorClient(col.address), "run", "worker", base={"rank": 0, "attempt_id": "round-0"})
        t = threading.Thread(target=lambda: worker.emit("step", step=1))
        t.start()
        t.join(5)
        deadline = time.time() + 10
        while not fired and time.time() < deadline:
            inj.tick()
            time.sleep(0.05)
        assert fired and inj.t_train is not None and fired[0] >= inj.t_train + 0.2
    finally:
        col.close()
