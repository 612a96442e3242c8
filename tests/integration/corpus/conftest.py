"""Fixtures for the corpus tests: the library venvs (scripts/make-corpus-venv.sh) and one dumping run
per (program, jaxlib), made once per session and shared."""

from __future__ import annotations

import json

import pytest

from tests.corpus.catalog import by_name
from tests.helpers import interpreter_from_env, run_cli

VARIABLES = {
    "0.4.30": "XLATOOLS_CORPUS_0_4_30_PYTHON",
    "0.10.2": "XLATOOLS_CORPUS_0_10_2_PYTHON",
    "0.12": "XLATOOLS_CORPUS_0_12_PYTHON",
}


def corpus_python(jaxlib: str) -> str:
    return interpreter_from_env(
        VARIABLES[jaxlib],
        "corpus",
        f"a Python with jax {jaxlib} and the corpus libraries",
        f"scripts/make-corpus-venv.sh PATH {jaxlib}",
    )


@pytest.fixture(scope="session")
def corpus_env(probe_cache) -> dict:
    return {"XLATOOLS_CACHE_DIR": str(probe_cache), "JAX_PLATFORMS": "cpu"}


@pytest.fixture(scope="session")
def corpus_run(tmp_path_factory, corpus_env):
    """corpus_run(program, jaxlib, presets=dump:full) -> the run bundle (cached per session)."""
    made: dict = {}

    def make(program: str, jaxlib: str, *presets: str, tag: str = "a"):
        key = (program, jaxlib, presets, tag)
        if key not in made:
            spec = by_name([program])[0]
            work = tmp_path_factory.mktemp(f"corpus-{program}-{jaxlib}")
            args = [x for p in (presets or ("dump:full",)) for x in ("--preset", p)]
            done = run_cli(
                "run",
                str(spec.path),
                *args,
                "--python",
                corpus_python(jaxlib),
                "--out",
                "runs",
                "--json",
                *(f"--env={k}={v}" for k, v in spec.env.items()),
                cwd=work,
                env=corpus_env,
                timeout=600,
            )
            assert done.returncode == 0, done.stderr[-3000:]
            made[key] = json.loads(done.stdout)["bundle"]
        return made[key]

    return make


@pytest.fixture
def xl(tmp_path, corpus_env):
    def call(*args, env=None, timeout=600):
        return run_cli(*args, cwd=tmp_path, env={**corpus_env, **(env or {})}, timeout=timeout)

    return call
