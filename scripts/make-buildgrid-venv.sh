#!/usr/bin/env bash
# BuildGrid (a REAPI server: CAS, action cache) for the remote-cache tests, in its own venv: its
# pins (SQLAlchemy 2, boto3, sentry-sdk, pycurl ...) are none of xlatools' business.
# Usage: scripts/make-buildgrid-venv.sh PATH   (then: export XLATOOLS_BGD=PATH/bin/bgd)
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 PATH" >&2
  exit 2
fi
exec "$(dirname "$0")/make-venv.sh" "$1" 3.11 'buildgrid==0.4.4' -- 'import buildgrid.server.app.cli'
