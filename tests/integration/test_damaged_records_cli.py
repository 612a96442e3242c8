"""Damaged records through the real CLI: `diff`, `report`, `inspect`, `repro pack` on a damaged manifest
and `repro run` on a pack whose pack.json has the wrong shape exit 2, naming the file and each key
path, with no traceback and nothing written. Bundles and pack: those the last release wrote
(tests/fixtures/bundles-v1), so no jax is needed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import run_cli

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "bundles-v1"


def _copy(name: str, to: Path, damage=None) -> Path:
    shutil.copytree(FIXTURES / name, to)
    if damage is not None:
        data = json.loads((to / "manifest.json").read_text())
        text = damage(data)
        (to / "manifest.json").write_text(text if isinstance(text, str) else json.dumps(data))
    return to


def _bad_run(data: dict) -> None:
    data["exit_code"] = "none"
    data["jax"]["devices"] = [{"id": "zero"}]


def _refused(result, file: str, *keys: str) -> None:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and file in result.stderr
    for key in keys:
        assert f"[{key}]" in result.stderr


@pytest.fixture
def damaged(tmp_path) -> tuple[Path, Path]:
    """(a good run bundle with its dump, a copy whose manifest has two fields of the wrong type)."""
    return _copy("run-smoke-dot", tmp_path / "good"), _copy("run-smoke-dot", tmp_path / "bad", _bad_run)


def test_diff_report_and_inspect_refuse_a_damaged_run_manifest(damaged, tmp_path):
    good, bad = damaged
    manifest = str(bad / "manifest.json")
    _refused(run_cli("diff", str(good), str(bad)), manifest, "exit_code", "jax.devices[0].id")
    _refused(run_cli("diff", str(good), str(bad), "--json"), manifest, "exit_code")
    _refused(run_cli("report", str(bad), "-o", "r.html", cwd=tmp_path), manifest, "jax.devices[0].id")
    assert not (tmp_path / "r.html").exists()
    _refused(run_cli("inspect", str(bad)), manifest, "exit_code", "jax.devices[0].id")
    _refused(run_cli("inspect", str(bad / "xla_dump"), "--json"), manifest, "exit_code")
    (bad / "manifest.json").write_text("{truncated")
    result = run_cli("inspect", str(bad))
    _refused(result, manifest)
    assert "not valid JSON" in result.stderr


def test_diff_refuses_a_damaged_replay_manifest(tmp_path):
    def bad_outcome(data: dict) -> None:
        data["modules"][0]["outcome"] = "exploded"

    good, bad = _copy("replay-seed", tmp_path / "good"), _copy("replay-seed", tmp_path / "bad", bad_outcome)
    _refused(run_cli("diff", str(good), str(bad)), str(bad / "manifest.json"), "modules[0].outcome")
    assert run_cli("diff", str(good), str(good)).returncode == 0  # the release's own replay bundle reads


def test_repro_pack_refuses_a_damaged_run_manifest(damaged, tmp_path):
    _, bad = damaged
    result = run_cli("repro", "pack", str(bad), "-o", "p.tar.gz", "--out", "out", cwd=tmp_path)
    _refused(result, str(bad / "manifest.json"), "jax.devices[0].id")
    assert not (tmp_path / "p.tar.gz").exists() and not (tmp_path / "out").exists()


def test_repro_run_refuses_a_pack_index_of_the_wrong_shape(tmp_path):
    from xlatools.replay.pack import extract, write_pack

    root = extract(FIXTURES / "pack-seed.tar.gz", tmp_path / "seed")
    files = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    files.pop("SHA256SUMS")
    index = json.loads(files["pack.json"])
    index["modules"][0]["id"] = "eight"
    index["replay"]["seed"] = [0]
    files["pack.json"] = json.dumps(index).encode()
    write_pack(files, tmp_path / "bad.tar.gz")  # a well-made archive: only its index is wrong
    result = run_cli("repro", "run", "bad.tar.gz", "--out", "out", "--json", cwd=tmp_path)
    _refused(result, "pack.json in bad.tar.gz", "modules[0].id", "replay.seed")
    # no answer (with --json, cli.main prints only the error there), nothing left unpacked
    assert json.loads(result.stdout)["ok"] is False and list((tmp_path / "out").iterdir()) == []
