#!/usr/bin/env bash
# Create an interpreter with one jax/jaxlib release on CPU, for the version tests
# and for `xlatools run --python`.
#
#   scripts/make-jax-venv.sh PATH VERSION [PYTHON_VERSION]
#   e.g. scripts/make-jax-venv.sh /tmp/jax-0.12 '0.12.*'   (then --python /tmp/jax-0.12/bin/python)
#
# VERSION may be a release (0.4.30) or a series (0.12.*). PYTHON_VERSION defaults
# to 3.12 for jax >= 0.11 (no wheels for 3.11 there) and 3.11 below.
# jaxlib 0.4.x predates NumPy 2, so NumPy stays below 2 there; flatbuffers and
# absl-py serve jax.export.
set -euo pipefail
if [ $# -lt 2 ] || [ $# -gt 3 ]; then
  echo "usage: $0 PATH VERSION [PYTHON_VERSION]" >&2
  exit 2
fi
target=$1 version=$2
minor=$(echo "$version" | cut -d. -f2)
case "$version" in
  0.*) ;;
  *) echo "error: VERSION must look like 0.4.30 or 0.12.*, not $version" >&2; exit 2 ;;
esac
py=${3:-$([ "${minor%%[!0-9]*}" -ge 11 ] && echo 3.12 || echo 3.11)}
extra=()
if [ "$minor" = 4 ]; then extra+=('numpy<2'); fi
exec "$(dirname "$0")/make-venv.sh" "$target" "$py" "jax==$version" "jaxlib==$version" "${extra[@]}" flatbuffers absl-py \
  -- 'import jax, jaxlib, sys; print("jax", jax.__version__, "jaxlib", jaxlib.__version__, "at", sys.executable)'
