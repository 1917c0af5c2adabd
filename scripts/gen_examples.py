#!/usr/bin/env python
"""Fill the example blocks of README.md and docs/*.md from real files and real commands.

    python scripts/gen_examples.py           # rewrite every marked block
    python scripts/gen_examples.py --check   # exit 1 if one is out of date (tests/test_docs.py)

Two markers, each closed by `<!-- end -->`:

    <!-- file: scenarios/catalog/kill-worker.yaml -->   the file's text, as a ```yaml block
    <!-- run: ftharness check tests/data/kill-worker --> the command run now, as a ```text block:
                                                         `$ COMMAND`, its stdout and stderr, and
                                                         `(exit N)` when N is not 0

A command runs as `python -m ftharness ...` in a fresh temporary folder that sees the repository's
tests/, scenarios/, examples/, benchmarks/ and docs/ (so what it writes stays there, and the paths it
prints are the relative ones shown). Only commands that need no cluster belong here: they re-judge,
compare or plan from the recorded runs in tests/data, so the docs show what the tool prints today.
"""

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINKED = ("tests", "scenarios", "examples", "benchmarks", "docs")
BLOCK = re.compile(r"(<!-- (file|run): (.+?) -->\n)(.*?)(<!-- end -->)", re.S)


def doc_files():
    files = [os.path.join(ROOT, "README.md")]
    for dirpath, _, names in os.walk(os.path.join(ROOT, "docs")):
        files += [os.path.join(dirpath, n) for n in sorted(names) if n.endswith(".md")]
    return sorted(files)


def run(command):
    argv = shlex.split(command)
    assert argv[0] == "ftharness", f"only ftharness commands run here: {command}"
    with tempfile.TemporaryDirectory(prefix="ftharness-docs-") as tmp:
        for name in LINKED:
            os.symlink(os.path.join(ROOT, name), os.path.join(tmp, name))
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "COLUMNS": "100"}
        r = subprocess.run([sys.executable, "-P", "-m", "ftharness", *argv[1:]], cwd=tmp, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
        text = r.stdout.replace(os.path.realpath(tmp) + os.sep, "").replace(tmp + os.sep, "")
        text = text.replace(ROOT + os.sep, "")
    text = text.rstrip("\n") + "\n"
    if r.returncode:
        text += f"(exit {r.returncode})\n"
    return f"```text\n$ {command}\n{text}```\n"


def fill(text):
    def one(m):
        kind, arg = m.group(2), m.group(3).strip()
        if kind == "file":
            body = open(os.path.join(ROOT, arg)).read().rstrip("\n")
            lang = "yaml" if arg.endswith((".yaml", ".yml")) else "python" if arg.endswith(".py") else "text"
            new = f"```{lang}\n{body}\n```\n"
        else:
            new = run(arg)
        return m.group(1) + new + m.group(5)

    return BLOCK.sub(one, text)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 if a block differs from what would be written")
    args = ap.parse_args(argv)
    stale = []
    for path in doc_files():
        old = open(path).read()
        if "<!-- file:" not in old and "<!-- run:" not in old:
            continue
        new = fill(old)
        if new != old:
            stale.append(os.path.relpath(path, ROOT))
            if not args.check:
                open(path, "w").write(new)
    if args.check and stale:
        print(f"out of date: {', '.join(stale)}; run python scripts/gen_examples.py")
        return 1
    for p in stale:
        print(f"wrote {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
