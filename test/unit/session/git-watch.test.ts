/**
 * The git audit's watch of the missing paths (src/session/git-audit.ts `watchMissing`) on its own: each of its two
 * ways to see a file made at a missing path, alone. The inotify watch, with the sweep set far away, must move a file
 * made there, in a folder made after the watch began too; the sweep, with every watch refused (as when the kernel's
 * queue overflows and Node drops `IN_Q_OVERFLOW`, or a folder is filled before its watch is set), must move it all the
 * same; and a storm of events must close the watches until the next sweep rather than take the event loop. Attacks
 * through real sessions: test/unit/attack/missing-watch.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawn } from 'node:child_process';
import { recordGit, watchMissing, WATCH_EVENT_BUDGET, type GitFinding } from '../../../src/session/git-audit';
import { removeTempDirs, tempDir, waitUntil } from './helpers';

afterAll(removeTempDirs);

/** A workspace with a `.git` directory and `tools/`, and its baseline with `missing` recorded (relative paths). */
async function baseline(missing: string[]): Promise<{ ws: string; b: NonNullable<Awaited<ReturnType<typeof recordGit>>> }> {
  const ws = fs.realpathSync(tempDir());
  fs.mkdirSync(path.join(ws, '.git'));
  fs.mkdirSync(path.join(ws, 'tools'));
  const b = await recordGit(
    ws,
    'watch-test',
    [],
    missing.map((m) => path.join(ws, m)),
  );
  if (!b) throw new Error('no baseline');
  return { ws, b };
}

test('the inotify watch alone moves a file made at a missing path, in a folder made after it began too', async () => {
  const { ws, b } = await baseline(['tools/fsmon.sh', 'a/b/run.sh']);
  const found: GitFinding[] = [];
  const stop = watchMissing(b, (f) => found.push(...f), 3_600_000);
  try {
    fs.writeFileSync(path.join(ws, 'tools/fsmon.sh'), '#!/bin/sh\n');
    await waitUntil('the move of tools/fsmon.sh', () => found.some((f) => f.path === path.join(ws, 'tools/fsmon.sh')), 10_000);
    fs.mkdirSync(path.join(ws, 'a'));
    fs.mkdirSync(path.join(ws, 'a/b'));
    fs.writeFileSync(path.join(ws, 'a/b/run.sh'), '#!/bin/sh\n');
    await waitUntil('the move of a/b/run.sh', () => found.some((f) => f.path === path.join(ws, 'a/b/run.sh')), 10_000);
    expect(fs.existsSync(path.join(ws, 'tools/fsmon.sh'))).toBe(false);
    expect(fs.existsSync(path.join(ws, 'a/b/run.sh'))).toBe(false);
    expect(found.every((f) => f.movedTo?.startsWith(path.join(ws, '.git/agent-jobs-quarantine/')))).toBe(true);
  } finally {
    stop();
  }
});

test('the sweep alone moves it when no watch can be set (events lost)', async () => {
  const { ws, b } = await baseline(['tools/fsmon.sh']);
  let refused = 0;
  const watch = (): fs.FSWatcher => {
    refused++;
    throw Object.assign(new Error('ENOSPC: no inotify watch left'), { code: 'ENOSPC' });
  };
  const found: GitFinding[] = [];
  const stop = watchMissing(b, (f) => found.push(...f), 50, watch);
  try {
    fs.writeFileSync(path.join(ws, 'tools/fsmon.sh'), '#!/bin/sh\n');
    await waitUntil('the move of tools/fsmon.sh', () => found.length > 0, 10_000);
    expect(refused).toBeGreaterThan(0);
    expect(fs.existsSync(path.join(ws, 'tools/fsmon.sh'))).toBe(false);
  } finally {
    stop();
  }
});

test('stopped, it moves nothing more', async () => {
  const { ws, b } = await baseline(['tools/fsmon.sh']);
  const found: GitFinding[] = [];
  watchMissing(b, (f) => found.push(...f), 20)();
  fs.writeFileSync(path.join(ws, 'tools/fsmon.sh'), '#!/bin/sh\n');
  // What a running sweep would have done by now, twice over: one more fresh watch that does it.
  const other: GitFinding[] = [];
  const stop = watchMissing(b, (f) => other.push(...f), 20);
  await waitUntil('the second watch', () => other.length > 0, 10_000);
  stop();
  expect(found).toEqual([]);
});

test('a storm of events in a watched folder closes the watches until the next sweep, and the sweep still moves what is made', async () => {
  const { ws, b } = await baseline(['tools/fsmon.sh']);
  fs.mkdirSync(path.join(ws, 'tools/x'));
  // A job that renames in the watched folder in a loop: events faster than Node reads them.
  const flipper = spawn('python3', ['-c', FLIP, path.join(ws, 'tools')], { stdio: ['ignore', 'pipe', 'inherit'] });
  let renames = '';
  flipper.stdout.on('data', (d: Buffer) => (renames += d.toString()));
  const exited = new Promise((resolve) => flipper.on('exit', resolve));
  let delivered = 0;
  const watch = (dir: string | Buffer, listener: () => void): fs.FSWatcher =>
    fs.watch(dir, { persistent: false }, () => {
      delivered++;
      listener();
    });
  const found: GitFinding[] = [];
  const sweepMs = 100;
  const began = Date.now();
  const stop = watchMissing(b, (f) => found.push(...f), sweepMs, watch);
  try {
    await exited;
    const sweeps = Math.ceil((Date.now() - began) / sweepMs) + 1;
    expect(Number(renames.trim())).toBeGreaterThan(20 * sweeps * WATCH_EVENT_BUDGET); // a storm, far past the budget
    // At most the budget per sweep (and what one read of the kernel's queue held when the watch closed), not one per
    // rename: 716,632 deliveries in 1.5 s without the budget, 1,040 with it.
    expect(delivered).toBeLessThanOrEqual(2 * sweeps * WATCH_EVENT_BUDGET);
    fs.writeFileSync(path.join(ws, 'tools/fsmon.sh'), '#!/bin/sh\n');
    await waitUntil('the move of tools/fsmon.sh', () => found.some((f) => f.path === path.join(ws, 'tools/fsmon.sh')), 10_000);
    expect(fs.existsSync(path.join(ws, 'tools/fsmon.sh'))).toBe(false);
  } finally {
    flipper.kill('SIGKILL');
    stop();
  }
});

/** Renames `<dir>/x` to `<dir>/y` and back for 1.5 s, then prints how many renames it made. */
const FLIP = `
import os, sys, time
d = sys.argv[1]
n, end = 0, time.time() + 1.5
while time.time() < end:
  os.rename(d + '/x', d + '/y'); os.rename(d + '/y', d + '/x'); n += 2
print(n)
`;
