/**
 * git in a sub-agent's worktree, from inside a real session (BashSession, real bash, real bwrap,
 * as root: the session user is `agent-jobs`, given the root-owned workspace by ACL entries, as
 * in the integration tests). With `worktreeGit` the sandbox shows the repository's common dir
 * read-only and binds only its `objects/` and the worktree's gitdir read-write: git status, add,
 * commit and log work, and the commit is in the parent's repository by its sha. The attacks a
 * child would try on its parent's repository through those binds each fail: planting a hook,
 * changing the config (`core.hooksPath`, a filter driver, `core.fsmonitor`), moving the parent's
 * branch, writing beside `.git` in the parent's working tree. Also the check the worker makes
 * before it binds anything (`checkWorktreeGit`), and the bind list itself.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { bwrapArgs, findBwrap, type SandboxOptions } from '../../../src/session/sandbox';
import { closePins, pinWorktreeGit } from '../../../src/session/pins';
import { WORKTREES_FOLDER, checkWorktreeGit, createWorktree, type WorktreeGit } from '../../../src/session/worktree';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

const isRoot = process.getuid?.() === 0;
const ready = isRoot && findBwrap() !== null;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();

/** A workspace root holding a parent's repository (one commit) and a sub-agent's worktree of it, as `createWorktree` makes them. */
async function parentAndChild(): Promise<{ root: string; parent: string; worktree: string; made: WorktreeGit }> {
  const root = tempDir('aj-wtgit-');
  const parent = path.join(root, 'parent');
  fs.mkdirSync(parent);
  git(parent, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(parent, 'README'), 'base\n');
  git(parent, 'add', 'README');
  git(parent, 'commit', '-q', '-m', 'base');
  const out = await createWorktree(root, parent, 'parent.subagent.toolu_1');
  if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);
  return { root, parent, worktree: out.path, made: out.git };
}

/** The parent's repository files a child must not change, with their contents now. */
function snapshot(common: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of ['config', 'HEAD', 'packed-refs', 'refs/heads/main', 'info/exclude', 'description'])
    out[f] = fs.existsSync(path.join(common, f)) ? fs.readFileSync(path.join(common, f), 'utf8') : '(none)';
  out['hooks/'] = fs.readdirSync(path.join(common, 'hooks')).sort().join(',');
  out['worktrees/'] = fs.readdirSync(path.join(common, 'worktrees')).sort().join(',');
  return out;
}

describe('createWorktree: the git directories a child gets', () => {
  test("names the repository's common dir and the worktree's gitdir, real paths", async () => {
    const { parent, worktree, made } = await parentAndChild();
    const common = fs.realpathSync(path.join(parent, '.git'));
    expect(made).toEqual({ commonDir: common, gitDir: path.join(common, 'worktrees', path.basename(worktree)) });
    expect(fs.readFileSync(path.join(made.gitDir, 'gitdir'), 'utf8').trim()).toBe(path.join(fs.realpathSync(worktree), '.git'));
  });

  test('a workspace that is a subfolder of its repository gives none: the parent cannot write that .git itself', async () => {
    const root = tempDir('aj-wtgit-');
    const repo = path.join(root, 'repo');
    fs.mkdirSync(path.join(repo, 'sub'), { recursive: true });
    git(repo, 'init', '-q');
    fs.writeFileSync(path.join(repo, 'sub', 'f'), 'x\n');
    git(repo, 'add', '.');
    git(repo, 'commit', '-q', '-m', 'base');
    const out = await createWorktree(root, path.join(repo, 'sub'), 'c');
    expect(out).toEqual({ path: path.join(root, WORKTREES_FOLDER, 'c', 'sub') });
  });

  test("runs none of the repository's hooks, filter drivers or fsmonitor on the worker (outside every sandbox)", async () => {
    const root = tempDir('aj-wtgit-');
    const marks = tempDir('aj-marks-');
    const parent = path.join(root, 'parent');
    fs.mkdirSync(parent);
    git(parent, 'init', '-q');
    fs.writeFileSync(path.join(parent, '.gitattributes'), '*.txt filter=evil\n*.md filter=a.b\n');
    fs.writeFileSync(path.join(parent, 'f.txt'), 'x\n');
    fs.writeFileSync(path.join(parent, 'g.md'), 'y\n');
    git(parent, 'add', '.');
    git(parent, 'commit', '-q', '-m', 'base');
    // What an agent could write into its own workspace's .git before it asks for a sub-agent.
    for (const hook of ['post-checkout', 'reference-transaction', 'post-index-change']) {
      fs.writeFileSync(path.join(parent, '.git', 'hooks', hook), `#!/bin/sh\ntouch ${marks}/hook-${hook}\n`, { mode: 0o755 });
    }
    git(parent, 'config', 'filter.evil.smudge', `touch ${marks}/smudge; cat`);
    git(parent, 'config', 'filter.a.b.smudge', `touch ${marks}/dotted; cat`);
    git(parent, 'config', 'core.fsmonitor', `touch ${marks}/fsmonitor; false`);
    const out = await createWorktree(root, parent, 'c');
    expect(out).toMatchObject({ path: path.join(root, WORKTREES_FOLDER, 'c') });
    expect(fs.readFileSync(path.join(root, WORKTREES_FOLDER, 'c', 'f.txt'), 'utf8')).toBe('x\n');
    expect(fs.readdirSync(marks)).toEqual([]);
    // The same repository does run them without the neutral config (the test would prove nothing otherwise).
    git(parent, 'worktree', 'add', '-q', '--detach', path.join(root, 'plain'), 'HEAD');
    expect(fs.readdirSync(marks).sort()).toEqual(expect.arrayContaining(['dotted', 'hook-post-checkout', 'smudge']));
  });
});

describe('checkWorktreeGit: what the worker binds only after checking', () => {
  test('accepts what createWorktree made, for the worktree and a folder in it', async () => {
    const { worktree, made } = await parentAndChild();
    expect(await checkWorktreeGit(worktree, made)).toEqual({ git: made });
    fs.mkdirSync(path.join(worktree, 'deeper'));
    expect(await checkWorktreeGit(path.join(worktree, 'deeper'), made)).toEqual({ git: made });
  });

  test.each([
    ['a relative path', (g: WorktreeGit) => ({ ...g, commonDir: path.relative('/', g.commonDir) }), /not a normal absolute path/],
    [
      'a path with ..',
      (g: WorktreeGit) => ({ ...g, gitDir: `${g.commonDir}/worktrees/../worktrees/${path.basename(g.gitDir)}` }),
      /not a normal/,
    ],
    ['a trailing slash', (g: WorktreeGit) => ({ ...g, commonDir: `${g.commonDir}/` }), /not a normal/],
    [
      'a gitdir outside <common>/worktrees',
      (g: WorktreeGit) => ({ ...g, gitDir: path.join(g.commonDir, 'refs') }),
      /is not in .*\/worktrees/,
    ],
    [
      'another directory as the common dir',
      (g: WorktreeGit) => ({ ...g, commonDir: path.dirname(g.commonDir) }),
      /is not in .*\/worktrees/,
    ],
    ['/ as the common dir', (g: WorktreeGit) => ({ ...g, commonDir: '/' }), /not a normal absolute path/],
    ['a missing path', (g: WorktreeGit) => ({ ...g, gitDir: `${g.gitDir}-gone` }), /cannot be resolved/],
  ])('refuses %s', async (_, change, why) => {
    const { worktree, made } = await parentAndChild();
    const out = await checkWorktreeGit(worktree, change(made));
    expect('error' in out && out.error).toMatch(why);
  });

  test("refuses another worktree's gitdir, and a gitdir whose files the child rewrote", async () => {
    const { root, parent, worktree, made } = await parentAndChild();
    // Another child's worktree of the same repository: its gitdir names that worktree, not this one.
    const other = await createWorktree(root, parent, 'parent.subagent.toolu_2');
    if (!('path' in other) || !other.git) throw new Error('no second worktree');
    expect(await checkWorktreeGit(worktree, other.git)).toEqual({ error: expect.stringMatching(/belongs to the worktree .*toolu_2/) });
    // The child rewrites its gitdir's commondir to point at another repository: git then names that one.
    const elsewhere = tempDir('aj-other-repo-');
    git(elsewhere, 'init', '-q');
    fs.writeFileSync(path.join(made.gitDir, 'commondir'), `${elsewhere}/.git\n`);
    expect(await checkWorktreeGit(worktree, made)).toEqual({
      error: expect.stringMatching(/^the common dir of .* is .*aj-other-repo-.*, not /),
    });
  });
});

test('a gitdir file that is a FIFO or a symlink is refused at once, not read (the child can write its gitdir)', async () => {
  const { worktree, made } = await parentAndChild();
  const file = path.join(made.gitDir, 'gitdir');
  const text = fs.readFileSync(file, 'utf8');
  fs.rmSync(file);
  execFileSync('mkfifo', [file]);
  // A FIFO without a writer blocks whoever reads it, for good: that the check returns at all (before the jest hang
  // detector) proves it did not read it; under worktree-git.ts GIT_TIMEOUT_MS (25 s), that no git run was waited out.
  const started = Date.now();
  expect(await checkWorktreeGit(worktree, made)).toEqual({ error: `${made.gitDir}/gitdir is no small regular file` });
  expect(Date.now() - started).toBeLessThan(25_000);
  fs.rmSync(file);
  const elsewhere = path.join(tempDir('aj-link-'), 'gitdir');
  fs.writeFileSync(elsewhere, text);
  fs.symlinkSync(elsewhere, file);
  expect(await checkWorktreeGit(worktree, made)).toEqual({ error: `${made.gitDir}/gitdir is no small regular file` });
});

test('the bind list: the common dir read-only, its objects and the worktree gitdir read-write, mounted after it, each by descriptor', async () => {
  const { root, worktree, made } = await parentAndChild();
  const pins = pinWorktreeGit(made);
  try {
    expect(pins.map((p) => [p.dest, p.writable])).toEqual([
      [made.commonDir, false],
      [path.join(made.commonDir, 'objects'), true],
      [made.gitDir, true],
    ]);
    const o: SandboxOptions = {
      mode: 'bwrap',
      identity: null,
      network: false,
      writable: [worktree],
      readable: [],
      pinned: pins,
      hide: [root],
      setpriv: null,
    };
    const args = `${bwrapArgs(o).join(' ')} `;
    const at = (s: string): number => args.indexOf(s);
    const c = made.commonDir;
    expect(at(`--tmpfs ${root} `)).toBeGreaterThan(-1);
    // fds 4, 5, 6: the launch passes the pins in their order (fds.ts launchStdio); no bind of theirs by path.
    expect(at(`--ro-bind-fd 4 ${c} `)).toBeGreaterThan(at(`--tmpfs ${root} `));
    expect(at(`--bind-fd 5 ${c}/objects `)).toBeGreaterThan(at(`--ro-bind-fd 4 ${c} `));
    expect(at(`--bind-fd 6 ${made.gitDir} `)).toBeGreaterThan(at(`--ro-bind-fd 4 ${c} `));
    expect(args).not.toContain(`bind ${c}`);
    // Nothing else of the parent's working tree is bound: its folder is a directory made in the root's tmpfs.
    const parent = path.dirname(c);
    expect(args).not.toContain(`bind ${parent} `);
    expect(args).toContain(`--dir ${parent}`);
  } finally {
    closePins(pins);
  }
  expect(pins.every((p) => p.fd === -1)).toBe(true);
});

(ready ? describe : describe.skip)('git in the sandbox of a sub-agent worktree (bwrap, as root)', () => {
  test("status, add, commit and log work; the commit is in the parent's repository by its sha, on no branch", async () => {
    const { root, parent, worktree, made } = await parentAndChild();
    const before = snapshot(made.commonDir);
    const mainBefore = git(parent, 'rev-parse', 'main');
    const s = await startSession({ cwd: worktree, workspace: worktree, hidePaths: [root], worktreeGit: made });
    expect(s.sandbox).toBe('bwrap');
    const r = await s.run(
      'git status --porcelain --branch && echo child > child.txt && git add child.txt && ' +
        // The repository's config is read-only; the sandbox's private HOME takes a global one.
        'git config --global user.name child && git config --global user.email child@example.com && ' +
        'git commit -q -m "from the child" && git log --format=%H:%s -2',
    );
    expect(r.exitCode).toBe(0);
    const [head, base] = r.output.trim().split('\n').slice(-2);
    expect(r.output.split('\n')[0]).toBe('## HEAD (no branch)');
    expect(base).toBe(`${mainBefore}:base`);
    const sha = head!.split(':')[0]!;
    expect(head).toBe(`${sha}:from the child`);
    // Visible from the parent's repository; the parent's branch did not move; the worktree's HEAD is the commit.
    expect(git(parent, 'cat-file', '-t', sha)).toBe('commit');
    expect(git(parent, 'show', `${sha}:child.txt`)).toBe('child');
    expect(git(parent, 'rev-parse', 'main')).toBe(mainBefore);
    expect(git(worktree, 'rev-parse', 'HEAD')).toBe(sha);
    expect(git(parent, 'status', '--porcelain')).toBe('');
    expect(snapshot(made.commonDir)).toEqual(before);
  });

  test("the child cannot plant a hook, change the config, move the parent's branch or reach the parent's working tree", async () => {
    const { root, parent, worktree, made } = await parentAndChild();
    const common = made.commonDir;
    const before = snapshot(common);
    const s = await startSession({ cwd: worktree, workspace: worktree, hidePaths: [root], worktreeGit: made });
    const attempts: Record<string, string> = {
      'write a hook': `printf '#!/bin/sh\\ntouch /tmp/pwned\\n' > ${common}/hooks/post-commit`,
      'replace the hooks folder': `mv ${common}/hooks ${common}/hooks.old`,
      'git config core.hooksPath': `git config core.hooksPath ${worktree}/.hooks`,
      'a filter driver in the config': `printf '[filter "x"]\\n\\tclean = touch /tmp/pwned\\n' >> ${common}/config`,
      'git config core.fsmonitor': 'git config core.fsmonitor "touch /tmp/pwned"',
      'attributes for the parent': `echo '* filter=x' > ${common}/info/attributes`,
      "move the parent's branch": 'git update-ref refs/heads/main HEAD',
      'a new branch': 'git branch evil',
      'packed-refs': `echo x >> ${common}/packed-refs`,
      "the parent's HEAD": `echo ref: refs/heads/evil > ${common}/HEAD`,
      'a worktree beside its own': `mkdir ${common}/worktrees/evil`,
      "a file in the parent's working tree through <common>/..": `echo x > ${common}/../planted`,
      "the parent's README through <common>/..": `echo x >> ${common}/../README`,
    };
    for (const [what, command] of Object.entries(attempts)) {
      const r = await s.run(`${command} && echo DONE`);
      expect([what, r.output.includes('DONE')]).toEqual([what, false]);
    }
    // The parent's working tree is not even visible: <common>/.. shows its .git alone.
    expect((await s.run(`ls -A ${common}/..`)).output).toBe('.git\n');
    expect(fs.existsSync(path.join(parent, 'planted'))).toBe(false);
    expect(fs.readFileSync(path.join(parent, 'README'), 'utf8')).toBe('base\n');
    expect(snapshot(common)).toEqual(before);
    // The child's own files stay its own to write.
    expect((await s.run('echo ok > mine && cat mine')).output).toBe('ok\n');
  });

  test('a repository owned by a user other than root: bash runs as that owner and commits; the common dir stays read-only', async () => {
    const root = tempDir('aj-wtgit-');
    // The owner must reach its workspace (mkdtemp makes 0700 folders).
    fs.chmodSync(root, 0o755);
    const parent = path.join(root, 'parent');
    fs.mkdirSync(parent);
    git(parent, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(parent, 'README'), 'base\n');
    git(parent, 'add', 'README');
    git(parent, 'commit', '-q', '-m', 'base');
    execFileSync('chown', ['-R', '65534:65534', parent]);
    const out = await createWorktree(root, parent, 'c');
    if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);
    const s = await startSession({ cwd: out.path, workspace: out.path, hidePaths: [root], worktreeGit: out.git });
    expect(s.user).not.toBe('agent-jobs');
    const r = await s.run(
      'id -u && echo o > o && git add o && git -c user.name=o -c user.email=o@e commit -qm owner && git rev-parse HEAD && ' +
        `(touch ${out.git.commonDir}/hooks/x && echo HOOK) ; (git config core.hooksPath /x && echo CONFIG) ; true`,
    );
    const [uid, sha] = r.output.trim().split('\n');
    expect(uid).toBe('65534');
    expect(fs.statSync(path.join(out.path, 'o')).uid).toBe(65534);
    expect(execFileSync('git', ['-C', parent, 'cat-file', '-t', sha!], { encoding: 'utf8', uid: 65534, gid: 65534 }).trim()).toBe('commit');
    expect(r.output).not.toMatch(/^(HOOK|CONFIG)$/m);
    expect(fs.existsSync(path.join(out.git.commonDir, 'hooks', 'x'))).toBe(false);
  });

  test('without a checked worktreeGit the child has no git, as before: its sandbox shows nothing of the parent', async () => {
    const { root, worktree } = await parentAndChild();
    const s = await startSession({ cwd: worktree, workspace: worktree, hidePaths: [root] });
    const r = await s.run('git status');
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/not a git repository/);
  });
});

(isRoot ? test : test.skip)(
  'without the sandbox (none) git works too, and nothing is read-only: the host permissions alone hold',
  async () => {
    const { root, worktree, made } = await parentAndChild();
    // Without a sandbox the session user must reach the worktree on the real filesystem (mkdtemp makes 0700 folders).
    fs.chmodSync(root, 0o755);
    const s = await startSession({ cwd: worktree, workspace: worktree, sandbox: 'none', worktreeGit: made });
    const r = await s.run('echo n > n && git add n && git -c user.name=c -c user.email=c@e commit -qm none && git rev-parse HEAD');
    expect(r.exitCode).toBe(0);
    // The session user was granted the objects and the gitdir (ACL), like the workspace; the hooks are writable as the
    // parent's workspace is to its own session: no sandbox, no read-only binds (docs/subagents.md says so).
    expect(git(path.dirname(made.commonDir), 'cat-file', '-t', r.output.trim())).toBe('commit');
  },
);
