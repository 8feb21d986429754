#!/usr/bin/env bash
# Set up graphsvc in .venv and run the demo on the embedded store (no server needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q .
exec graphsvc demo "$@"
