"""The Ray settings a run used, each with where its value came from (pure: no Ray).

A scenario tests the configuration its user runs: a setting the scenario leaves
out is the release's own default, exactly what a plain TorchTrainer script that
leaves it out gets. Where ftharness chooses a value itself (the fast detection
profile's timeouts, the results folder as storage, the workload's size) the
block says so, next to Ray's default, so a reader sees every difference from a
plain script. The runner records this block in `run_start.ray_settings` and in
summary.json (`ray_settings`, and `differs_from_ray`: the settings where the run
did not use Ray's default although the scenario did not ask for another value).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

SCENARIO, RAY_DEFAULT, FTHARNESS, PROFILE = "scenario", "ray default", "ftharness", "profile"


def effective_failure_config(given: Mapping[str, Any], ray_defaults: Mapping[str, Any]) -> Dict[str, Any]:
    """The FailureConfig a run uses: the release's defaults (`ray_defaults`, dotted names as
    releases.Release.defaults) for the fields it has, with the scenario's `given` fields over them."""
    out = {k.split(".", 1)[1]: v for k, v in ray_defaults.items() if k.startswith("failure_config.")}
    out.update({k: v for k, v in given.items() if k in out})
    return out


def settings_used(scenario, ray_defaults: Mapping[str, Any], train_env: Mapping[str, str],
                  profile: str, storage_path: Optional[str] = None,
                  use_gpu: Optional[bool] = None,
                  system_config: Optional[Mapping[str, Any]] = None,
                  node_env: Optional[Mapping[str, str]] = None) -> List[Dict[str, Any]]:
    """One row per setting of `ray_defaults`: {setting, value, ray_default, source}; then one per
    `cluster.train_env` entry `ray_defaults` lacks (source scenario, ray_default None: not read),
    and one per Ray Core `_system_config` entry the profile sets on an embedded cluster (Ray's own
    default is then Ray Core's, not read here: `ray_default` says so). `node_env`: the environment
    the profile gave the embedded cluster's raylets (profiles.py), rows `env.NAME` like train_env's."""
    node_env = dict(node_env or {})
    w, fc = scenario.workload, scenario.failure_config
    given = fc.given()
    own_env = scenario.cluster.train_env_text()   # cluster.train_env: the scenario's own, over the profile's
    rows: List[Dict[str, Any]] = []

    def row(name: str, value: Any, source: str) -> None:
        rows.append({"setting": name, "value": value, "ray_default": ray_defaults.get(name), "source": source})

    for name, default in ray_defaults.items():
        section, _, key = name.partition(".")
        if section == "failure_config":
            row(name, given[key], SCENARIO) if key in given else row(name, default, RAY_DEFAULT)
        elif name == "scaling_config.num_workers":
            row(name, list(w.num_workers) if isinstance(w.num_workers, tuple) else w.num_workers,
                SCENARIO if "num_workers" in w.model_fields_set else FTHARNESS)
        elif name == "scaling_config.use_gpu":
            row(name, default if use_gpu is None else use_gpu,
                SCENARIO if "use_gpu" in w.model_fields_set and w.use_gpu != "auto" else FTHARNESS)
        elif name == "scaling_config.resources_per_worker":
            row(name, {"CPU": w.cpus_per_worker}, SCENARIO if "cpus_per_worker" in w.model_fields_set else FTHARNESS)
        elif name == "run_config.storage_path":
            row(name, storage_path, SCENARIO if w.storage_path else FTHARNESS)
        elif name == "checkpoint_config.num_to_keep":
            row(name, w.num_to_keep, SCENARIO) if w.num_to_keep is not None else row(name, default, RAY_DEFAULT)
        elif name == "torch_config.timeout_s":
            if w.collective_timeout_s is not None:
                row(name, max(1, int(round(w.collective_timeout_s))), SCENARIO)
            else:
                row(name, default, RAY_DEFAULT)
        elif section == "env" and key in own_env:
            row(name, _number(own_env[key]), SCENARIO)
        elif section == "env" and key in train_env:
            row(name, _number(train_env[key]), f"{PROFILE} {profile}")
        elif section == "env" and key in node_env:
            row(name, _number(node_env[key]), f"{PROFILE} {profile}")
        else:
            row(name, default, RAY_DEFAULT)
    for key in sorted(set(own_env) - {n.partition(".")[2] for n in ray_defaults if n.startswith("env.")}):
        # a setting ftharness does not read the release's default of: Ray's default unknown here
        rows.append({"setting": f"env.{key}", "value": _number(own_env[key]), "ray_default": None, "source": SCENARIO})
    for key in sorted(set(node_env) - {n.partition(".")[2] for n in ray_defaults if n.startswith("env.")}):
        rows.append({"setting": f"env.{key}", "value": _number(node_env[key]), "ray_default": None,
                     "source": f"{PROFILE} {profile}"})
    for key, value in (system_config or {}).items():
        rows.append({"setting": f"system_config.{key}", "value": value, "ray_default": "Ray Core's default",
                     "source": f"{PROFILE} {profile}"})
    return rows


def differs(rows: List[Dict[str, Any]]) -> List[str]:
    """The settings the run did not leave at Ray's default though the scenario did not set
    them, one line each: what ftharness chose deliberately, for the report."""
    return [f"{r['setting']}: {r['value']!r} ({r['source']}; Ray's default {r['ray_default']!r})"
            for r in rows if r["source"] not in (SCENARIO, RAY_DEFAULT) and r["value"] != r["ray_default"]]


def recorded_settings(rows: List[Dict[str, Any]]) -> List[Dict[str, str]]:
    """The rows as run_start records them: every field a string (values as JSON text), so the
    history's tables (Arrow) hold one type per column."""
    return [{"setting": r["setting"], "value": json.dumps(r["value"], default=str),
             "ray_default": json.dumps(r["ray_default"], default=str), "source": r["source"]} for r in rows]


def read_settings(recorded: List[Any]) -> List[Dict[str, Any]]:
    """recorded_settings' rows back as values (a row that does not read is left out)."""
    out = []
    for r in recorded:
        try:
            out.append({"setting": str(r["setting"]), "value": json.loads(r["value"]),
                        "ray_default": json.loads(r["ray_default"]), "source": str(r["source"])})
        except (KeyError, TypeError, ValueError):
            continue
    return out


def _number(text: str) -> Any:
    try:
        value = float(text)
    except (TypeError, ValueError):
        return text
    return int(value) if value.is_integer() else value
