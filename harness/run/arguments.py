"""The checks the commands (`run`, `suite`, `explore`, `matrix`, `bisect`) make of their
arguments before anything starts, and the one line they print when one fails.

One place, so they refuse a bad count or a bad --out with the same words, name their
default folder the same way, and print the refusal the same way: one line, credentials
redacted, exit 2. (A scenario file is read by scenarios/schema.py: load_scenario,
read_scenario_file.) It sits in the run layer so harness/run/ and harness/matrix/ can use it;
the front ends (harness/frontends/cli.py) import it from above.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from ftharness.errors import ScenarioError

#: scenarios/verdict.py's code for bad input; not imported from there: it loads the plugins
#: (ftharness.faults), and a refused argument uses no kind (tests/test_fuzz_plugin_loading.py)
EXIT_CANNOT_RUN = 2


def refuse(msg: Any) -> int:
    """Print `msg` as the one error line (control characters escaped, credentials redacted,
    at most one_line's length); return 2, the exit code for bad input."""
    from ftharness.safety import printable, redact
    from ftharness.scenarios.language.messages import one_line

    print(one_line(f"ftharness: error: {printable(redact(str(msg)))}"), file=sys.stderr)
    return EXIT_CANNOT_RUN


def check_count(flag: str, value: int, high: int, low: int = 1) -> int:
    """`value` of `flag` if it lies in low..high; else ScenarioError naming the flag and the range."""
    if not low <= value <= high:
        raise ScenarioError(f"{flag}: {value}; allowed: {low} to {high}")
    return value


#: the largest seed a command takes (--seed of soak, explore, plan): what every generator it feeds accepts
MAX_SEED = 2**64 - 1


def check_seed(flag: str, value: int) -> int:
    """`value` of `flag` if it is a seed 0..MAX_SEED; else ScenarioError naming the flag."""
    return check_count(flag, value, MAX_SEED, 0)


def check_number(flag: str, value: float, low: float, high: float) -> float:
    """`value` of `flag` if it is a finite number in low..high; else ScenarioError naming the flag
    (a NaN or an infinity from argparse's float() included)."""
    import math

    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ScenarioError(f"{flag}: {value} is not a finite number")
    if not low <= value <= high:
        raise ScenarioError(f"{flag}: {value:g}; allowed: {low:g} to {high:g}")
    return value


def check_file_option(flag: str, path: str) -> str:
    """`path` of `flag` if it can be a file this command writes or locks (not a device, a folder,
    /proc, /sys or /dev, no control character); else ScenarioError naming the flag."""
    from ftharness.inputs import shown
    from ftharness.safety import output_file_problem

    why = output_file_problem(path)
    if why:
        raise ScenarioError(f"{flag} {shown(path)}: {why}")
    return path


def default_out(name: str) -> str:
    """results/<name>-<time>: the folder a command writes when --out is not given."""
    return os.path.join("results", f"{name}-{time.strftime('%Y%m%d-%H%M%S')}")


def check_new_out(out: str, marker: str, holds: str, flag: str = "--out") -> str:
    """`out` if it can be the folder this command creates, or continues: creatable or a writable
    folder (ftharness.safety.output_dir_problem), and not one holding `marker` (a file another
    command wrote, described as `holds`). Else ScenarioError, before anything starts."""
    from ftharness.inputs import shown
    from ftharness.safety import output_dir_problem

    why = output_dir_problem(out)
    if why:
        raise ScenarioError(f"{flag} {shown(out)}: {why}")
    if os.path.exists(os.path.join(out, marker)):
        raise ScenarioError(f"{flag} {shown(out)}: {holds}; choose another folder")
    from ftharness.outputs import planted_link_problem   # issue 49: a planted link out of OUT

    why = planted_link_problem(out)
    if why:
        raise ScenarioError(f"{flag}: {why}")
    return out

