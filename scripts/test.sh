#!/usr/bin/env bash
# npm test: install what is missing, build when the sources changed since the
# last build (scripts/prepare.sh; workers run from dist/), run every jest
# project. The
# integration tests start their own Temporal dev server on free ports
# (installing the pinned Temporal CLI into .tools/ when no `temporal` is on
# the PATH). Extra arguments go to jest.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/prepare.sh
prepare test
exec npx jest "$@"
