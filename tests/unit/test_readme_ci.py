"""The README's test command is the one CI runs, so the two cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def _commands(text: str) -> list[str]:
    return re.findall(r"```sh\n(.+?)\n```", text)


def test_ci_runs_the_readme_test_command():
    commands = _commands((REPO / "README.md").read_text())
    test_command = next(c for c in commands if "pytest" in c)
    assert test_command in (REPO / ".ci" / "run").read_text()


def test_readme_main_job_installs_and_runs_xlatools():
    first = _commands((REPO / "README.md").read_text())[0]
    assert first.startswith("python3 -m venv .venv && .venv/bin/pip install") and ".venv/bin/xlatools " in first
