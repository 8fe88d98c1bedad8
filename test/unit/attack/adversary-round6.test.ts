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
import { ConfinedTimeoutError, runConfined } from '../../../src/checkpoint/confine';
import { findBwrap } from '../../../src/session/sandbox';
import { createWorktree } from '../../../src/session/worktree';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const ready = process.getuid?.() === 0 && findBwrap() !== null;
/**
 * OPEN: set when these attacks work on the code (docs/security.md, "What these do not stop"), to
 * keep the suite green; fixed: the git binds are pinned by descriptor (session/pins.ts), `worktree
 * add` runs confined (session/worktree-git.ts `worktreeAdd`), `runConfined` has a deadline.
 */
const OPEN = false;
const asRoot = ready && !OPEN ? test : test.skip;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const OWNER = 65534;

const git = (cwd: string, ...args: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { encoding: 'utf8' }).trim();

/** A repository at `dir` (made) with one commit. */
function repo(dir: string, file = 'README'): string {
  fs.mkdirSync(dir, { recursive: true });
  git(dir, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(dir, file), 'base\n');
  git(dir, 'add', file);
  git(dir, 'commit', '-q', '-m', 'base');
  return dir;
}

/** A root-only repository elsewhere on the host (etckeeper's /etc/.git, a deploy checkout). */
function privateRepo(): string {
  const priv = tempDir('aj-adv6-private-');
  fs.chmodSync(priv, 0o700);
  repo(priv, 'secret');
  return priv;
}

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

/**
 * Runs `swap` as the parent's session would. A swap of `.git` itself, or of a worktree's admin
 * folder `.git/worktrees/<id>`, the session can no longer make (each is a mount point in its
 * sandbox, src/session/git-guard.ts: rename(2) fails "busy", asserted here); it is made from
 * outside the sandbox instead (as the person, or a run without the sandbox could), so what follows
 * still tests the child's own defence.
 */
async function swapAsParent(run: (cmd: string) => Promise<string>, parent: string, swap: string): Promise<string> {
  const held = /^mv (\.git|\.git\/worktrees\/[^ /]+) /.exec(swap)?.[1];
  if (held === undefined) return run(swap);
  expect(await run(`python3 -c 'import os; os.rename("${held}", "${held}.x")' 2>&1; true`)).toMatch(/busy/i);
  return execFileSync('sh', ['-c', swap], { cwd: parent, encoding: 'utf8' });
}

describe('sub-agent git binds: every path of the kind, swapped before and after the child opened', () => {
  asRoot(
    "the parent swaps its whole .git (the common dir, bound read-only) after the child opened: the child's shell restarts and its exact run see no hidden directory",
    async () => {
      const root = tempDir('aj-adv6-');
      fs.chmodSync(root, 0o755);
      const other = path.join(root, 'other-run');
      fs.mkdirSync(other);
      fs.writeFileSync(path.join(other, 'token'), 'OTHER-RUN-SECRET\n');
      fs.mkdirSync(path.join(other, 'worktrees', 'c'), { recursive: true });
      fs.mkdirSync(path.join(other, 'objects'));
      const parent = repo(path.join(root, 'parent'));
      const out = await createWorktree(root, parent, 'c');
      if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);
      const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
      const c = await startSession({ cwd: out.path, workspace: out.path, hidePaths: [root], worktreeGit: out.git });
      // other-run now has the layout a common dir has: every bind of the old paths would land in it.
      const swapped = await swapAsParent(
        async (cmd) => (await p.run(cmd)).output,
        parent,
        `mv .git .git.real && ln -s ${other} .git && echo SWAPPED`,
      );
      expect(swapped).toContain('SWAPPED');
      // `exit` restarts the shell: a fresh bwrap, the same pins.
      await c.run('exit 0');
      const shell = await c.run(`cat ${out.git.commonDir}/token ${other}/token 2>&1; ls ${out.git.commonDir} 2>&1; true`);
      expect(shell.output).not.toContain('OTHER-RUN-SECRET');
      const exact = await c.runExact(['cat', path.join(out.git.commonDir, 'token')]);
      expect(exact.output).not.toContain('OTHER-RUN-SECRET');
    },
  );

  asRoot(
    'swapped before the child opens (root-owned, granted by ACL): no ACL entry on the hidden directory, and the child runs without the binds',
    async () => {
      const root = tempDir('aj-adv6-');
      fs.chmodSync(root, 0o755);
      // A root-only directory of the worker (another run's data), hidden from every sandbox, laid out as a common dir.
      const vault = path.join(root, 'vault');
      fs.mkdirSync(vault, { mode: 0o700 });
      fs.writeFileSync(path.join(vault, 'token'), 'VAULT-SECRET\n', { mode: 0o600 });
      fs.mkdirSync(path.join(vault, 'objects'), { mode: 0o700 });
      fs.mkdirSync(path.join(vault, 'worktrees', 'c'), { recursive: true, mode: 0o700 });
      const acls = (): string => execFileSync('getfacl', ['-R', '-p', '--omit-header', vault], { encoding: 'utf8' });
      const before = acls();
      // Each component of the kind: the last one (objects, worktrees/c) and one on the way (.git itself, whose
      // symlink a walk with O_NOFOLLOW on the last component alone would follow).
      for (const [i, swap] of [
        'mv .git/objects .git/objects.real && ln -s VAULT .git/objects',
        'mv .git/worktrees/NAME .git/wt-c && ln -s VAULT .git/worktrees/NAME',
        'mv .git .git.real && ln -s VAULT .git',
      ].entries()) {
        const parent = repo(path.join(root, `parent${i}`));
        const out = await createWorktree(root, parent, `c${i}`);
        if (!('path' in out) || !out.git) throw new Error(`no worktree git: ${JSON.stringify(out)}`);
        if (i === 2) fs.renameSync(path.join(vault, 'worktrees', 'c'), path.join(vault, 'worktrees', path.basename(out.git.gitDir)));
        const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
        const cmd = `${swap.replace('VAULT', vault).replaceAll('NAME', path.basename(out.git.gitDir))} && echo SWAPPED`;
        expect(await swapAsParent(async (c) => (await p.run(c)).output, parent, cmd)).toContain('SWAPPED');
        const c = await startSession({ cwd: out.path, workspace: out.path, hidePaths: [root], worktreeGit: out.git });
        expect(c.worktreeGitRefused).toMatch(/is no directory reached without a symlink: (ELOOP|ENOTDIR)/);
        expect(acls()).toBe(before);
        const r = await c.run(`cat ${out.git.commonDir}/objects/../token ${vault}/token 2>&1; true`);
        expect(r.output).not.toContain('VAULT-SECRET');
      }
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

describe('sub-agent worktree add: commondir and gitfile shapes chosen to get past a check', () => {
  /** A parent repository under a fresh root, and its session (root-owned workspace: the session user by ACL). */
  async function parentWithSession(): Promise<{ root: string; parent: string; run: (cmd: string) => Promise<string> }> {
    const root = tempDir('aj-adv6-');
    fs.chmodSync(root, 0o755);
    const parent = repo(path.join(root, 'parent'));
    const p = await startSession({ cwd: parent, workspace: parent, hidePaths: [root] });
    return { root, parent, run: async (cmd) => (await p.run(cmd)).output };
  }

  asRoot(
    'a relative commondir with .., a commondir that is a symlink, a .git file and a .git symlink naming the private repository',
    async () => {
      const priv = privateRepo();
      const shapes = (parent: string): string[] => [
        `echo ${path.relative(path.join(parent, '.git'), path.join(priv, '.git'))} > .git/commondir`,
        `echo ${priv}/.git > cd-target && ln -s ../cd-target .git/commondir`,
        `mv .git .git.real && echo "gitdir: ${priv}/.git" > .git`,
        `mv .git .git.real && ln -s ${priv}/.git .git`,
      ];
      for (let i = 0; i < 4; i++) {
        const { root, parent, run } = await parentWithSession();
        expect(await swapAsParent(run, parent, `${shapes(parent)[i]!} && echo PLANTED`)).toContain('PLANTED');
        const out = await createWorktree(root, parent, `c${i}`);
        // Refused, or (a commondir the session wrote, which the worker's git audit moves away after the command,
        // src/session/git-audit.ts) a worktree of the parent's own repository.
        const commonDir = 'git' in out ? out.git?.commonDir : undefined;
        expect({ shape: i, refusedOrParents: 'error' in out || commonDir === path.join(parent, '.git') }).toEqual({
          shape: i,
          refusedOrParents: true,
        });
        expect(fs.existsSync(path.join(priv, '.git', 'worktrees'))).toBe(false);
      }
    },
  );

  asRoot(
    'a job that writes and removes .git/commondir without pause while worktrees are made: root never writes the private repository',
    async () => {
      const priv = privateRepo();
      const { root, parent, run } = await parentWithSession();
      const rel = path.relative(path.join(parent, '.git'), path.join(priv, '.git'));
      expect(
        await run(
          `(while :; do echo ${priv}/.git > .git/commondir; rm -f .git/commondir; echo ${rel} > .git/commondir; rm -f .git/commondir; done) >/dev/null 2>&1 & echo STARTED`,
        ),
      ).toContain('STARTED');
      for (let i = 0; i < 6; i++) await createWorktree(root, parent, `c${i}`);
      expect(fs.existsSync(path.join(priv, '.git', 'worktrees'))).toBe(false);
    },
    120_000,
  );
});

describe('the confined checkout has no deadline (checkpoint/confine.ts runConfined)', () => {
  asRoot("a FIFO for a blob object: the sub-agent worktree is made or refused within git's 25 s, not never", async () => {
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
  });
});

describe('runConfined kills what outlives its deadline', () => {
  asRoot('cat of a FIFO in the workspace: rejected within the deadline, saying what timed out, and no reader left', async () => {
    const ws = tempDir('aj-adv6-confine-');
    const name = `fifo-${process.pid}-${Date.now()}`;
    execFileSync('mkfifo', [path.join(ws, name)]);
    const started = Date.now();
    const err = await runConfined({
      argv: ['cat', name],
      env: { PATH: '/usr/bin:/bin' },
      workspace: ws,
      writable: false,
      maxBuffer: 1024,
      timeoutMs: 1500,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    // The FIFO has no writer, so nothing but the deadline's SIGKILL ends cat (a missed kill hangs until the jest hang
    // detector): the deadline's own error, after its 1.5 s and not before.
    expect(err).toBeInstanceOf(ConfinedTimeoutError);
    expect((err as Error).message).toMatch(new RegExp(`^cat ${name} did not finish within 1.5 s and was killed`));
    expect(Date.now() - started).toBeGreaterThanOrEqual(1500);
    const readers = fs
      .readdirSync('/proc')
      .filter((d) => /^\d+$/.test(d))
      .filter((d) => {
        try {
          return fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').includes(name);
        } catch {
          return false;
        }
      });
    expect(readers).toEqual([]);
  });
});
