"""The chaos filesystem on real files (no cluster): errors, latency, torn writes,
path globs and the control file switching behaviour on and off."""

import json
import os
import time

import pyarrow.fs as pafs
import pytest

from ftharness.faults.storage import CONTROL_FILE, chaos_filesystem


def control(root, **c):
    with open(os.path.join(root, CONTROL_FILE), "w") as f:
        json.dump(c, f)   # the handler reads it on every operation: no wait


def write(fs, path, data=b"x" * 1000):
    with fs.open_output_stream(path) as out:
        out.write(data)


def test_passthrough_without_control(tmp_path):
    fs = chaos_filesystem(str(tmp_path))
    write(fs, str(tmp_path / "a.bin"))
    assert (tmp_path / "a.bin").read_bytes() == b"x" * 1000


def test_write_errors_only_on_matching_paths(tmp_path):
    fs = chaos_filesystem(str(tmp_path))
    control(tmp_path, ops=["write"], path_glob="*/checkpoint_*", error_rate=1.0)
    with pytest.raises(OSError, match="injected write error"):
        write(fs, str(tmp_path / "checkpoint_1"))
    write(fs, str(tmp_path / "other.bin"))
    with fs.open_input_stream(str(tmp_path / "other.bin")) as f:  # reads are not in ops
        assert len(f.read()) == 1000


def test_partial_write_leaves_a_torn_file(tmp_path):
    fs = chaos_filesystem(str(tmp_path))
    control(tmp_path, ops=["write"], error_rate=1.0, partial=True)
    with pytest.raises(OSError, match="partial write"):
        write(fs, str(tmp_path / "state.pt"))
    assert (tmp_path / "state.pt").read_bytes() == b"x" * 500


def test_latency_and_heal(tmp_path):
    fs = chaos_filesystem(str(tmp_path))
    control(tmp_path, ops=["read"], error_rate=0.0, latency_s=0.3)
    (tmp_path / "f").write_bytes(b"1")
    t = time.time()
    fs.get_file_info(str(tmp_path / "f"))
    assert time.time() - t >= 0.3
    os.remove(tmp_path / CONTROL_FILE)
    t = time.time()
    fs.get_file_info(str(tmp_path / "f"))
    assert time.time() - t < 0.3


def test_pickles_for_the_workers(tmp_path):
    import pickle

    fs = pickle.loads(pickle.dumps(chaos_filesystem(str(tmp_path))))
    assert isinstance(fs, pafs.PyFileSystem)
    write(fs, str(tmp_path / "b"))
