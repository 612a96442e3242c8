"""Helpers shared by the run/inspect/lower integration tests.

Imported as a plain module (pytest puts this folder on sys.path), because
`tests` is not a package: the root conftest's `require` and `run_cli` are
loaded from its file rather than imported by package name.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

_spec = importlib.util.spec_from_file_location("xlatools_tests_root_conftest", Path(__file__).resolve().parents[1] / "conftest.py")
_root = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_root)
require = _root.require
run_cli = _root.run_cli


def bundles(root: Path) -> list[Path]:
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.is_symlink()) if root.is_dir() else []


def manifest(bundle: Path) -> dict:
    return json.loads((bundle / "manifest.json").read_text())
