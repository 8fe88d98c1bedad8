/**
 * The walk of the ignored files (src/session/ignored-walk.ts) on real folders: its bounds (entries, time) stop it with
 * a reason and the first root not read whole, never a clean answer; it does not follow a symlink; and which fresh
 * bytecode it removes (in `__pycache__`, or beside its source, with a Python magic number) and which it keeps.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { walkIgnored, IGNORED_WALK_LIMITS } from '../../../src/session/ignored-walk';
import { removeTempDirs, tempDir } from './helpers';

afterEach(() => removeTempDirs());

const rels = (w: { fresh: { raw: Uint8Array }[] }): string[] => w.fresh.map((f) => Buffer.from(f.raw).toString()).sort();
const roots = (...r: string[]): Buffer[] => r.map((x) => Buffer.from(x));

/** A workspace with `node_modules/a` and `node_modules/b` of `n` files each, all older than the returned start time, and a file made after it newer. */
async function workspace(n: number): Promise<{ ws: string; since: number }> {
  const ws = tempDir();
  for (const p of ['a', 'b']) {
    fs.mkdirSync(path.join(ws, 'node_modules', p), { recursive: true });
    for (let i = 0; i < n; i++) fs.writeFileSync(path.join(ws, 'node_modules', p, `f${i}.js`), '1\n');
  }
  // Date.now() is whole milliseconds and a ctime may be finer: the start is taken once it is past the last file's ctime,
  // so that no file written above counts as made since (seen under load: the last files of the same millisecond did).
  const last = fs.lstatSync(path.join(ws, 'node_modules', 'b', `f${n - 1}.js`)).ctimeMs;
  while (Date.now() <= last) await new Promise((r) => setImmediate(r));
  // The kernel stamps ctimes with a coarser clock than Date.now(): returned once a file made now shows a ctime past the start.
  const since = Date.now();
  const probe = path.join(ws, '.probe');
  for (;;) {
    fs.writeFileSync(probe, '');
    if (fs.lstatSync(probe).ctimeMs >= since) break;
    await new Promise((r) => setImmediate(r));
  }
  fs.unlinkSync(probe);
  return { ws, since };
}

describe('walkIgnored', () => {
  test('past its entry cap it stops, says why and from which root on it did not read whole', async () => {
    const { ws, since } = await workspace(100);
    fs.writeFileSync(path.join(ws, 'node_modules', 'b', 'f99.js'), 'changed\n');
    const w = await walkIgnored(ws, roots('node_modules/a', 'node_modules/b'), since, { ...IGNORED_WALK_LIMITS, maxEntries: 150 });
    expect(w.unfinished).toBe('it read more than 150 entries');
    expect(w.stoppedAt).toBe(1);
    const whole = await walkIgnored(ws, roots('node_modules/a', 'node_modules/b'), since);
    expect(whole.unfinished).toBeUndefined();
    expect(whole.stoppedAt).toBe(-1);
    expect(rels(whole)).toEqual(['node_modules/b/f99.js']);
  });

  test('past its time budget it stops with a reason, never a clean answer', async () => {
    const { ws, since } = await workspace(600);
    const w = await walkIgnored(ws, roots('node_modules'), since, { ...IGNORED_WALK_LIMITS, timeMs: 0 });
    expect(w.unfinished).toBe('it took more than 0 s');
    expect(w.stoppedAt).toBe(0);
  });

  test('a root or folder that is a symlink is not followed: only the link itself, when new, is found', async () => {
    const { ws, since } = await workspace(3);
    const outside = tempDir();
    fs.writeFileSync(path.join(outside, 'new.js'), 'x\n');
    fs.symlinkSync(outside, path.join(ws, 'node_modules', 'link'));
    fs.symlinkSync(outside, path.join(ws, 'linked'));
    const w = await walkIgnored(ws, roots('node_modules', 'linked'), since);
    expect(rels(w)).toEqual(['linked', 'node_modules/link']);
  });

  test('the folder it is told to skip (the root git dir) is never read, as a root or below one', async () => {
    const { ws, since } = await workspace(1);
    fs.mkdirSync(path.join(ws, 'meta', 'gitdir'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'meta', 'gitdir', 'HEAD'), 'ref: refs/heads/main\n');
    fs.writeFileSync(path.join(ws, 'meta', 'notes.txt'), 'x\n');
    const w = await walkIgnored(ws, roots('meta', 'meta/gitdir'), since, IGNORED_WALK_LIMITS, Buffer.from('meta/gitdir'));
    expect(rels(w)).toEqual(['meta/notes.txt']);
  });

  test('fresh bytecode: removed in __pycache__ and beside its source; kept when sourceless, a symlink or without the magic', async () => {
    const { ws, since } = await workspace(1);
    const cache = path.join(ws, 'pkg', '__pycache__');
    fs.mkdirSync(cache, { recursive: true });
    fs.writeFileSync(path.join(ws, 'pkg', 'a.py'), 'A = 1\n');
    fs.writeFileSync(path.join(ws, 'pkg', 'b.py'), 'B = 1\n');
    execFileSync(
      'python3',
      [
        '-c',
        'import py_compile as p; p.compile("pkg/a.py"); p.compile("pkg/b.py", cfile="pkg/b.pyc"); p.compile("pkg/b.py", cfile="pkg/lone.pyc")',
      ],
      {
        cwd: ws,
      },
    );
    fs.writeFileSync(path.join(cache, 'fake.cpython-311.pyc'), 'not bytecode\n');
    fs.symlinkSync('../b.pyc', path.join(cache, 'link.cpython-311.pyc'));
    const w = await walkIgnored(ws, roots('pkg/__pycache__', 'pkg/b.pyc', 'pkg/lone.pyc'), since);
    const removed = w.removed.map((r) => Buffer.from(r.raw).toString()).sort();
    expect(removed).toEqual([expect.stringMatching(/^pkg\/__pycache__\/a\.cpython-\d+\.pyc$/), 'pkg/b.pyc']);
    expect(rels(w)).toEqual(['pkg/__pycache__/fake.cpython-311.pyc', 'pkg/__pycache__/link.cpython-311.pyc', 'pkg/lone.pyc']);
    expect(w.fresh.find((f) => Buffer.from(f.raw).toString().endsWith('fake.cpython-311.pyc'))?.why).toBe('no Python magic number');
    expect(fs.readdirSync(cache).sort()).toEqual(['fake.cpython-311.pyc', 'link.cpython-311.pyc']);
    expect(fs.existsSync(path.join(ws, 'pkg', 'lone.pyc'))).toBe(true);
  });

  test('nothing fresh: nothing found, and a file older than the start is never removed', async () => {
    const ws = tempDir();
    fs.mkdirSync(path.join(ws, '__pycache__'));
    fs.writeFileSync(path.join(ws, 'a.py'), 'A = 1\n');
    execFileSync('python3', ['-c', 'import py_compile as p; p.compile("a.py")'], { cwd: ws });
    const w = await walkIgnored(ws, roots('__pycache__'), Date.now() + 1000);
    expect(w.fresh).toEqual([]);
    expect(w.removed).toEqual([]);
    expect(fs.readdirSync(path.join(ws, '__pycache__'))).toHaveLength(1);
  });
});
