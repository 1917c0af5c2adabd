"""A long history read in two processes (ftharness.history.split) is the history read in one.

`read_history` forks a child for the second half of a long file and merges its
state. Here the same files are read both ways (split at many places, so the
cut falls before, after and inside every kind of line) and must give the same
events with the same types, the same problems (line numbers included), and
the same verdict on the seal: intact, damaged, with a torn last line, with
lines too long to keep, with a history_end in the child's half, and when the
child fails."""

import json
import random

import pytest

from ftharness.history import records, split
from ftharness.history.records import read_history, sealed_lines
from ftharness.scenarios.synthetic import generate
from test_checks_scale import plans
from test_columns import typed
from test_scale_paths import damage


def _read(path, monkeypatch, share=None):
    monkeypatch.setattr(records, "COLUMNS_FROM", 0)
    if share is None:
        monkeypatch.setattr(split, "SPLIT_FROM", 1 << 62)
    else:
        monkeypatch.setattr(split, "SPLIT_FROM", 0)
        monkeypatch.setattr(split, "PARENT_SHARE", share)
        monkeypatch.setattr(split, "can_split", lambda path: True)   # (pytest may run threads of its own)
    read = read_history(str(path))
    return typed(list(read.events)), read.problems


def _files(tmp_path):
    rng = random.Random(7)
    for i, plan in enumerate(plans(8, seed=3)):
        events = generate(plan).events
        if i % 2:
            damage(events, rng)
        body = b"\n".join(sealed_lines(events, renumber=i % 4 != 1)) + b"\n"
        if i == 2:   # a torn last line
            body = body[:-40]
        if i == 3:   # lines too long to keep, in the middle
            lines = body.split(b"\n")
            lines.insert(len(lines) // 2, b'{"kind": "step", "x": "' + b"y" * (records.MAX_LINE + 10) + b'"}')
            lines.insert(len(lines) * 3 // 4, b"z" * (records.MAX_LINE * 2))
            body = b"\n".join(lines)
        if i == 4:   # garbage and a second history_end in the second half
            lines = body.split(b"\n")
            lines.insert(len(lines) * 2 // 3, b"not json")
            lines.insert(len(lines) * 2 // 3, lines[-2])
            body = b"\n".join(lines)
        path = tmp_path / f"h{i}.jsonl"
        path.write_bytes(body)
        yield path


def test_split_reads_as_one_process_reads(tmp_path, monkeypatch):
    monkeypatch.setattr(records, "_BLOCK", 4096)
    splits = 0
    real = split.merge
    for path in _files(tmp_path):
        want = _read(path, monkeypatch)
        for share in (0.0, 0.13, 0.46, 0.5, 0.77, 0.999):
            calls = []
            monkeypatch.setattr(split, "merge", lambda reader, state: (calls.append(1), real(reader, state)))
            assert _read(path, monkeypatch, share) == want, (path.name, share)
            splits += len(calls)
    assert splits > 30   # the child's half was merged, not read again by the parent


def test_a_failed_child_leaves_the_parent_to_read_on(tmp_path, monkeypatch):
    path = next(_files(tmp_path))
    want = _read(path, monkeypatch)

    def fail(reader_class, path, cut):
        raise RuntimeError("the child fails")
    monkeypatch.setattr(split, "_read_rest", fail)
    assert _read(path, monkeypatch, 0.5) == want


def test_only_long_files_of_a_single_threaded_process_split(tmp_path):
    small = tmp_path / "h.jsonl"
    small.write_bytes(b"{}\n")
    assert not split.can_split(str(small))
    assert not split.can_split(str(tmp_path / "missing.jsonl"))


def test_the_digest_is_the_one_pass_digest(tmp_path, monkeypatch):
    """Also past the last history_end (a torn line) and around long lines, which no seal checks here."""
    from ftharness.history.records import HistoryReader

    monkeypatch.setattr(records, "_BLOCK", 4096)
    monkeypatch.setattr(split, "can_split", lambda path: True)
    for path in _files(tmp_path):
        one = HistoryReader(str(path), columnar=True)
        one.read(final=True)
        for share in (0.1, 0.5, 0.9):
            monkeypatch.setattr(split, "PARENT_SHARE", share)
            two = HistoryReader(str(path), columnar=True)
            assert split.read_split(two)
            assert (two.digest.hexdigest(), two.lines, two.offset, two.problems, two._torn) == \
                (one.digest.hexdigest(), one.lines, one.offset, one.problems, one._torn), (path.name, share)
            assert [e.get("_digest_before") for e in two.ends] == [e.get("_digest_before") for e in one.ends]


def test_a_link_is_left_to_the_one_process_reader(tmp_path, monkeypatch):
    monkeypatch.setattr(split, "SPLIT_FROM", 0)
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"{}\n" * 10)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    assert not split.can_split(str(link))
