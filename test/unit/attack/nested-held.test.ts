/**
 * Attacks on the git audit's hold on each git dir nested in the workspace at start (src/session/git-audit.ts: the
 * nested git dirs' names in `heldLinks`, `nestedReplaceFindings`), in real sessions of the unit harness, as root. The
 * person's nested clone `vendor/lib` or submodule `lib` (git dir `.git/modules/lib`) holds `run.sh` (`echo hello`).
 * Each test does what an attacker would to get past the audit: a replace ref packed at once (`git pack-refs`), made
 * again in a later command, reached through a `refs/replace` symlink; a held hooks link swapped for another symlink, a
 * nested `.git` symlink swapped for one to the session's own git dir, a submodule's hooks link replaced. What is
 * asserted is what the person's git does on the host afterwards: it shows and checks out the reviewed `run.sh`, and
 * runs no program of the session's.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hostBash, personsGit, personsRepo, plant, ran, withNested } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

beforeEach(() => {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
});
afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const g = personsGit;
const COMMIT = 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty';
/** Shell text that makes a replace ref for run.sh's blob in the repository of the current folder, then `more`. */
const REPLACE = (more = 'true'): string =>
  `evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && git replace -f "$(git rev-parse HEAD:run.sh)" "$evil" && ${more} && echo made-it`;

/** The person's repository with the submodule `lib` (`run.sh`, one commit): its git dir is `.git/modules/lib`. */
function withSubmodule(): { ws: string; lib: string; marker: string } {
  const src = tempDir('aj-libsrc-');
  g(src, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(src, 'run.sh'), 'echo hello\n');
  g(src, 'add', '.');
  g(src, 'commit', '-qm', 'lib');
  const { ws, marker } = personsRepo();
  g(ws, 'submodule', 'add', '-q', src, 'lib');
  g(ws, 'commit', '-qm', 'lib as a submodule');
  return { ws, lib: path.join(ws, 'lib'), marker };
}

/** What the person's git in `lib` shows for HEAD:run.sh and writes at a checkout of it. */
function personsRunSh(lib: string): { shown: string; checkedOut: string } {
  const shown = g(lib, 'show', 'HEAD:run.sh');
  fs.rmSync(path.join(lib, 'run.sh'));
  g(lib, 'checkout', '--', 'run.sh');
  return { shown, checkedOut: fs.readFileSync(path.join(lib, 'run.sh'), 'utf8') };
}

describe("a replace ref in a nested repository's git dir", () => {
  test('packed at once (git pack-refs --all) in a nested clone: dropped from its packed-refs, the person sees hello', async () => {
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`cd vendor/lib && ${REPLACE('git pack-refs --all && test ! -e .git/refs/replace/*')}`);
    expect(r.output).toContain('made-it');
    expect(r.output).toMatch(/replace ref/);
    await s.close();
    expect(personsRunSh(lib)).toEqual({ shown: 'echo hello\n', checkedOut: 'echo hello\n' });
    expect(fs.readFileSync(path.join(lib, '.git', 'packed-refs'), 'utf8')).not.toContain('refs/replace/');
  });

  test('made again in later commands of a submodule, loose then packed: moved each time, the person sees hello', async () => {
    const { ws, lib } = withSubmodule();
    const s = await startSession({ cwd: ws, workspace: ws });
    expect((await s.run(`(cd lib && ${REPLACE()})`)).output).toMatch(/replace ref/);
    expect((await s.run(`(cd lib && ${REPLACE('git pack-refs --all')})`)).output).toMatch(/replace ref/);
    await s.run(`(cd lib && ${REPLACE()})`);
    await s.close();
    expect(personsRunSh(lib)).toEqual({ shown: 'echo hello\n', checkedOut: 'echo hello\n' });
  });

  test("refs/replace swapped for a symlink to a folder of the session's holding the ref: moved, the person sees hello", async () => {
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd vendor/lib && ${REPLACE('mkdir -p ../refs && mv .git/refs/replace/* ../refs/ && rmdir .git/refs/replace && ln -s ../../../refs .git/refs/replace && git show HEAD:run.sh')}`,
    );
    expect(r.output).toContain('PWNED-by-session');
    await s.close();
    expect(personsRunSh(lib)).toEqual({ shown: 'echo hello\n', checkedOut: 'echo hello\n' });
  });

  test('a replace ref the person made before the session is theirs: left', async () => {
    const { ws, lib } = withNested();
    const blob = g(lib, 'rev-parse', 'HEAD:run.sh').trim();
    fs.writeFileSync(path.join(lib, 'mine.txt'), 'echo mine\n');
    const mine = g(lib, 'hash-object', '-w', 'mine.txt').trim();
    fs.rmSync(path.join(lib, 'mine.txt'));
    g(lib, 'replace', blob, mine);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('cd vendor/lib && git status --porcelain && echo ok');
    expect(r.output).not.toMatch(/replace ref/);
    await s.close();
    expect(s.gitFindingsAtClose.map((f) => f.why).join('\n')).not.toMatch(/replace ref/);
    expect(g(lib, 'show', 'HEAD:run.sh')).toBe('echo mine\n');
  });
});

describe("a nested git dir's symlinks the guard holds by their targets", () => {
  test("vendor/lib/.git/hooks -> ../.githooks swapped for a symlink to the session's own hooks folder: put back, no hook runs", async () => {
    const { ws, lib, marker } = withNested();
    fs.mkdirSync(path.join(lib, '.githooks'));
    fs.rmSync(path.join(lib, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../.githooks', path.join(lib, '.git', 'hooks'));
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`mkdir -p evil && ${plant(marker, 'evil/pre-commit')} && ln -sfn ../../../evil vendor/lib/.git/hooks && echo made-it`);
    await s.close();
    expect(fs.readlinkSync(path.join(lib, '.git', 'hooks'))).toBe('../.githooks');
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test("vendor/lib/.git -> ../lib.git swapped for a symlink to a git dir of the session's with a hook: put back, no hook runs", async () => {
    const { ws, lib, marker } = withNested();
    fs.renameSync(path.join(lib, '.git'), path.join(ws, 'vendor', 'lib.git'));
    fs.symlinkSync('../lib.git', path.join(lib, '.git'));
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(
      `cp -r vendor/lib.git evil.git && rm -rf evil.git/hooks && mkdir evil.git/hooks && ${plant(marker, 'evil.git/hooks/pre-commit')} && ` +
        `ln -sfn ../../evil.git vendor/lib/.git && echo made-it`,
    );
    await s.run('true');
    await s.close();
    expect(fs.readlinkSync(path.join(lib, '.git'))).toBe('../lib.git');
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test("a submodule's .git/modules/lib/hooks symlink replaced by a folder with a pre-commit: put back, no hook runs", async () => {
    const { ws, lib, marker } = withSubmodule();
    const gitDir = path.join(ws, '.git', 'modules', 'lib');
    fs.mkdirSync(path.join(ws, '.githooks-lib'));
    fs.rmSync(path.join(gitDir, 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../../../.githooks-lib', path.join(gitDir, 'hooks'));
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(
      `rm .git/modules/lib/hooks && mkdir .git/modules/lib/hooks && ${plant(marker, '.git/modules/lib/hooks/pre-commit')}; echo done`,
    );
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });
});

/** A repository of the person's outside the workspace (`run.sh`, one commit), its config set by `config` (key, value pairs). */
function outsideRepo(...config: [string, string][]): string {
  const outside = tempDir('aj-outside-');
  g(outside, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(outside, 'run.sh'), 'echo hello\n');
  g(outside, 'add', 'run.sh');
  g(outside, 'commit', '-qm', 'lib');
  for (const [k, v] of config) g(outside, 'config', k, v);
  return outside;
}

describe('a repository nested in the workspace whose git dir lies outside it: its config read with the nested top as the base', () => {
  test("a linked worktree's `alias.lint = !scripts/lint.sh`, missing at start: the session's lint.sh is moved, the person's git lint does not run it", async () => {
    const outside = outsideRepo(['alias.lint', '!scripts/lint.sh']);
    const { ws, marker } = personsRepo();
    const lib = path.join(ws, 'vendor', 'lib');
    fs.mkdirSync(path.dirname(lib));
    g(outside, 'worktree', 'add', '-q', '-b', 'vendored', lib);
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`mkdir -p vendor/lib/scripts && ${plant(marker, 'vendor/lib/scripts/lint.sh')}; echo done`);
    await s.close();
    hostBash(lib, 'git lint');
    expect(ran(marker)).toBe('not run');
  });

  test('a git dir kept apart (git init --separate-git-dir) with `core.hooksPath = .githooks`: a pre-commit the session writes there does not run', async () => {
    const { ws, marker } = personsRepo();
    const lib = path.join(ws, 'vendor', 'lib');
    fs.mkdirSync(lib, { recursive: true });
    g(lib, 'init', '-q', '-b', 'main', '--separate-git-dir', path.join(tempDir('aj-gitdir-'), 'lib.git'));
    g(lib, 'config', 'core.hooksPath', '.githooks');
    g(lib, 'commit', '-qm', 'lib', '--allow-empty');
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`mkdir -p vendor/lib/.githooks; ${plant(marker, 'vendor/lib/.githooks/pre-commit')}; echo done`);
    await s.close();
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  test("the workspace itself a linked worktree of an outside repository with husky's hooks, beside a nested clone: the top's .husky/_ stays held", async () => {
    const outside = outsideRepo(['core.hooksPath', '.husky/_']);
    const ws = path.join(tempDir('aj-wt-'), 'feature');
    g(outside, 'worktree', 'add', '-q', '-b', 'feature', ws);
    const lib = path.join(ws, 'vendor', 'lib');
    fs.mkdirSync(lib, { recursive: true });
    g(lib, 'init', '-q', '-b', 'main');
    const marker = `${ws}-host-marker`;
    const s = await startSession({ cwd: ws, workspace: ws });
    await s.run(`mkdir -p .husky/_; ${plant(marker, '.husky/_/pre-commit')}; echo done`);
    await s.close();
    hostBash(ws, COMMIT);
    expect(ran(marker)).toBe('not run');
  });
});
