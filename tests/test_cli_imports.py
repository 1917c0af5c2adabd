"""The commands that only read their input, and every refusal of bad input, answer without
importing Ray Train or the cluster code (a second each on a CI runner, not three or four).
A planted top-level import of ftharness.harness.run.runner in a command makes this fail."""

import json
import subprocess
import sys

from conftest import REPO

#: argument lists that end before anything starts (a listing, or a refusal of their input)
LIGHT = (
    ["list"], ["list", "known", "--ray", "9.9.9"], ["validate", "scenarios/catalog"],
    ["run", "nosuch.yaml"], ["run", "scenarios/catalog/kill-worker.yaml", "--steps", "0"],
    ["run", "--submit", "127.0.0.1:1", "--address", "x"], ["suite", "nosuch.yaml"],
    ["explore", "--budget", "0s"], ["matrix", "scenarios/catalog/kill-worker.yaml", "--set", "workload.bogus=1"],
    ["check", "tests/data/kill-worker"],
)

PROBE = """
import contextlib, io, json, sys
from ftharness.harness.frontends.cli import main
heavy = {}
for argv in json.loads(sys.argv[1]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)
        except SystemExit:
            pass
    heavy[" ".join(argv)] = sorted(m for m in ("ray.train", "torch", "ftharness.harness.run.runner",
                                               "ftharness.harness.cluster.handles") if m in sys.modules)
print(json.dumps(heavy))
"""


def test_reading_and_refusing_commands_import_no_ray_train():
    r = subprocess.run([sys.executable, "-P", "-c", PROBE, json.dumps(LIGHT)], capture_output=True, text=True,
                       cwd=REPO, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    heavy = json.loads(r.stdout.strip().splitlines()[-1])
    assert heavy == {" ".join(a): [] for a in LIGHT}, {k: v for k, v in heavy.items() if v}
