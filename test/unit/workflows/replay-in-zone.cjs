// Replays every saved history in `dir` against the workflows at `workflowsPath`, in this process's time zone (its TZ),
// and prints the failures as JSON on stdout (logs go to stderr). replay.test.ts runs it with TZ set: inside Jest,
// process.env is a copy, so setting TZ there does not reach the workflow sandbox; a child's environment does.
//
// usage: node replay-in-zone.cjs <workflowsPath> <dir>
const { readdirSync, readFileSync } = require('node:fs');
const path = require('node:path');
const { gunzipSync } = require('node:zlib');
const { historyFromJSON } = require('@temporalio/common/lib/proto-utils');
const { DefaultLogger, Runtime, Worker } = require('@temporalio/worker');

// The Worker also loads the payload converter here (plain node): its TypeScript is compiled on require by swc, which
// the workflow bundler uses too.
require.extensions['.ts'] = (module, filename) => {
  const { transformSync } = require('@swc/core');
  const { code } = transformSync(readFileSync(filename, 'utf8'), {
    filename,
    jsc: { parser: { syntax: 'typescript' }, target: 'es2022' },
    module: { type: 'commonjs' },
  });
  module._compile(code, filename);
};

async function main() {
  const [workflowsPath, dir] = process.argv.slice(2);
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' }, console: {} } },
  });
  const histories = readdirSync(dir)
    .filter((f) => /\.json(\.gz)?$/.test(f))
    .sort()
    .map((f) => {
      // A history whose payloads are large is saved gzipped (`.json.gz`).
      const bytes = readFileSync(path.join(dir, f));
      const text = f.endsWith('.gz') ? gunzipSync(bytes).toString('utf8') : bytes.toString('utf8');
      return { workflowId: f.replace(/\.json(\.gz)?$/, ''), history: historyFromJSON(JSON.parse(text)) };
    });
  const failures = [];
  // The workers' payload converter, which reads the sealed marks the saved histories carry (src/shared/sealed.ts), from
  // the sources beside the workflows' (one module shared in the bundle); no codec here, so the marks are read as saved.
  const payloadConverterPath = path.resolve(__dirname, '../../../src/codec/payload-converter.ts');
  const options = { workflowsPath, logger: new DefaultLogger('ERROR'), dataConverter: { payloadConverterPath } };
  for await (const r of Worker.runReplayHistories(options, histories)) {
    if (r.error) failures.push(`${r.workflowId}: ${r.error.name}: ${r.error.message}`);
  }
  process.stdout.write(JSON.stringify(failures));
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(2);
  },
);
