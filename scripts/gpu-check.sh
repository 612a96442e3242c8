#!/usr/bin/env bash
# The GPU checks (true verdicts on the GPU; GPU operations) in one run, under 8 minutes on a one-GPU machine.
#
#   scripts/gpu-check.sh [OUT_DIR] [--platform cpu] [--only SECTION...]
#
# On a lent device machine: carry the wheels it lacks in .whl/ (docs/gpu.md says which), run this from the
# repository root; results land in $OUT (or OUT_DIR): gpu-check.json and gpu.md, which becomes docs/gpu.md.
# With --platform cpu it runs here, on the CPU, to test the script before device minutes are spent.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check-out}
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then out=$1; shift; fi
case " $* " in *" --platform cpu "*) on_cpu=1;; *) on_cpu=0;; esac  # here, with this machine's own packages
if [ "$on_cpu" = 0 ] && compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || { echo "gpu-check: could not install the carried wheels" >&2; exit 3; }
  export PYTHONPATH=/tmp/site:$PWD${PYTHONPATH:+:$PYTHONPATH}
  export PATH=/tmp/site/bin:$PATH  # the carried wheels' programs (pystack: run --stall and --timeout read stacks)
else
  export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
# jax takes 75% of the GPU per process by default; the checks start several processes at once.
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
timeout 480 python3 -m scripts.gpu_check --out "$out" --budget-s 450 "$@"
