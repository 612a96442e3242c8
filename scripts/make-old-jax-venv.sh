#!/usr/bin/env bash
# The older jaxlib the version tests drive: jax/jaxlib 0.4.30 on CPU (Python 3.11).
# Usage: scripts/make-old-jax-venv.sh PATH   (then: export XLATOOLS_OLD_JAX_PYTHON=PATH/bin/python)
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 PATH" >&2
  exit 2
fi
exec "$(dirname "$0")/make-jax-venv.sh" "$1" 0.4.30 3.11
