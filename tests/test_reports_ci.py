"""The CI recipes of docs/ci.md parse as YAML, run a chaos suite, upload the
report, publish the JUnit, and call only commands and options ftharness has."""

import os
import re
import shlex

import yaml

from conftest import REPO
from ftharness.harness.frontends.cli import build_parser

DOC = os.path.join(REPO, "docs", "ci.md")


def blocks():
    text = open(DOC).read()
    return [yaml.safe_load(b) for b in re.findall(r"```yml\n(.*?)```", text, re.S)]


def commands(node):
    """Every `ftharness ...` command line in the YAML's run/script strings."""
    if isinstance(node, dict):
        for v in node.values():
            yield from commands(v)
    elif isinstance(node, list):
        for v in node:
            yield from commands(v)
    elif isinstance(node, str):
        for line in node.splitlines():
            line = line.strip()
            if line.startswith("ftharness "):
                yield line


def options_of(parser):
    """command -> the option strings of its subparser."""
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return {name: {s for a in p._actions for s in a.option_strings} for name, p in sub.choices.items()}


def test_the_recipes_parse_and_call_real_commands_and_options():
    github, gitlab, compare = blocks()
    steps = github["jobs"]["chaos-suite"]["steps"]
    uses = [s.get("uses", "") for s in steps]
    assert any(u.startswith("actions/upload-artifact") for u in uses)
    junit = next(s for s in steps if s.get("uses", "").startswith("mikepenz/action-junit-report"))
    assert junit["with"]["report_paths"] == "results/chaos/junit.xml" and junit["if"] == "always()"
    job = gitlab["chaos-suite"]
    assert job["artifacts"]["reports"]["junit"] == "results/chaos/junit.xml"
    assert job["artifacts"]["when"] == "always" and "results/chaos" in job["artifacts"]["paths"]
    found = list(commands(github)) + list(commands(gitlab)) + list(commands(compare))
    assert any(c.startswith("ftharness suite ") for c in commands(github))
    assert any(c.startswith("ftharness suite ") for c in commands(gitlab))
    parser, known = build_parser(), options_of(build_parser())
    for line in found:
        argv = shlex.split(line)[1:]
        assert argv[0] in known, line
        for token in argv[1:]:
            if token.startswith("--"):
                assert token.split("=")[0] in known[argv[0]], (line, token)
        argv = [a if "*" not in a else "scenarios/catalog/kill-worker.yaml" for a in argv]
        args = parser.parse_args(argv)                 # every line parses as ftharness parses it
        assert args.command == argv[0]


def test_the_recipes_say_root_and_run_the_root_scenarios_where_they_can():
    text = open(DOC).read()
    github = blocks()[0]
    root = github["jobs"]["root"]["steps"]
    assert any("nftables" in (s.get("run") or "") for s in root)
    assert any((s.get("run") or "").startswith("sudo -E") and "ftharness suite" in s["run"] for s in root)
    for word in ("root", "SKIPPED", "nftables", "junit.xml", "ftharness validate chaos", "git+https://"):
        assert word in text, word
