"""The one manifest writer hides secrets wherever a record carries them (run and build alike)."""

from __future__ import annotations

import json

from xlatools.bundle import Bundle
from xlatools.redact import REDACTED, redact


def test_secrets_are_hidden_in_env_mappings_rows_argv_and_provenance():
    record = {
        "plan": {"env": {"HOME": "/h", "api_key": "k1", "HF_TOKEN": "t1"}},  # a build plan's container env
        "env_changes": [
            {"name": "GITHUB_TOKEN", "value": "t2", "previous": None, "source": "--env"},
            {"name": "PLAIN", "value": "v", "previous": "p", "source": "--env"},
        ],
        "argv": ["run", "--env", "MY_SECRET=s1", "--env=OTHER_PASSWORD=s2", "--env", "PLAIN=v"],
        "profile": {
            "provenance": [
                {"key": "run.env.DB_PASSWORD", "value": "s3", "origin": "p.yaml:3"},
                {"key": "run.env.PLAIN", "value": "v", "origin": "p.yaml:4"},
            ]
        },
        "sha256": "abc",
        "key_path": "x",
    }
    text = json.dumps(redact(record))
    for secret in ("k1", "t1", "t2", "s1", "s2", "s3"):
        assert f'"{secret}"' not in text and f"={secret}" not in text
    out = redact(record)
    assert out["plan"]["env"]["HOME"] == "/h"
    assert out["env_changes"][1]["value"] == "v" and out["profile"]["provenance"][1]["value"] == "v"
    assert out["argv"][-1] == "PLAIN=v" and out["argv"][2] == f"MY_SECRET={REDACTED}"
    assert out["sha256"] == "abc" and out["key_path"] == "x"  # field names of our own records stay


def test_write_manifest_always_redacts(tmp_path):
    from xlatools.records.run import EnvChangeRecord, RunManifest

    bundle = Bundle.create(tmp_path, "b", "run")
    bundle.write_manifest(
        RunManifest(
            env_changes=[EnvChangeRecord(name="REGISTRY_PASSWORD", value="hunter2")],
            argv=["run", "--env", "REGISTRY_PASSWORD=hunter2"],
        )
    )
    text = (bundle.path / "manifest.json").read_text()
    # expected: the names stay, each secret value becomes the redaction marker
    assert "hunter2" not in text and "REGISTRY_PASSWORD" in text and text.count(REDACTED) >= 2, text
