#!/usr/bin/env bash
# The library venvs of the conformance corpus (tests/corpus): one jaxlib with the real libraries
# its programs call (flax, optax, equinox, diffrax, keras), every version pinned.
#
#   scripts/make-corpus-venv.sh PATH JAXLIB     JAXLIB: 0.4.30 | 0.10.2 | 0.12
#
# Why these pins (each set checked by running every corpus program on it):
#  - 0.10.2 (Python 3.11): the newest release of each library that installs there.
#  - 0.12 (Python 3.12; no 0.12 wheels for 3.11): the same, flax 0.12.12 and keras 3.15.1.
#  - 0.4.30 (Python 3.11, NumPy < 2 since jaxlib 0.4.x predates NumPy 2): flax 0.9.0, because
#    flax >= 0.10 imports jax.sharding.AbstractMesh (jax >= 0.4.31) in flax.nnx although its
#    metadata accepts jax 0.4.27; optax 0.2.5, equinox 0.11.10, diffrax 0.6.1 (with lineax 0.0.7,
#    optimistix 0.0.10) are the newest whose metadata accepts jax 0.4.30; keras 3.15.1 has no
#    jax pin and runs there.
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PATH JAXLIB   (JAXLIB: 0.4.30, 0.10.2 or 0.12)" >&2
  exit 2
fi
target=$1
case "$2" in
  0.4.30) py=3.11; pins=(jax==0.4.30 jaxlib==0.4.30 'numpy<2' flax==0.9.0 optax==0.2.5 equinox==0.11.10 diffrax==0.6.1
                         lineax==0.0.7 optimistix==0.0.10 keras==3.15.1) ;;
  0.10.2) py=3.11; pins=(jax==0.10.2 jaxlib==0.10.2 flax==0.12.8 optax==0.2.8 equinox==0.13.8 diffrax==0.7.2
                         lineax==0.1.1 optimistix==0.1.0 keras==3.15.0) ;;
  0.12)   py=3.12; pins=('jax==0.12.*' 'jaxlib==0.12.*' flax==0.12.12 optax==0.2.8 equinox==0.13.8 diffrax==0.7.2
                         lineax==0.1.1 optimistix==0.1.0 keras==3.15.1) ;;
  *) echo "error: JAXLIB must be 0.4.30, 0.10.2 or 0.12, not $2" >&2; exit 2 ;;
esac
exec "$(dirname "$0")/make-venv.sh" "$target" "$py" "${pins[@]}" flatbuffers absl-py \
  -- 'import os; os.environ["KERAS_BACKEND"] = "jax"; import jax, flax, optax, equinox, diffrax, keras, sys; print("jax", jax.__version__, "flax", flax.__version__, "at", sys.executable)'
