#!/usr/bin/env bash
# PyTorch/XLA for the frontend tests, run on CPU (PJRT_DEVICE=CPU).
# torch_xla X.Y.Z only loads beside torch X.Y.Z (same C++ ABI), so both are pinned
# together. The registry's torch for Linux x86_64 is the CUDA build: about 7 GB
# in the venv (its nvidia-* wheels), though everything here runs on the CPU.
# Usage: scripts/make-torch-xla-venv.sh PATH [VERSION]   (then: export XLATOOLS_TORCH_XLA_PYTHON=PATH/bin/python)
set -euo pipefail
if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 PATH [VERSION]" >&2
  exit 2
fi
v=${2:-2.9.0}
exec "$(dirname "$0")/make-venv.sh" "$1" 3.11 "torch==$v" "torch_xla==$v" \
  -- 'import sys, torch, torch_xla; print("torch", torch.__version__, "torch_xla", torch_xla.__version__, "at", sys.executable)'
