import { spawn, spawnSync } from 'node:child_process';
import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile, unlink, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  changesBetween,
  DEFAULT_CHECKPOINT_MAX_ENTRIES,
  diffBetween,
  fileAt,
  restoreCheckpoint,
  takeCheckpoint,
  type Checkpoint,
} from '../../../src/checkpoint/store';

/** Every path a checkpoint records (`git ls-tree -r`), from its store. */
function recorded(cp: Checkpoint): string[] {
  const out = spawnSync('git', ['--git-dir', cp.store, 'ls-tree', '-r', '-z', '--name-only', cp.id], { encoding: 'latin1' });
  if (out.status !== 0) throw new Error(out.stderr);
  return out.stdout.split('\0').filter((p) => p !== '');
}

/** `n` empty files in `dir` (created), named `f0`, `f1`, ... */
async function emptyFiles(dir: string, n: number): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (let i = 0; i < n; i++) await writeFile(path.join(dir, `f${i}`), '');
}

describe('checkpoint store', () => {
  let dir: string;
  let ws: string;
  let root: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cp-'));
    ws = path.join(dir, 'ws');
    root = path.join(dir, 'store');
    await mkdir(ws);
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  it("a restore records the workspace first under the caps its checkpoint was taken under (the run's), else those given", async () => {
    await writeFile(path.join(ws, 'a.txt'), 'a\n');
    // Taken under a cap of 4 KiB and 10 entries (a run's --checkpoint-max-bytes), recorded in its commit's trailers.
    const cp = (await takeCheckpoint(root, ws, { maxBytes: 4096, maxEntries: 10 }, 'turn 1')) as Checkpoint;
    const body = spawnSync('git', ['--git-dir', cp.store, 'show', '-s', '--format=%B', cp.id], { encoding: 'utf8' }).stdout;
    expect(body).toContain('Agent-Jobs-Max-Bytes: 4096\nAgent-Jobs-Max-Entries: 10');
    // Past 4 KiB now: the restore cannot record it under the checkpoint's caps, and says so; nothing is restored.
    await writeFile(path.join(ws, 'big.bin'), Buffer.alloc(8192, 1));
    await expect(restoreCheckpoint(cp.store, ws, cp.id)).rejects.toThrow(/more than 4096 bytes.*nothing was restored/);
    expect((await stat(path.join(ws, 'big.bin'))).size).toBe(8192);
    // Caps given by the caller win.
    await restoreCheckpoint(cp.store, ws, cp.id, [], { maxBytes: 1e6 });
    await expect(stat(path.join(ws, 'big.bin'))).rejects.toThrow(/ENOENT/);
  });

  it('restores files created, changed, deleted, modes and symlinks; leaves .git and excludes alone', async () => {
    await writeFile(path.join(ws, 'keep.txt'), 'one\n');
    await writeFile(path.join(ws, 'gone.txt'), 'delete me\n');
    await writeFile(path.join(ws, '.gitignore'), 'ignored.log\n');
    await writeFile(path.join(ws, 'ignored.log'), 'ignored but recorded\n');
    await writeFile(path.join(ws, 'run.sh'), '#!/bin/sh\n');
    await chmod(path.join(ws, 'run.sh'), 0o755);
    await symlink('keep.txt', path.join(ws, 'link'));
    await mkdir(path.join(ws, '.git'));
    await writeFile(path.join(ws, '.git', 'HEAD'), 'user repo\n');
    await mkdir(path.join(ws, 'cache'));
    await writeFile(path.join(ws, 'cache', 'x'), 'excluded\n');
    const cp = (await takeCheckpoint(root, ws, { maxBytes: 1e6, exclude: ['cache'] }, 'turn 1')) as Checkpoint;
    expect(cp.id).toMatch(/^[0-9a-f]{40}$/);

    await writeFile(path.join(ws, 'keep.txt'), 'two\n');
    await unlink(path.join(ws, 'gone.txt'));
    await unlink(path.join(ws, 'ignored.log'));
    await mkdir(path.join(ws, 'new', 'deep'), { recursive: true });
    await writeFile(path.join(ws, 'new', 'deep', 'file'), 'new\n');
    await chmod(path.join(ws, 'run.sh'), 0o644);
    await unlink(path.join(ws, 'link'));
    await writeFile(path.join(ws, 'link'), 'not a link\n');
    await writeFile(path.join(ws, '.git', 'HEAD'), 'user repo moved\n');
    await writeFile(path.join(ws, 'cache', 'x'), 'excluded, changed\n');
    const later = (await takeCheckpoint(root, ws, { maxBytes: 1e6, exclude: ['cache'] }, 'turn 2')) as Checkpoint;
    const changes = await changesBetween(cp.store, cp.id, later.id);
    expect(changes).toEqual(
      expect.arrayContaining([
        { status: 'M', path: 'keep.txt' },
        { status: 'D', path: 'gone.txt' },
        { status: 'A', path: 'new/deep/file' },
        { status: 'T', path: 'link' },
      ]),
    );
    expect(await diffBetween(cp.store, cp.id, later.id)).toContain('-one\n+two');

    await restoreCheckpoint(cp.store, ws, cp.id, ['cache']);
    expect(await readFile(path.join(ws, 'keep.txt'), 'utf8')).toBe('one\n');
    expect(await readFile(path.join(ws, 'gone.txt'), 'utf8')).toBe('delete me\n');
    expect(await readFile(path.join(ws, 'ignored.log'), 'utf8')).toBe('ignored but recorded\n');
    expect((await stat(path.join(ws, 'run.sh'))).mode & 0o111).not.toBe(0);
    expect(await readlink(path.join(ws, 'link'))).toBe('keep.txt');
    expect(await readdir(ws)).not.toContain('new');
    expect(await readFile(path.join(ws, '.git', 'HEAD'), 'utf8')).toBe('user repo moved\n');
    expect(await readFile(path.join(ws, 'cache', 'x'), 'utf8')).toBe('excluded, changed\n');
  });

  it('a restore says what it left as it is (.git, nested repositories then and now, excludes); the record before it gives a file back', async () => {
    const repo = async (rel: string): Promise<void> => {
      const d = path.join(ws, rel);
      await mkdir(d, { recursive: true });
      const g = (...a: string[]) => spawnSync('git', ['-C', d, '-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { encoding: 'utf8' });
      g('init', '-q');
      await writeFile(path.join(d, 'inner'), 'v1\n');
      g('add', 'inner');
      g('commit', '-qm', 'one');
    };
    await mkdir(path.join(ws, '.git'));
    await writeFile(path.join(ws, '.git', 'HEAD'), 'ref: refs/heads/main\n');
    await repo('vendor/lib');
    await mkdir(path.join(ws, 'dir'));
    await writeFile(path.join(ws, 'dir', 'a.txt'), 'a\n');
    await symlink('../../../etc/passwd', path.join(ws, 'dir', 'link'));
    const cp = (await takeCheckpoint(root, ws, { maxBytes: 1e6, exclude: ['cache'] }, 'turn 1')) as Checkpoint;
    // Since: a person's edit, a nested repository made, the nested one's file changed.
    await writeFile(path.join(ws, 'dir', 'a.txt'), 'a\nmine\n');
    await repo('made/later');
    await writeFile(path.join(ws, 'vendor', 'lib', 'inner'), 'v2\n');
    spawnSync('git', ['-C', path.join(ws, 'vendor', 'lib'), '-c', 'user.name=a', '-c', 'user.email=a@b', 'commit', '-qam', 'two']);
    const r = await restoreCheckpoint(cp.store, ws, cp.id, ['cache']);
    expect(r.notRestored).toEqual({ nested: ['made/later', 'vendor/lib'], git: true, excluded: ['cache'] });
    // Both nested repositories are left as they are, so neither is named among the changes (vendor/lib's commit moved, made/later is new).
    expect(r.changes).toEqual([{ status: 'M', path: 'dir/a.txt' }]);
    expect(await readFile(path.join(ws, 'made', 'later', 'inner'), 'utf8')).toBe('v1\n');
    expect(await readFile(path.join(ws, 'dir', 'a.txt'), 'utf8')).toBe('a\n');
    expect(await readFile(path.join(ws, 'vendor', 'lib', 'inner'), 'utf8')).toBe('v2\n');
    // The record holds the person's line, byte for byte; no folder, nested repository or path outside is read as a file.
    expect((await fileAt(cp.store, r.before, 'dir/a.txt')).toString()).toBe('a\nmine\n');
    expect((await fileAt(cp.store, r.before, './dir//a.txt')).toString()).toBe('a\nmine\n');
    await expect(fileAt(cp.store, r.before, 'dir')).rejects.toThrow(/holds no file dir \(a folder\)/);
    await expect(fileAt(cp.store, r.before, 'vendor/lib')).rejects.toThrow(/a nested repository/);
    await expect(fileAt(cp.store, r.before, 'vendor/lib/inner')).rejects.toThrow(/in the nested repository vendor\/lib/);
    await expect(fileAt(cp.store, r.before, '../../../etc/passwd')).rejects.toThrow();
    await expect(fileAt(cp.store, r.before, 'HEAD')).rejects.toThrow(/holds no file/);
    // A symlink is named as one, its target's text never given out as a file's bytes.
    await expect(fileAt(cp.store, r.before, 'dir/link')).rejects.toThrow(
      /holds dir\/link as a symlink to "\.\.\/\.\.\/\.\.\/etc\/passwd", not a file/,
    );
  });

  it('takes checkpoints of one workspace at once (a sub-agent sharing it), each recording it whole; a file changed since, same size, recorded anew', async () => {
    for (let i = 0; i < 50; i++) await writeFile(path.join(ws, `f${i}`), `file ${i}\n`);
    const all = (await Promise.all(
      Array.from({ length: 8 }, (_, i) => takeCheckpoint(root, ws, { maxBytes: 1e6 }, `at once ${i}`)),
    )) as Checkpoint[];
    const trees = all.map((cp) => spawnSync('git', ['--git-dir', cp.store, 'rev-parse', `${cp.id}^{tree}`], { encoding: 'utf8' }).stdout);
    expect(new Set(trees).size).toBe(1);
    expect(recorded(all[0]!)).toHaveLength(50);
    // A file changed since, same size: recorded with its new content (its stat changed), the others as they were.
    await writeFile(path.join(ws, 'f7'), 'FILE 7\n');
    const later = (await takeCheckpoint(root, ws, { maxBytes: 1e6 }, 'later')) as Checkpoint;
    expect(await changesBetween(later.store, all[0]!.id, later.id)).toEqual([{ status: 'M', path: 'f7' }]);
  });

  it('skips a workspace over the cap', async () => {
    await writeFile(path.join(ws, 'big'), Buffer.alloc(2000));
    expect(await takeCheckpoint(root, ws, { maxBytes: 1000 }, 't')).toEqual({ skipped: expect.stringContaining('1000 bytes') });
  });

  it('records a nested repository as a gitlink, a name that is not UTF-8 as its bytes, and drops what an exclude later leaves out', async () => {
    const sub = path.join(ws, 'sub');
    await mkdir(sub);
    const g = (...a: string[]) => spawnSync('git', ['-C', sub, '-c', 'user.name=a', '-c', 'user.email=a@b', ...a], { encoding: 'utf8' });
    g('init', '-q');
    await writeFile(path.join(sub, 'inner'), 'x\n');
    g('add', 'inner');
    g('commit', '-qm', 'one');
    // Not a repository: a `.git` folder without HEAD leaves its folder a plain one, as for git add -A.
    await mkdir(path.join(ws, 'plain', '.git'), { recursive: true });
    await writeFile(path.join(ws, 'plain', 'y'), 'y\n');
    await writeFile(Buffer.from(`${ws}/caf\xe9`, 'latin1'), 'latin1 name\n');
    await mkdir(path.join(ws, 'cache'));
    await writeFile(path.join(ws, 'cache', 'c'), 'c\n');
    const first = (await takeCheckpoint(root, ws, { maxBytes: 1e6 }, 'one')) as Checkpoint;
    expect(recorded(first).sort()).toEqual(['cache/c', 'caf\xe9', 'plain/y', 'sub'].sort());
    const ls = spawnSync('git', ['--git-dir', first.store, 'ls-tree', first.id, 'sub'], { encoding: 'utf8' }).stdout;
    expect(ls).toMatch(/^160000 commit [0-9a-f]{40}\tsub$/m);
    // The store's index is kept between checkpoints: a path excluded now is left out of the next one.
    const second = (await takeCheckpoint(root, ws, { maxBytes: 1e6, exclude: ['cache'] }, 'two')) as Checkpoint;
    expect(recorded(second).sort()).toEqual(['caf\xe9', 'plain/y', 'sub'].sort());
    await unlink(Buffer.from(`${ws}/caf\xe9`, 'latin1'));
    await restoreCheckpoint(second.store, ws, second.id, ['cache']);
    expect(await readFile(Buffer.from(`${ws}/caf\xe9`, 'latin1'), 'utf8')).toBe('latin1 name\n');
  });

  describe('the cap on entries (files, symlinks and folders), which a workspace of empty files passes by bytes', () => {
    it('is 100,000 by default, and the reason names it', async () => {
      expect(DEFAULT_CHECKPOINT_MAX_ENTRIES).toBe(100_000);
      await emptyFiles(ws, 3);
      const r = await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 2 }, 't');
      expect(r).toEqual({
        skipped: "the workspace holds more than 2 files and folders (the checkpoint's cap on entries); no checkpoint was taken",
      });
    });

    it('takes a workspace just at the cap and skips one entry more, counting folders and symlinks as files', async () => {
      // 40 empty files, 5 folders (2 empty), 5 symlinks: 50 entries, 0 bytes.
      await emptyFiles(path.join(ws, 'a'), 20);
      await emptyFiles(path.join(ws, 'b', 'c'), 20);
      await mkdir(path.join(ws, 'e1'));
      await mkdir(path.join(ws, 'e2'));
      for (let i = 0; i < 5; i++) await symlink('a/f0', path.join(ws, `l${i}`));
      const at = await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 50 }, 'at');
      expect('id' in at ? recorded(at).length : at.skipped).toBe(45);
      await mkdir(path.join(ws, 'e3'));
      expect(await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 50 }, 'over')).toEqual({
        skipped: expect.stringContaining('more than 50 files and folders'),
      });
    });

    it('counts folders: 300 empty folders (nothing git would record) are over a cap of 200', async () => {
      for (let i = 0; i < 300; i++) await mkdir(path.join(ws, `d${i}`));
      expect(await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 200 }, 't')).toEqual({
        skipped: expect.stringContaining('more than 200 files and folders'),
      });
    });

    it('records no more than the cap, and then skips, while a job keeps making files as checkpoints are taken', async () => {
      // 1,990 files, then a job makes more as fast as it can (up to 200,000): git must record only what the measure
      // counted (never what came after it), and the first measure past the cap skips.
      await emptyFiles(ws, 1_990);
      const job = spawn(
        'python3',
        ['-c', 'import os,sys\nd=sys.argv[1]\nfor i in range(200000): open(os.path.join(d,"n"*100+str(i)),"w").close()', ws],
        { stdio: 'ignore' },
      );
      const ended = new Promise((r) => job.on('exit', r));
      const taken: number[] = [];
      let skipped = '';
      try {
        while ((await readdir(ws)).length <= 1_990) await new Promise((r) => setImmediate(r));
        for (let i = 0; i < 50 && !skipped; i++) {
          const r = await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 2_000 }, `t${i}`);
          if ('id' in r) taken.push(recorded(r).length);
          else skipped = r.skipped;
        }
        // Answered while the job still writes: the measure stopped at the cap, not at the job's end.
        expect(job.exitCode).toBeNull();
      } finally {
        job.kill('SIGKILL');
        await ended;
      }
      expect(skipped).toContain('more than 2000 files and folders');
      for (const n of taken) expect(n).toBeLessThanOrEqual(2_000);
    }, 120_000);

    it('records no more than it measured while a job renames a hoard in and out of `.git` (which the measure and git skip)', async () => {
      // 500 empty files that a job moves between `.git/hoard` and `hoard` in a loop: a measure that saw them in `.git`
      // must not let git record them once they are out.
      await mkdir(path.join(ws, '.git'));
      await emptyFiles(path.join(ws, '.git', 'hoard'), 500);
      await writeFile(path.join(ws, 'real.txt'), 'real\n');
      const job = spawn(
        'python3',
        ['-c', 'import os,sys\na,b=sys.argv[1]+"/.git/hoard",sys.argv[1]+"/hoard"\nwhile True:\n  os.rename(a,b); os.rename(b,a)', ws],
        { stdio: 'ignore' },
      );
      const ended = new Promise((r) => job.on('exit', r));
      let taken = 0;
      try {
        for (let i = 0; i < 30; i++) {
          const r = await takeCheckpoint(root, ws, { maxBytes: 1e9, maxEntries: 100 }, `t${i}`).catch((e: Error) => ({
            failed: e.message,
          }));
          if ('id' in r) {
            taken++;
            expect(recorded(r).length).toBeLessThanOrEqual(100);
          }
        }
      } finally {
        job.kill('SIGKILL');
        await ended;
      }
      // The race was run: some checkpoints were taken (the hoard was in `.git` when measured).
      expect(taken).toBeGreaterThan(0);
    }, 300_000);
  });
});
