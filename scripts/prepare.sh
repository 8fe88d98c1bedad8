# Sourced by the npm scripts that run from dist/: `prepare <name>` installs
# the npm packages when node_modules is missing or older than
# package-lock.json (npm ci), then builds (npm run build) unless the last
# successful build is newer than every source. It says what it does on
# stderr, prefixed with <name>. The stamp dist/.built is written only after
# a build that succeeded, so a failed build is tried again next time.
prepare() {
  local name=$1 stamp=dist/.built
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "$name: installing npm packages (npm ci)" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
  fi
  if [ ! -f "$stamp" ] || [ -n "$(find src package.json package-lock.json tsconfig.json tsconfig.build.json -newer "$stamp" -print -quit)" ]; then
    echo "$name: building (npm run build)" >&2
    npm run --silent build >/dev/null
    touch "$stamp"
  fi
}
