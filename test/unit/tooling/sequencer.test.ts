/**
 * The test order (test/sequencer.js): slowest first without jest's timing cache, by the committed
 * estimates, whose every entry names a test file that exists.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the sequencer is the CommonJS file jest loads
const SlowestFirst = require('../../sequencer.js') as new (options: object) => { sort(tests: FakeTest[]): FakeTest[] };

interface FakeTest {
  path: string;
  context: { config: { cache: boolean; id: string } };
  duration?: number;
}

/** A test of `file` whose project has no timing cache (a fresh clone). */
const fresh = (file: string): FakeTest => ({ path: path.join(ROOT, file), context: { config: { cache: false, id: 'fresh' } } });

test('every file suite-seconds.json names exists, and each took 10 s or more', () => {
  const seconds = JSON.parse(readFileSync(path.join(ROOT, 'test/suite-seconds.json'), 'utf8')) as Record<string, number>;
  expect(Object.keys(seconds).length).toBeGreaterThan(10);
  for (const [file, s] of Object.entries(seconds)) {
    expect([file, existsSync(path.join(ROOT, file))]).toEqual([file, true]);
    expect(s).toBeGreaterThanOrEqual(10);
  }
});

test('without a timing cache the slowest known files go first, by their seconds, then the rest by size, larger first', () => {
  const seconds = JSON.parse(readFileSync(path.join(ROOT, 'test/suite-seconds.json'), 'utf8')) as Record<string, number>;
  const known = ['test/integration/api-errors.test.ts', 'test/integration/chaos.test.ts', 'test/integration/cli.test.ts'];
  const unknown = ['test/unit/config.test.ts', 'test/unit/tooling/sequencer.test.ts'];
  for (const f of known) expect([f, seconds[f]]).toEqual([f, expect.any(Number)]);
  for (const f of unknown) expect([f, seconds[f]]).toEqual([f, undefined]);
  const order = new SlowestFirst({}).sort([...unknown, ...known].map(fresh)).map((t) => path.relative(ROOT, t.path));
  expect(order.slice(0, 3)).toEqual([...known].sort((a, b) => seconds[b]! - seconds[a]!));
  const size = (f: string): number => readFileSync(path.join(ROOT, f)).length;
  expect(order.slice(3)).toEqual([...unknown].sort((a, b) => size(b) - size(a)));
});
