#!/usr/bin/env bash
# Create the second interpreter the version tests drive: jax/jaxlib 0.4.30 on CPU.
# Usage: scripts/make-old-jax-venv.sh PATH   (then: export XLATOOLS_OLD_JAX_PYTHON=PATH/bin/python)
# jaxlib 0.4.30 predates NumPy 2, so NumPy stays below 2; flatbuffers and absl-py serve jax.export.
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 PATH" >&2
  exit 2
fi
target=$1
python=${PYTHON:-python3}
"$python" -m venv "$target"
"$target/bin/python" -m pip install --quiet --disable-pip-version-check \
  'jax==0.4.30' 'jaxlib==0.4.30' 'numpy<2' flatbuffers absl-py
"$target/bin/python" -c 'import jax, jaxlib; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "at", __import__("sys").executable)'
echo "export XLATOOLS_OLD_JAX_PYTHON=$target/bin/python"
