"""pydantic's validation errors as the lines a user reads: `field.path: what is wrong (got
value)`, with the fault kind's tag left out of the path, a `did you mean` for an unknown
key, and one line for the two members of a union field (num_workers, use_gpu)."""

from __future__ import annotations

import difflib
import re
from typing import Any, Dict, List, Tuple

from pydantic import ValidationError

from ftharness.faults import FAULT_KINDS
from ftharness.scenarios.language.scenario import Scenario

MAX_ERRORS = 10             # errors `validate` lists per file


#: labels pydantic puts in a location for the member of a plain union (num_workers, use_gpu)
_UNION_LABEL = re.compile(r"(int|bool|float|str|tuple\[.*\]|literal\[.*\]|function-.*)")


def _loc(loc: Tuple[Any, ...], key_last: bool = False) -> str:
    """`faults[0].target.rank` from pydantic's ('faults', 0, 'kill_worker', 'target', 'rank').
    `key_last`: the last part is a key of the file (an unknown one), kept even when it is
    named like a union label (`int: 1`)."""
    loc = list(loc)
    if loc[:1] == ["faults"] and len(loc) > 2:
        del loc[2]  # the discriminated union's tag: the fault kind
    parts = []
    for i, p in enumerate(loc):
        if isinstance(p, int):
            parts.append(f"[{p}]")
        elif (key_last and i == len(loc) - 1) or not _UNION_LABEL.fullmatch(str(p)):
            parts.append(("." if parts else "") + str(p))
    return "".join(parts)


def _model_at(loc: Tuple[Any, ...]):
    """The model whose keys are allowed at `loc` (pydantic's raw location of an unknown key)."""
    from pydantic import BaseModel
    from typing import get_args

    from ftharness.faults import REGISTRY

    model, parts = Scenario, list(loc[:-1])
    i = 0
    while i < len(parts):
        part = parts[i]
        if isinstance(part, int):
            i += 1
            continue
        if model is Scenario and part == "faults":
            # ('faults', 0, 'kill_worker', ...): the tag picks the fault's spec
            tag = parts[i + 2] if len(parts) > i + 2 else None
            if tag not in REGISTRY:
                return None
            model, i = REGISTRY[tag].Spec, i + 3
            continue
        field = getattr(model, "model_fields", {}).get(part)
        if field is None:
            return None
        stack, found = [field.annotation], None
        while stack and found is None:
            t = stack.pop()
            if isinstance(t, type) and issubclass(t, BaseModel):
                found = t
            else:
                stack.extend(get_args(t))
        if found is None:
            return None
        model, i = found, i + 1
    return model


def _unknown_key(err: Dict[str, Any], loc: str) -> str:
    """`loc: unknown key; did you mean X? allowed: a, b, c`."""

    model = _model_at(tuple(err.get("loc", ())))
    fault = model is not None and model.__module__.startswith("ftharness.faults")   # its kind is the tag
    allowed = [n for n in getattr(model, "model_fields", {}) if n != "base_dir" and not (fault and n == "kind")]
    if not allowed:
        return f"{loc}: unknown key"
    key = str(err["loc"][-1])
    close = difflib.get_close_matches(key, allowed, n=1, cutoff=0.6)
    hint = f"; did you mean {close[0]}?" if close else ""
    return f"{loc}: unknown key{hint} allowed: {', '.join(allowed)}"


def _format_one(err: Dict[str, Any]) -> str:
    kind = err.get("type")
    loc = _loc(err.get("loc", ()), key_last=kind == "extra_forbidden")
    if kind in ("union_tag_invalid", "union_tag_not_found"):  # the fault kind picks the spec model
        got = repr(err["input"].get("kind")) if isinstance(err.get("input"), dict) else ""
        got = got if len(got) <= 40 else got[:37] + "..."
        what = f"unknown fault kind {got}" if kind == "union_tag_invalid" else "a fault needs a kind"
        if kind == "union_tag_invalid":   # neither built in nor added by an installed plugin
            close = difflib.get_close_matches(str(err["input"].get("kind")), FAULT_KINDS, n=1, cutoff=0.6)
            what += f" (did you mean {close[0]}?)" if close else " (none built in or from a plugin)"
        return f"{loc}.kind: {what}; allowed: {', '.join(FAULT_KINDS)}"
    if kind == "extra_forbidden":
        return _unknown_key(err, loc)
    msg = err.get("msg", "invalid").replace("Value error, ", "")
    if kind == "literal_error":
        msg = msg.replace("Input should be", "must be one of")
    elif kind in ("model_type", "model_attributes_type", "dict_type"):
        msg = "must be a mapping"
    got = err.get("input")
    shown = repr(got) if not isinstance(got, (dict, list)) else ""
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    tail = f" (got {shown})" if shown and kind not in ("missing", "value_error") else ""
    head, sep, rest = msg.partition(": ")
    if sep and re.fullmatch(r"[A-Za-z_][\w.\[\]]*", head):  # a validator named the field itself
        if loc.split(".")[-1] == head:
            loc = ".".join(loc.split(".")[:-1])
        loc, msg = (f"{loc}.{head}" if loc else head), rest
    return f"{loc}: {msg}{tail}" if loc else f"{msg}{tail}"


def validation_problems(e: ValidationError, limit: int = MAX_ERRORS) -> List[str]:
    """Every error (up to `limit`), each as `field.path: what is wrong (got value)`."""
    out: List[str] = []
    members: Dict[str, int] = {}   # field -> its line, for the members of one union (int | tuple)
    for err in e.errors(include_url=False):
        line = _format_one(err)
        raw = err.get("loc", ())
        if raw and err.get("type") != "extra_forbidden" and _UNION_LABEL.fullmatch(str(raw[-1])):
            field = line.partition(": ")[0]
            if field in members:   # one line per field: "a valid integer or a valid tuple"
                out[members[field]] = _either(out[members[field]], line)
                continue
            members[field] = len(out)
        if line not in out:
            out.append(line)
        if len(out) >= limit:
            break
    return out


def _either(first: str, other: str) -> str:
    """Two union members' lines for one field as one: `f: A or B (got x)`."""
    tail = re.search(r" \(got .*\)$", other)
    tail = tail.group(0) if tail else ""
    head = first[: -len(tail)] if tail and first.endswith(tail) else first
    more = other.partition(": ")[2]
    more = more[: -len(tail)] if tail and more.endswith(tail) else more
    return f"{head} or {more.replace('Input should be ', '')}{tail}"


def format_validation_error(e: ValidationError) -> str:
    """The first error, as `field.path: what is wrong (got value)`."""
    return validation_problems(e, 1)[0]
