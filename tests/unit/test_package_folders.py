"""Every folder of xlatools that holds Python files is a package, so that a built wheel ships it: setuptools
finds packages by their __init__.py, and a probe folder without one (the recorder's sitecustomize.py) was
left out of a non-editable install while the editable one that tests use still found it."""

from pathlib import Path

import xlatools

ROOT = Path(xlatools.__file__).resolve().parent


def test_every_folder_with_python_files_is_a_package():
    missing = sorted(
        str(folder.relative_to(ROOT))
        for folder in [ROOT, *ROOT.rglob("*")]
        if folder.is_dir() and folder.name != "__pycache__" and any(folder.glob("*.py"))
        if not (folder / "__init__.py").exists()
    )
    assert missing == []
