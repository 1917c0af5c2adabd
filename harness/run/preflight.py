"""What `run` refuses before a cluster starts, beyond the file itself.

Its own module so that `validate` (and `suite` before its first run) stay light: the static
checks read the user's modules as source and never import Ray Train or the runner."""

from __future__ import annotations

from ftharness.errors import ScenarioError
from ftharness.harness.run.runtime import declared_of
from ftharness.scenarios.schema import Scenario


def preflight(scenario: Scenario, static: bool = False) -> None:
    """An entrypoint, datasets or dataset_config that does not import, a host without
    namespaces, nftables or netem for cluster.network: namespaces. `static` (validate, and
    suite before its first run): the functions are proved to exist from their modules' source
    (harness/run/entrypoints.py: nothing of the user's module runs) and nothing of the host is
    changed (the netem probe, which adds a network link, is left to run)."""
    if not declared_of(scenario).imports_job_functions:
        return
    from ftharness.harness.cluster import netns

    if static:
        from ftharness.harness.run.entrypoints import check_scenario_functions

        check_scenario_functions(scenario)
        from ftharness.harness.run.usercode import declared_files

        declared_files(scenario)   # workload.files: each names something inside the code root
        from ftharness.harness.run.usercode import check_shippable

        check_shippable(scenario)   # counted, nothing copied: links out, loops, bounds (as run refuses them)
        why = netns.refusal(scenario, probe=False)
        if why:
            raise ScenarioError(why)
        return
    from ftharness.harness.run.functions import resolve_dataset_config_fn, resolve_datasets_fn, resolve_train_fn

    resolve_train_fn(scenario)
    why = netns.refusal(scenario)
    if why:
        raise ScenarioError(why)
    resolve_datasets_fn(scenario)
    resolve_dataset_config_fn(scenario)
    from ftharness.harness.run.usercode import check_shippable

    check_shippable(scenario)   # what ships, counted as the copy counts it: links, loops, bounds, files
