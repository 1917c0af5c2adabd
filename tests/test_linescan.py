"""ftharness.history._linescan accepts exactly the lines a shape's regex accepts, and reads the same values.

The C scanner and the regexes of ftharness.history.shapes are two spellings of
one language; the reader uses the first where it was built. Here both judge the
same lines, written by json.dumps and then changed a byte at a time (digits,
signs, dots, exponents, quotes, backslashes, spaces, control and non-ASCII
bytes, cut short), and must agree on every one: which shape matches, and for
the lines that match, the columns and contexts taken from them."""

import json
import random

import numpy as np
import pytest

from ftharness.history import shapes
from ftharness.history.columns import Store
from test_shapes import _report, _step, _written

pytestmark = pytest.mark.skipif(shapes.linescan is None, reason="ftharness.history._linescan was not built")

#: bytes a change puts in: what a number, a string or the structure is made of, and what none may hold
_ALPHABET = b'0123456789-+.eE", :[]{}\\nultrfas\x00\x1f\x7f\xc3\xa9 '


def _shape(e: dict) -> shapes.Shape:
    store = Store(e["kind"])
    return shapes.Shape(store, store.layout(e))


def _changed(line: bytes, rng: random.Random) -> bytes:
    b = bytearray(line)
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        i = rng.randrange(len(b) + 1)
        way = rng.randrange(4)
        if way == 0 and i < len(b):
            del b[i]
        elif way == 1:
            b.insert(i, rng.choice(_ALPHABET))
        elif way == 2 and i < len(b):
            b[i] = rng.choice(_ALPHABET)
        else:
            b = b[:i]
    return bytes(b)


def _typed(cols, ctxs):
    out = {k: (v.dtype.str, v.tolist()) for k, v in cols.items()}
    if isinstance(ctxs, tuple) and hasattr(ctxs, "ids"):
        ctxs = [ctxs.values[i] for i in ctxs.ids.tolist()]
    return out, [tuple((type(v), v) for v in c) for c in ctxs]


def _agree(shape: shapes.Shape, lines):
    """Scan `lines` with the program and match them with the regex: the same lines, the same values."""
    which, starts, results = shapes.linescan.scan(b"".join(line + b"\n" for line in lines), (shape.program,))
    assert np.frombuffer(starts, dtype=np.int64)[-1] == sum(len(line) + 1 for line in lines)
    got = np.frombuffer(which, dtype=np.int8).tolist()
    matched = [shape.match(line) for line in lines]
    assert got == [0 if m is not None else -1 for m in matched], [
        line for line, g, m in zip(lines, got, matched) if (g == 0) != (m is not None)][:3]
    groups = [m.groups() for m in matched if m is not None]
    if not groups:
        return 0
    n, outs = results[0]
    want, scanned = shape.columns(groups), shape.scanned(n, outs)
    assert (want is None) == (scanned is None)
    if want is not None:
        assert _typed(*scanned) == _typed(*want)
    return n


@pytest.mark.parametrize("make", [_step, _report, _written])
def test_lines_changed_a_byte_at_a_time_are_judged_as_the_regex_judges_them(make):
    rng = random.Random(make.__name__)
    shape = _shape(make(1))
    lines, kept = [], 0
    for seq in range(1, 6001):
        e = make(seq)
        for k in ("t", "loss"):
            if k in e and rng.random() < 0.3:   # floats of every size and spelling JSON writes
                e[k] = rng.choice([0.0, -0.0, 5e-324, 1.7976931348623157e308, 1e16, 1.5e-7, 123456789.125])
        line = json.dumps(e).encode()
        lines.append(line if rng.random() < 0.2 else _changed(line, rng))
    kept = _agree(shape, lines)
    assert 1000 < kept < len(lines)   # both kinds of line were there


def test_numbers_at_the_edges_of_what_a_shape_takes():
    shape = _shape(_step(1))
    base = json.dumps(_step(1)).encode()
    lines = []
    for v in [b"0", b"-0", b"00", b"01", b"-", b"1" * 18, b"1" * 19, b"-" + b"9" * 18, b"9" * 18 + b"0", b"+1", b"1.0"]:
        lines.append(base.replace(b'"step": 1,', b'"step": ' + v + b","))
        lines.append(base.replace(b'"rows": [3, 4, 5, 6]', b'"rows": [' + v + b", " + v + b"]"))
    for v in [b"1.0", b"1e5", b"1E+5", b"1e-5", b"1.5e", b"1.e5", b".5", b"1.", b"-0.0", b"1e999", b"-1e999",
              b"1e-999", b"0.1e1", b"00.1", b"1.5E-0007", b"2.2250738585072014e-308", b"4.9406564584124654e-324",
              b"1.00000000000000011102230246251565404236316680908203125", b"9" * 400 + b".0", b"NaN", b"Infinity"]:
        lines.append(base.replace(b'"loss": 0.5}', b'"loss": ' + v + b"}"))
    lines += [base.replace(b'"rows": [3, 4, 5, 6]', b'"rows": ' + v) for v in [b"[]", b"[ ]", b"[1,2]", b"[1, ]", b"[, 1]"]]
    lines += [base + b" ", b" " + base, base.replace(b'"r"', b'"\\u0072"'), base.replace(b'"r"', b'"\x7f"'),
              base.replace(b'"r"', b'null'), base.replace(b'"w-0"', b"null"), base.replace(b'"n-0"', b'"n\xc3\xa9"')]
    assert _agree(shape, lines) > 10


def test_a_line_a_program_does_not_cover_is_left_to_the_reader():
    step, report = _shape(_step(1)), _shape(_report(1))
    body = b"".join(json.dumps(e).encode() + b"\n" for e in [_step(1), _report(2), _step(3), {"kind": "x"}]) + b"\n"
    which, starts, results = shapes.linescan.scan(body, (step.program, report.program))
    assert np.frombuffer(which, dtype=np.int8).tolist() == [0, 1, 0, -1, -1]
    assert [n for n, _ in results] == [2, 1]
    with pytest.raises(ValueError):
        shapes.linescan.scan(body, (b"\x63",))
