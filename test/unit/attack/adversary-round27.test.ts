/**
 * Adversary round 27: HEADER
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { hostBash, personsRepo, plant, ran } from './persons-repo';

const OPEN_NESTED_REPLACE_REFS = true;
const OPEN_NESTED_REPLACE_TREE = false;
const OPEN_NESTED_HELD_LINKS = true;
const OPEN_NESTED_OUTSIDE_GIT_DIR = true;

afterEach(closeSessions);
afterAll(removeTempDirs);

/** git as the person (root) in `cwd`. */
const gitIn = (cwd: string, ...a: string[]): string =>
  execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', '-c', 'protocol.file.allow=always', ...a], {
    encoding: 'utf8',
    stdio: 'pipe',
  });

/** The person's repository with a nested clone of theirs at `vendor/lib` holding `run.sh` (one commit), `vendor/` ignored. */
function withNested(): { ws: string; lib: string } {
  const { ws, git } = personsRepo();
  fs.writeFileSync(path.join(ws, '.gitignore'), 'build/\n');
  git('add', '.gitignore');
  git('commit', '-qm', 'ignore');
  const lib = path.join(ws, 'vendor', 'lib');
  fs.mkdirSync(lib, { recursive: true });
  gitIn(lib, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(lib, 'run.sh'), 'echo hello\n');
  gitIn(lib, 'add', 'run.sh');
  gitIn(lib, 'commit', '-qm', 'lib');
  return { ws, lib };
}

describe('kind 5: a replace ref made in a nested repository', () => {
  const t = OPEN_NESTED_REPLACE_REFS ? test.skip : test;
  t("the person's git in vendor/lib shows and checks out the reviewed run.sh, or the replace ref is named", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNested();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd vendor/lib && evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
        `git replace "$(git rev-parse HEAD:run.sh)" "$evil" && git status --porcelain && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    console.log(r.output, atClose);
    const status = gitIn(lib, 'status', '--porcelain');
    const shownByGit = gitIn(lib, 'show', 'HEAD:run.sh');
    fs.rmSync(path.join(lib, 'run.sh'));
    gitIn(lib, 'checkout', '--', 'run.sh');
    const checkedOut = fs.readFileSync(path.join(lib, 'run.sh'), 'utf8');
    console.log({ status, shownByGit, checkedOut });
    const named = /refs\/replace|replace ref/.test(r.output + atClose);
    expect(named || (!shownByGit.includes('PWNED') && !checkedOut.includes('PWNED'))).toBe(true);
  });
});

/** The person's repository with the submodule `lib` (`run.sh`, one commit): its git dir is `.git/modules/lib`. */
function withSubmodule(): { ws: string; lib: string } {
  const src = tempDir('aj-libsrc-');
  gitIn(src, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(src, 'run.sh'), 'echo hello\n');
  gitIn(src, 'add', '.');
  gitIn(src, 'commit', '-qm', 'lib');
  const { ws } = personsRepo();
  gitIn(ws, 'submodule', 'add', '-q', src, 'lib');
  gitIn(ws, 'commit', '-qm', 'lib as a submodule');
  return { ws, lib: path.join(ws, 'lib') };
}

describe('kind 5: a replace ref made in a submodule', () => {
  const t = OPEN_NESTED_REPLACE_REFS ? test.skip : test;
  t("the person's git in lib shows and checks out the reviewed run.sh, or the replace ref is named", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withSubmodule();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd lib && evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
        `git replace "$(git rev-parse HEAD:run.sh)" "$evil" && git status --porcelain && cd .. && git status --porcelain && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    console.log(r.output, atClose);
    const status = gitIn(ws, 'status', '--porcelain') + gitIn(lib, 'status', '--porcelain');
    const shownByGit = gitIn(lib, 'show', 'HEAD:run.sh');
    fs.rmSync(path.join(lib, 'run.sh'));
    gitIn(lib, 'checkout', '--', 'run.sh');
    const checkedOut = fs.readFileSync(path.join(lib, 'run.sh'), 'utf8');
    console.log({ status, shownByGit, checkedOut });
    const named = /refs\/replace|replace ref/.test(r.output + atClose);
    expect(named || (!shownByGit.includes('PWNED') && !checkedOut.includes('PWNED'))).toBe(true);
  });
});

describe('kind 5: a replace ref for the tree a submodule had at start', () => {
  const t = OPEN_NESTED_REPLACE_TREE ? test.skip : test;
  t('a rewritten lib/run.sh, staged, with HEAD^{tree} replaced by the staged tree, is named in the result or at close', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withSubmodule();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd lib && printf 'echo PWNED-by-session\\n' > run.sh && git add run.sh && ` +
        `git replace "$(git rev-parse HEAD^{tree})" "$(git write-tree)" && git status --porcelain && cd .. && git status --porcelain && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    console.log(r.output, atClose);
    const status = gitIn(ws, 'status', '--porcelain') + gitIn(lib, 'status', '--porcelain');
    console.log({ status, file: fs.readFileSync(path.join(lib, 'run.sh'), 'utf8') });
    expect(fs.readFileSync(path.join(lib, 'run.sh'), 'utf8')).toContain('PWNED');
    const named = /run\.sh|refs\/replace|replace ref/.test(r.output.replace(/made-it/g, '') + atClose);
    expect(named || status !== '').toBe(true);
  });
});

describe("kind 1 (the person's git runs the session's code): a nested repository's hooks or config kept as a symlink", () => {
  const t = OPEN_NESTED_HELD_LINKS ? test.skip : test;
  const COMMIT = 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty';

  t("vendor/lib/.git/hooks -> ../.githooks replaced by a folder of the session's: its pre-commit does not run at the person's commit", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNested();
    const marker = `${ws}-host-marker`;
    fs.mkdirSync(path.join(lib, '.githooks'));
    fs.writeFileSync(path.join(lib, '.githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    fs.rmSync(path.join(lib, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../.githooks', path.join(lib, '.git', 'hooks'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm vendor/lib/.git/hooks && mkdir vendor/lib/.git/hooks && ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo made-it`);
    await s.close();
    console.log(r.output, s.gitFindingsAtClose);
    hostBash(lib, COMMIT);
    expect(ran(marker)).toBe('not run');
  });

  t("vendor/lib/.git/config -> ../lib.gitconfig replaced by a file of the session's: its core.fsmonitor does not run at the person's git status", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNested();
    const marker = `${ws}-host-marker`;
    fs.renameSync(path.join(lib, '.git', 'config'), path.join(lib, 'lib.gitconfig'));
    fs.symlinkSync('../lib.gitconfig', path.join(lib, '.git', 'config'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd vendor/lib && ${plant(marker, '.git/fsm')} && rm .git/config && cp lib.gitconfig .git/config && ` +
        `git config core.fsmonitor "$PWD/.git/fsm" && echo made-it`,
    );
    await s.close();
    console.log(r.output, s.gitFindingsAtClose);
    hostBash(lib, 'git status --porcelain');
    expect(ran(marker)).toBe('not run');
  });
});

describe("held: the root repository's .git/hooks kept as a symlink (the control for the nested one)", () => {
  test(".git/hooks -> ../.githooks replaced by a folder of the session's: the link is put back and the pre-commit does not run", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws } = personsRepo();
    const marker = `${ws}-host-marker`;
    fs.mkdirSync(path.join(ws, '.githooks'));
    fs.writeFileSync(path.join(ws, '.githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
    fs.rmSync(path.join(ws, '.git', 'hooks'), { recursive: true, force: true });
    fs.symlinkSync('../.githooks', path.join(ws, '.git', 'hooks'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm .git/hooks && mkdir .git/hooks && ${plant(marker, '.git/hooks/pre-commit')} && echo made-it`);
    expect(r.output).toContain('made-it');
    await s.close();
    hostBash(ws, 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty');
    expect(ran(marker)).toBe('not run');
    expect(fs.readlinkSync(path.join(ws, '.git', 'hooks'))).toBe('../.githooks');
  });
});

describe("kind 1: a nested linked worktree of a repository outside the workspace, whose config names a hooks folder relative to its top", () => {
  const t = OPEN_NESTED_OUTSIDE_GIT_DIR ? test.skip : test;
  t("husky's core.hooksPath = .husky/_ in the outside repository: a pre-commit the session writes in vendor/lib/.husky/_ does not run", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const outside = tempDir('aj-outside-');
    gitIn(outside, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(outside, 'run.sh'), 'echo hello\n');
    gitIn(outside, 'add', 'run.sh');
    gitIn(outside, 'commit', '-qm', 'lib');
    gitIn(outside, 'config', 'core.hooksPath', '.husky/_');
    const { ws } = personsRepo();
    const lib = path.join(ws, 'vendor', 'lib');
    fs.mkdirSync(path.dirname(lib));
    gitIn(outside, 'worktree', 'add', '-q', '-b', 'vendored', lib);
    const marker = `${ws}-host-marker`;
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`mkdir -p vendor/lib/.husky/_ && ${plant(marker, 'vendor/lib/.husky/_/pre-commit')} && echo made-it`);
    await s.close();
    console.log(r.output, s.gitFindingsAtClose);
    hostBash(lib, 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty');
    expect(ran(marker)).toBe('not run');
  });
});
