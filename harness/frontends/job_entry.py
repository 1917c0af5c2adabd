"""The entrypoint of a run submitted with `ftharness run --submit` (ftharness.harness.run.submit),
on the cluster's head: `python -m ftharness.harness.frontends.job_entry run scenario.yaml ...`."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from typing import List, Optional

from ftharness.errors import ClusterError
from ftharness.harness.frontends.cli import main as cli_main
from ftharness.harness.run.submit import BEGIN, END, pack


def main(argv: Optional[List[str]] = None) -> int:
    """On the head, as the job's entrypoint: run, then print the results folder.

    The run happens in a folder of its own, not in the job's working dir: Ray
    deletes that package once the harness's own driver connects (seen on Ray
    2.60: the cwd vanished under the run). The folder, checkpoints included, is
    removed when the results have been printed."""
    argv = list(sys.argv[1:] if argv is None else argv)
    import ray

    wanted = os.environ.get("FTHARNESS_RAY_VERSION")
    if wanted and wanted != ray.__version__:
        print(f"ftharness: error: the head runs Ray {ray.__version__}; the run was submitted by Ray {wanted[:40]}, "
              f"and a submitted run needs the same version on both sides", file=sys.stderr, flush=True)
        return 2
    home = tempfile.mkdtemp(prefix="ftharness-job-")
    try:
        for name in os.listdir("."):
            if os.path.isfile(name):
                shutil.copy(name, home)
        os.chdir(home)
        sys.path.insert(0, home)
        rc = cli_main(argv)
        out = argv[argv.index("--out") + 1]
        sys.stdout.flush()
        sys.stderr.flush()
        if os.path.isdir(out):
            try:
                print(f"\n{BEGIN}\n{pack(out)}\n{END}", flush=True)
            except ClusterError as e:
                print(f"ftharness: error: {e}", file=sys.stderr, flush=True)
        return rc
    finally:
        os.chdir("/")
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
