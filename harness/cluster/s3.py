"""A real S3 endpoint on loopback for a run's checkpoint storage (`cluster.storage: s3`).

moto's server mode speaks the S3 protocol; pyarrow's S3FileSystem (what Ray
Train uses for `s3://` storage) talks to it over HTTP. The endpoint is a child
process in its own session: stopped when the run closes, and handed to the
cluster's reaper so that it dies with the harness too.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Optional

from ftharness.errors import ClusterError

BUCKET = "ftharness"
START_TIMEOUT_S = 60.0
#: moto accepts any credentials; these keep pyarrow from looking for real ones
CREDENTIALS = {"access_key": "ftharness", "secret_key": "ftharness", "region": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Endpoint:
    """`python -m moto.server` on 127.0.0.1, with one bucket for the run."""

    def __init__(self):
        self.port = _free_port()
        self.proc: Optional[subprocess.Popen] = None

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "S3Endpoint":
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        except OSError as e:
            raise ClusterError(f"cluster.storage: s3: cannot start the S3 endpoint ({e})") from None
        deadline = time.time() + START_TIMEOUT_S
        while True:
            if self.proc.poll() is not None:
                raise ClusterError("cluster.storage: s3: the S3 endpoint (moto) exited at once; "
                                   "is moto[server] installed? (pip install -e '.[s3]')")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                break
            except OSError:
                if time.time() > deadline:
                    self.close()
                    raise ClusterError(f"cluster.storage: s3: the S3 endpoint did not listen within "
                                       f"{START_TIMEOUT_S:.0f} s") from None
                time.sleep(0.1)
        self.filesystem(create=True).create_dir(BUCKET)
        return self

    def filesystem(self, create: bool = False):
        """A pyarrow S3FileSystem on this endpoint (picklable: Ray ships it to the workers)."""
        import pyarrow.fs as pafs

        return pafs.S3FileSystem(endpoint_override=self.endpoint, scheme="http",
                                 allow_bucket_creation=create, **CREDENTIALS)

    def close(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None
