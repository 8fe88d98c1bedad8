/**
 * Paths git refuses on checkout (adversary round 26, F1): a checkpoint that recorded `git~1/x` could never be
 * restored (`read-tree -u`: `invalid path`, nothing written), and a rewind to before it listed it deleted and left it.
 * Real checkpoints and restores (as root: the restore's git and rm confined, src/checkpoint/confine.ts).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';

/** The names a session makes that git refuses (folders hold a file), and the symlinks among them. */
const FOLDERS = ['git~1', 'GIT~1', '.GIT', '.git.', '.git ', '.git. .', 'a/b/.Git', '.g\u200cit', '.git::$INDEX_ALLOCATION'];
const LINKS = ['sub/.gitmodules', 'gitmod~1', '.GITMODULES', '.gitmodules::$DATA'];
const FILES = ['a\\.git', 'git~1:stream'];

function git(store: string, ...args: string[]): string {
  const r = spawnSync('git', ['--git-dir', store, ...args], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
}

async function checkpoint(root: string, ws: string, message: string): Promise<Checkpoint> {
  const cp = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, message);
  if ('skipped' in cp) throw new Error(cp.skipped);
  return cp;
}

describe('paths git refuses on checkout', () => {
  let dir: string;
  let ws: string;
  let root: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'aj-refused-'));
    ws = path.join(dir, 'ws');
    root = path.join(dir, 'store');
    mkdirSync(ws);
    writeFileSync(path.join(ws, 'app.py'), 'print("hello")\n');
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const makeAll = (): void => {
    for (const f of FOLDERS) {
      mkdirSync(path.join(ws, f), { recursive: true });
      writeFileSync(path.join(ws, f, 'config'), 'x\n');
    }
    for (const l of LINKS) {
      mkdirSync(path.dirname(path.join(ws, l)), { recursive: true });
      symlinkSync('../app.py', path.join(ws, l));
    }
    for (const f of FILES) writeFileSync(path.join(ws, f), 'y\n');
  };

  test('are left out and named; a restore to that checkpoint works; one to before them removes every one', async () => {
    const first = await checkpoint(root, ws, 'turn 0');
    makeAll();
    // Beside them, names git accepts stay recorded.
    writeFileSync(path.join(ws, '.gitattributes'), '* text\n');
    writeFileSync(path.join(ws, 'git~2'), 'kept\n');
    const taken = await checkpoint(root, ws, 'turn 1');
    const all = [...FOLDERS, ...LINKS, ...FILES];
    expect(taken.leftOut?.count).toBe(all.length);
    expect([...(taken.leftOut?.paths ?? [])].sort()).toEqual([...all].sort());
    const tree = git(taken.store, 'ls-tree', '-r', '--name-only', taken.id).split('\n').filter(Boolean).sort();
    expect(tree).toEqual(['.gitattributes', 'app.py', 'git~2']);

    // The damage to undo, and the refused names changed or removed.
    writeFileSync(path.join(ws, 'app.py'), 'print("PWNED")\n');
    writeFileSync(path.join(ws, 'git~1', 'config'), 'z\n');
    rmSync(path.join(ws, '.GIT'), { recursive: true });
    const back = await restoreCheckpoint(taken.store, ws, taken.id);
    expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
    // Each refused name is named: kept as it is (left out then too), or not restored (.GIT, gone since).
    const left = new Map(back.left.map((l) => [l.path, l.why]));
    expect(left.get('.GIT')).toMatch(/not restored/);
    expect(left.get('git~1')).toMatch(/kept as it is/);
    expect(readFileSync(path.join(ws, 'git~1', 'config'), 'utf8')).toBe('z\n');

    // Back to before the session: every refused name it made is removed, each listed as deleted.
    const before = await restoreCheckpoint(first.store, ws, first.id);
    expect(readdirSync(ws).sort()).toEqual(['app.py']);
    const deleted = before.changes.filter((c) => c.status === 'D').map((c) => c.path);
    for (const name of [...FOLDERS.filter((f) => f !== '.GIT'), ...LINKS, ...FILES]) expect(deleted).toContain(name);
    expect(before.left).toEqual([]);
  }, 120_000);

  test('a checkpoint that holds such a path (recorded before they were left out) restores all the rest and names it', async () => {
    writeFileSync(path.join(ws, 'b.txt'), 'b\n');
    const cp = await checkpoint(root, ws, 'turn 1');
    // What the old code stored (its index written without git's path checks): `.GIT/config`, `git~1/x` and a symlink
    // `sub/.gitmodules` beside the files, made here with `mktree` (which checks no path either).
    const mktree = (lines: string[]): string =>
      spawnSync('git', ['--git-dir', cp.store, 'mktree'], { input: lines.map((l) => `${l}\n`).join(''), encoding: 'utf8' }).stdout.trim();
    const blob = git(cp.store, 'rev-parse', `${cp.id}:b.txt`).trim();
    const inner = mktree([`100644 blob ${blob}\tx`, `100644 blob ${blob}\tconfig`]);
    const sub = mktree([`120000 blob ${blob}\t.gitmodules`]);
    const top = git(cp.store, 'ls-tree', cp.id).split('\n').filter(Boolean);
    const tree = mktree([...top, `040000 tree ${inner}\tgit~1`, `040000 tree ${inner}\t.GIT`, `040000 tree ${sub}\tsub`]);
    const old = spawnSync('git', ['--git-dir', cp.store, 'commit-tree', tree, '-m', 'old'], { encoding: 'utf8' }).stdout.trim();
    // It is what failed before: git refuses it on checkout.
    const checkout = spawnSync('git', ['--git-dir', cp.store, '--work-tree', ws, 'read-tree', '-u', '--reset', old], {
      encoding: 'utf8',
      env: { ...process.env, GIT_INDEX_FILE: path.join(dir, 'probe-index') },
    });
    expect(checkout.stderr).toMatch(/invalid path/);

    writeFileSync(path.join(ws, 'app.py'), 'print("PWNED")\n');
    rmSync(path.join(ws, 'b.txt'));
    const back = await restoreCheckpoint(cp.store, ws, old);
    expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
    expect(readFileSync(path.join(ws, 'b.txt'), 'utf8')).toBe('b\n');
    expect(back.left.map((l) => l.path).sort()).toEqual(['.GIT/config', '.GIT/x', 'git~1/config', 'git~1/x', 'sub/.gitmodules']);
    expect(back.left.every((l) => /git refuses to write it: not restored/.test(l.why))).toBe(true);
    expect(existsSync(path.join(ws, '.GIT')) || existsSync(path.join(ws, 'git~1'))).toBe(false);
  }, 120_000);

  test("a refused name swapped for a symlink to a folder outside: the rewind removes the link, never the folder's files", async () => {
    const first = await checkpoint(root, ws, 'turn 0');
    const outside = path.join(dir, 'outside');
    mkdirSync(outside);
    writeFileSync(path.join(outside, 'precious'), 'keep\n');
    mkdirSync(path.join(ws, '.GIT'));
    writeFileSync(path.join(ws, '.GIT', 'x'), 'x\n');
    await checkpoint(root, ws, 'turn 1');
    // Now a symlink where the folder was (and one more beside it), each to the folder outside.
    rmSync(path.join(ws, '.GIT'), { recursive: true });
    symlinkSync(outside, path.join(ws, '.GIT'));
    symlinkSync(`${outside}/`, path.join(ws, 'git~1'));
    const back = await restoreCheckpoint(first.store, ws, first.id);
    expect(readFileSync(path.join(outside, 'precious'), 'utf8')).toBe('keep\n');
    expect(readdirSync(ws)).toEqual(['app.py']);
    expect(
      back.changes
        .filter((c) => c.status === 'D')
        .map((c) => c.path)
        .sort(),
    ).toEqual(['.GIT', 'git~1']);
    expect(() => lstatSync(path.join(ws, '.GIT'))).toThrow(/ENOENT/);
  }, 120_000);

  test('past what the commit message can name, a restore keeps (and names) what it cannot tell was left out then', async () => {
    // 400 folders of long refused names: more than the 64 KiB of names a checkpoint's message holds.
    // Each `git~1` and 240 dots and spaces (i in binary, dot 0, space 1), which NTFS reads as `git~1`.
    const name = (i: number): string => `git~1${i.toString(2).padStart(240, '0').replace(/0/g, '.').replace(/1/g, ' ')}`;
    for (let i = 0; i < 400; i++) {
      mkdirSync(path.join(ws, name(i)));
      writeFileSync(path.join(ws, name(i), 'f'), '');
    }
    const cp = await checkpoint(root, ws, 'turn 1');
    expect(cp.leftOut?.count).toBe(400);
    expect(cp.leftOut?.paths.length).toBe(20);
    writeFileSync(path.join(ws, 'app.py'), 'print("PWNED")\n');
    const back = await restoreCheckpoint(cp.store, ws, cp.id);
    expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
    expect(back.left.length).toBe(400);
    expect(back.left.filter((l) => /may have left it out too/.test(l.why)).length).toBeGreaterThan(0);
    expect(readdirSync(ws).length).toBe(401);
  }, 120_000);
});
