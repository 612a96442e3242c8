"""Fixtures for the replay tests: one real dumping run of a small program per module (session-cached)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from tests.helpers import bundles, require, run_cli
from tests.integration.bisect.conftest import bisect_cache, bx  # noqa: F401  (fixtures: release environments)

PROGRAM = """
import sys
import numpy as np
import jax
import jax.numpy as jnp


def fn(x, y, z):
    return 2.0 * jnp.dot(x, y) + 3.0 * jnp.sin(z)


def clean(a):
    return jnp.where(jnp.isnan(a), 0.0, a)


x = np.arange(12, dtype=np.float32).reshape(3, 4) / 10
y = np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2)
z = np.full((3, 2), 0.5, np.float32)
a = np.array([np.nan, 1, 2, np.nan, 5, 6], np.float32)
np.savez(sys.argv[1], fn=np.asarray(jax.jit(fn)(x, y, z)), clean=np.asarray(jax.jit(clean)(a)))
"""


@pytest.fixture(scope="session")
def replay_env(tmp_path_factory, probe_cache):
    require(
        "jax", importlib.util.find_spec("jax") is not None, "pip install -e '.[jax]' (jax + jaxlib in this interpreter)"
    )
    return {"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu"}


@pytest.fixture(scope="session")
def dumped(tmp_path_factory, replay_env):
    """(run bundle, the program's own outputs): `run --preset dump:full` (+ proto) of PROGRAM, once per session."""
    work = tmp_path_factory.mktemp("replay-program")
    (work / "prog.py").write_text(PROGRAM)
    expected = work / "expected.npz"
    result = run_cli(
        "run",
        "prog.py",
        "--preset",
        "dump:full",
        "--preset",
        "dump:proto",
        "--out",
        "runs",
        "--",
        str(expected),
        cwd=work,
        env=replay_env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    import numpy as np

    with np.load(expected) as data:
        outputs = {name: data[name] for name in data.files}
    return bundles(work / "runs")[0], outputs


@pytest.fixture
def replay(tmp_path, replay_env):
    """Run `xlatools ARGS` in tmp_path (bundles under tmp_path/out)."""

    def call(*args, env=None, timeout=300):
        return run_cli(*args, cwd=tmp_path, env={**replay_env, **(env or {})}, timeout=timeout)

    return call


def this_python() -> str:
    return sys.executable


def run_dir(module: dict, label: str = "test") -> Path:
    return Path(next(r for r in module["runs"] if r["label"] == label)["dir"])
