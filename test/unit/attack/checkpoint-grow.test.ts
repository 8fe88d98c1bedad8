/**
 * Attacks on what a checkpoint reads and stores (src/checkpoint/snapshot.ts): a job of the session
 * waits (inotify) until the checkpoint opens the first file of the workspace, after its measure,
 * and then changes a file the checkpoint reaches later: grows it far past the cap, swaps it for a
 * FIFO, for a symlink to a host file, swaps a symlink for a large file, truncates it. Whatever it
 * does, the checkpoint holds no byte past what it measured (adversary round 25: with a 1 MiB cap
 * the measure said 3,081 bytes and the tree held a 64 MiB file), never blocks, and takes seconds.
 */
import { execFileSync, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';
import { removeTempDirs, tempDir } from '../session/helpers';

const FIXTURES = path.join(__dirname, 'fixtures');
const MiB = 1024 * 1024;
const jobs: ChildProcess[] = [];

afterEach(() => {
  for (const j of jobs.splice(0)) j.kill('SIGKILL');
  removeTempDirs();
});

/** A job (python `script` with `args`) run in `ws`, once it printed `ready`; `said(line)` tells whether it printed `line` yet. */
async function startJob(ws: string, script: string, args: string[]): Promise<{ said: (line: string) => boolean }> {
  const child = spawn('python3', [path.join(FIXTURES, script), ...args], { cwd: ws, stdio: ['ignore', 'pipe', 'inherit'] });
  jobs.push(child);
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (d: string) => {
      lines.push(...d.split('\n').filter((l) => l !== ''));
      if (lines.includes('ready')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the job exited (${code}) before it was ready`)));
  });
  return { said: (line) => lines.includes(line) };
}

/**
 * The `n` small files of {@link workspace}, made once per file and per `n` (outside tempDir, which each test empties):
 * copied with `cp -a`, 2,000 of them took 0.5 s where making them took 1.3 s (load average 9).
 */
const templates = new Map<number, string>();
afterAll(() => {
  for (const dir of templates.values()) fs.rmSync(dir, { recursive: true, force: true });
});

/** A workspace: `a` first, then `n` small files `f0001…` (10 bytes each), then whatever `late` makes. */
function workspace(n: number, late: (ws: string) => void): string {
  let files = templates.get(n);
  if (files === undefined) {
    files = fs.mkdtempSync(path.join(os.tmpdir(), 'cp-grow-files-'));
    for (let i = 1; i <= n; i++) fs.writeFileSync(path.join(files, `f${String(i).padStart(4, '0')}`), 'ten bytes\n');
    templates.set(n, files);
  }
  const ws = path.join(tempDir('cp-grow-'), 'ws');
  execFileSync('cp', ['-a', files, ws]);
  fs.writeFileSync(path.join(ws, 'a'), 'first\n');
  late(ws);
  return ws;
}

/** git in the store `store`. */
function git(store: string, ...args: string[]): string {
  const out = spawnSync('git', ['--git-dir', store, ...args], { encoding: 'latin1', maxBuffer: 64 * MiB });
  if (out.status !== 0) throw new Error(out.stderr);
  return out.stdout;
}

/** Size of every object in the store, whether a tree names it or not (the largest is what the store holds past any cap). */
function objectSizes(store: string): number[] {
  return git(store, 'cat-file', '--batch-all-objects', '--batch-check=%(objectsize)')
    .split('\n')
    .filter((l) => l !== '')
    .map(Number);
}

/** The tree of checkpoint or tree `id`: path → [mode, size]. */
function treeOf(store: string, id: string): Map<string, [string, number]> {
  const out = new Map<string, [string, number]>();
  for (const line of git(store, 'ls-tree', '-r', '-l', '-z', id).split('\0')) {
    const m = /^(\d+) \w+ [0-9a-f]+ +(-|\d+)\t(.*)$/s.exec(line);
    if (m) out.set(m[3]!, [m[1]!, m[2] === '-' ? 0 : Number(m[2])]);
  }
  return out;
}

/** Bytes of the regular files a tree holds. */
function treeBytes(tree: Map<string, [string, number]>): number {
  return [...tree.values()].filter(([mode]) => mode.startsWith('100')).reduce((s, [, n]) => s + n, 0);
}

/** Takes a checkpoint of `ws` (its store under a fresh root), timed. */
async function checkpoint(ws: string, maxBytes: number): Promise<{ cp: Checkpoint | { skipped: string }; ms: number }> {
  const root = tempDir('cp-grow-store-');
  const started = Date.now();
  const cp = await takeCheckpoint(root, ws, { maxBytes }, 'attack');
  return { cp, ms: Date.now() - started };
}

/** The measured bytes of the workspace's files made by {@link workspace}: `a`, and `n` files of 10 bytes. */
const measured = (n: number, more = 0): number => 6 + 10 * n + more;

describe('a job that changes a file after the checkpoint measured it', () => {
  it('grown to 64 MiB with a 1 MiB cap (F2): the checkpoint holds no byte past its measure', async () => {
    const ws = workspace(2000, (w) => fs.writeFileSync(path.join(w, 'zzz'), ''));
    const job = await startJob(ws, 'grow-on-open.py', ['a', 'zzz', String(64 * MiB)]);
    const { cp } = await checkpoint(ws, MiB);
    expect(job.said('grown')).toBe(true);
    if ('skipped' in cp) return;
    const tree = treeOf(cp.store, cp.id);
    expect(tree.get('zzz')).toEqual(['100644', 0]);
    expect(treeBytes(tree)).toBeLessThanOrEqual(measured(2000));
    expect(cp.bytes).toBeLessThanOrEqual(measured(2000));
    expect(Math.max(...objectSizes(cp.store))).toBeLessThan(MiB);
  }, 120_000);

  it('grown to 20 GiB with the default 1 GiB cap: seconds, not minutes, and nothing of it stored', async () => {
    const ws = workspace(2000, (w) => fs.writeFileSync(path.join(w, 'zzz'), ''));
    const job = await startJob(ws, 'grow-on-open.py', ['a', 'zzz', String(20 * 1024 * MiB)]);
    const { cp, ms } = await checkpoint(ws, 1024 * MiB);
    expect(job.said('grown')).toBe(true);
    // main's git read all 20 GiB: 134 s (adversary round 25); the worker reads none of it.
    expect(ms).toBeLessThan(60_000);
    if ('skipped' in cp) return;
    expect(treeOf(cp.store, cp.id).get('zzz')).toEqual(['100644', 0]);
    expect(Math.max(...objectSizes(cp.store))).toBeLessThan(MiB);
  }, 300_000);

  it('swapped for a FIFO: the checkpoint never blocks, is taken, and leaves that path out', async () => {
    const ws = workspace(2000, (w) => fs.writeFileSync(path.join(w, 'zzz'), 'was a file\n'));
    const job = await startJob(ws, 'swap-on-open.py', ['a', 'fifo', '-', 'zzz']);
    const { cp, ms } = await checkpoint(ws, MiB);
    expect(job.said('done')).toBe(true);
    expect(ms).toBeLessThan(60_000);
    expect(cp).not.toHaveProperty('skipped');
    const tree = treeOf((cp as Checkpoint).store, (cp as Checkpoint).id);
    expect(tree.has('zzz')).toBe(false);
    expect(tree.get('f2000')).toEqual(['100644', 10]);
  }, 120_000);

  it('swapped for a symlink to a host file: its content is never stored, the checkpoint is taken', async () => {
    const host = path.join(tempDir('cp-grow-host-'), 'secret');
    fs.writeFileSync(host, 'HOST-SECRET-4a1f9c\n'.repeat(50), { mode: 0o600 });
    const ws = workspace(2000, (w) => fs.writeFileSync(path.join(w, 'zzz'), 'was a file\n'));
    const job = await startJob(ws, 'swap-on-open.py', ['a', 'link', host, 'zzz']);
    const { cp } = await checkpoint(ws, MiB);
    expect(job.said('done')).toBe(true);
    expect(cp).not.toHaveProperty('skipped');
    const { store, id } = cp as Checkpoint;
    const all = spawnSync('git', ['--git-dir', store, 'cat-file', '--batch-all-objects', '--batch'], {
      encoding: 'latin1',
      maxBuffer: 64 * MiB,
    });
    expect(all.stdout).not.toContain('HOST-SECRET');
    expect(treeOf(store, id).get('zzz')?.[0] ?? 'none').not.toBe('100644');
  }, 120_000);

  it('a symlink swapped for a 64 MiB file (the measure counts a symlink as no bytes): nothing of it stored', async () => {
    const ws = workspace(2000, (w) => fs.symlinkSync('a', path.join(w, 'zzz')));
    const job = await startJob(ws, 'swap-on-open.py', ['a', 'file', String(64 * MiB), 'zzz']);
    const { cp } = await checkpoint(ws, MiB);
    expect(job.said('done')).toBe(true);
    if ('skipped' in cp) return;
    expect(treeBytes(treeOf(cp.store, cp.id))).toBeLessThanOrEqual(measured(2000));
    expect(Math.max(...objectSizes(cp.store))).toBeLessThan(MiB);
  }, 120_000);

  it('truncated: the checkpoint is taken (no error), holding at most what was measured of it', async () => {
    const ws = workspace(2000, (w) => fs.writeFileSync(path.join(w, 'zzz'), Buffer.alloc(512 * 1024, 'z')));
    const job = await startJob(ws, 'swap-on-open.py', ['a', 'shrink', '100', 'zzz']);
    const { cp } = await checkpoint(ws, MiB);
    expect(job.said('done')).toBe(true);
    expect(cp).not.toHaveProperty('skipped');
    const size = treeOf((cp as Checkpoint).store, (cp as Checkpoint).id).get('zzz')?.[1];
    expect(size).toBeLessThanOrEqual(512 * 1024);
  }, 120_000);

  it('300 empty files each grown to 1 MiB with a 1 MiB cap: the checkpoint holds none of their growth', async () => {
    const names = Array.from({ length: 300 }, (_, i) => `g${String(i).padStart(3, '0')}`);
    const ws = workspace(1000, (w) => names.forEach((n) => fs.writeFileSync(path.join(w, n), '')));
    const job = await startJob(ws, 'swap-on-open.py', ['a', 'grow', String(MiB), ...names]);
    const { cp } = await checkpoint(ws, MiB);
    expect(job.said('done')).toBe(true);
    if ('skipped' in cp) return;
    expect(treeBytes(treeOf(cp.store, cp.id))).toBeLessThanOrEqual(measured(1000));
    expect(Math.max(...objectSizes(cp.store))).toBeLessThan(MiB);
  }, 120_000);

  it("grown during a restore: the restore's own record of the workspace (its `before`) holds no byte past its measure", async () => {
    const ws = workspace(2000, () => undefined);
    const { cp } = await checkpoint(ws, MiB);
    const { store, id } = cp as Checkpoint;
    fs.writeFileSync(path.join(ws, 'zzz'), '');
    // The restore's record reads the workspace from `a` on: a fresh `a` (new stat) is opened by it.
    fs.writeFileSync(path.join(ws, 'a'), 'changed\n');
    const job = await startJob(ws, 'grow-on-open.py', ['a', 'zzz', String(64 * MiB)]);
    const { before } = await restoreCheckpoint(store, ws, id, [], { maxBytes: MiB });
    expect(job.said('grown')).toBe(true);
    expect(treeOf(store, before).get('zzz')).toEqual(['100644', 0]);
    expect(Math.max(...objectSizes(store))).toBeLessThan(MiB);
    // The restore itself: `zzz` (not in the checkpoint) removed, `a` back.
    expect(fs.existsSync(path.join(ws, 'zzz'))).toBe(false);
    expect(fs.readFileSync(path.join(ws, 'a'), 'utf8')).toBe('first\n');
  }, 120_000);
});
