#!/usr/bin/env bash
# npm test: install what is missing, build (workers run from dist/), run every
# jest project. The integration tests start their own Temporal dev server on
# free ports (installing the pinned Temporal CLI into .tools/ when no
# `temporal` is on the PATH). Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
npm run --silent build >/dev/null
exec npx jest "$@"
