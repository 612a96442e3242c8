"""`inspect` credits a library's jitted function to the program line that called the library (issue 29 item 4).

lineax's `linear_solve` is an equinox filter_jit: the first instruction's stack is all library frames
(jax keeps only the innermost frames), so the old choice named equinox's `_jit.py:55`.
Cost: one small dumping run on the corpus venv (about 8 s).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.helpers import run_cli
from tests.integration.corpus.conftest import corpus_python

PROGRAM = """import jax.numpy as jnp
import lineax as lx


def solve():
    operator = lx.MatrixLinearOperator(jnp.eye(3) * 2.0)
    return lx.linear_solve(operator, jnp.ones(3)).value


print(solve())
"""


def test_library_jit_is_credited_to_the_programs_call(tmp_path, corpus_env):
    (tmp_path / "prog.py").write_text(PROGRAM)
    ran = run_cli(
        "run",
        "prog.py",
        "--dump",
        "--preset",
        "dump:hlo",
        "--python",
        corpus_python("0.10.2"),
        cwd=tmp_path,
        env=corpus_env,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-2000:]
    shown = run_cli("inspect", "artifacts/latest", cwd=tmp_path, env=corpus_env)
    assert shown.returncode == 0, shown.stderr
    # the dump table's row (it starts with the module id; the metrics table's with #N)
    row = next(ln for ln in shown.stdout.splitlines() if " jit_linear_solve " in ln and ln.split()[0].isdigit())
    # the program's line 7 (the lx.linear_solve call), the library frame it entered beside it
    assert "prog.py:7 (via _jit.py:" in row, row
    # --json (and the manifest) carry the same two frames
    listed = json.loads(run_cli("inspect", "artifacts/latest", "--json", cwd=tmp_path, env=corpus_env).stdout)
    source = next(m["source"] for m in listed["modules"] if m["name"].endswith("jit_linear_solve"))
    assert (source["line"], Path(source["via"]["file"]).name) == (7, "_jit.py"), source
