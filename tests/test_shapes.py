"""A line read through its shape (ftharness.history.shapes) is the event a JSON reader decodes.

The reader takes the values of a stored layout's lines straight from the text
when the line is exactly what `json.dumps` writes for that layout. Here the same
files are read with shapes (a columnar reader, `columns()`) and without (the
plain reader: every line decoded as a dict), and must give the same events
with the same types, and the same problems: for lines as ftharness writes
them, and for lines changed in the ways that a shape must refuse (spacing,
key order, duplicate keys, escapes, non-ASCII, NaN, long or odd numbers,
another type in one place)."""

import json
import random
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from ftharness.history import records
from ftharness.history.records import HistoryReader
from ftharness.history.shapes import _numbers
from test_columns import typed


def _decoded(text: bytes):
    """What the reader decodes a number as: orjson's value, the standard library's where orjson refuses."""
    import orjson

    try:
        return orjson.loads(text)
    except ValueError:
        return json.loads(text)


def test_numbers_parse_as_the_reader_decodes_them():
    rng = random.Random(5)
    floats = []
    for _ in range(20000):
        x = struct.unpack("d", struct.pack("Q", rng.getrandbits(64)))[0]
        if x == x and abs(x) != float("inf"):
            floats.append(json.dumps(x).encode())
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30))).lstrip("0") or "0"
        frac = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 30)))
        exp = rng.choice(["", f"e{rng.randint(-400, 400)}", f"E+{rng.randint(0, 400)}", f"e-{rng.randint(0, 30)}"])
        floats.append(f"{rng.choice(['', '-'])}{digits}.{frac}{exp}".encode())
    got = _numbers(floats, np.float64)
    want = np.array([_decoded(v) for v in floats], dtype=np.float64)
    assert (got.view(np.int64) == want.view(np.int64)).all()   # the same doubles, bit for bit
    ints = [str(rng.randint(-10 ** 18 + 1, 10 ** 18 - 1)).encode() for _ in range(20000)]
    ints += [b"0", b"-0", b"999999999999999999", b"-999999999999999999"]
    assert _numbers(ints, np.int64).tolist() == [int(v) for v in ints]
    assert _numbers([b"1, 2", b"3"], np.int64, 3).tolist() == [1, 2, 3]
    assert _numbers([b"1, 2", b"3"], np.int64, 4) is None   # a count that does not add up


def _step(seq, rank=0, **over):
    e = {"t": 1796034923.8774257 + seq / 7, "kind": "step", "source": "worker", "run": "r", "fit_index": 1,
         "attempt": 1, "attempt_id": "6a817a2c7d0a41fcbeb8ba09aa7b00e7", "rank": rank, "world_size": 2,
         "node_id": "n-%d" % rank, "pid": 100 + rank, "step": seq, "epoch": 0, "loss": 1.0 / (seq + 1),
         "rows": [seq * 3 + i for i in range(4)], "n_rows": 4, "emitter": "w-%d" % rank, "eseq": seq, "seq": seq}
    e.update(over)
    return e


def _report(seq, **over):
    e = {"t": 1796034924.0 + seq, "kind": "report", "source": "worker", "run": "r", "attempt": 1, "rank": 0,
         "step": seq, "checkpoint": "checkpoint_%05d" % seq if seq % 2 else None, "digest": None,
         "metrics": {"step": seq, "loss": 0.5, "reason": "cadence", "ok": True, "ftharness_step": seq},
         "emitter": "w-0", "eseq": seq, "seq": seq}
    e.update(over)
    return e


def _written(seq, **over):
    e = {"t": 1.5 + seq, "kind": "checkpoint_written", "source": "worker", "rank": 1, "step": seq,
         "local_path": "/tmp/ckpt_%d" % seq, "seq": seq}
    e.update(over)
    return e


#: ways to write a line that a shape must not take as its layout's (each gives the line the reader
#: must decode as a dict, or refuse as the plain reader does)
def _variants(e: dict, rng: random.Random) -> bytes:
    way = rng.randrange(16)
    e = dict(e)
    if way == 0:
        return json.dumps(e, separators=(",", ":")).encode()
    if way == 1:
        return json.dumps(e).replace(", ", ",  ", 1).encode()
    if way == 2:
        keys = list(e)
        rng.shuffle(keys)
        return json.dumps({k: e[k] for k in keys}).encode()
    if way == 3:   # a duplicate key: the last one wins for every reader
        return json.dumps(e)[:-1].encode() + b', "step": 77}'
    if way == 4:
        e["run"] = rng.choice(["caf\u00e9", "a\"b", "back\\slash", "tab\there", "\u2603"])
        return json.dumps(e, ensure_ascii=rng.random() < 0.5).encode()
    if way == 5:
        e["loss"] = rng.choice([float("nan"), float("inf"), -float("inf"), 1e308 * 10])
        return json.dumps(e).encode()
    if way == 6:
        e["step"] = rng.choice([10 ** 19, -10 ** 18 - 7, 2 ** 63, 10 ** 30])
        return json.dumps(e).encode()
    if way == 7:   # a number written as JSON does not write it, or not JSON at all
        text = json.dumps(e).replace('"seq": %d' % e["seq"], '"seq": ' + rng.choice(["01", "1.", "+1", "0x1", "1e2"]))
        return text.encode()
    if way == 8:
        e["step"] = float(e["step"])
        return json.dumps(e).encode()
    if way == 9:
        e["t"] = int(e["t"])
        return json.dumps(e).encode()
    if way == 10:
        e["rank"] = rng.choice([None, "0", 1.0, True, [0]])
        return json.dumps(e).encode()
    if way == 11 and "rows" in e:
        e["rows"] = rng.choice([[], [1.5], [True], [None], [[1]], [10 ** 20]])
        return json.dumps(e).encode()
    if way == 12 and "metrics" in e:
        e["metrics"] = dict(e["metrics"], extra=1) if rng.random() < 0.5 else {"loss": e["metrics"]["loss"]}
        return json.dumps(e).encode()
    if way == 13:
        e["unknown_field"] = 1
        return json.dumps(e).encode()
    if way == 14:   # torn or garbled
        text = json.dumps(e).encode()
        return text[: rng.randrange(1, len(text))]
    if way == 15:
        return json.dumps(e).encode().replace(b'"', b"'", 2)
    return json.dumps(e).encode()


def _file(tmp_path, seed: int, n: int, odd: float) -> str:
    rng = random.Random(seed)
    lines = []
    for seq in range(1, n + 1):
        make = rng.choice([_step, _step, _step, _report, _written])
        e = make(seq, **({"rank": rng.randrange(3)} if make is _step else {}))
        lines.append(_variants(e, rng) if rng.random() < odd else json.dumps(e).encode())
    path = tmp_path / f"h{seed}.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return str(path)


def _both(path: str, block: int):
    records._BLOCK = block
    shaped = HistoryReader(path, columnar=True)
    shaped.read(final=True)
    plain = HistoryReader(path)
    plain.read(final=True)
    return shaped, plain


def _same(shaped, plain):
    got = list(shaped.columns())
    assert typed(got) == typed(plain.events)
    assert shaped.problems == plain.problems
    assert shaped.digest.hexdigest() == plain.digest.hexdigest()


@pytest.fixture(params=["linescan", "regex"])
def matcher(request, monkeypatch):
    """Lines matched by ftharness.history._linescan (where it was built) or by the shapes' regexes."""
    from ftharness.history import shapes

    if request.param == "linescan" and shapes.linescan is None:
        pytest.skip("ftharness.history._linescan was not built (no C compiler at install)")
    if request.param == "regex":
        monkeypatch.setattr(shapes, "linescan", None)
    return request.param


def test_lines_as_ftharness_writes_them_are_read_through_shapes(tmp_path, monkeypatch, matcher):
    from ftharness.history import shapes

    monkeypatch.setattr(records, "_BLOCK", records._BLOCK)
    through = []
    regex, scanned = shapes.Shape.columns, shapes.Shape.scanned
    monkeypatch.setattr(shapes.Shape, "columns", lambda self, groups: (through.append(len(groups)), regex(self, groups))[1])
    monkeypatch.setattr(shapes.Shape, "scanned", lambda self, n, outs: (through.append(n), scanned(self, n, outs))[1])
    shaped, plain = _both(_file(tmp_path, 1, 3000, odd=0.0), 1 << 16)
    _same(shaped, plain)
    assert sum(s.n for s in shaped.stores) == 3000
    # every line but the first of each layout (decoded as a dict, to learn the layout) came through its shape
    assert sum(through) == 3000 - len(shaped._shapes) and len(shaped._shapes) >= 3


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10 ** 6), odd=st.sampled_from([0.02, 0.2, 0.7]), block=st.sampled_from([512, 4096, 1 << 16]))
def test_changed_lines_read_as_the_plain_reader_reads_them(tmp_path, monkeypatch, matcher, seed, odd, block):
    monkeypatch.setattr(records, "_BLOCK", records._BLOCK)
    shaped, plain = _both(_file(tmp_path, seed, 400, odd), block)
    _same(shaped, plain)
