"""A quiet terminal and kept logs: Ray's own driver-side lines ("(raylet) A
worker died ...", its logger's warnings) go to a log file instead of the
terminal, Ray's log files are copied (bounded) into RESULTS/logs before
teardown deletes them, the report links them, and --verbose shows them live.

The last test is a real run (slow: it starts its own embedded cluster), `ftharness run` of the
catalog's kill-worker as a user runs it; the core lane's real kill_worker case is this one."""

import os
import re
import subprocess
import sys

import pytest

from ftharness.harness.cluster import handles
from ftharness.harness.cluster.handles import LogCapture, RAY_LINE
from conftest import REPO

RAY_LINES = ["\x1b[33m(raylet)\x1b[0m A worker died or was killed while executing a task by an unexpected system error.",
             "(raylet) [2026-12-01 20:01:02,345 D 123 456] debug line",
             "(pid=4242) a worker's print", "(RayTrainWorker pid=4242, ip=192.0.2.2) step 3"]
OURS = ["[kill-worker] step 5/12  attempt 1  recoveries 0  events 30   38.3s",
        "PASS kill-worker: succeeded after 2 attempt(s), 12 steps, 68.4s", "  ? history: (raylet) quoted is ours"]


def test_ray_lines_are_told_from_ftharness_lines():
    assert all(RAY_LINE.match(line) for line in RAY_LINES)
    assert not any(RAY_LINE.match(line) for line in OURS)


def _capture_and_print(tmp_path, monkeypatch, verbose):
    monkeypatch.setenv("FTHARNESS_VERBOSE", "1" if verbose else "0")
    temp = tmp_path / "ray-temp"
    (temp / "session_2026_x" / "logs").mkdir(parents=True)
    (temp / "session_2026_x" / "logs" / "raylet.out").write_text("raylet started\n")
    (temp / "session_2026_x" / "logs" / "worker-1.out").write_bytes(b"x" * (handles.LOG_FILE_BYTES + 100))
    capture = LogCapture(str(temp))
    try:
        for line in RAY_LINES + OURS:
            print(line)
        import logging
        logging.getLogger("ray._private.services").error("Failed to bind to 127.0.0.1:8265")
    finally:
        capture.close()
    return capture


def test_ray_lines_leave_the_terminal_for_the_driver_log_and_logs_are_copied_bounded(tmp_path, monkeypatch, capsys):
    capture = _capture_and_print(tmp_path, monkeypatch, verbose=False)
    out = capsys.readouterr()
    assert out.out.splitlines() == OURS and "Failed to bind" not in out.err
    written = capture.copy_to(str(tmp_path / "results"))
    logs = tmp_path / "results" / "logs"
    driver = (logs / handles.DRIVER_LOG).read_text()
    assert all(line in driver for line in RAY_LINES) and "Failed to bind" in driver
    assert (logs / "2026_x" / "raylet.out").read_text() == "raylet started\n"
    worker = (logs / "2026_x" / "worker-1.out").read_bytes()
    assert worker.startswith(b"[ftharness: the last") and len(worker) < handles.LOG_FILE_BYTES + 100
    assert len(written) == 3


def test_verbose_shows_ray_lines_live_and_still_keeps_them(tmp_path, monkeypatch, capsys):
    capture = _capture_and_print(tmp_path, monkeypatch, verbose=True)
    assert capsys.readouterr().out.splitlines() == RAY_LINES + OURS
    capture.copy_to(str(tmp_path / "results"))
    assert RAY_LINES[0] in (tmp_path / "results" / "logs" / handles.DRIVER_LOG).read_text()


def test_the_report_links_the_kept_logs(tmp_path):
    import shutil

    from ftharness.reports.html import write_report

    folder = tmp_path / "run"
    shutil.copytree(os.path.join(os.path.dirname(__file__), "data", "kill-worker"), folder)
    (folder / "logs").mkdir()
    (folder / "logs" / handles.DRIVER_LOG).write_text("(raylet) A worker died\n")
    page = open(write_report([folder], tmp_path / "page"), encoding="utf-8").read()
    assert '>logs/</a>' in page and f">logs/{handles.DRIVER_LOG}</a>" in page


# ------------------------------------------------------------------ a real run
@pytest.mark.slow
@pytest.mark.full   # (a second real kill-worker run of the reference job: make test-full; moved for the examples)
@pytest.mark.ftharness_exclusive   # `ftharness run` starts its own cluster: the shared one stops first
def test_a_real_kill_worker_run_prints_only_progress_and_verdict_and_keeps_ray_logs(ftharness_exclusive, tmp_path):
    """Seen: a 900-character "(raylet) A worker died ..." paragraph per kill on
    the terminal, and Ray's logs deleted at teardown."""
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "ftharness.harness.frontends.cli", "run",
                           os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml"), "--out", str(out)],
                          capture_output=True, text=True, timeout=600, cwd=str(tmp_path),
                          env={**os.environ, "PYTHONSAFEPATH": "1", "FTHARNESS_VERBOSE": "0"})
    lines = (done.stdout + done.stderr).splitlines()
    assert done.returncode == 0, lines[-20:]
    verdict = [r"PASS kill-worker: succeeded after \d+ attempt\(s\), \d+ steps, [\d.]+s", r"results: .*",
               r"report: .*report\.html"]
    progress = re.compile(r"\[kill-worker\] step \d+/\d+ .*")
    others = [ln for ln in lines if not progress.fullmatch(ln) and not any(re.fullmatch(v, ln) for v in verdict)]
    assert not others, others
    assert any(re.fullmatch(verdict[0], ln) for ln in lines)
    logs = out / "logs"
    names = {os.path.basename(p) for p, _, files in os.walk(logs) for p in [os.path.join(p, f) for f in files]}
    assert handles.DRIVER_LOG in names and any(n.startswith("raylet") for n in names), sorted(names)[:20]
    assert "A worker died" in (logs / handles.DRIVER_LOG).read_text()
    total = sum(os.path.getsize(os.path.join(p, f)) for p, _, files in os.walk(logs) for f in files)
    assert total <= handles.LOG_TOTAL_BYTES + 64 * 1024
    assert "logs/" in (out / "report.html").read_text()
    # the run's own outputs hold to their published schemas
    import json

    import jsonschema

    schema = json.load(open(os.path.join(REPO, "reports", "summary.schema.json")))
    jsonschema.Draft202012Validator(schema).validate(json.load(open(out / "summary.json")))
    from test_junit import validate_junit

    validate_junit(out / "junit.xml")
    # the run is also the core lane's kill_worker case (tests/test_faults.py holds it for `make test-full`)
    from test_faults import assert_kill_worker_charged_to_max_failures

    from ftharness.history.records import read_events

    assert_kill_worker_charged_to_max_failures(json.load(open(out / "summary.json")), read_events(str(out)))


def test_a_multi_line_ray_message_leaves_the_terminal_whole(tmp_path, monkeypatch, capsys):
    """A node marked dead: Ray prints one message, its first line "(raylet) ...", then the tail
    of the dead raylet's raylet.out unprefixed (a real exploration's terminal held 400 such
    lines). The whole message goes to the driver log; ftharness's lines around it stay."""
    monkeypatch.setenv("FTHARNESS_VERBOSE", "0")
    dead = ("(raylet) The node with node id: 8f20 and address: 192.0.2.3 has been marked dead because the "
            "detector has missed too many heartbeats from it. Possible causes:\n"
            "\t(1) raylet crashes unexpectedly (OOM, etc.)\n"
            "\t(2) raylet has lagging heartbeats due to slow network or busy workload.\n"
            "    [state-dump] \tReporterService.grpc_client.HealthCheck - 1 total (0 active)\n"
            "    [state-dump] DebugString() time ms: 1")
    capture = LogCapture(str(tmp_path))
    try:
        print(OURS[0])
        print(dead)           # one write for the message, one for its newline: as print() does
        print(OURS[1])
        import sys
        sys.stdout.write("partial (raylet) ")   # an unfinished line of ours is still ours
        sys.stdout.write("kept\n")
    finally:
        capture.close()
    assert capsys.readouterr().out.splitlines() == [OURS[0], OURS[1], "partial (raylet) kept"]
    driver = (tmp_path / handles.DRIVER_LOG).read_text()
    assert "[state-dump] DebugString() time ms: 1" in driver and "(2) raylet has lagging" in driver


CHILD_NATIVE = """
import os, sys
from ftharness.harness.cluster.log_capture import LogCapture, NativeStderr
cap = LogCapture(sys.argv[1])
with NativeStderr(cap) as native:
    os.write(2, b"[W gcs_client.cc:210] Unauthenticated: InvalidAuthToken\\n")
os.write(2, b"after the block\\n")
cap.close()
print(repr(native.text))
"""


def test_native_stderr_takes_the_c_cores_lines_into_the_driver_log_for_a_block(tmp_path):
    """Ray's C++ core writes to file descriptor 2, under sys.stderr's filter: inside the block its
    lines go to the driver log (and are read back), after it the terminal is the terminal again."""
    out = subprocess.run([sys.executable, "-P", "-c", CHILD_NATIVE, str(tmp_path)], capture_output=True, text=True,
                         cwd=REPO, timeout=60, env={**os.environ, "FTHARNESS_VERBOSE": "0"})
    assert out.returncode == 0, out.stderr
    assert out.stderr == "after the block\n"
    assert "InvalidAuthToken" in out.stdout
    with open(tmp_path / "ftharness-driver.log") as f:
        assert "InvalidAuthToken" in f.read()
