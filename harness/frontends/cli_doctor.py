"""`ftharness doctor`: static checks of users' driver scripts and train modules (harness/doctor/),
and `doctor --run`, one probe of a train function on the embedded cluster.

Split out of cli.py, which holds the parser and dispatches here.
"""

from __future__ import annotations

import json
import os

from ftharness.errors import InputError
from ftharness.harness.frontends.cli_shared import EXIT_FAIL, EXIT_PASS, _fail, check_out, check_route
from ftharness.harness.run.arguments import default_out


def cmd_doctor(args) -> int:
    """Static checks of Ray Train V2 scripts: exit 1 on an error-level finding, 2 on a bad path."""
    from ftharness import releases
    from ftharness.harness.doctor import RULES, analyse, python_files, release_rules, render

    from ftharness.inputs import release_text_problem

    if args.ray and (release_text_problem(args.ray) or releases.release(args.ray) is None):
        return _fail(f"--ray: {args.ray} is not a supported release; allowed: {', '.join(releases.SUPPORTED)}")
    release_rules.set_target(args.ray)
    if args.list_rules:
        for r in RULES.values():
            print(f"{r.id:<32} {r.severity:<8} {r.why}")
        return EXIT_PASS
    if args.run:
        return doctor_probe(args)
    if not args.paths:
        return _fail("doctor: name at least one file or folder (or --list-rules)")
    try:
        files = python_files(args.paths)
        findings = analyse(files)
    except InputError as e:
        return _fail(str(e))
    if args.json:
        print(json.dumps([f.as_dict() for f in findings], indent=2))
    else:
        print(render(findings, len(files)))
    return EXIT_FAIL if any(f.severity == "error" for f in findings) else EXIT_PASS


def doctor_probe(args) -> int:
    """`doctor --run`: one kill on the embedded cluster; exit as the probe's verdict."""
    from ftharness.harness.run.probe import probe_lines, probe_scenario
    from ftharness.harness.run.runner import RunOptions, exit_code as summary_exit, run_scenario

    out = args.out = args.out or default_out("doctor-probe")   # (an internal error's traceback goes into it)
    try:
        from ftharness.inputs import json_value

        # an argument from input: parsed within the one reader's bounds (nesting, counts), or one line
        config = json_value(args.config.encode("utf-8", "surrogateescape"), "--config") if args.config else {}
        if not isinstance(config, dict):
            return _fail("--config: must be a JSON object (the train_loop_config)")
        scenario = probe_scenario(args.run, args.trainer, args.datasets, config)
        target = check_route(scenario, allow_destructive=False)   # the probe kills: never an operator's cluster
        check_out(out)
        summary = run_scenario(scenario, RunOptions(out_dir=out, address=target.address, progress=not args.quiet))
    except json.JSONDecodeError as e:   # (the other errors: cli.main's one handling)
        return _fail(f"--config: not JSON ({e})")
    for line in probe_lines(summary):
        print(line)
    print(f"results: {os.path.abspath(out)}")
    return summary_exit(summary)
