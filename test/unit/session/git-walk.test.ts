/**
 * The git audit's walk (src/session/git-walk.ts) on its own: what it takes for a git dir, and its
 * bounds (entries inside one folder, time, heap), each of which must end in `unfinished`, never in
 * a clean answer. The audit's use of it is attacked in test/unit/attack/git-audit.test.ts and
 * adversary-round14.test.ts.
 */
import { execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decodeName, GIT_WALK_LIMITS, nameBytes, showName, walkGit } from '../../../src/session/git-walk';
import { removeTempDirs, tempDir, waitUntil } from './helpers';

afterAll(removeTempDirs);

/** A workspace with a `.git` directory at its root. */
function workspace(): { ws: string; git: string } {
  const ws = fs.realpathSync(tempDir());
  fs.mkdirSync(path.join(ws, '.git'));
  return { ws, git: path.join(ws, '.git') };
}

/** `n` empty files in a new folder `dir` of `ws`. */
function manyFiles(ws: string, dir: string, n: number): void {
  fs.mkdirSync(path.join(ws, dir));
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(ws, dir, `f${i}`), '');
}

test('finds every form git takes for a git dir, and goes into none of them but a folder made one by HEAD and commondir', async () => {
  const { ws, git } = workspace();
  const mk = (p: string): void => void fs.mkdirSync(path.join(ws, p), { recursive: true });
  const put = (p: string, text = ''): void => fs.writeFileSync(path.join(ws, p), text);
  mk('a/.git/inside/.git'); // a .git directory; nothing below it is walked
  mk('b');
  put('b/.git', 'gitdir: ../x\n'); // a .git file
  mk('c');
  fs.symlinkSync('/nowhere', path.join(ws, 'c', '.git')); // a .git symlink
  mk('bare/objects');
  mk('bare/refs');
  put('bare/HEAD', 'ref: refs/heads/main\n');
  mk('bare/nested/.git'); // inside a bare repository: not walked
  mk('linked');
  put('linked/HEAD', 'ref: refs/heads/main\n');
  fs.symlinkSync('../bare/objects', path.join(ws, 'linked', 'objects')); // git's access(X_OK) follows a symlink
  fs.symlinkSync('../bare/refs', path.join(ws, 'linked', 'refs'));
  mk('src/deeper/.git'); // below a split git dir: walked, since only its HEAD and commondir are moved
  put('src/main.c');
  fs.symlinkSync('refs/heads/main', path.join(ws, 'src', 'HEAD'));
  put('src/commondir', '../.cache\n');
  mk('plain/HEAD'); // HEAD alone, or with nothing that names objects and refs: no git dir
  put('plain/objects');
  const w = await walkGit(ws, git);
  expect(w.unfinished).toBeUndefined();
  expect(w.found.map((f) => [f.rel, f.kind])).toEqual([
    ['a/.git', 'dotgit'],
    ['b/.git', 'dotgit'],
    ['bare', 'bare'],
    ['c/.git', 'dotgit'],
    ['linked', 'bare'],
    ['src', 'split'],
    ['src/deeper/.git', 'dotgit'],
  ]);
  expect(w.found.find((f) => f.rel === 'src')?.ino).toBe(fs.lstatSync(path.join(ws, 'src')).ino);
});

test("lists the git dir's modules, worktrees and replace refs, a packed one past the first MiB of packed-refs too; not through a symlink", async () => {
  const { ws, git } = workspace();
  fs.mkdirSync(path.join(git, 'modules', 'm1'), { recursive: true });
  fs.mkdirSync(path.join(ws, 'elsewhere', 'w1'), { recursive: true });
  fs.symlinkSync(path.join(ws, 'elsewhere'), path.join(git, 'worktrees'));
  fs.mkdirSync(path.join(git, 'refs', 'replace', 'sub'), { recursive: true });
  fs.writeFileSync(path.join(git, 'refs', 'replace', 'sub', 'abc'), 'x\n');
  const sha = 'a'.repeat(40);
  const heads = Array.from({ length: 30_000 }, (_, i) => `${sha} refs/heads/branch-${String(i).padStart(6, '0')}`);
  fs.writeFileSync(
    path.join(git, 'packed-refs'),
    ['# pack-refs with: peeled', ...heads, `${sha} refs/replace/${'b'.repeat(40)}`, ''].join('\n'),
  );
  expect(fs.statSync(path.join(git, 'packed-refs')).size).toBeGreaterThan(1 << 20);
  const w = await walkGit(ws, git);
  expect({ modules: w.modules, worktrees: w.worktrees, replaceRefs: w.replaceRefs, unfinished: w.unfinished }).toEqual({
    modules: ['m1'],
    worktrees: [],
    replaceRefs: [`packed:refs/replace/${'b'.repeat(40)}`, 'sub/abc'],
    unfinished: undefined,
  });
});

test('a packed-refs that is there but cannot be read is no clean answer (round 23): a symlink (git follows it), a folder, a FIFO', async () => {
  const sha = 'a'.repeat(40);
  const unfinished = async (make: (file: string) => void): Promise<string | undefined> => {
    const { ws, git } = workspace();
    make(path.join(git, 'packed-refs'));
    return (await walkGit(ws, git)).unfinished;
  };
  // What git reads through the link: a replace ref the walk reads nothing of.
  const linked = await unfinished((file) => {
    fs.writeFileSync(`${file}.real`, `${sha} refs/replace/${'b'.repeat(40)}\n`);
    fs.symlinkSync(`${file}.real`, file);
  });
  expect(linked).toMatch(/^it could not read ".*\/\.git\/packed-refs" \(a symlink, which git follows\)$/);
  expect(await unfinished((file) => fs.mkdirSync(file))).toMatch(/packed-refs" \(no regular file\)$/);
  expect(await unfinished((file) => execFileSync('mkfifo', [file]))).toMatch(/packed-refs" \(no regular file\)$/);
  // Missing is no packed refs, and a clean answer.
  expect(await unfinished(() => undefined)).toBeUndefined();
});

test('a packed-refs under a lease (held where no seccomp filter refuses one: here root on the host) is no clean answer', async () => {
  const { ws, git } = workspace();
  const file = path.join(git, 'packed-refs');
  fs.writeFileSync(file, `${'a'.repeat(40)} refs/replace/${'b'.repeat(40)}\n`);
  const fixture = path.join(__dirname, '..', 'attack', 'fixtures', 'hold-lease.py');
  const holder = spawn('python3', [fixture, file, 'hold'], { stdio: 'ignore' });
  try {
    await waitUntil(
      'the lease',
      () => fs.existsSync(`${file}.lease.log`) && fs.readFileSync(`${file}.lease.log`, 'utf8').includes('leased'),
    );
    expect((await walkGit(ws, git)).unfinished).toMatch(/packed-refs" \(EAGAIN\)$/);
  } finally {
    holder.kill('SIGKILL');
  }
});

describe('names that are not UTF-8 (round 15: a folder named 0xff hid its subtree)', () => {
  /** Byte strings that are no UTF-8: a lone continuation byte, 0xff, an overlong `/`, a surrogate's encoding, a cut-off sequence, one valid letter before a bad byte. */
  const BAD = [[0x80], [0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xc3, 0xa9, 0xfe]].map((b) => Buffer.from(b));

  test('decodeName keeps every byte: back to the same bytes, no two names one string, shown as \\xNN', () => {
    const names = [...BAD, Buffer.from('plain'), Buffer.from('é\uFFFD'), Buffer.from([0xef, 0xbf, 0xbd])];
    const decoded = names.map(decodeName);
    expect(new Set(decoded).size).toBe(names.length);
    for (const [i, b] of names.entries()) expect(Buffer.from(nameBytes(decoded[i]!))).toEqual(b);
    expect(nameBytes('plain/é')).toBe('plain/é');
    expect(showName(`a/${decodeName(Buffer.from([0x61, 0xff]))}/.git`)).toBe('a/a\\xff/.git');
  });

  test('a .git below each such folder is found, by a path that names it', async () => {
    const { ws, git } = workspace();
    const wsBytes = Buffer.from(ws);
    for (const b of BAD) {
      const dir = Buffer.concat([wsBytes, Buffer.from('/'), b]);
      fs.mkdirSync(Buffer.concat([dir, Buffer.from('/sub/.git')]), { recursive: true });
    }
    const w = await walkGit(ws, git);
    expect(w.unfinished).toBeUndefined();
    expect(w.found.map((f) => Buffer.from(nameBytes(f.rel))).sort((a, b) => Buffer.compare(a, b))).toEqual(
      BAD.map((b) => Buffer.concat([b, Buffer.from('/sub/.git')])).sort((a, b) => Buffer.compare(a, b)),
    );
    for (const f of w.found) expect(f.ino).toBe(fs.lstatSync(nameBytes(path.join(ws, f.rel))).ino);
  });

  test('a folder the walk cannot open (its path past PATH_MAX) is no clean answer', async () => {
    const { ws, git } = workspace();
    // 20 levels of 250 bytes, made one relative step at a time: 5,000 bytes, past Linux's PATH_MAX of 4,096.
    const name = 'd'.repeat(250);
    execFileSync('bash', ['-c', `for i in $(seq 20); do mkdir ${name} && cd ${name} || exit 1; done; mkdir .git`], { cwd: ws });
    try {
      const w = await walkGit(ws, git);
      expect(w.unfinished).toMatch(/^it could not read ".*" \(ENAMETOOLONG\)$/);
    } finally {
      // rm walks by descriptor; fs.rmSync by path fails past PATH_MAX.
      execFileSync('rm', ['-rf', name], { cwd: ws });
    }
  });
});

describe('a walk that cannot finish says so', () => {
  test('the entry cap holds inside one folder (read in batches, not whole)', async () => {
    const { ws, git } = workspace();
    manyFiles(ws, 'big', 5000);
    fs.mkdirSync(path.join(ws, 'zz', '.git'), { recursive: true });
    const w = await walkGit(ws, git, { ...GIT_WALK_LIMITS, maxEntries: 1000 });
    expect(w.unfinished).toBe('it read more than 1000 entries');
  });

  test('past its time budget the thread is terminated', async () => {
    const { ws, git } = workspace();
    manyFiles(ws, 'big', 20_000);
    const started = Date.now();
    const w = await walkGit(ws, git, { ...GIT_WALK_LIMITS, timeMs: 1 });
    expect(w.unfinished).toBe('it took more than 0.001 s');
    expect(Date.now() - started).toBeLessThan(5000);
  });

  test('past its heap bound the thread ends, the worker does not', async () => {
    const { ws, git } = workspace();
    // Many folders to go into: the list of those still to read grows.
    for (let i = 0; i < 20_000; i++) fs.mkdirSync(path.join(ws, `d${i}`));
    const w = await walkGit(ws, git, { ...GIT_WALK_LIMITS, heapMb: 1 });
    expect(w.unfinished).toMatch(/^it needed more than 1 MB of memory$/);
  });

  test('too many git dirs found', async () => {
    const { ws, git } = workspace();
    for (let i = 0; i < 30; i++) fs.mkdirSync(path.join(ws, `d${i}`, '.git'), { recursive: true });
    const w = await walkGit(ws, git, { ...GIT_WALK_LIMITS, maxFound: 10 });
    expect({ found: w.found.length, unfinished: w.unfinished }).toEqual({ found: 10, unfinished: 'it found more than 10 git dirs' });
  });
});
