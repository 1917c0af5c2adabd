"""Plugins: a fault kind and a property from another distribution, through the entry points
`ftharness.faults` and `ftharness.properties` (docs/plugins.md).

The toy plugin (tests/plugin_toy/ftharness_toy.py: the fault kind `touch_file`, the property
`touches_recorded`) is installed in a temporary folder as a distribution (its module and a
dist-info with entry_points.txt), which a child ftharness sees on PYTHONPATH; nothing of
ftharness changes for it. The pure path (list, schema, validate, injection plan, capability
check, landing and verdict by `ftharness check` over a recorded history with the toy fault
added) runs here; one real run, marked `full`, runs the kind on an embedded cluster.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
import yaml

from ftharness.history.records import read_history, sealed_lines

HERE = os.path.dirname(os.path.abspath(__file__))
TOY = os.path.join(HERE, "plugin_toy", "ftharness_toy.py")
KILL = os.path.join(HERE, "data", "kill-worker")
ENTRY_POINTS = """\
[ftharness.faults]
touch_file = ftharness_toy:TouchFile

[ftharness.properties]
touches_recorded = ftharness_toy:touches_recorded
"""
BROKEN = """\
[ftharness.faults]
gone = ftharness_toy_missing:Gone

[ftharness.properties]
no_check = ftharness_toy:TouchFile
"""


def install(folder, name="ftharness_toy", entry_points=ENTRY_POINTS):
    """The toy plugin as an installed distribution in `folder`: its module and a dist-info."""
    os.makedirs(folder, exist_ok=True)
    shutil.copy(TOY, os.path.join(folder, "ftharness_toy.py"))
    info = os.path.join(folder, f"{name}-0.1.dist-info")
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {name.replace('_', '-')}\nVersion: 0.1\n")
    with open(os.path.join(info, "entry_points.txt"), "w") as f:
        f.write(entry_points)
    return folder


@pytest.fixture(scope="module")
def plugin(tmp_path_factory):
    return install(str(tmp_path_factory.mktemp("plugin")))


def ftharness(path, *args, cwd=None, timeout=300):
    """`ftharness ARGS` in a child that sees the plugin folder `path`."""
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-P", "-m", "ftharness", *args], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def python(path, code):
    env = dict(os.environ, PYTHONPATH=path)
    return subprocess.run([sys.executable, "-P", "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=env, timeout=300)


def scenario_with_touch(tmp_path, **fault):
    data = yaml.safe_load(open(os.path.join(KILL, "scenario.yaml")))
    data["faults"].append({"kind": "touch_file", "at": {"step": 3}, **fault})
    data["expect"]["properties"] = ["exactly_once_restore", "budget_accounting", "recovers", "touches_recorded"]
    path = tmp_path / "touch.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path), data


def test_list_shows_the_plugin_kind_and_property(plugin):
    r = ftharness(plugin, "list")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert "touch_file" in r.stdout and "[plugin: ftharness-toy]" in r.stdout
    assert any(line.split()[:1] == ["touches_recorded"] and line.endswith("[plugin]") for line in r.stdout.splitlines())


def test_without_the_plugin_the_kind_is_unknown(tmp_path):
    path, _ = scenario_with_touch(tmp_path)
    r = ftharness(str(tmp_path / "empty"), "validate", path)
    assert r.returncode == 2 and "faults[1].kind" in r.stderr and "touch_file" in r.stderr


def test_the_schema_validates_the_plugin_kind(plugin, tmp_path):
    path, data = scenario_with_touch(tmp_path)
    r = ftharness(plugin, "validate", path)
    assert r.returncode == 0, r.stderr
    bad, _ = scenario_with_touch(tmp_path, size_bytes=0)
    r = ftharness(plugin, "validate", bad)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "faults[1].size_bytes" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    r = ftharness(plugin, "schema", "--out", str(tmp_path / "schema.json"))
    assert r.returncode == 0, r.stderr
    schema = json.loads((tmp_path / "schema.json").read_text())
    assert "touch_file" in json.dumps(schema) and "touches_recorded" in json.dumps(schema)


def test_injection_plan_capabilities_and_injection_of_the_plugin_kind(plugin, tmp_path):
    path, _ = scenario_with_touch(tmp_path)
    r = python(plugin, f"""
        import os
        from ftharness.faults import IN_WORKER, REGISTRY, make_fault
        from ftharness.faults.base import FaultContext
        from ftharness.harness.cluster.handles import EmbeddedCluster, ExistingCluster
        from ftharness.harness.run.guard import check_capabilities
        from ftharness.harness.run.injector import crash_plans
        from ftharness.scenarios.schema import load_scenario
        from ftharness.errors import ScenarioError

        sc = load_scenario({path!r})
        assert "touch_file" not in IN_WORKER and crash_plans(sc) == [], "fired by the injector, not the worker"
        check_capabilities(sc, EmbeddedCluster(3))      # needs nothing a cluster lacks
        check_capabilities(sc, ExistingCluster("10.0.0.1:6379"))
        REGISTRY["touch_file"].needs = frozenset({{"node_network"}})
        try:
            check_capabilities(sc, ExistingCluster("10.0.0.1:6379"))
            raise SystemExit("a missing capability was not refused")
        except ScenarioError as e:
            print("REFUSED", e)
        spec = sc.faults[1].model_dump(mode="json", exclude_none=True)
        ctx = FaultContext(cluster=ExistingCluster("10.0.0.1:6379"), agents=None, members=[],
                           storage_dir={str(tmp_path / "storage")!r}, history_path="")
        hit = make_fault(1, spec).inject(ctx)
        assert os.path.getsize(hit["path"]) == 16, hit
        print("HIT", hit)
    """)
    assert r.returncode == 0, r.stdout + r.stderr
    refused = next(line for line in r.stdout.splitlines() if line.startswith("REFUSED"))
    assert "faults[1].kind: touch_file needs a cluster that offers node_network" in refused
    assert "an existing cluster (cluster.address) does not" in refused


def recorded_with_touch(tmp_path, hit):
    """The recorded kill-worker run with a touch_file fault added to its scenario and its
    history (injected after the 3rd step event, sealed again)."""
    folder = tmp_path / "run"
    shutil.copytree(KILL, folder)
    _, data = scenario_with_touch(tmp_path)
    (folder / "scenario.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    events = [e for e in read_history(KILL).events if e.get("kind") != "history_end"]
    at = [i for i, e in enumerate(events) if e.get("kind") == "step"][2] + 1
    t = events[at - 1]["t"]
    touch = {"t": t, "kind": "fault_injected", "source": "injector", "run": events[0].get("run"), "fault": 1,
             "fault_kind": "touch_file", "target_asked": {}, "trigger": {"step": 3}, "t_requested": t,
             "t_done": t, "target_hit": hit}
    events = events[:at] + [touch] + events[at:]
    for i, e in enumerate(events):
        e["seq"] = i + 1
    (folder / "history.jsonl").write_bytes(b"".join(line + b"\n" for line in sealed_lines(events)))
    return str(folder)


def test_landing_and_verdict_of_the_plugin_kind_and_property(plugin, tmp_path):
    folder = recorded_with_touch(tmp_path, {"path": "/s/toy-marker", "how": "touch"})
    r = ftharness(plugin, "check", folder)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "LANDED fault 1 (touch_file): touch_file wrote /s/toy-marker" in r.stdout
    assert any("touches_recorded" in line and "1 touch_file fault(s)" in line for line in r.stdout.splitlines())
    assert r.stdout.strip().splitlines()[-1] == "PASS kill-worker"


def test_a_planted_violation_of_the_plugin_property_fails_the_run(plugin, tmp_path):
    folder = recorded_with_touch(tmp_path, {"how": "touch"})
    r = ftharness(plugin, "check", folder)
    assert r.returncode != 0, r.stdout
    assert "MISSED fault 1 (touch_file)" in r.stdout
    assert any("touches_recorded" in line and "recorded no path" in line for line in r.stdout.splitlines()), r.stdout
    assert "FAIL kill-worker" in r.stdout.splitlines(), r.stdout   # a standing violation: FAIL


def test_a_broken_plugin_is_one_warning_line_each_not_a_crash(plugin, tmp_path):
    broken = install(str(tmp_path / "broken"), name="ftharness_broken", entry_points=BROKEN)
    r = ftharness(f"{plugin}{os.pathsep}{broken}", "list")
    assert r.returncode == 0, r.stderr
    warnings = r.stderr.strip().splitlines()
    assert len(warnings) == 2 and "Traceback" not in r.stderr, r.stderr
    assert warnings[0].startswith("ftharness: warning: ftharness.faults entry point gone (ftharness_toy_missing:Gone): "
                                  "not loaded (ModuleNotFoundError")
    assert warnings[1].startswith("ftharness: warning: ftharness.properties entry point no_check")
    assert "touch_file" in r.stdout and "touches_recorded" in r.stdout   # the good plugin still loads


@pytest.mark.full
@pytest.mark.slow
def test_the_plugin_kind_runs_on_a_real_cluster(plugin, tmp_path):
    data = yaml.safe_load(open(os.path.join(HERE, "..", "scenarios", "catalog", "default.yaml")))
    data.update(name="touch-file")
    data["workload"]["steps"] = 8
    data["faults"] = [{"kind": "touch_file", "at": {"step": 3}}]
    data["expect"]["properties"] = ["exactly_once_restore", "budget_accounting", "touches_recorded"]
    path = tmp_path / "touch-file.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    out = tmp_path / "out"
    r = ftharness(plugin, "run", str(path), "--out", str(out), timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verdict"] == "PASS"
    (fault,) = summary["faults"]
    assert fault["kind"] == "touch_file" and fault["landed"], fault
    hit = next(e for e in read_history(str(out)).events if e.get("kind") == "fault_injected")["target_hit"]
    assert os.path.getsize(hit["path"]) == 16
