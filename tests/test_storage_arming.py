"""A storage fault lands by construction (issue 50): the job's next operation after the
injection meets it (real files, real errors), it stays armed until one does, its
`duration_s` counts from that first error, and one armed after the job's last
checkpoint says so at once. Pure: no cluster."""

import heapq
import itertools
import json
import os
import time

import pytest

from ftharness.faults import make_fault
from ftharness.faults.base import FaultContext, judge_landing
from ftharness.faults.storage import CONTROL_FILE, StorageErrors, chaos_filesystem, write_atomic

GLOB = "*/checkpoint_20*"


def save(fs, run_dir, name="checkpoint_2026-01-01_00-00-00.000001"):
    """One checkpoint file written as the torchrun commit writes it (through the job's filesystem)."""
    path = os.path.join(run_dir, ".staging", name, "state.pt")
    fs.create_dir(os.path.dirname(path), recursive=True)
    with fs.open_output_stream(path) as out:
        out.write(b"s" * 1000)
    return path


def test_the_first_operation_after_the_control_file_appears_meets_it(tmp_path):
    """No cache between the injection and the job: a 0.1 s cache outlived a whole torchrun job."""
    import pyarrow.fs as pafs

    root, run_dir = str(tmp_path), str(tmp_path / "run")
    fs = chaos_filesystem(root)
    save(fs, run_dir, "checkpoint_2026-01-01_00-00-00.000001")          # the job's last save before the trigger
    write_atomic(pafs.LocalFileSystem(), os.path.join(root, CONTROL_FILE),
                 json.dumps({"id": "0-x", "ops": ["write"], "path_glob": GLOB, "error_rate": 1.0,
                             "partial": True}).encode())
    with pytest.raises(OSError, match="injected partial write"):
        save(fs, run_dir, "checkpoint_2026-01-01_00-00-00.000002")      # at once, no sleep
    torn = tmp_path / "run" / ".staging" / "checkpoint_2026-01-01_00-00-00.000002" / "state.pt"
    assert torn.read_bytes() == b"s" * 500
    os.remove(os.path.join(root, CONTROL_FILE))
    save(fs, run_dir, "checkpoint_2026-01-01_00-00-00.000003")          # healed: the next save goes through


class Timeline:
    """The injector's timeline and records (harness/run/injector.py), run by hand: a kind that
    `heals_after_duration` gets its heal `duration_s` after the injection, as the injector does."""

    def __init__(self):
        self.queue, self.ids, self.recorded = [], itertools.count(), []

    def schedule(self, delay_s, fn, label, kind="fault_action"):
        heapq.heappush(self.queue, (time.time() + delay_s, next(self.ids), fn, label, kind))

    def record(self, label, detail):
        self.recorded.append(("fault_action", label, detail))

    def run_due(self):
        while self.queue and self.queue[0][0] <= time.time():
            _, _, fn, label, kind = heapq.heappop(self.queue)
            detail = fn()
            if kind != "none":
                self.recorded.append((kind, label, detail))


def test_an_armed_fault_waits_for_the_jobs_next_matching_operation(tmp_path):
    spec = {"kind": "storage_errors", "ops": ["write"], "path_glob": GLOB, "error_rate": 1.0,
            "duration_s": 0.3, "at": {"step": 3}}
    fault = make_fault(0, spec)
    tl = Timeline()
    run_dir = str(tmp_path / "storage" / "run")
    ctx = FaultContext(cluster=None, agents=None, members=[], storage_dir=run_dir, history_path="",
                       schedule=tl.schedule, record=tl.record)
    control = tmp_path / "storage" / CONTROL_FILE
    fault.inject(ctx)
    if fault.duration_s and fault.heals_after_duration:   # the injector's rule
        tl.schedule(fault.duration_s, lambda: fault.heal(ctx), "heal fault 0", kind="fault_healed")
    deadline = time.time() + 3 * fault.duration_s         # a slow job: no save for 3 windows
    while time.time() < deadline:
        tl.run_due()
        time.sleep(0.05)
    assert control.exists() and not tl.recorded, tl.recorded      # still armed, nothing claimed

    fs = chaos_filesystem(str(tmp_path / "storage"))
    with pytest.raises(OSError, match="injected write error"):
        save(fs, run_dir)                                          # the job's next save meets it
    deadline = time.time() + 5
    while time.time() < deadline and not any(k == "fault_healed" for k, _, _ in tl.recorded):
        tl.run_due()
        time.sleep(0.05)
    kinds = [k for k, _, _ in tl.recorded]
    assert kinds == ["fault_action", "fault_healed"], tl.recorded
    reached, healed = tl.recorded[0][2], tl.recorded[1][2]
    assert reached["errors_returned"] == 1 and reached["first"]["op"] == "write"
    assert healed["errors_returned"] == 1 and "after the job's first matching operation" in healed["how"]
    assert not control.exists()
    assert fault.heal(ctx) is None                                 # the run's end finds it healed


def events(inject_seq, registered_steps, steps=10, ops=("write",)):
    """run_start, checkpoints registered at `registered_steps` (seq 10+step), the injection."""
    ev = [{"seq": 1, "kind": "run_start", "t": 1, "workload": {"steps": steps, "checkpoint_every": 1}}]
    ev += [{"seq": 10 + s, "kind": "checkpoint_registered", "t": 10 + s, "step": s, "checkpoint": f"c{s}"}
           for s in registered_steps]
    ev.append({"seq": inject_seq, "kind": "fault_injected", "fault": 0, "t": inject_seq, "t_done": inject_seq,
               "target_hit": {"ops": list(ops), "path_glob": GLOB}})
    return sorted(ev, key=lambda e: e["seq"])


def land(ev, final, ops=("write",)):
    fault = make_fault(0, {"kind": "storage_errors", "ops": list(ops), "path_glob": GLOB, "at": {"step": 3}})
    return judge_landing(fault, ev, final=final)


def test_armed_after_the_last_checkpoint_is_said_at_once():
    got = land(events(25, range(1, 11)), final=False)
    assert got.status == "missed", got
    assert "after the job registered its last checkpoint (step 10, seq 20)" in got.evidence
    assert "no error was returned" in got.evidence


def test_armed_before_a_save_waits_then_names_what_the_job_did():
    assert land(events(13.5, range(1, 4)), final=False).status == "pending"
    got = land(events(13.5, range(1, 11)), final=True)    # 7 saves came, none met it: the filter's fault
    assert got.status == "missed" and "registered 7 checkpoint(s) after it was armed (the first at step 4" \
        in got.evidence, got
    got = land(events(13.5, range(1, 4)), final=True)
    assert "registered no checkpoint after it was armed" in got.evidence, got


def test_a_hit_lands_whatever_the_arming_said():
    ev = events(25, range(1, 11))
    ev.append({"seq": 26, "kind": "fault_healed", "fault": 0,
               "detail": {"errors_returned": 1, "delays": 0, "first": {"op": "write", "path": "/s/checkpoint_20x"}}})
    assert land(ev, final=True).status == "landed"


def test_reads_are_never_called_hopeless():
    """A read fault is met by a restore, which no checkpoint count foretells."""
    assert land(events(25, range(1, 11), ops=("read",)), final=False, ops=("read",)).status == "pending"
