/**
 * The CLI's entry is src/cli/main.ts, and bin/agent-jobs.js loads its
 * compiled form: the path the bin script requires maps back to that source.
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../../..');

test('bin/agent-jobs.js requires the compiled src/cli/main.ts, which exports main', async () => {
  const bin = readFileSync(path.join(ROOT, 'bin', 'agent-jobs.js'), 'utf8');
  const required = /require\('([^']+)'\)\.main\(\)/.exec(bin)?.[1];
  expect(required).toBe('../dist/cli/main.js');
  // tsconfig.build.json compiles src/ into dist/, path for path.
  const source = path.join(
    ROOT,
    'src',
    path.relative(path.join(ROOT, 'dist'), path.resolve(ROOT, 'bin', required!)).replace(/\.js$/, '.ts'),
  );
  expect(path.relative(ROOT, source)).toBe(path.join('src', 'cli', 'main.ts'));
  const entry = (await import(source)) as { main?: unknown };
  expect(typeof entry.main).toBe('function');
  // src/client.ts is the typed Temporal client the CLI uses (docs/client.md), no longer an entry.
  expect(readFileSync(path.join(ROOT, 'src', 'client.ts'), 'utf8')).not.toMatch(/export (async )?function main\b|require\.main/);
});

test('before the build, bin/agent-jobs.js says so in one line and exits 1', () => {
  const copy = mkdtempSync(path.join(tmpdir(), 'aj-unbuilt-'));
  try {
    mkdirSync(path.join(copy, 'bin'));
    copyFileSync(path.join(ROOT, 'bin', 'agent-jobs.js'), path.join(copy, 'bin', 'agent-jobs.js'));
    const r = spawnSync(process.execPath, [path.join(copy, 'bin', 'agent-jobs.js'), '--version'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toBe(`agent-jobs: the CLI is not built yet\n  hint: run \`npm ci && npm run build\` in ${copy}\n`);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
