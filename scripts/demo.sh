#!/usr/bin/env bash
# npm run demo: install what is missing, build when the sources changed since
# the last build (scripts/prepare.sh), run one real agent run.
set -euo pipefail
cd "$(dirname "$0")/.."
export AGENT_JOBS_DEMO_STARTED_MS="$(date +%s%3N)"
. scripts/prepare.sh
prepare demo 2>&1
exec node dist/dev/demo.js "$@"
