"""Editors: the scenario schema documents every field (a `description` editors
show on hover), has an `$id`, and docs/editors.md says how to wire it into the
YAML language server. No Ray cluster."""

import json
import os

from conftest import REPO
from ftharness.scenarios.schema import SCHEMA_ID, scenario_json_schema

PUBLISHED = os.path.join(REPO, "scenarios", "scenario.schema.json")


def _fields(schema):
    for title, d in [("Scenario", schema), *schema.get("$defs", {}).items()]:
        for name, prop in (d.get("properties") or {}).items():
            yield f"{title}.{name}", prop


def test_every_schema_field_and_model_has_a_description_and_the_schema_an_id():
    """Seen: 0 of 125 fields had a description; no $id."""
    schema = scenario_json_schema()
    fields = dict(_fields(schema))
    assert len(fields) >= 125
    undocumented = [k for k, p in fields.items() if len(p.get("description", "")) < 10]
    assert not undocumented, undocumented
    assert all(d.get("description") for d in schema["$defs"].values())
    assert schema["$id"] == SCHEMA_ID and schema["$id"].endswith("scenario.schema.json")
    assert json.load(open(PUBLISHED)) == schema          # the published file is the documented one


def test_comments_on_the_fields_are_their_descriptions():
    fields = dict(_fields(scenario_json_schema()))
    assert "namespaces" in fields["ClusterSpec.network"]["description"]        # from its `#:` comment
    assert "exactly one of step, time_s or event" in fields["KillWorkerSpec.at"]["description"]


def test_docs_say_how_to_use_the_schema_with_the_yaml_language_server():
    text = open(os.path.join(REPO, "docs", "editors.md")).read()
    assert "yaml-language-server: $schema=" in text and "yaml.schemas" in text and SCHEMA_ID in text
    first = open(os.path.join(REPO, "scenarios", "catalog", "kill-worker.yaml")).readline()
    assert first.strip() == "# yaml-language-server: $schema=../scenario.schema.json"
