#!/usr/bin/env bash
# Create a venv for a second interpreter the tests drive through --python
# (another jaxlib, TensorFlow, PyTorch/XLA). uv when present (seconds), pip otherwise.
#
#   scripts/make-venv.sh [--pip] PATH PYTHON_VERSION REQUIREMENT... [-- CHECK_CODE]
#
# PYTHON_VERSION (e.g. 3.12) picks the base interpreter: $PYTHON if set, else
# pythonX.Y on PATH, else pyenv's newest X.Y, else `uv python find X.Y`.
# --pip forces pip (it reads pip's own configuration, e.g. local wheel folders).
# CHECK_CODE runs in the new venv at the end (default: nothing); a failure
# removes the half-made venv. Exit codes: 0 ok, 2 usage, 3 no such Python, 1 install failed.
set -euo pipefail
use_pip=0
if [ "${1:-}" = "--pip" ]; then use_pip=1; shift; fi
if [ $# -lt 3 ]; then
  echo "usage: $0 [--pip] PATH PYTHON_VERSION REQUIREMENT... [-- CHECK_CODE]" >&2
  exit 2
fi
target=$1 want=$2
shift 2
reqs=()
check=""
while [ $# -gt 0 ]; do
  if [ "$1" = "--" ]; then check=${2:-}; break; fi
  reqs+=("$1"); shift
done

runs_version() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null | grep -qx "$want"; }
find_python() {
  local c
  if [ -n "${PYTHON:-}" ]; then echo "$PYTHON"; return; fi
  for c in "python$want" python3; do
    if command -v "$c" >/dev/null && runs_version "$(command -v "$c")"; then command -v "$c"; return; fi
  done
  local root=${PYENV_ROOT:-$HOME/.pyenv}  # pyenv's versions, also when pyenv itself is not on PATH
  if command -v pyenv >/dev/null; then root=$(pyenv root); fi
  for c in $(ls -d "$root/versions/$want".* 2>/dev/null | sort -V -r); do
    if [ -x "$c/bin/python$want" ] && runs_version "$c/bin/python$want"; then echo "$c/bin/python$want"; return; fi
  done
  if command -v uv >/dev/null && c=$(uv python find "$want" 2>/dev/null) && runs_version "$c"; then echo "$c"; return; fi
  return 1
}
base=$(find_python) || { echo "error: no Python $want found (set PYTHON=/path/to/python$want)" >&2; exit 3; }

rm -rf "$target"
trap 'status=$?; if [ $status -ne 0 ]; then rm -rf "$target"; fi' EXIT
start=$(date +%s)
if [ "$use_pip" = 0 ] && command -v uv >/dev/null; then
  uv venv --quiet -p "$base" "$target"
  uv pip install --quiet -p "$target/bin/python" "${reqs[@]}"
else
  "$base" -m venv "$target"
  "$target/bin/python" -m pip install --quiet --disable-pip-version-check "${reqs[@]}"
fi
if [ -n "$check" ]; then "$target/bin/python" -c "$check"; fi
echo "venv $target (Python $want: ${reqs[*]}) ready in $(( $(date +%s) - start )) s, $(du -sm "$target" | cut -f1) MB"
