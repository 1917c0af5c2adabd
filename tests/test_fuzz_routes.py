"""A quick subset of the issue-40 fuzz campaign (scripts/fuzz_routes.py): a few seeded cases
per route (validate, matrix, check/report/trace/verdict, compare, run --resume, doctor), each
in a forked child of this process, each held to the contract (no internal error, no hang, no
traceback, lines of at most 300 characters, one line for an exit 2, peak memory under 1 GiB
of growth) and to its route's promises (validate runs no module, a refused matrix writes
nothing, --resume aims no storage outside its folder, no secret on the terminal, no PASS of
a renamed scenario or a fault record of no kind). The full campaign: see docs/safety.md."""

import importlib.util
import os

import pytest

from conftest import REPO

CASES = int(os.environ.get("FTHARNESS_FUZZ_ROUTES", "4"))


def _campaign():
    spec = importlib.util.spec_from_file_location("fuzz_routes", os.path.join(REPO, "scripts", "fuzz_routes.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not hasattr(os, "fork") or os.geteuid() != 0 and not os.path.exists("/proc/kmsg"),
                    reason="forks a child per case")
def test_every_route_holds_its_contract_on_fuzzed_input():
    stats = _campaign().campaign(CASES, seed=40, say=lambda line: None)
    assert not stats["breaches"], stats["breaches"][:5]
    for route, s in stats["routes"].items():
        assert s["cases"] == CASES and s["internal_errors"] == 0 and s["hangs"] == 0 and s["over_1gb"] == 0, route
