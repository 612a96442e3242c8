"""A bisection run again over a damaged state file stops with exit 2 naming the file and each key
path, before it asks the package index or runs anything (about 1 s: no jax, no network)."""

from __future__ import annotations

import json
from pathlib import Path

from xlatools.bisect.checks import TestOptions, build_test
from xlatools.bisect.state import STATE_FILE, folder_for
from xlatools.console import Reporter
from xlatools.records.bisect import ReleaseSpec

from tests.helpers import run_cli

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "bundles-v1" / "bisect-passes" / STATE_FILE


def test_a_damaged_state_file_is_refused_with_its_key_paths(tmp_path):
    (tmp_path / "check.py").write_text("print('ok')\n")
    # The folder `bisect releases --good 0.4.28 --bad 0.4.31 -- check.py` finds again (its spec's hash).
    test = build_test(TestOptions(program="check.py", cwd=tmp_path), Reporter.silent()).describe()
    spec = ReleaseSpec(good="0.4.28", bad="0.4.31", python_version="3.11", platform="cpu", test=test)
    folder = folder_for(tmp_path / "artifacts" / "bisect", "releases", "0.4.28..0.4.31", spec)
    folder.mkdir(parents=True)
    state = json.loads(FIXTURE.read_text())
    state["kind"] = "releases"
    state["steps"][0]["install_s"] = "fast"
    state["candidates"][1] = {"label": "jax 0.4.29"}
    (folder / STATE_FILE).write_text(json.dumps(state))

    done = run_cli("bisect", "releases", "--good", "0.4.28", "--bad", "0.4.31", "--", "check.py", cwd=tmp_path)

    assert done.returncode == 2, done.stderr
    assert f"the bisect state file {folder / STATE_FILE} is corrupt" in done.stderr
    assert "[steps[0].install_s]" in done.stderr and "[candidates[1].key]" in done.stderr
    assert "--fresh" in done.stderr and "Traceback" not in done.stderr
    assert not (folder / "steps").exists()  # nothing ran
