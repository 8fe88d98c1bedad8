#!/usr/bin/env bash
# npm run cluster -- up|down|status: install the npm packages when missing,
# build when a source is newer than the last build, run the local Temporal
# cluster's command line (src/cluster/main.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "cluster: installing npm packages (npm ci)" >&2
  npm ci --no-audit --no-fund --loglevel=error >&2
fi
built=dist/cluster/main.js
if [ ! -f "$built" ] || [ -n "$(find src package-lock.json tsconfig.json tsconfig.build.json -newer "$built" -print -quit)" ]; then
  echo "cluster: building (npm run build)" >&2
  npm run --silent build >/dev/null
fi
exec node dist/cluster/main.js "$@"
