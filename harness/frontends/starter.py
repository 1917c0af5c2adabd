"""`ftharness init`: the starter files of a chaos folder in a user's repository.

    ftharness init                           # chaos/kill-worker.yaml (the reference workload), .github/workflows/chaos.yml
    ftharness init --train job:train_func    # the same scenario running your train function (chaos/job.py)
    ftharness init ml/chaos --train mypkg.train:train_func --ci gitlab

A new user's first scenario and CI file should be what docs/ci.md teaches, not a copy that drifts
from it: the CI files here are that page's recipes (tests/test_init.py holds them equal), and the
scenario is the one that page shows. `plan` checks everything (the function exists, as `validate`
proves it, statically; no file in the way; every path writable) before `write` writes anything, and
`write` leaves nothing new behind when a write fails or is interrupted.
"""

from __future__ import annotations

import os
import re
import tempfile
from typing import Dict, List, Optional

from ftharness.errors import ScenarioError
from ftharness.safety import output_dir_problem, output_file_problem, path_component_problem

DEFAULT_DIR = "chaos"
SCENARIO_FILE = "kill-worker.yaml"
CI_FILES = {"github": os.path.join(".github", "workflows", "chaos.yml"), "gitlab": ".gitlab-ci.yml"}
MAX_TRAIN = 200   # workload.entrypoint's bound

#: the expected properties: every one a kill_worker run of the job can judge (scenarios/verdict.py
#: applicable_properties), named so a user sees what the verdict holds the job to
USER_PROPERTIES = "[exactly_once_restore, budget_accounting, no_zombie_writes, recovers, bounded_lost_work]"
REFERENCE_PROPERTIES = ("[exactly_once_restore, budget_accounting, shard_reassignment, no_zombie_writes, "
                        "recovers, bounded_lost_work]")

SCENARIO = """\
# A starter chaos scenario, written by `ftharness init` (docs/ci.md).
# {what} trains on 2 workers of an embedded 3-node cluster; the process of rank 1
# is killed (SIGKILL) after its 3rd report (a step is one ray.train.report), and with one
# retry the run must resume from its latest checkpoint and finish.
# Check it: ftharness validate {dir}    Run it: ftharness run {path}
name: kill-worker
description: SIGKILL the process of rank 1 after its 3rd report; one retry restores the latest checkpoint
cluster: {{nodes: 3, cpus_per_node: 1}}
{workload}
failure_config: {{max_failures: 1}}
faults:
  - {{kind: kill_worker, target: {{rank: 1}}, at: {{step: 3}}}}
expect:
  outcome: succeeded
  properties: {properties}
"""

USER_WORKLOAD = """\
workload:
  entrypoint: {train}    # module:function, looked up in this folder first, then where Python finds it
  num_workers: 2
  # train_loop_config: {{epochs: 4}}    # the config your train function is called with
  # files: [configs/train.yaml]    # data your job reads, shipped beside its code: workers run in Ray's own
  #                                # folder, so open them relative to Path(__file__).parent"""

REFERENCE_WORKLOAD = """\
workload:    # ftharness's reference DDP job; `ftharness init --train module:function` runs yours
  num_workers: 2
  steps: 12
  checkpoint_every: 2"""

#: docs/ci.md's GitHub Actions recipe, as it is printed there
GITHUB = """\
name: chaos
on:
  push:
    branches: [main]
  pull_request:
  schedule:
    - cron: "0 3 * * *"
jobs:
  chaos-suite:
    runs-on: ubuntu-latest
    timeout-minutes: 60
    permissions:
      contents: read
      checks: write
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - name: Install your project and ftharness
        run: |
          python -m pip install --upgrade pip
          python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
          python -m pip install -e . "ftharness @ git+https://HOST/OWNER/ftharness.git@v0.2.0"
      - name: Validate the scenarios
        run: ftharness validate chaos
      - name: Run the chaos suite (root-only scenarios are SKIPPED with the reason)
        run: ftharness suite chaos --out results/chaos --quiet
      - name: Upload the report and the results
        if: always()
        uses: actions/upload-artifact@v4
        with:
          name: chaos-results
          path: results/chaos
      - name: Publish the JUnit results
        if: always()
        uses: mikepenz/action-junit-report@v4
        with:
          report_paths: results/chaos/junit.xml
          check_name: chaos suite
  root:    # the same, as root with nftables: the network-namespace scenarios run too
    runs-on: ubuntu-latest
    timeout-minutes: 60
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.11"
      - run: sudo apt-get update && sudo apt-get install -y nftables iproute2
      - run: |
          python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
          python -m pip install -e . "ftharness @ git+https://HOST/OWNER/ftharness.git@v0.2.0"
      - run: sudo -E env "PATH=$PATH" ftharness suite chaos --out results/chaos-root --quiet
      - if: always()
        uses: actions/upload-artifact@v4
        with:
          name: chaos-results-root
          path: results/chaos-root
"""

#: docs/ci.md's GitLab CI recipe, as it is printed there
GITLAB = """\
chaos-suite:
  image: python:3.11
  stage: test
  timeout: 1h
  before_script:
    - python -m pip install --upgrade pip
    - python -m pip install torch --index-url https://download.pytorch.org/whl/cpu
    - python -m pip install -e . "ftharness @ git+https://HOST/OWNER/ftharness.git@v0.2.0"
  script:
    - ftharness validate chaos
    - ftharness suite chaos --out results/chaos --quiet
  artifacts:
    when: always
    expire_in: 2 weeks
    paths:
      - results/chaos
    expose_as: chaos report
    reports:
      junit: results/chaos/junit.xml
"""

_SCENARIO_COMMAND = re.compile(r"(ftharness (?:validate|suite) )chaos\b")


def scenario_text(folder: str, train: Optional[str]) -> str:
    """The starter scenario; `folder` is how the commands in its comment name its folder."""
    workload = USER_WORKLOAD.format(train=train) if train else REFERENCE_WORKLOAD
    return SCENARIO.format(what="Your train function" if train else "ftharness's reference workload",
                           dir=folder, path=f"{folder}/{SCENARIO_FILE}", workload=workload,
                           properties=USER_PROPERTIES if train else REFERENCE_PROPERTIES)


def ci_text(ci: str, folder: str) -> str:
    """docs/ci.md's recipe for `ci`, validating and running the scenarios of `folder`."""
    return _SCENARIO_COMMAND.sub(lambda m: m.group(1) + folder, GITHUB if ci == "github" else GITLAB)


def _ci_folder(target: str, root: str) -> str:
    """`target` as the CI file names it: relative to the repository root, in characters a shell
    line and YAML take as they are."""
    rel = os.path.relpath(os.path.abspath(target), os.path.abspath(root))
    if rel == ".." or rel.startswith(".." + os.sep):
        raise ScenarioError(f"DIR {target[:120]}: outside the current folder, which the CI file runs from "
                            f"(the repository root); run init from there, or give --ci none")
    for part in rel.split(os.sep):
        why = None if part == "." else path_component_problem(part)
        if why:
            raise ScenarioError(f"DIR {target[:120]}: a CI file names it in a shell line: {why}")
    return rel.replace(os.sep, "/")


def plan(target: str, train: Optional[str], ci: str, force: bool, root: str = ".") -> Dict[str, str]:
    """{path: text} of every file `init` writes, or ScenarioError (one line naming the argument)
    when it cannot: nothing is written here. A file in the way is refused unless `force`; other
    files of the folder stay (the train module the scenario names may live there)."""
    from ftharness.harness.run.entrypoints import check_function
    from ftharness.scenarios.schema import load_yaml_text, parse_scenario

    if ci not in ("github", "gitlab", "none"):
        raise ScenarioError(f"--ci {ci[:40]!r}: allowed: github, gitlab, none")
    why = output_dir_problem(target)
    if why:
        raise ScenarioError(f"DIR {target[:120]}: {why}")
    if train is not None:
        if len(train) > MAX_TRAIN:
            raise ScenarioError(f"--train: {len(train)} characters, at most {MAX_TRAIN}")
        check_function(train, "--train", os.path.abspath(target))   # as `validate` will, statically
    folder = _ci_folder(target, root) if ci != "none" else target
    scenario_path = os.path.join(target, SCENARIO_FILE)
    files = {scenario_path: scenario_text(folder, train)}
    parse_scenario(load_yaml_text(files[scenario_path].encode(), scenario_path), source=scenario_path,
                   base_dir=os.path.abspath(target))   # the template and the schema agree
    if ci != "none":
        files[os.path.join(root, CI_FILES[ci])] = ci_text(ci, folder)
    for path in files:
        why = output_file_problem(path) or _symlink_on_the_way(path, root, target)
        if why:
            raise ScenarioError(f"{os.path.normpath(path)}: {why}")
        if os.path.lexists(path) and not force:
            raise ScenarioError(f"{os.path.normpath(path)}: already exists; --force overwrites it")
    return files


def _symlink_on_the_way(path: str, root: str = ".", target: Optional[str] = None) -> Optional[str]:
    """Why `path` is written through a symlink (a `.github/` or `chaos/` that links out of the
    repository, or the file itself): every part of it below the repository root (or below DIR
    when it lies outside the root) is checked, as the one writer does (ftharness.outputs); None
    when there is none."""
    from ftharness.outputs import inside_problem

    for anchor in (root, target or root):
        rel = os.path.relpath(os.path.abspath(path), os.path.abspath(anchor))
        if not rel.startswith(".."):
            return inside_problem(anchor, path)
    return None


def write(files: Dict[str, str]) -> None:
    """Write every file, or none new: each is written beside its place first and moved in only
    when all are written; on an error (or Ctrl-C) the files and folders this call created are
    removed (a file --force already replaced stays replaced) and the error raised."""
    umask = os.umask(0)
    os.umask(umask)
    made: List[str] = []
    staged: List[tuple] = []
    new = [p for p in files if not os.path.lexists(p)]
    try:
        for path, text in files.items():
            made += _make_folders(os.path.dirname(os.path.abspath(path)))
            why = _symlink_on_the_way(path)   # again, just before the write (one planted meanwhile)
            if why:
                raise ScenarioError(f"{os.path.normpath(path)}: {why}")
            fd, tmp = tempfile.mkstemp(dir=os.path.dirname(os.path.abspath(path)), prefix=".ftharness-init-")
            staged.append((tmp, path))
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.chmod(tmp, 0o666 & ~umask)   # mkstemp's 0600 is for secrets; these are source files
        for tmp, path in staged:
            os.replace(tmp, path)
    except BaseException:   # OSError, and Ctrl-C: no half-written folder either way
        for path in [tmp for tmp, _ in staged] + new:
            if os.path.lexists(path):
                os.unlink(path)
        for folder in reversed(made):
            try:
                os.rmdir(folder)
            except OSError:
                pass
        raise


def _make_folders(folder: str) -> List[str]:
    """The folders made to create `folder`, outermost first."""
    missing = []
    while not os.path.isdir(folder):
        missing.append(folder)
        folder = os.path.dirname(folder)
    for f in reversed(missing):
        os.mkdir(f)
    return list(reversed(missing))
