"""ftharness: a chaos harness for distributed training on Ray Train V2.

One import root. The repository keeps the design's folders at its top
(`history/`, `faults/`, `scenarios/`, `harness/`, `reports/`), and
`pyproject.toml` maps each under this package (`ftharness.history`,
`ftharness.faults`, ...), in editable and in wheel installs alike, so that
installing ftharness adds one top-level name and shadows nobody's own
`harness` or `scenarios` package.
"""

__version__ = "0.2.0"


def discover(discover_system: bool = True):
    """Chaos Toolkit's `chaos discover ftharness` calls this on the distribution's
    top-level package; the extension lives in ftharness.harness.frontends.ctk."""
    from ftharness.harness.frontends.ctk import discover as ctk_discover

    return ctk_discover(discover_system)
