"""The JSON Schema is derived from the model and shipped beside the profiles."""

from __future__ import annotations

import json

from xlatools.profiles.model import json_schema
from xlatools.profiles.search import SHIPPED_DIR


def test_shipped_schema_is_current():
    shipped = json.loads((SHIPPED_DIR / "profile.schema.json").read_text())
    assert shipped == json_schema(), "regenerate: xlatools profiles schema -o xlatools/configs/profile.schema.json"


def test_schema_rejects_unknown_keys_and_does_not_require_name():
    schema = json_schema()
    assert schema["additionalProperties"] is False
    assert "name" not in schema.get("required", [])
    assert set(schema["properties"]) >= {"name", "description", "extends", "target", "bazel", "source", "build", "run"}


def test_shipped_profiles_point_editors_at_the_schema():
    for path in SHIPPED_DIR.glob("*.yaml"):
        assert path.read_text().splitlines()[0] == "# yaml-language-server: $schema=profile.schema.json", path
