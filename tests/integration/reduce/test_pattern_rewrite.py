"""A real upstream CPU miscompile of the pattern-rewriting kind (issues 29 and 40): jaxlib 0.4.26's oneDNN softmax.

The run's optimised module is one `__onednn$softmax` custom call (it returns all ones). Read back from its dumped
HLO text, the module goes through jaxlib's HLO -> StableHLO import, which folds an identity broadcast: the rewrite
no longer matches (24 instructions instead of the run's 2) and the replay computes the right softmax. The run's
StableHLO (jax's, in jax_ir/: every dumping run keeps it, tied to its module) compiles the run's own module: that
file alone replays as the run's module, on its module's snapshot, and shows the bug against jaxlib 0.4.30. Reduce,
which edits HLO text, cannot reduce it: it says so, names the file that reproduces (exit 3, nothing left behind),
and never calls the input uninteresting (exit 2). (A replay `--from text` and its advice: the flax case of
tests/integration/corpus/test_replay_as_run.py; triage's hand-over: tests/integration/triage.)
Cost: one dumping run, one replay with a reference and one reduce check on jaxlib 0.4.26 (42 s on the 2-core
machine shared with other sessions, load average 4.4; as many calls as before issue 40, plus the reference run).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import bundles, interpreter_from_env

HERE = Path(__file__).resolve().parent
STABLEHLO = "jax_ir/jax_ir1_jit_f_compile.mlir"  # jax 0.4.26: jax_ir<N>_<module>_compile.mlir, N its compile count


@pytest.fixture(scope="module")
def onednn_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_ONEDNN_JAX_PYTHON",
        "onednn_jax",
        "a Python with jax/jaxlib 0.4.26 (its oneDNN softmax rewrite returns all ones)",
        "scripts/make-jax-venv.sh PATH 0.4.26",
    )


def test_the_stablehlo_reproduces_where_the_text_does_not(xl, tmp_path, onednn_python, old_jax_python):
    shutil.copy(HERE / "onednn_softmax.py", tmp_path / "prog.py")
    ran = xl("run", "prog.py", "--python", onednn_python, "--preset", "dump:hlo", "--preset", "dump:snapshots")
    assert ran.returncode == 0, ran.stderr
    assert "[1. 1. 1.]" in ran.stdout  # the bug itself: softmax of three different values
    bundle = bundles(tmp_path / "artifacts")[0]
    record = json.loads((bundle / "manifest.json").read_text())
    tied = {m["name"]: m.get("stablehlo") for m in record["dump"]["modules"]}
    assert tied["jit_f"] == f"../{STABLEHLO}" and (bundle / STABLEHLO).is_file()

    # The StableHLO file alone: the run's own module, on the run's arguments; jaxlib 0.4.30 computes the softmax.
    alone = xl("replay", str(bundle / STABLEHLO), "--python", onednn_python, "--reference-python", old_jax_python)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    table = alone.stdout + alone.stderr  # the table on stdout, its notes (form, inputs) on stderr
    assert "form: 0001 jit_f: StableHLO (jax_ir1_jit_f_compile.mlir), the run's own module" in table
    assert "inputs: 0001 jit_f: snapshot (" in table and "module_0001.jit_f.snapshot." in table
    assert "snapshot: ok (max abs 0)" in table and "reference-jax-0.4.30: 3/3 differ" in table

    reduced = xl(
        "reduce",
        str(bundle),
        "--module",
        "jit_f",
        "--python",
        onednn_python,
        "--reference-python",
        old_jax_python,
        "--out",
        "reduced",
    )
    assert reduced.returncode == 3, reduced.stdout + reduced.stderr
    said = " ".join(reduced.stderr.split())
    assert "cannot reduce module" in said and "jit_f" in said and "__onednn$softmax" in said, said
    assert f"the module's StableHLO {bundle / STABLEHLO} compiles the run's own module" in said, said
    assert "not interesting" not in reduced.stderr
    assert not list((tmp_path / "reduced").glob(".reduce-state/*"))  # nothing half-written
