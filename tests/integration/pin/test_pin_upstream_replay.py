"""Replays a small sample of real jax-ml/jax pin bumps (scripts/replay-pin-history.py) when a
snapshot of that repository is at hand: XLATOOLS_JAX_MIRROR = a clone or its git directory.
CI has no GitHub, so without it the test skips, saying why."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[3] / "scripts" / "replay-pin-history.py"
MIRROR = os.environ.get("XLATOOLS_JAX_MIRROR")


@pytest.mark.skipif(not MIRROR, reason="XLATOOLS_JAX_MIRROR is not set: no jax-ml/jax snapshot to replay")
def test_a_sample_of_every_era_replays_byte_for_byte_and_verify_never_cries_wolf():
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--mirror", MIRROR, "--per-era", "1", "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)
    assert {r["era"] for r in records} >= {
        "tensorflow_workspace",
        "xla_workspace",
        "workspace_bzl",
        "revision_bzl",
        "api_tarball",
        "revision_bzl_module",
        "placeholder",
    }
    pure = [r for r in records if r["pure"] and r["verify"] != "inconsistent_tree"]
    assert pure and all(r["apply"] == "identical" for r in pure), [r for r in pure if r["apply"] != "identical"]
    assert not [r for r in records if r["verify"] in ("false_alarm", "refused")]
    assert not [r for r in records if r.get("differing_reason") == "unexplained"]
    assert not [r for r in records if r["apply"] == "refused" and r["parent_era"] == r["era"]]
