#!/usr/bin/env node
// The compiled CLI (npm run build writes dist/).
require('../dist/cli/main.js').main();
