"""ftharness: a chaos harness for distributed training on Ray Train V2.

One import root. The repository keeps the design's folders at its top
(`history/`, `faults/`, `scenarios/`, `harness/`, `reports/`), and
`pyproject.toml` maps each under this package (`ftharness.history`,
`ftharness.faults`, ...), in editable and in wheel installs alike, so that
installing ftharness adds one top-level name and shadows nobody's own
`harness` or `scenarios` package.

The public face is `ftharness.api` (docs/api.md): `ftharness.run_scenario(...)`,
`ftharness.check_results(...)`, `ftharness.load_scenario(...)`, and what a fault kind
(`ftharness.Fault`) or a property (`ftharness.result`) is written with. Its names are
loaded on first use, so `import ftharness` stays cheap.
"""

__version__ = "0.2.0"

#: the public API (ftharness.api's `__all__`), and the Chaos Toolkit's entry
__all__ = [
    "run_scenario", "exit_code", "check_results", "load_scenario", "parse_scenario", "Scenario",
    "Fault", "FaultSpecBase", "TargetedSpec", "FaultContext", "FaultView", "Landing", "LANDED", "PENDING", "MISSED",
    "FailureClaim", "CERTAIN", "MAYBE",
    "CheckResult", "PropertyContext", "result", "not_judged",
    "PASS", "FAIL", "INCONCLUSIVE",
    "FtharnessError", "ScenarioError", "ClusterError", "InputError",
    "discover", "__version__",
]


def __getattr__(name: str):
    """The public API's names, loaded from ftharness.api on first use (by name, as the Chaos
    Toolkit's discovery loads the actions: the root imports nothing above it, and the modules
    that read `ftharness.__version__` or `ftharness.__file__` make no cycle with it)."""
    if name in __all__ and not name.startswith("__") and name != "discover":
        import importlib

        return getattr(importlib.import_module("ftharness.api"), name)
    raise AttributeError(f"module 'ftharness' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))


def discover(discover_system: bool = True):
    """Chaos Toolkit's `chaos discover ftharness` calls this on the distribution's
    top-level package; the extension lives in ftharness.harness.frontends.ctk."""
    from ftharness.harness.frontends.ctk import discover as ctk_discover

    return ctk_discover(discover_system)
