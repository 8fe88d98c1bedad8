#!/usr/bin/env bash
# npm run demo: install what is missing, build, run one real agent run.
set -euo pipefail
cd "$(dirname "$0")/.."
export AGENT_JOBS_DEMO_STARTED_MS="$(date +%s%3N)"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "demo: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
fi
echo "demo: building (npm run build)"
npm run --silent build >/dev/null
exec node dist/demo.js "$@"
