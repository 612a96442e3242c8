#!/usr/bin/env bash
# TensorFlow (CPU build) for the frontend tests: tf.function(jit_compile=True) and
# auto-clustering compile through XLA and honour XLA_FLAGS / TF_XLA_FLAGS.
# Usage: scripts/make-tf-venv.sh PATH [VERSION]   (then: export XLATOOLS_TF_PYTHON=PATH/bin/python)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 PATH [VERSION]" >&2
  exit 2
fi
exec "$(dirname "$0")/make-venv.sh" "$1" 3.11 "tensorflow-cpu==${2:-2.21.0}" \
  -- 'import tensorflow as tf, sys; print("tensorflow", tf.__version__, "at", sys.executable)'
