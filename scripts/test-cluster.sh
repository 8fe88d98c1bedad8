#!/usr/bin/env bash
# npm run test:cluster: install the npm packages when missing, build when the
# sources changed since the last build (scripts/prepare.sh; the workers run
# from dist/), then run
# the end-to-end cases on the local Temporal cluster
# (src/dev/cluster-test/main.ts), which starts one when none runs.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh
prepare test:cluster
exec node dist/dev/cluster-test/main.js "$@"
