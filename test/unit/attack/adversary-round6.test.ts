/**
 * Round-6 adversary: attacks on the round-5 fixes that still work. Each test fails on
 * the code it was written against.
 *
 * The sub-agent's git binds (src/session/workspace.ts `worktreeGitBinds`, checked by worktree.ts
 * `checkWorktreeGit`): the child's sandbox binds `<commonDir>/objects` writable. The check proves
 * `commonDir` and `gitDir` are their own real paths, but not `objects` under it, and the sandbox
 * resolves every bind (sandbox.ts `mountOps`, realpath) and drops a hidden path that a bind
 * names exactly. The parent's session writes `.git` (it is in its workspace): after the worktree
 * is made, it swaps `.git/objects` for a symlink to a directory its sandbox hides (the owner's
 * home: keys and tokens; another run's folder). The child's sandbox then shows that directory,
 * writable.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { findBwrap } from '../../../src/session/sandbox';
import { createWorktree } from '../../../src/session/worktree';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const ready = process.getuid?.() === 0 && findBwrap() !== null;
/**
 * OPEN: these four attacks work on this code (docs/security.md, "What these do not stop"), so they
 * are skipped to keep the suite green; whoever fixes them turns `test.skip` back into `test` here.
 */
const OPEN = true;
const asRoot = ready && !OPEN ? test : test.skip;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const OWNER = 65534;

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();

describe('sub-agent git binds: .git/objects swapped for a symlink after the worktree is made', () => {
  asRoot('the child sees no directory its sandbox hides (another run of the same owner, bound writable)', async () => {
    const root = tempDir('aj-adv6-');
    fs.chmodSync(root, 0o755);
    // Another run's folder of the same owner: hidden from every sandbox of this root (hidePaths), readable by the owner.
    const secret = path.join(root, 'other-run');
    fs.mkdirSync(secret);
    fs.writeFileSync(path.join(secret, 'token'), 'OTHER-RUN-SECRET\n');
    const parent = path.join(root, 'parent');
    fs.mkdirSync(parent);
    git(parent, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(parent, 'README'), 'base\n');
    git(parent, 'add', 'README');
    git(parent, 'commit', '-q', '-m', 'base');
    execFileSync('chown', ['-R', `${OWNER}:${OWNER}`, parent, secret]);
    fs.chmodSync(secret, 0o700);
    const out = await createWorktree(root, parent, 'c');
    if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);

    // The parent's session (as the owner, in its sandbox, where `secret` is hidden) writes its .git.
    const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
    const seen = await p.run(`cat ${secret}/token 2>&1; mv .git/objects .git/objects.real && ln -s ${secret} .git/objects && echo SWAPPED`);
    expect(seen.output).not.toContain('OTHER-RUN-SECRET');
    expect(seen.output).toContain('SWAPPED');

    // The child's session opens later with the worktreeGit its input carries.
    const c = await startSession({ cwd: out.path, workspace: out.path, hidePaths: [root], worktreeGit: out.git });
    const r = await c.run(`cat ${secret}/token 2>&1; echo planted > ${secret}/planted 2>&1; true`);
    expect(r.output).not.toContain('OTHER-RUN-SECRET');
    expect(fs.existsSync(path.join(secret, 'planted'))).toBe(false);
  });
});

describe('sub-agent git binds are resolved again at every launch, after the check', () => {
  asRoot(
    "as root (session user by ACL): the parent swaps .git/objects after the child opened; the child's exact run reads another run",
    async () => {
      const root = tempDir('aj-adv6-');
      fs.chmodSync(root, 0o755);
      // Another run on this worker: its workspace is granted to the same session user, and hidden from every other sandbox.
      const other = path.join(root, 'other-run');
      fs.mkdirSync(other);
      fs.writeFileSync(path.join(other, 'token'), 'OTHER-RUN-SECRET\n');
      const o = await startSession({ cwd: other, workspace: other, hidePaths: [root] });
      expect((await o.run('cat token')).output).toContain('OTHER-RUN-SECRET');
      const parent = path.join(root, 'parent');
      fs.mkdirSync(parent);
      git(parent, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(parent, 'README'), 'base\n');
      git(parent, 'add', 'README');
      git(parent, 'commit', '-q', '-m', 'base');
      const out = await createWorktree(root, parent, 'c');
      if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);
      const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
      const c = await startSession({ cwd: out.path, workspace: out.path, hidePaths: [root], worktreeGit: out.git });
      expect((await c.run(`cat ${other}/token 2>&1; true`)).output).not.toContain('OTHER-RUN-SECRET');

      // The child's session is open (checked, granted, started); the parent's job swaps its .git/objects now.
      const swapped = await p.run(`mv .git/objects .git/objects.real && ln -s ${other} .git/objects && echo SWAPPED`);
      expect(swapped.output).toContain('SWAPPED');
      const r = await c.runExact(['cat', `${other}/token`]);
      expect(r.output).not.toContain('OTHER-RUN-SECRET');
    },
  );
});

describe('sub-agent worktree add (as root, unconfined) writes where .git/commondir says', () => {
  asRoot('a .git/commondir the session wrote makes root register a worktree in a root-only repository', async () => {
    const root = tempDir('aj-adv6-');
    fs.chmodSync(root, 0o755);
    // A root-only repository elsewhere on the host (etckeeper's /etc/.git, a deploy checkout).
    const priv = tempDir('aj-adv6-private-');
    fs.chmodSync(priv, 0o700);
    git(priv, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(priv, 'secret'), 'root only\n');
    git(priv, 'add', 'secret');
    git(priv, 'commit', '-q', '-m', 'private');
    const parent = path.join(root, 'parent');
    fs.mkdirSync(parent);
    git(parent, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(parent, 'README'), 'base\n');
    git(parent, 'add', 'README');
    git(parent, 'commit', '-q', '-m', 'base');
    // The parent's session (the workspace is root's, granted by ACL) writes its .git.
    const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
    expect((await p.run(`echo ${priv}/.git > .git/commondir && echo PLANTED`)).output).toContain('PLANTED');
    await createWorktree(root, parent, 'c');
    // Refusing the sub-agent is fine; root writing into the private repository is not.
    expect(fs.existsSync(path.join(priv, '.git', 'worktrees'))).toBe(false);
  });
});

describe('the confined checkout has no deadline (checkpoint/confine.ts runConfined)', () => {
  asRoot(
    "a FIFO for a blob object: the sub-agent worktree is made or refused within git's 25 s, not never",
    async () => {
      const root = tempDir('aj-adv6-');
      fs.chmodSync(root, 0o755);
      const parent = path.join(root, 'parent');
      fs.mkdirSync(parent);
      git(parent, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(parent, 'README'), 'base\n');
      git(parent, 'add', 'README');
      git(parent, 'commit', '-q', '-m', 'base');
      // The parent's session swaps README's loose object for a FIFO: rev-parse HEAD^{commit} never reads it, read-tree -u does.
      const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
      const planted = await p.run(
        'b=$(git rev-parse HEAD:README) && f=.git/objects/${b:0:2}/${b:2} && rm -f "$f" && mkfifo "$f" && echo FIFO',
      );
      expect(planted.output).toContain('FIFO');
      const started = Date.now();
      const settled = await Promise.race([
        createWorktree(root, parent, 'c').then(() => 'settled'),
        new Promise<string>((resolve) => setTimeout(() => resolve('still waiting'), 40_000).unref()),
      ]);
      expect({ settled, seconds: Math.round((Date.now() - started) / 1000) }).toMatchObject({ settled: 'settled' });
    },
    60_000,
  );
});
