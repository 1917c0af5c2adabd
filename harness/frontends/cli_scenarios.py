"""The `ftharness` commands about scenario files, that run nothing: `validate` (everything `run`
checks before it starts), `init` (a user's starter scenario and CI file), `schema` (the JSON
Schema of scenario files) and `list` (fault kinds, properties, the catalog, known bugs).

Split out of cli.py, which holds the parser and dispatches here.
"""

from __future__ import annotations

import json
import os
import sys
from typing import List, Optional

from ftharness.errors import ScenarioError
from ftharness.harness.frontends.cli_shared import (EXIT_CANNOT_RUN, EXIT_PASS, _fail, _safe, check_out,
                                                    check_route)
from ftharness.safety import output_file_problem, printable
from ftharness.scenarios.language.messages import one_line


def cmd_validate(args) -> int:
    """Everything `run` checks before it starts, for every file: the file itself (every error,
    up to MAX_ERRORS, one line each), the Ray release it needs, the modules it names, the host it
    needs, the cluster guard (with --address / --allow-destructive as `run` takes them), and --out."""
    from ftharness.harness.run.preflight import preflight
    from ftharness.scenarios.schema import MAX_ERRORS, load_scenario, require_release

    status = EXIT_PASS
    from ftharness.scenarios.schema import address_form_problem, ray_client_refusal

    from ftharness.inputs import release_text_problem

    if args.ray is not None and release_text_problem(args.ray):
        return _fail(f"--ray {args.ray[:40]!r}: {release_text_problem(args.ray)}")
    if args.address is not None:
        why = ray_client_refusal(args.address) or address_form_problem(args.address)
        if why:
            return _fail(f"--address {args.address[:120]!r}: {why}")
    if args.out is not None:
        try:
            check_out(args.out)   # as `run` refuses it
        except ScenarioError as e:
            return _fail(str(e))
    from ftharness.harness.frontends import experiments

    for path, in_folder in _validate_files(args.scenarios):
        if experiments.is_experiment_file(path):   # a Chaos Toolkit experiment: checked as one
            found = experiments.problems(path)
            for line in found[:MAX_ERRORS]:
                _fail(f"{printable(path, False)[:200]}: {line}")
            if found:
                status = EXIT_CANNOT_RUN
            else:
                print(f"ok {printable(path, keep_newlines=False)} (Chaos Toolkit experiment)")
            continue
        try:
            scenario = load_scenario(path)
            require_release(scenario, args.ray)
            check_route(scenario, args.allow_destructive, address=args.address)
            if in_folder and _skipped_here(scenario, path):
                continue
            preflight(scenario, static=True)   # static: no module of the scenario's runs
            print(f"ok {printable(path, keep_newlines=False)}")
        except ScenarioError as e:
            problems = getattr(e, "problems", None) or [str(e)]
            name = printable(os.path.basename(path), False)[:100]
            for line in problems[:MAX_ERRORS]:   # with several files, each line says whose it is
                _fail(line if len(args.scenarios) == 1 or line.startswith(f"{name}:")
                      else f"{printable(path, False)[:200]}: {line}")
            more = getattr(e, "total", len(problems)) - len(problems[:MAX_ERRORS])
            if more > 0:
                _fail(f"{printable(os.path.basename(path), False)[:100]}: and {more} more error(s)")
            status = EXIT_CANNOT_RUN
    return status


def _validate_files(paths: List[str]) -> List[tuple]:
    """(file, from a folder) for each argument: a folder stands for its *.yaml files, and its
    *.json files that are Chaos Toolkit experiments."""
    import glob

    from ftharness.harness.frontends.experiments import is_experiment_file

    out = []
    for p in paths:
        if os.path.isdir(p):
            out += [(f, True) for f in sorted(glob.glob(os.path.join(p, "*.yaml")) + [
                j for j in glob.glob(os.path.join(p, "*.json")) if is_experiment_file(j)])]
        else:
            out.append((p, False))
    return out


def _skipped_here(scenario, path: str) -> bool:
    """A folder's scenario this host cannot run (ftharness.harness.run.suite.host_skip): one
    SKIPPED line, not an error; a file named alone is still refused, as `run` refuses it."""
    from ftharness.harness.run.collect import host_skip
    from ftharness.reports.skipped import line

    skip = host_skip(scenario, path)
    if skip is not None:
        print(_safe(line({**skip, "scenario": path})))
    return skip is not None


def scenario_schema_text() -> str:
    """The JSON Schema of a scenario file, as `ftharness schema` prints it."""
    from ftharness.scenarios.schema import scenario_json_schema

    return json.dumps(scenario_json_schema(), indent=2) + "\n"


def cmd_init(args) -> int:
    """The starter scenario and CI file of a user's chaos folder (harness/frontends/starter.py):
    all checked first, then written together, or one line and exit 2 with nothing written."""
    from ftharness.harness.frontends.starter import CI_FILES, SCENARIO_FILE, plan, write

    try:
        files = plan(args.dir, args.train, args.ci, args.force)
    except ScenarioError as e:
        return _fail(str(e))
    try:
        write(files)
    except OSError as e:
        return _fail(f"{e.filename or args.dir}: cannot be written ({e.strerror}); "
                     f"the files init wrote were removed")
    for path in files:
        print(f"wrote {printable(os.path.normpath(path), False)}")
    folder = printable(args.dir, False)
    print(f"next: ftharness validate {folder}; ftharness run {os.path.join(folder, SCENARIO_FILE)} (a minute or two)")
    if args.ci != "none":
        print(f"      in {CI_FILES[args.ci]}, replace HOST/OWNER in the install line with where ftharness "
              f"comes from (docs/ci.md)")
    return EXIT_PASS


def cmd_schema(args) -> int:
    """Print the JSON Schema of scenario files (for editors), or write it to --out."""
    text = scenario_schema_text()
    if not args.schema_out:
        sys.stdout.write(text)
        return EXIT_PASS
    why = output_file_problem(args.schema_out)
    if why:
        return _fail(f"--out {args.schema_out[:120]}: {why}")
    try:
        with open(args.schema_out, "w") as f:
            f.write(text)
    except OSError as e:
        return _fail(f"--out {args.schema_out}: cannot be written ({e.strerror})")
    print(f"schema: {os.path.abspath(args.schema_out)}")
    return EXIT_PASS


def cmd_list(args) -> int:
    """Fault kinds, properties and the built-in catalog, one line each."""
    from ftharness.faults import REGISTRY
    from ftharness.harness.run.collect import catalog_dir
    from ftharness.scenarios.properties import PLUGINS as PROPERTY_PLUGINS, REGISTRY as PROPERTY_REGISTRY
    from ftharness.scenarios.schema import load_scenario

    what = args.what
    from ftharness.inputs import release_text_problem

    if args.ray is not None and release_text_problem(args.ray):   # checked whatever is listed
        return _fail(f"--ray {printable(args.ray[:40], False)!r}: {release_text_problem(args.ray)}")
    if what in ("all", "faults"):
        print("fault kinds:")
        for kind, cls in REGISTRY.items():
            args = [n for n in cls.Spec.model_fields if n not in ("kind", "at")]
            # a plugin's names and docstring are its author's text: escaped (no terminal sequences)
            print(f"  {printable(kind, False):<20} {_first_line(cls.__doc__)}"
                  f"{f' [plugin: {printable(cls.plugin, False)}]' if cls.plugin else ''}")
            print(f"  {'':<20}   arguments: {printable(', '.join(args), False) or 'none'}")
    if what in ("all", "properties"):
        print("properties:")
        for name, module in PROPERTY_REGISTRY.items():
            print(f"  {printable(name, False):<20} {_first_line(module.__doc__, drop=name + ':')}"
                  f"{' [plugin]' if name in PROPERTY_PLUGINS else ''}")
    if what in ("all", "catalog"):
        print(f"catalog ({catalog_dir()}):")
        for f in sorted(os.listdir(catalog_dir())):
            if f.endswith(".yaml"):
                sc = load_scenario(os.path.join(catalog_dir(), f))
                print(f"  {sc.name:<20} {one_line(sc.description or '', 100)}")
    if what == "known":
        from ftharness.scenarios.known_bugs import listing

        try:
            print("\n".join(listing(args.ray)))
        except ScenarioError as e:
            return _fail(str(e))
    return EXIT_PASS


def _first_line(doc: Optional[str], drop: str = "") -> str:
    """The first sentence of a docstring, on one line."""
    text = " ".join(str(doc or "").strip().split("\n\n")[0].split())
    text = text[len(drop):].strip() if drop and text.startswith(drop) else text
    return printable(one_line(text.split(". ")[0].rstrip("."), 110), False)   # a plugin's text: escaped
