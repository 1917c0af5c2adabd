"""Scenario YAML to plain data, bounded and strict (`load_yaml_text`): size, encoding,
depth and count limits, no aliases, no duplicate or merge keys, YAML 1.2 numbers, dates as
strings. It exists apart from the models so that a hostile file is refused, in one line
with its line number, before pydantic sees any of it."""

from __future__ import annotations

import re
from typing import Any

import yaml

from ftharness.errors import ScenarioError
from ftharness.scenarios.language.messages import one_line


MAX_FILE_BYTES = 256 * 1024  # a scenario is a page of YAML, not a data file (100 faults are ~10 KiB)
MAX_DEPTH = 32              # nesting deeper than this is no scenario
MAX_NODES = 20_000          # values in one file (keys, items, scalars)
MAX_ITEMS = 1_000           # entries of one list or mapping
MAX_SCALAR = 10_000         # characters of one value
MAX_NUMBER_CHARS = 40       # digits of one number: 10**40 is no count of anything


_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)   # libyaml when present: 10x faster, depth-capped


def _refuse(node, what: str):
    raise yaml.constructor.ConstructorError(None, None, what, getattr(node, "start_mark", None))


class _ScenarioLoader(_BaseLoader):
    """A safe loader for scenario files, bounded and strict:

    - no aliases (*name): they buy a scenario nothing and let a few hundred bytes expand
      into gigabytes (the 'billion laughs');
    - at most MAX_NODES values, MAX_ITEMS per list or mapping, MAX_SCALAR characters per
      value and MAX_DEPTH levels, checked on the composed nodes before any value is built;
    - a key given twice is refused (YAML would keep the last one silently), and so is a
      merge key (`<<: {...}`), which lets a key be given twice unseen;
    - YAML 1.2 numbers (`1e3`, `.5e3`) are numbers, as the published schema and editors take
      them (YAML 1.1 would read them as strings);
    - numbers of more than MAX_NUMBER_CHARS characters are refused before conversion
      (sexagesimal `1:1:1...` and 4,000-digit integers cost minutes of CPU);
    - dates and times stay strings (`name: 2024-13-01` is a name, not a bad date);
    - a converter's own failure (`!!int abc`, `!!float x`, `!!binary ?`) is this value's error."""

    def get_single_node(self):
        node = super().get_single_node()
        if node is not None:
            self._check_nodes(node)
        return node

    @staticmethod
    def _check_nodes(root) -> None:
        seen, count, stack = set(), 0, [(root, 1)]
        while stack:
            node, depth = stack.pop()
            if id(node) in seen:
                _refuse(node, "aliases (*name) are not allowed in scenarios")
            seen.add(id(node))
            count += 1
            if count > MAX_NODES:
                _refuse(node, f"more than {MAX_NODES} values; a scenario is a page, not a data file")
            if depth > MAX_DEPTH:
                _refuse(node, f"nested more than {MAX_DEPTH} levels deep")
            if isinstance(node, yaml.ScalarNode):
                if len(node.value) > MAX_SCALAR:
                    _refuse(node, f"a value of {len(node.value)} characters (at most {MAX_SCALAR})")
                continue
            items = node.value
            if len(items) > MAX_ITEMS:
                _refuse(node, f"{len(items)} entries in one list or mapping (at most {MAX_ITEMS})")
            if isinstance(node, yaml.MappingNode):
                for k, v in items:
                    stack.append((k, depth + 1))
                    stack.append((v, depth + 1))
            else:
                stack.extend((v, depth + 1) for v in items)

    def construct_object(self, node, deep=False):
        try:
            return super().construct_object(node, deep)
        except yaml.YAMLError:
            raise
        except Exception as e:  # noqa: BLE001 - PyYAML's converters raise ValueError, KeyError, ...
            _refuse(node, f"{node.tag.rsplit(':', 1)[-1]} value {node.value[:40]!r} cannot be read "
                          f"({type(e).__name__})" if isinstance(node, yaml.ScalarNode)
                    else f"value cannot be read ({type(e).__name__})")

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            keys = set()
            for key_node, _ in node.value:
                if isinstance(key_node, yaml.ScalarNode) and key_node.tag == "tag:yaml.org,2002:merge":
                    _refuse(key_node, "merge keys (<<) are not allowed in scenarios; write the keys out")
                if isinstance(key_node, yaml.ScalarNode):
                    k = (key_node.tag, key_node.value)
                    if k in keys:
                        _refuse(key_node, f"key {key_node.value[:60]!r} given twice (YAML would keep the last one)")
                    keys.add(k)
                elif not isinstance(key_node, yaml.ScalarNode):
                    _refuse(key_node, "a key must be a plain value, not a list or mapping")
        return super().construct_mapping(node, deep)

    def _short_number(self, node):
        if len(str(node.value)) > MAX_NUMBER_CHARS:
            _refuse(node, f"a number of {len(node.value)} characters (at most {MAX_NUMBER_CHARS})")

    def construct_yaml_int(self, node):
        self._short_number(node)
        return super().construct_yaml_int(node)

    def construct_yaml_float(self, node):
        self._short_number(node)
        return super().construct_yaml_float(node)

    def construct_yaml_timestamp(self, node):
        return self.construct_scalar(node)


_ScenarioLoader.add_constructor("tag:yaml.org,2002:int", _ScenarioLoader.construct_yaml_int)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:float", _ScenarioLoader.construct_yaml_float)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:timestamp", _ScenarioLoader.construct_yaml_timestamp)
_ScenarioLoader.add_constructor("tag:yaml.org,2002:map", _BaseLoader.construct_yaml_map)
_ScenarioLoader.add_implicit_resolver(   # YAML 1.2 exponents without a dot or a sign: 1e3, 6E2
    "tag:yaml.org,2002:float", re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."))

_NoAliasLoader = _ScenarioLoader   # the name older callers import


def load_yaml_text(raw: bytes, source: str) -> Any:
    """YAML bytes to data, or a one-line ScenarioError (size, encoding, syntax, depth, limits)."""
    if len(raw) > MAX_FILE_BYTES:
        raise ScenarioError(one_line(f"{source}: more than {MAX_FILE_BYTES} bytes, more than a scenario may hold"))
    if b"\x00" in raw:
        raise ScenarioError(one_line(f"{source}: a binary file, not YAML"))
    separators = raw.count(b",") + raw.count(b"\n")
    if separators > MAX_NODES:   # before parsing: composing that many values alone costs seconds
        raise ScenarioError(one_line(f"{source}: {separators} lines and commas: more than {MAX_NODES} values; "
                                     f"a scenario is a page, not a data file"))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ScenarioError(one_line(f"{source}: not UTF-8 text (byte {e.start})")) from None
    try:
        return yaml.load(text, Loader=_ScenarioLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        problem = str(getattr(e, "problem", None) or e)
        if "nesting depth" in problem:   # libyaml's own cap
            problem = f"nested more than {MAX_DEPTH} levels deep"
        raise ScenarioError(one_line(f"{source}:{where} not valid YAML ({problem})")) from None
    except RecursionError:
        raise ScenarioError(one_line(f"{source}: nested more than {MAX_DEPTH} levels deep")) from None
    except Exception as e:  # noqa: BLE001 - whatever else PyYAML raises is still this file's fault
        raise ScenarioError(one_line(f"{source}: cannot be read as YAML ({type(e).__name__})")) from None
