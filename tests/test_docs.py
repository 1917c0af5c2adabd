"""The docs cannot contradict the tool (pure: no Ray).

Every `ftharness ...` command shown in README.md and docs/ parses with the real parser, every
repository path they name exists, the reference pages and the example outputs are what the
generators write today, the README's example is the recorded run it claims to be, and the site
builds with broken links as errors.
"""

import argparse
import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: the top folders and files of the repository a path in the docs may start with
REPO_PREFIXES = ("scenarios/", "tests/", "examples/", "benchmarks/", "docs/", "scripts/", "harness/", "faults/",
                 "history/", "reports/", "ftharness/")
README_MAX_BYTES = 12 * 1024


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(dirpath, n) for n in names if n.endswith(".md")]
    return sorted(files)


def rel(path):
    return os.path.relpath(path, ROOT)


def commands(text):
    """(line number, command) of every `ftharness ...` command line: in code blocks (a leading
    `$ ` or `.venv/bin/` dropped, backslash continuations joined) and in inline code spans."""
    out, fence, lines = [], False, text.splitlines()
    i = 0
    while i < len(lines):
        line, no = lines[i], i + 1
        if line.lstrip().startswith("```"):
            fence = not fence
        elif fence:
            s = line.strip().removeprefix("$ ").removeprefix(".venv/bin/")
            while s.endswith("\\") and i + 1 < len(lines):
                i += 1
                s = s[:-1] + " " + lines[i].strip()
            if s.startswith("ftharness "):
                out.append((no, s))
        else:
            out += [(no, m) for m in re.findall(r"`(ftharness [^`]+)`", line)]
        i += 1
    return out


def subparsers(parser):
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def options(parser):
    return {o for a in parser._actions for o in a.option_strings}


#: a synopsis rather than a command: optional parts, alternatives, placeholders in capitals
SYNOPSIS = re.compile(r"[\[\]|]|\.\.\.|(^|[=:/,])[A-Z][A-Z0-9_]*([.,:]|$)")


def problems_of(command, parser):
    """What is wrong with one documented command line, or []."""
    try:
        argv = shlex.split(command, comments=True)[1:]
    except ValueError as e:
        return [f"does not split ({e})"]
    if not argv:
        return ["no subcommand"]
    if argv[0] in ("--version", "--help", "-h"):
        return []
    subs = subparsers(parser)
    if argv[0] not in subs:
        return [f"no subcommand {argv[0]!r} (there are {', '.join(subs)})"]
    sub = subs[argv[0]]
    if len(argv) == 1:
        return []   # a subcommand named in prose (`ftharness check`)
    if any(SYNOPSIS.search(t) for t in argv[1:]):
        known = options(sub)
        opts = {t.strip("[]").split("=")[0] for t in argv[1:] if t.strip("[").startswith("-")}
        return [f"{argv[0]} has no option {o}" for o in sorted(opts - known)]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(argv)
    except SystemExit as e:
        if e.code:
            return [f"does not parse: {err.getvalue().strip()}"]
    wrong, outputs = [], ("--out", "--junit")
    for prev, tok in zip([None] + argv, argv):
        if prev in outputs or tok.startswith("-"):
            continue
        for part in re.split(r"[=,]", tok):
            if part.startswith(REPO_PREFIXES) and not os.path.exists(os.path.join(ROOT, part)):
                wrong.append(f"names {part}, which does not exist")
    return wrong


def test_every_documented_command_parses_and_its_paths_exist():
    from ftharness.harness.frontends.cli import build_parser

    parser = build_parser()
    seen, wrong = 0, []
    for path in doc_files():
        if rel(path) == os.path.join("docs", "reference", "cli.md"):
            continue  # the parser's own --help (generated), not commands
        for no, command in commands(open(path).read()):
            seen += 1
            wrong += [f"{rel(path)}:{no}: {command!r}: {p}" for p in problems_of(command, parser)]
    assert seen >= 30, f"only {seen} commands found in the docs: is the extraction broken?"
    assert wrong == []


def test_the_command_check_can_fail():
    from ftharness.harness.frontends.cli import build_parser

    parser = build_parser()
    assert problems_of("ftharness check tests/data/kill-worker", parser) == []
    assert problems_of("ftharness chek tests/data/kill-worker", parser)
    assert problems_of("ftharness check tests/data/no-such-run", parser)
    assert problems_of("ftharness run scenarios/catalog/kill-worker.yaml --stepz 3", parser)
    assert problems_of("ftharness run [SCENARIO.yaml] [--no-such-flag]", parser)
    assert problems_of("ftharness run [SCENARIO.yaml] [--out DIR]", parser) == []


#: a path the docs mention in an inline code span, e.g. `scenarios/catalog/kill-node.yaml` or
#: `harness/cluster/handles.py:PROFILES` (the part after the colon is a name in the file)
PATH_SPAN = re.compile(r"`((?:%s)[\w./-]*)(?::\w+)?`" % "|".join(re.escape(p) for p in REPO_PREFIXES))


def test_every_repository_path_the_docs_name_exists():
    wrong, seen = [], 0
    for path in doc_files():
        for no, line in enumerate(open(path), 1):
            for m in PATH_SPAN.finditer(line):
                seen += 1
                if not os.path.exists(os.path.join(ROOT, m.group(1))):
                    wrong.append(f"{rel(path)}:{no}: {m.group(1)}")
    for path in doc_files():   # and in shell blocks: `chaos run scenarios/chaostoolkit/...`
        for block in re.findall(r"```(?:bash|sh)\n(.*?)```", open(path).read(), re.S):
            for line in block.splitlines():
                toks = line.split("#", 1)[0].split()
                for prev, tok in zip([None] + toks, toks):
                    tok = tok.strip("[](),;'\"")
                    if prev not in ("--out", "--junit") and tok.startswith(REPO_PREFIXES):
                        seen += 1
                        if not os.path.exists(os.path.join(ROOT, tok)):
                            wrong.append(f"{rel(path)}: {tok} (in a shell block)")
    assert seen >= 50
    assert wrong == []


def test_readme_links_resolve_and_it_stays_short():
    text = open(os.path.join(ROOT, "README.md")).read()
    size = len(text.encode())
    assert size <= README_MAX_BYTES, f"README.md is {size} bytes; move detail into docs/"
    for target in re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text):
        if "://" not in target:
            assert os.path.exists(os.path.join(ROOT, target)), f"README.md links to {target}, which does not exist"
    for cmd in ("make demo", "make test"):
        assert cmd in text
    makefile = open(os.path.join(ROOT, "Makefile")).read()
    assert re.search(r"^demo:", makefile, re.M) and re.search(r"^test:", makefile, re.M)


def test_every_scenario_shown_in_the_docs_validates():
    """A ```yaml block with a `name` is a scenario: it must be one `ftharness validate` accepts
    (user entrypoints are looked up in examples/)."""
    import yaml

    from ftharness.scenarios.schema import parse_scenario

    seen, wrong = 0, []
    for path in doc_files():
        for m in re.finditer(r"```yaml\n(.*?)```", open(path).read(), re.S):
            data = yaml.safe_load(m.group(1))
            if isinstance(data, dict) and "name" in data:
                seen += 1
                try:
                    parse_scenario(data, source=rel(path), base_dir=os.path.join(ROOT, "examples"))
                except Exception as e:  # noqa: BLE001 - the message is the finding
                    wrong.append(f"{rel(path)}: {data['name']}: {e}")
    assert seen >= 4
    assert wrong == []


def exit_table(path):
    """{code: verdict} of the exit-code table in a page, and the table's text."""
    text = open(os.path.join(ROOT, path)).read()
    rows = re.findall(r"^\| (\d) \| ([A-Z—]+) \| .*\|$", text, re.M)
    table = "\n".join(re.findall(r"^\| \d \| .*\|$", text, re.M))
    return {int(c): v for c, v in rows}, table


def test_exit_codes_in_the_docs_are_the_tools():
    from ftharness.scenarios import verdict as v

    readme, readme_table = exit_table("README.md")
    page, page_table = exit_table("docs/verdicts.md")
    assert readme_table == page_table, "README.md and docs/verdicts.md show different exit-code tables"
    assert readme == {v.EXIT_PASS: v.PASS, v.EXIT_FAIL: v.FAIL, v.EXIT_CANNOT_RUN: "—",
                      v.EXIT_INCONCLUSIVE: v.INCONCLUSIVE, v.EXIT_INTERNAL: "—"}
    assert {c: v.exit_code(name) for c, name in readme.items() if name != "—"} == {c: c for c in readme if readme[c] != "—"}
    # "A suite exits with its worst verdict (4, then 1, then 3, then 0)"
    worst_first, left = [], [v.ERROR, v.FAIL, v.INCONCLUSIVE, v.PASS]
    while left:
        worst_first.append(v.overall(left))
        left.remove(worst_first[-1])
    order = ", then ".join(str(v.exit_code(x)) for x in worst_first)
    for path in ("README.md", "docs/verdicts.md"):
        assert f"exits with its worst verdict ({order})" in open(os.path.join(ROOT, path)).read(), path


@pytest.mark.parametrize("scenario, recorded", [("scenarios/catalog/kill-worker.yaml", "tests/data/kill-worker"),
                                                ("scenarios/catalog/preempt-node.yaml", "tests/data/preempt-node")])
def test_the_example_scenarios_are_the_recorded_runs(scenario, recorded):
    """README.md and the tutorial show a catalog scenario beside the recorded run's output: the
    recorded run must be that scenario (defaults filled in)."""
    from ftharness.scenarios.schema import load_scenario

    def dump(path):
        d = load_scenario(os.path.join(ROOT, path)).model_dump()
        return {k: v for k, v in d.items() if k not in ("base_dir", "description")}

    assert dump(scenario) == dump(os.path.join(recorded, "scenario.yaml"))


def _generator(script):
    r = subprocess.run([sys.executable, "-P", os.path.join(ROOT, "scripts", script), "--check"], cwd=ROOT,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, (r.stdout + r.stderr)[-2000:]


def test_generated_reference_pages_are_up_to_date():
    """docs/reference/*.md are what scripts/gen_reference.py writes from the schema, the registries
    and the parser today."""
    _generator("gen_reference.py")


def test_example_outputs_are_up_to_date():
    """The outputs shown in README.md and docs/ are what their commands print today on the
    recorded runs (scripts/gen_examples.py)."""
    _generator("gen_examples.py")


def test_site_builds_with_broken_links_as_errors():
    pytest.importorskip("mkdocs", reason="mkdocs is not installed (pip install -e '.[docs]'): the site is not built")
    with tempfile.TemporaryDirectory() as out:
        r = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f",
                            os.path.join(ROOT, "mkdocs.yml"), "-d", out], cwd=ROOT, capture_output=True, text=True,
                           timeout=300)
        assert r.returncode == 0, (r.stdout + r.stderr)[-3000:]
        assert os.path.exists(os.path.join(out, "reference", "scenario.html"))


def test_the_site_nav_holds_every_page():
    """A page not in mkdocs.yml's nav is unreachable from the site (mkdocs only warns)."""
    import yaml

    nav = yaml.safe_load(open(os.path.join(ROOT, "mkdocs.yml")))["nav"]

    def pages(node):
        if isinstance(node, str):
            yield node
        elif isinstance(node, dict):
            for v in node.values():
                yield from pages(v)
        elif isinstance(node, list):
            for v in node:
                yield from pages(v)

    listed = set(pages(nav))
    docs = os.path.join(ROOT, "docs")
    present = {os.path.relpath(p, docs) for p in doc_files() if p.startswith(docs + os.sep)}
    assert present - listed == set() and listed - present == set()


# ------------------------------------------------------------------ the pytest plugin's page
def test_the_pytest_page_names_the_current_fixtures_option_and_marker():
    text = open(os.path.join(ROOT, "docs", "pytest.md"), encoding="utf-8").read()
    for name in ("ftharness_run", "ftharness_cluster", "ftharness_results", "ftharness_exclusive",
                 "--ftharness-results", "@pytest.mark.ftharness_exclusive", "-W error"):
        assert name in text, name
    tutorial = open(os.path.join(ROOT, "docs", "tutorial", "own-job.md"), encoding="utf-8").read()
    assert "run_scenario" not in tutorial and "def test_my_job_survives_a_preemption(ftharness_run)" in tutorial


@pytest.mark.slow
@pytest.mark.full
def test_the_pytest_pages_worked_example_passes_under_W_error(tmp_path):
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-P", "-m", "pytest", "-W", "error", "-q", "-p", "no:cacheprovider",
                        "--ftharness-results", str(tmp_path / "runs"), os.path.join(ROOT, "examples", "pytest")],
                       capture_output=True, text=True, timeout=900, cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "2 passed" in r.stdout
