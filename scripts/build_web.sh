#!/usr/bin/env bash
# Build the browser pages (GraphiQL offline at /graphql, the explorer at /explore) from web/ into
# graphsvc/api/static, from the pinned lockfile. The output is committed: installing graphsvc needs
# no Node. Needs Node 20+ and npm, and the npm registry (or a warm npm cache) for `npm ci`.
#
#   bash scripts/build_web.sh           # npm ci, type-check, build
#   bash scripts/build_web.sh --check   # also fail when the committed output differs from the build
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root/web"

command -v node >/dev/null || { echo "error: node is not installed (Node 20+ is needed)" >&2; exit 2; }
major="$(node -p 'process.versions.node.split(".")[0]')"
if [ "$major" -lt 20 ]; then
  echo "error: Node $major found; Node 20 or newer is needed" >&2
  exit 2
fi

npm ci --no-audit --no-fund --loglevel=error
npx --no-install tsc --noEmit -p tsconfig.json
node build.mjs

if [ "${1:-}" = "--check" ]; then
  cd "$root"
  if [ -n "$(git status --porcelain -- graphsvc/api/static)" ]; then
    git status --short -- graphsvc/api/static >&2
    echo "error: graphsvc/api/static differs from a fresh build of web/: commit the rebuilt files" >&2
    exit 1
  fi
fi
