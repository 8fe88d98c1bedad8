/**
 * Attacks on the git guard's hold on repositories below the workspace's root that were there at start (git-guard.ts
 * `guardNested`; user round 26, B8 and A2): a nested repository (`vendor/lib`, ignored by the person's `.gitignore`),
 * a submodule (its git dir in `.git/modules/<name>`, checked out or not), a bare repository, a nested repository's
 * linked worktree (a `.git` file), and more nested repositories than the guard holds. Inputs chosen to get past it: a
 * hook written straight into `.git/hooks`, the config rewritten in place and by `git config` (lock and rename), the
 * nested `.git` renamed away and a new one made, the repository's folder renamed away and made again, a `commondir`
 * pointing at a git dir of the session's, the `.git` file rewritten, a hook in a submodule's git dir whose work tree is
 * not checked out, a hook of a bare repository the person pushes to. Each ends with the person's git on the host
 * (root), which must not run the session's program; and git itself must work in the nested repository in the session.
 * Real sessions, as root (the person), bash as the session's user in bwrap.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { MAX_NESTED_REPOS } from '../../../src/session/git-guard';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsGit, personsRepo, plant, ran, withNested as personsNested } from './persons-repo';
import { fastDescribe, slowDescribe } from '../../slow';

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
/** `describe` for tests that need root (the worker setting), in `npm test`; the slow one below picks its own. */
const dRoot = isRoot ? fastDescribe : describe.skip;

const COMMIT = 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty';

const gitIn = personsGit;

/** The person's repository with a nested repository of theirs at `vendor/lib` (`lib.txt`, one commit), `vendor/` ignored as in B8. */
const withNested = (): { ws: string; lib: string; marker: string } =>
  personsNested({ name: '.gitignore', text: 'vendor/\n' }, { name: 'lib.txt', text: 'one\n' });

dRoot('a nested repository there at start: the same hold as the root repository', () => {
  test("a pre-commit hook written into vendor/lib/.git/hooks does not run at the person's next commit there (B8)", async () => {
    const { ws, lib, marker } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo planted`);
    expect(r.output).not.toContain('planted');
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
    expect(fs.existsSync(path.join(lib, '.git', 'hooks', 'pre-commit'))).toBe(false);
  });

  test("the nested repository's config: core.fsmonitor and core.hooksPath by git config and by an append, an alias", async () => {
    const { ws, lib, marker } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`${plant(marker, 'evil.sh')} ; git -C vendor/lib config core.fsmonitor "$PWD/evil.sh"`);
    await s.run(`printf '[core]\\n\\thooksPath = ../../hooks2\\n[alias]\\n\\tst = !$PWD/evil.sh\\n' >> vendor/lib/.git/config`);
    await s.run(`mkdir -p hooks2 && ${plant(marker, 'hooks2/pre-commit')}`);
    await s.close();
    hostBash(lib, `git status >/dev/null 2>&1; git st >/dev/null 2>&1; ${COMMIT}`);
    expect(ran(marker)).toBe('not run');
    expect(fs.readFileSync(path.join(lib, '.git', 'config'), 'utf8')).not.toMatch(/fsmonitor|hooksPath|evil/);
  });

  test('info/attributes with a filter the config cannot gain: the info folder is read-only too', async () => {
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`echo '* filter=x' > vendor/lib/.git/info/attributes && echo wrote`);
    expect(r.output).not.toContain('wrote');
    await s.close();
    expect(fs.existsSync(path.join(lib, '.git', 'info', 'attributes'))).toBe(false);
  });

  test('the nested .git renamed away (or the repository folder) and a new repository with a hook made in its place', async () => {
    const { ws, lib, marker } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(
      `mv vendor/lib/.git vendor/lib/g2 ; rm -rf vendor/lib/.git ; git init -q vendor/lib ; ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')}`,
    );
    await s.run(
      `mv vendor/lib vendor/lib2 ; mv vendor vendor2 ; mkdir -p vendor/lib && git init -q vendor/lib ; ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')}`,
    );
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
    expect(gitIn(lib, 'log', '--format=%s', '-1').trim()).toBe('m');
  });

  test("a commondir added to the nested git dir, naming a folder of the person's where the session put a config that runs its fsmonitor (no HEAD there: not a repository of its own to the audit)", async () => {
    const { ws, lib, marker } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      [
        plant(marker, 'fsm.sh'),
        // The common dir is vendor/, a folder of the person's (root's, writable by the grant): git checks who owns folders, not the config.
        `cp -r vendor/lib/.git/objects vendor/lib/.git/refs vendor/ && printf '[core]\\n\\tfsmonitor = '"$PWD"'/fsm.sh\\n' > vendor/config`,
        'echo ../.. > vendor/lib/.git/commondir && echo wrote',
      ].join('\n'),
    );
    expect(r.output).toContain('wrote');
    await s.close();
    hostBash(lib, 'git status >/dev/null 2>&1');
    expect(ran(marker)).toBe('not run');
    expect(fs.existsSync(path.join(lib, '.git', 'commondir'))).toBe(false);
  });

  test("what the nested repository's config names, relative to its own top: core.hooksPath = .githooks, an alias's program missing at start", async () => {
    const { ws, lib, marker } = withNested();
    gitIn(lib, 'config', 'core.hooksPath', '.githooks');
    gitIn(lib, 'config', 'alias.lint', '!scripts/lint.sh');
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`mkdir -p vendor/lib/.githooks ; ${plant(marker, 'vendor/lib/.githooks/pre-commit')}`);
    await s.run(`mkdir -p vendor/lib/scripts && ${plant(marker, 'vendor/lib/scripts/lint.sh')}`);
    await s.close();
    hostBash(lib, `${COMMIT}; git lint >/dev/null 2>&1`);
    expect(ran(marker)).toBe('not run');
  });

  test('a nested .git that is a symlink to a git dir elsewhere in the workspace: the hook written through the link or at its target', async () => {
    const { ws, lib, marker } = withNested();
    fs.renameSync(path.join(lib, '.git'), path.join(ws, 'vendor', 'lib-git'));
    fs.symlinkSync('../lib-git', path.join(lib, '.git'));
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} ; ${plant(marker, 'vendor/lib-git/hooks/post-commit')}`);
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
    // The link itself is no mount point: replaced by a repository of the session's, which the audit moves.
    const s2 = await startSession({ cwd: ws, workspace: ws });
    await s2.run(`rm vendor/lib/.git && git init -q vendor/lib && ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')}`);
    await s2.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test("a submodule git dir with a hook made in the nested repository's modules/, which the person's `git submodule update` there reuses", async () => {
    const { ws, lib, marker } = withNested();
    /** A clone of one's own as the submodule's git dir (core.worktree set as git sets it), a hook in it, and the gitlink. */
    const steps = (m: string, up: string): string =>
      [
        `git init -q ${up} && git -C ${up} -c user.name=a -c user.email=a@b commit -q --allow-empty -m up`,
        `git clone -q --bare ${up} vendor/lib/.git/modules/x 2>&1`,
        'git config --file vendor/lib/.git/modules/x/config core.bare false && git config --file vendor/lib/.git/modules/x/config core.worktree ../../../x',
        plant(m, 'vendor/lib/.git/modules/x/hooks/post-checkout'),
        `printf '[submodule "x"]\\n\\tpath = x\\n\\turl = /nonexistent/up\\n' > vendor/lib/.gitmodules`,
        `git -C vendor/lib update-index --add --cacheinfo 160000,$(git -C ${up} rev-parse HEAD),x && echo staged`,
      ].join('\n');
    const s = await startSession({ cwd: ws, workspace: ws });
    expect((await s.run(steps(marker, '/tmp/up'))).output).toContain('staged');
    await s.close();
    hostBash(lib, 'git -c protocol.file.allow=always submodule update --init -q');
    expect(ran(marker)).toBe('not run');
    expect(fs.existsSync(path.join(lib, '.git', 'modules', 'x'))).toBe(false);
    // The control: the same steps by the person on the host, left in place, do run the hook at that update.
    const control = `${marker}-control`;
    hostBash(
      ws,
      `rm -rf vendor/lib/x; ${steps(control, `${ws}-up`)}; cd vendor/lib && git -c protocol.file.allow=always submodule update --init -q`,
    );
    expect(ran(control)).toBe('root');
    fs.rmSync(control, { force: true });
    fs.rmSync(`${ws}-up`, { recursive: true, force: true });
  });

  test('git works in the nested repository in the session: commit, log (A2: no "dubious ownership")', async () => {
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      'echo two >> vendor/lib/lib.txt && git -c user.name=a -c user.email=a@b -C vendor/lib commit -qam lib2 && git -C vendor/lib log --format=%s -1',
    );
    expect(r.output).not.toContain('dubious ownership');
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/^lib2$/m);
    await s.close();
    expect(gitIn(lib, 'log', '--format=%s', '-1').trim()).toBe('lib2');
  });

  test("a nested repository's linked worktree: its .git file rewritten to a git dir of the session's", async () => {
    const { ws, lib, marker } = withNested();
    gitIn(lib, 'worktree', 'add', '-q', path.join(ws, 'vendor', 'wt'), '-b', 'wt');
    const wt = path.join(ws, 'vendor', 'wt');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `git init -q evil && ${plant(marker, 'evil/.git/hooks/pre-commit')} && (echo "gitdir: $PWD/evil/.git" > vendor/wt/.git || (rm -f vendor/wt/.git && echo "gitdir: $PWD/evil/.git" > vendor/wt/.git)) && echo rewrote`,
    );
    expect(r.output).not.toContain('rewrote');
    await s.close();
    hostBash(wt, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test('a bare repository in the workspace: a pre-receive hook does not run when the person pushes to it', async () => {
    const { ws, git, marker } = personsRepo();
    const bare = path.join(ws, 'remote.git');
    execFileSync('git', ['init', '-q', '--bare', bare]);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${plant(marker, 'remote.git/hooks/pre-receive')} && echo planted`);
    expect(r.output).not.toContain('planted');
    await s.close();
    git('push', '-q', bare, 'main');
    expect(ran(marker)).toBe('not run');
  });
});

dRoot('a submodule there at start', () => {
  /** The person's repository with a submodule `sub` (its git dir in `.git/modules/sub`). */
  function withSubmodule(): { ws: string; marker: string } {
    const { ws, git, marker } = personsRepo();
    const upstream = `${ws}-upstream`;
    fs.mkdirSync(upstream);
    gitIn(upstream, 'init', '-q', '-b', 'main');
    gitIn(upstream, 'commit', '-q', '--allow-empty', '-m', 'up');
    git('-c', 'protocol.file.allow=always', 'submodule', 'add', '-q', upstream, 'sub');
    git('commit', '-qm', 'sub');
    return { ws, marker };
  }

  test("a hook in the submodule's git dir (.git/modules/sub/hooks) does not run at the person's commit in sub", async () => {
    const { ws, marker } = withSubmodule();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${plant(marker, '.git/modules/sub/hooks/pre-commit')} && echo planted`);
    expect(r.output).not.toContain('planted');
    // git works in the submodule in the session (trusted as a repository the guard holds).
    const log = await s.run('git -C sub log --format=%s -1');
    expect(log.exitCode).toBe(0);
    expect(log.output).toMatch(/^up$/m);
    await s.close();
    hostBash(path.join(ws, 'sub'), COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test('a submodule not checked out (deinit): a post-checkout hook in its git dir does not run at `git submodule update`', async () => {
    const { ws, marker } = withSubmodule();
    gitIn(ws, 'submodule', 'deinit', '-q', '-f', 'sub');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${plant(marker, '.git/modules/sub/hooks/post-checkout')} && echo planted`);
    expect(r.output).not.toContain('planted');
    await s.close();
    hostBash(ws, 'git -c protocol.file.allow=always submodule update --init -q');
    expect(ran(marker)).toBe('not run');
  });
});

// A slow suite (test/slow-suites.js MIXED_FILES): past the bound means 67 nested repositories made, 64 of them guarded
// (each a few binds of every bwrap launch of the session, and read by the audit at every command and at close).
(isRoot ? slowDescribe : describe.skip)('more nested repositories than the guard holds', () => {
  test(`past ${MAX_NESTED_REPOS} the result names those NOT protected; the first ones, outside node_modules, stay held`, async () => {
    const { ws, lib, marker } = withNested();
    const many = path.join(ws, 'node_modules');
    for (let i = 0; i < MAX_NESTED_REPOS + 3; i++) execFileSync('git', ['init', '-q', path.join(many, `p${String(i).padStart(3, '0')}`)]);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('true');
    const note = r.notes.join('\n');
    expect(note).toContain('NOT protected');
    expect(note).toContain(`node_modules/p${String(MAX_NESTED_REPOS + 2).padStart(3, '0')}/.git`);
    const p = await s.run(`${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo planted`);
    expect(p.output).not.toContain('planted');
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });
});
