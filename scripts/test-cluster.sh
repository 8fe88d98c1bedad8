#!/usr/bin/env bash
# npm run test:cluster: install the npm packages when missing, build (the
# workers run from dist/), then run the end-to-end cases on the local
# Temporal cluster (src/cluster-test/main.ts), which starts one when none runs.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "test:cluster: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
npm run --silent build >/dev/null
exec node dist/cluster-test/main.js "$@"
