/**
 * Where code lives: src/dev/bench/ holds benchmarks only (each one a script
 * package.json runs); what tests and benchmarks share to drive real
 * processes lives in src/dev/testing/.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');

test('every file in src/dev/bench/ is a benchmark an npm script runs', () => {
  const scripts = Object.values(
    (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts,
  );
  const notRun = readdirSync(path.join(ROOT, 'src', 'dev', 'bench'))
    .filter((f) => f.endsWith('.ts'))
    .filter((f) => !scripts.some((s) => s.includes(`dist/dev/bench/${f.replace(/\.ts$/, '.js')}`)));
  expect(notRun).toEqual([]);
});

test('the integration harness takes its worker processes from src/dev/testing/', () => {
  const harness = readFileSync(path.join(ROOT, 'test', 'integration', 'harness.ts'), 'utf8');
  expect(harness).toContain("from '../../src/dev/testing/worker-process'");
  expect(harness).not.toContain('src/dev/bench/');
});
