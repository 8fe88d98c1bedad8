# Sourced by the npm scripts that run from dist/: `prepare <name>` installs
# the npm packages when node_modules is missing or older than
# package-lock.json (npm ci; never through a node_modules that is a link, a
# worktree's to the main checkout's, which npm ci would empty), then builds
# (npm run build, into an emptied dist/) unless the last successful build
# was of exactly these sources. It says what it does on stderr, prefixed
# with <name>.
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
  if [ -L node_modules ]; then
    # A shared install (a git worktree's node_modules linked to the main checkout's): npm ci would
    # empty the directory it points to, under every other checkout using it. Its owner installs.
    [ -d node_modules/ ] || { echo "$name: node_modules is a link to nothing: $(readlink node_modules)" >&2; return 1; }
    if [ package-lock.json -nt node_modules/.package-lock.json ]; then
      echo "$name: package-lock.json is newer than the linked node_modules ($(readlink node_modules)); not reinstalling through the link" >&2
    fi
  elif [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
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
