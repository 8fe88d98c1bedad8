#!/usr/bin/env node
// The compiled CLI (npm run build writes dist/); before the build, one line saying so instead of Node's stack.
const path = require('node:path');
if (!require('node:fs').existsSync(path.join(__dirname, '..', 'dist', 'cli', 'main.js'))) {
  process.stderr.write(
    `agent-jobs: the CLI is not built yet\n  hint: run \`npm ci && npm run build\` in ${path.resolve(__dirname, '..')}\n`,
  );
  process.exit(1);
}
require('../dist/cli/main.js').main();
