/**
 * A jest reporter that says what the run is doing while it runs, beside jest's own: each file as it
 * starts (with the seconds test/sequencer.js expects it to take), each file as it ends with how many
 * files are done and the run's elapsed time, and once a minute the files still running and for how
 * long. Jest's default reporter shows the running files only in a terminal (its status line, which
 * CI and a piped run lack) and prints nothing during a file: a newcomer watching an 80 s suite sees
 * no output at all. Lines go to stderr, prefixed `progress:`.
 *
 * Options (jest.config.js `reporters`): `everyMs`, how often the running files are listed (default
 * 60,000 ms; 0 for never).
 */
const path = require('node:path');
const { setInterval, clearInterval } = require('node:timers');

const ROOT = path.resolve(__dirname, '..');

/** `test/unit/x.test.ts`: a test's path from the repository root, with forward slashes. */
const relative = (file) => path.relative(ROOT, file).split(path.sep).join('/');
/** Seconds as `95 s` or `12:34` past a minute. */
const clock = (ms) => {
  const s = Math.round(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
};

class ProgressReporter {
  /**
   * @param {unknown} _globalConfig jest's global configuration (unused)
   * @param {{ everyMs?: number }} [options]
   */
  constructor(_globalConfig, options = {}) {
    this.everyMs = options.everyMs ?? 60_000;
    /** @type {Map<string, number>} path → when the file started (ms since the epoch) */
    this.running = new Map();
    this.total = 0;
    this.done = 0;
    this.startedAt = Date.now();
    this.timer = undefined;
  }

  /** @param {string} line */
  say(line) {
    process.stderr.write(`progress: ${line}\n`);
  }

  /** @param {{ numTotalTestSuites: number }} results */
  onRunStart(results) {
    this.startedAt = Date.now();
    this.total = results.numTotalTestSuites;
    this.say(`${this.total} test files, slowest first`);
    if (this.everyMs > 0) {
      this.timer = setInterval(() => {
        if (this.running.size === 0) return;
        const now = Date.now();
        const files = [...this.running].map(([file, at]) => `${relative(file)} (${clock(now - at)})`);
        this.say(`${clock(now - this.startedAt)}: ${this.done}/${this.total} files done; running ${files.join(', ')}`);
      }, this.everyMs);
      this.timer.unref();
    }
  }

  /** @param {{ path: string, duration?: number }} test */
  onTestFileStart(test) {
    this.running.set(test.path, Date.now());
    const expected = test.duration ? ` (expected about ${clock(test.duration)})` : '';
    this.say(`start ${relative(test.path)}${expected}`);
  }

  /**
   * @param {{ path: string }} test
   * @param {{ numFailingTests: number, numPassingTests: number, testExecError?: unknown }} result
   */
  onTestFileResult(test, result) {
    const at = this.running.get(test.path) ?? Date.now();
    this.running.delete(test.path);
    this.done++;
    const failed = result.numFailingTests > 0 || result.testExecError ? `, ${result.numFailingTests || 'its suite'} FAILED` : '';
    this.say(
      `[${this.done}/${this.total}] ${relative(test.path)}: ${clock(Date.now() - at)}, ${result.numPassingTests} passed${failed} (run ${clock(Date.now() - this.startedAt)})`,
    );
  }

  onRunComplete() {
    if (this.timer) clearInterval(this.timer);
  }
}

module.exports = ProgressReporter;
