"""Fixtures for the reduce tests: real dumping runs of real float64 programs (session-cached)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers import bundles, run_cli

HERE = Path(__file__).resolve().parent


def _dump(tmp_path_factory, probe_cache, program: str, python: str) -> Path:
    work = tmp_path_factory.mktemp(f"reduce-{Path(program).stem}")
    shutil.copy(HERE / program, work / program)
    result = run_cli(
        "run",
        program,
        "--python",
        python,
        "--preset",
        "dump:hlo",
        "--out",
        "runs",
        cwd=work,
        env={"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu"},
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return bundles(work / "runs")[0]


@pytest.fixture(scope="session")
def student_t_bundle(tmp_path_factory, probe_cache, miscompile_python) -> Path:
    """student_t.py run by jaxlib 0.6.2 with HLO dumps (the module that computes a wrong float64 result)."""
    return _dump(tmp_path_factory, probe_cache, "student_t.py", miscompile_python)


@pytest.fixture(scope="session")
def solve_bundle(tmp_path_factory, probe_cache) -> Path:
    """solve.py (LAPACK custom calls) run by this interpreter's jaxlib with HLO dumps."""
    import importlib.util
    import sys

    from tests.helpers import require

    require("jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]'")
    return _dump(tmp_path_factory, probe_cache, "solve.py", sys.executable)


@pytest.fixture
def xl(tmp_path, probe_cache):
    """Run `xlatools ARGS` in tmp_path."""

    def call(*args: str, timeout: float = 600, env: dict[str, str] | None = None):
        return run_cli(
            *args,
            cwd=tmp_path,
            env={"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu", **(env or {})},
            timeout=timeout,
        )

    return call
