#!/usr/bin/env bash
# npm run cluster -- up|down|status: install the npm packages when missing,
# build when the sources changed since the last build (scripts/prepare.sh),
# run the local Temporal cluster's command line (src/dev/cluster/main.ts).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh
prepare cluster
exec node dist/dev/cluster/main.js "$@"
