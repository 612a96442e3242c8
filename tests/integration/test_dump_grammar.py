"""The dump-name and HLO grammars (xlatools/hlo/) on whole CPU dumps that jaxlib 0.10.2 and 0.4.30 write here:
text, protos, per-pass steps and snapshots of one small jit program and jax's helper modules (about 6 s each)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.helpers import check_dump_grammar

PROGRAM = """import jax, jax.numpy as jnp

@jax.jit
def f(x, y):
    return jnp.tanh(x @ y).sum(axis=0) * 2.0

print(f(jnp.ones((4, 3)), jnp.ones((3, 2))))
"""
FLAGS = "--xla_dump_hlo_as_text --xla_dump_hlo_as_proto --xla_dump_hlo_pass_re=.* --xla_dump_hlo_snapshots"


@pytest.mark.parametrize(
    "interpreter, extra", [("jax_python", ""), ("old_jax_python", " --xla_dump_include_timestamp")]
)
def test_whole_cpu_dump_reads(request, tmp_path, interpreter, extra):
    python = request.getfixturevalue(interpreter)
    (tmp_path / "prog.py").write_text(PROGRAM)
    dump = tmp_path / "dump"
    env = {
        **os.environ,
        "JAX_PLATFORMS": "cpu",
        "XLA_FLAGS": f"--xla_dump_to={dump} {FLAGS}{extra}",
        "JAX_ENABLE_COMPILATION_CACHE": "false",
    }
    done = subprocess.run([python, "prog.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    kinds = check_dump_grammar(dump)
    assert {"before_optimizations", "after_optimizations", "pass_step", "snapshot", "buffer-assignment"} <= set(kinds)
    assert kinds["pass_step"] > 50
    if extra:  # 0.4.30: timestamps on the per-pass files, no module folders
        assert any(p.name[0].isdigit() for p in dump.iterdir()) and "module_folder" not in kinds
    else:  # 0.10.2: a folder per module
        assert {"module_folder", "module_mlir", "compile_options", "topology"} <= set(kinds)
