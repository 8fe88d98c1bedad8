import { chmod, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile, unlink, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { changesBetween, diffBetween, restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';

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

  it('skips a workspace over the cap', async () => {
    await writeFile(path.join(ws, 'big'), Buffer.alloc(2000));
    expect(await takeCheckpoint(root, ws, { maxBytes: 1000 }, 't')).toEqual({ skipped: expect.stringContaining('1000 bytes') });
  });
});
