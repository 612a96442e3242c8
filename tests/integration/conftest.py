"""Fixtures for the run/inspect/lower integration tests: real jax on CPU, the CLI as a subprocess."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
from tests.helpers import interpreter_from_env, require, run_cli


@pytest.fixture(scope="session")
def probe_cache(tmp_path_factory) -> Path:
    """One target-probe cache for the session: each interpreter is probed once, as for a user."""
    return tmp_path_factory.mktemp("xlatools-cache")


@pytest.fixture
def jax_python() -> str:
    import sys

    require(
        "jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]' (jax + jaxlib in this interpreter)"
    )
    return sys.executable


@pytest.fixture(scope="session")
def miscompile_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_MISCOMPILE_JAX_PYTHON",
        "miscompile_jax",
        "a Python with jax/jaxlib 0.6.2 (its CPU exp of a constant NaN is wrong, jax-ml/jax#29537)",
        "scripts/make-jax-venv.sh PATH 0.6.2",
    )


@pytest.fixture(scope="session")
def fixed_python(tmp_path_factory) -> str:
    """jax/jaxlib 0.6.1, the release before 0.6.2's float64 miscompile (jax-ml/jax#29537): the good interpreter of
    the real-case pairs (bad: reproduced, good: not). A release environment of the bisect tests' cache."""
    import os

    from tests.helpers import release_python

    kept = os.environ.get("XLATOOLS_TEST_BISECT_CACHE")
    return release_python("0.6.1", Path(kept) if kept else tmp_path_factory.mktemp("bisect-cache"))


@pytest.fixture
def old_jax_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_OLD_JAX_PYTHON", "old_jax", "a Python with jax/jaxlib 0.4.30", "scripts/make-old-jax-venv.sh PATH"
    )


@pytest.fixture
def new_jax_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_NEW_JAX_PYTHON",
        "new_jax",
        "a Python 3.12 with jax/jaxlib 0.12.x",
        "scripts/make-jax-venv.sh PATH '0.12.*'",
    )


@pytest.fixture
def tf_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_TF_PYTHON", "tensorflow", "a Python with tensorflow-cpu", "scripts/make-tf-venv.sh PATH"
    )


@pytest.fixture
def torch_xla_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_TORCH_XLA_PYTHON",
        "torch_xla",
        "a Python with torch and torch_xla of one version",
        "scripts/make-torch-xla-venv.sh PATH, about 7 GB",
    )


@pytest.fixture
def xl(tmp_path, probe_cache, jax_python):
    """Run `xlatools ARGS` in tmp_path with an isolated config dir and the shared probe cache."""

    def call(*args, env=None, timeout=300):
        full = {
            "XLATOOLS_CACHE_DIR": str(probe_cache),
            "XDG_CONFIG_HOME": str(tmp_path / "config"),
            "JAX_PLATFORMS": "cpu",
            **(env or {}),
        }
        return run_cli(*args, cwd=tmp_path, env=full, timeout=timeout)

    return call


COMPARE_PROGRAM = """\
import jax, jax.numpy as jnp

@jax.jit
def f(x, y):
    return jnp.tanh(x @ y + 1.0).sum(axis=0) * 2.0

x = jnp.ones((8, 8))
print(f(x, x))
"""


@pytest.fixture(scope="session")
def compare_runs(tmp_path_factory, probe_cache):
    """Two real per-pass dumping runs of one tiny program, the second with XLA's `fusion` pass
    disabled (a pass that changes this module on CPU), made once per session for diff and report tests."""
    import sys

    require(
        "jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]' (jax + jaxlib in this interpreter)"
    )
    work = tmp_path_factory.mktemp("compare-runs")
    (work / "prog.py").write_text(COMPARE_PROGRAM)
    env = {"XLATOOLS_CACHE_DIR": str(probe_cache), "XDG_CONFIG_HOME": str(work / "config"), "JAX_PLATFORMS": "cpu"}
    runs = {}
    for name, extra in (("base", []), ("nofusion", ["--xla-flag=--xla_disable_hlo_passes=fusion"])):
        out = work / name
        done = run_cli(
            "run",
            "prog.py",
            "--dump",
            "--preset",
            "dump:passes",
            "--python",
            sys.executable,
            "--out",
            str(out),
            *extra,
            cwd=work,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        runs[name] = out / "latest"
    runs["work"], runs["env"] = work, env
    return runs


@pytest.fixture(scope="session")
def compare_old_run(compare_runs):
    """The same program on jaxlib 0.4.30 (XLATOOLS_OLD_JAX_PYTHON), for matching across renumbering."""
    path = interpreter_from_env(
        "XLATOOLS_OLD_JAX_PYTHON", "old_jax", "a Python with jax/jaxlib 0.4.30", "scripts/make-old-jax-venv.sh PATH"
    )
    work, env = compare_runs["work"], compare_runs["env"]
    done = run_cli(
        "run",
        "prog.py",
        "--dump",
        "--preset",
        "dump:passes",
        "--python",
        path,
        "--out",
        str(work / "old"),
        cwd=work,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return work / "old" / "latest"
