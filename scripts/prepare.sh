# Sourced by the npm scripts that run from dist/: `prepare <name>` installs
# the npm packages when node_modules is missing or older than
# package-lock.json (npm ci), then builds (npm run build, into an emptied
# dist/) unless the last successful build was of exactly these sources. It
# says what it does on stderr, prefixed with <name>.
#
# "These sources" is a hash of the names and contents of every file under
# src/ and of package.json, package-lock.json and the tsconfigs, taken
# before the build and written to dist/.built only after it succeeded: an
# edit during the build, a copy that keeps an old mtime, or a deleted file
# all make the next run build again, and no output of a deleted source is
# left in dist/.
sources_hash() {
  find src package.json package-lock.json tsconfig.json tsconfig.build.json -type f -print0 |
    sort -z | xargs -0 sha1sum | sha1sum | cut -d' ' -f1
}
prepare() {
  local name=$1 stamp=dist/.built hash
  if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "$name: installing npm packages (npm ci)" >&2
    npm ci --no-audit --no-fund --loglevel=error >&2
  fi
  hash=$(sources_hash)
  if [ "$(cat "$stamp" 2>/dev/null)" != "$hash" ]; then
    echo "$name: building (npm run build)" >&2
    rm -rf dist
    npm run --silent build >/dev/null
    echo "$hash" >"$stamp"
  fi
}
