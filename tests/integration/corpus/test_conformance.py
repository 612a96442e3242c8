"""The conformance matrix in CI: six corpus programs x every step on jaxlib 0.10.2 (another jaxlib: 0.12), and
a subset on 0.4.30 and 0.12 (another: 0.10.2). Every cell must work or be refused by design.

The tables land in $XLATOOLS_CONFORMANCE_OUT (default: the test's temp folder) as Markdown and JSON.
Cost on CI's 2-core machine: see docs/conformance.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import REPO, interpreter_from_env
from tests.integration.corpus.conftest import corpus_python

# The other jaxlibs' subsets: what differs most between jaxlibs among the cheap programs (x64 types, snapshots
# of donated buffers, custom derivatives); LAPACK kernels on every jaxlib, callbacks as pointers on 0.4.x and
# diffrax run in test_defects.
# CI's 0.10.2 column: one program of each kind the matrix tells apart that no other test covers step by step
# (a library training step, donated buffers without a recorded result, a multi-device module refused by design,
# another frontend; host callbacks and LAPACK kernels are test_defects'); every program (18, about 21 minutes on
# 2 cores) runs by hand: docs/conformance.md.
CI_PROGRAMS = ("flax_linen_optax", "keras_fit", "sharding", "torch_xla_model")
MATRICES = {  # name: (column, other, programs; None = all)
    "0.10.2": ("0.10.2", "0.12", CI_PROGRAMS),
    "0.4.30-subset": ("0.4.30", "0.10.2", ("x64", "donated")),
    "0.12-subset": ("0.12", "0.10.2", ("x64", "custom_vjp")),
}


@pytest.mark.parametrize("name", list(MATRICES))
def test_conformance_matrix(name, tmp_path):
    column, other, programs = MATRICES[name]
    out = Path(os.environ.get("XLATOOLS_CONFORMANCE_OUT") or tmp_path)
    out.mkdir(parents=True, exist_ok=True)
    argv = [
        sys.executable,
        str(REPO / "scripts" / "conformance.py"),
        "--jaxlib",
        f"{column}={corpus_python(column)}",
        "--other",
        f"{other}={corpus_python(other)}",
        "--work",
        str(tmp_path / "work"),
        "--forms",
        "2",
        "--json",
        str(out / f"conformance-{name}.json"),
        "--markdown",
        str(out / f"conformance-{name}.md"),
    ]
    if programs is None or "torch_xla_model" in programs:  # the other frontends' programs (CI has their interpreters)
        argv += [
            f"--tf-python={interpreter_from_env('XLATOOLS_TF_PYTHON', 'tensorflow', 'a Python with tensorflow-cpu', 'scripts/make-tf-venv.sh PATH')}",
            f"--torch-xla-python={interpreter_from_env('XLATOOLS_TORCH_XLA_PYTHON', 'torch_xla', 'a Python with torch_xla', 'scripts/make-torch-xla-venv.sh PATH')}",
        ]
    argv += [x for p in programs or () for x in ("--program", p)]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    print(done.stdout)
    data = json.loads((out / f"conformance-{name}.json").read_text())
    bad = {k: v for k, v in data["totals"].items() if k not in ("works", "refused")}
    assert done.returncode == 0 and not bad, done.stdout[-6000:] + done.stderr[-3000:]
