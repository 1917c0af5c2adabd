"""ftharness as a Chaos Toolkit extension: actions (faults), probes (progress,
budgets, properties) and a control (cluster and training run).

`chaos discover --no-install ftharness` lists them through `discover()`.
"""

from __future__ import annotations

from typing import Any, Dict, List

__all__ = ["discover"]


def discover(discover_system: bool = True) -> Dict[str, Any]:
    from chaoslib.discovery.discover import initialize_discovery_result

    try:
        from importlib.metadata import version

        v = version("ftharness")
    except Exception:
        v = "unknown"
    result = initialize_discovery_result("ftharness", v, "ray-train")
    result["activities"].extend(load_exported_activities())
    return result


def load_exported_activities() -> List[Dict[str, Any]]:
    from chaoslib.discovery.discover import discover_actions, discover_probes

    return discover_actions("ftharness.harness.frontends.ctk.actions") + discover_probes("ftharness.harness.frontends.ctk.probes")
