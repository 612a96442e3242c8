"""Shared by the benchmark scripts: timing, and running xlatools as installed.

`pip install` compiles a package's bytecode; an editable checkout run with
PYTHONDONTWRITEBYTECODE=1 (as some sandboxes and CI runners set) compiles every
xlatools module from source on every start, which is not what users pay.
`installed_env` precompiles once and lets the children use the bytecode.
"""

from __future__ import annotations

import compileall
import os
import subprocess
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "xlatools"


def installed_env(env: dict[str, str] | None = None) -> dict[str, str]:
    compileall.compile_dir(str(PACKAGE), quiet=1)
    env = dict(os.environ if env is None else env)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def timed(argv: list[str], check: bool = True, **kwargs) -> float:
    """Wall-clock seconds of one run of `argv`, output discarded."""
    kwargs.setdefault("stdout", subprocess.DEVNULL)
    kwargs.setdefault("stderr", subprocess.DEVNULL)
    start = time.perf_counter()
    subprocess.run(argv, check=check, **kwargs)
    return time.perf_counter() - start
