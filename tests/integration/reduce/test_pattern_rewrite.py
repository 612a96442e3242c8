"""A real upstream CPU miscompile of the pattern-rewriting kind (issue 29 item 1): jaxlib 0.4.26's oneDNN softmax.

The run's optimised module is one `__onednn$softmax` custom call (it returns all ones). Read back from its
dumped text, the module goes through jaxlib's HLO -> StableHLO import, which folds an identity broadcast: the
rewrite no longer matches, and the replay computes the right softmax. Its snapshot "mismatch" is therefore no
verdict (cannot run, exit 3), and reduce must not call the input uninteresting (exit 2): it cannot reduce
what it cannot compile, and says what was lost (exit 3, nothing left behind).
Cost: one dumping run, one replay and one reduce check on jaxlib 0.4.26 (about 25 s).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.helpers import bundles, interpreter_from_env

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def onednn_python() -> str:
    return interpreter_from_env(
        "XLATOOLS_ONEDNN_JAX_PYTHON",
        "onednn_jax",
        "a Python with jax/jaxlib 0.4.26 (its oneDNN softmax rewrite returns all ones)",
        "scripts/make-jax-venv.sh PATH 0.4.26",
    )


def test_replay_and_reduce_agree_that_the_rewrite_is_not_replayable(xl, tmp_path, onednn_python, old_jax_python):
    shutil.copy(HERE / "onednn_softmax.py", tmp_path / "prog.py")
    ran = xl(
        "run",
        "prog.py",
        "--python",
        onednn_python,
        "--preset",
        "dump:hlo",
        "--preset",
        "dump:snapshots",
        "--out",
        "runs",
    )
    assert ran.returncode == 0, ran.stderr
    assert "[1. 1. 1.]" in ran.stdout  # the bug itself: softmax of three different values
    bundle = bundles(tmp_path / "runs")[0]

    replay = xl("replay", str(bundle), "--module", "jit_f", "--python", onednn_python, "--json", "--out", "replays")
    assert replay.returncode == 3, replay.stdout + replay.stderr
    module = json.loads(replay.stdout)["modules"][0]
    assert module["outcome"] == "cannot-run" and module["compiled_as_run"] is False
    notes = " ".join(module["notes"])
    assert 'custom_call_target="__onednn$softmax"' in notes and "not a verdict" in notes

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
    assert "not interesting" not in reduced.stderr
    assert not list((tmp_path / "reduced").glob(".reduce-state/*"))  # nothing half-written
