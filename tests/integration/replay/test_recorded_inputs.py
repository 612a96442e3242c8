"""Real arguments without XLA's snapshots: `run --record-inputs` records each executed module's arguments
and results in the program's process (run/recorder.py); replay reads them, names them `recorded`, and
reproduces the run's own outputs. On the CPU with snapshots off, as a GPU (which writes none) would be."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.helpers import bundles, manifest, run_cli
from tests.integration.replay.conftest import run_dir

PROGRAM = """
import sys
import numpy as np
import jax
import jax.numpy as jnp


@jax.jit
def step(w, x, k):
    return jnp.tanh(x @ w) * k + 1


w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
x = np.arange(8, dtype=np.float32).reshape(2, 4) / 7
first = step(w, x, 2.0)  # k: a Python scalar, recorded as jax types it (f32)
step(w, np.ones((2, 4), np.float32), 3.0)  # a second execution of the same module: the first one is kept
np.save(sys.argv[1], np.asarray(first))
"""


@pytest.mark.parametrize("which", ["this", "old"])
def test_recorded_inputs_replay_and_reproduce_the_runs_outputs(which, tmp_path, replay_env, request):
    python = request.getfixturevalue("old_jax_python") if which == "old" else __import__("sys").executable
    (tmp_path / "prog.py").write_text(PROGRAM)
    ran = run_cli(
        "run",
        "prog.py",
        "--python",
        python,
        "--preset",
        "dump:hlo",
        "--record-inputs",
        "--out",
        "runs",
        "--",
        "expected.npy",
        cwd=tmp_path,
        env=replay_env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr
    bundle = bundles(tmp_path / "runs")[0]
    assert not list((bundle / "xla_dump").glob("*.snapshot.*")), "snapshots are off: the recorder stands in"
    assert any("recorded the arguments and results of" in note for note in manifest(bundle)["notes"])
    result = run_cli(
        "replay", str(bundle), "--python", python, "--json", "--out", "out", cwd=tmp_path, env=replay_env, timeout=300
    )
    assert result.returncode == 0, result.stderr
    module = next(m for m in json.loads(result.stdout)["modules"] if m["name"] == "jit_step")
    assert module["input_source"]["kind"] == "recorded" and "/recorded/" in module["input_source"]["path"]
    assert module["outcome"] == "ok" and [c["against"] for c in module["comparisons"]] == ["snapshot"]
    with np.load(run_dir(module) / "outputs.npz") as out, np.load(run_dir(module) / "inputs.npz") as given:
        np.testing.assert_array_equal(out["a0"], np.load(tmp_path / "expected.npy"))
        assert given["a2"].dtype == np.float32 and float(given["a2"]) == 2.0  # the first execution's scalar
