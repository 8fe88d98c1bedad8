/**
 * Jest's order of the test files: slowest first, so the two jest workers end together instead of
 * one running a 100 s suite alone at the end. Jest does this by itself only from its timing cache
 * (`perf-cache-*` in its cache folder), which a fresh clone and CI's clean checkout lack: it then
 * orders by file size, and a fresh-clone run of ea12edc spent its last 63 s on chaos.test.ts alone.
 *
 * A file's time is jest's cached one (ms) when there is one, else the seconds `suite-seconds.json`
 * gives (files that took 10 s or more in a whole run; regenerate it from a run's `--json` output
 * with `node test/sequencer.js RESULTS.json`), else 0; ties go by file size, larger first. Files
 * that failed in the cached last run still go first, as in jest's own order.
 */
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..');
const ESTIMATES = path.join(__dirname, 'suite-seconds.json');

class SlowestFirst extends Sequencer {
  /**
   * @param {Array<import('@jest/test-result').Test>} tests
   * @returns {Array<import('@jest/test-result').Test>} the same tests, slowest first
   */
  sort(tests) {
    /** @type {Record<string, number>} */
    const seconds = JSON.parse(fs.readFileSync(ESTIMATES, 'utf8'));
    const keyed = tests.map((test) => ({
      test,
      failed: this.hasFailed(test),
      ms: this.time(test) ?? (seconds[path.relative(ROOT, test.path).split(path.sep).join('/')] ?? 0) * 1000,
      size: fs.statSync(test.path).size,
    }));
    keyed.sort((a, b) => Number(b.failed) - Number(a.failed) || b.ms - a.ms || b.size - a.size);
    for (const k of keyed) k.test.duration = k.ms;
    return keyed.map((k) => k.test);
  }
}

/** Writes `suite-seconds.json` from a jest `--json` results file: every file that took 10 s or more. */
function writeEstimates(resultsFile) {
  const results = JSON.parse(fs.readFileSync(resultsFile, 'utf8'));
  const rows = results.testResults
    .map((r) => [path.relative(ROOT, r.name).split(path.sep).join('/'), Math.round((r.endTime - r.startTime) / 1000)])
    .filter(([, s]) => s >= 10)
    .sort((a, b) => b[1] - a[1]);
  fs.writeFileSync(ESTIMATES, `${JSON.stringify(Object.fromEntries(rows), null, 2)}\n`);
}

if (require.main === module) writeEstimates(process.argv[2]);

module.exports = SlowestFirst;
