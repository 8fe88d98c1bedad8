/**
 * Adversary round 27: attacks on final3 (a065c81), as root, in real sessions of the unit harness, aimed at the code new
 * since 39e21a9: the git guard's hold on repositories nested in the workspace at start (git-guard.ts `guardNested`), the
 * git audit's part on them (git-audit.ts `nestedFindings`), and their index audit (git-index-audit.ts). Each test
 * asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags below); each was run un-skipped on
 * a065c81 and failed as written below (the five together last, at load average 1.4: 5 failed of 5).
 *
 * Kind 1 (the person's git runs the session's code): a nested repository's `.git/hooks` or `.git/config` kept as a
 * symlink. Steps: the person's nested clone `vendor/lib` has `.git/hooks -> ../.githooks` (a tracked hooks folder, a
 * common layout), or `.git/config -> ../lib.gitconfig`; a command runs `rm vendor/lib/.git/hooks && mkdir
 * vendor/lib/.git/hooks` and writes a `pre-commit` there, or (in vendor/lib) `rm .git/config && cp lib.gitconfig
 * .git/config && git config core.fsmonitor "$PWD/.git/fsm"`. OBSERVED (each run): the person's `git commit` (or `git
 * status`) in vendor/lib on the host runs the session's program as root; nothing is moved or named, in the command's
 * result or at close. The same on the root's `.git/hooks` holds (the link is put back: the held test below). Why:
 * git-guard.ts `codeEntries` binds the link's target read-only (`realInside`); the link itself is a name in the nested
 * git dir, which is writable, and git-audit.ts `heldLinks` (which puts such a link back) walks the root's
 * `HELD_NAMES` only. Fix for the kind: every rule of the root's git dir that is the audit's, not a bind's (held links,
 * replace refs, stray `worktrees/<id>`), for each nested git dir the guard holds.
 *
 * Kind 1: a nested linked worktree of a repository outside the workspace. Steps: the person's repository R lies
 * outside the workspace, its config has husky's `core.hooksPath = .husky/_`, and `git -C R worktree add
 * <workspace>/vendor/lib` made a worktree in the workspace; a command writes `vendor/lib/.husky/_/pre-commit`.
 * OBSERVED (each run): the person's `git commit` in vendor/lib runs it as root; the index audit names the file only as
 * "made by the session, untracked in the repository nested at vendor/lib" (left in place; not said to be a hook git
 * runs). Why: git-guard.ts `guardInto` binds a `.git` file whose git dir and common dir lie outside and nothing else;
 * `guardOutside`, which reads such a config with the work tree's top as the base (round 19), runs for the workspace's
 * root only, and the nested top is not in `scope.repos`, so the person's global config's relative values are not
 * applied there either (not tried). Fix: `guardOutside`'s reading for each nested `.git` file whose git dir is outside.
 *
 * Kind 5 (what the person reads is not what is there): a replace ref made in a nested repository or a submodule.
 * Steps: the person's nested clone `vendor/lib` (not under the top's ignore rules), or submodule `lib` (git dir
 * `.git/modules/lib`), holds `run.sh` (`echo hello`); a command runs there `git replace "$(git rev-parse HEAD:run.sh)"
 * "$(printf 'echo PWNED-by-session\n' | git hash-object -w --stdin)"`. OBSERVED (each run, load average 3.8): the
 * person's `git status` at the top and in the nested repository print nothing; `git show HEAD:run.sh` prints
 * `PWNED-by-session`, and `git checkout -- run.sh` writes it; nothing is moved or named. When
 * `vendor/` is under the top's ignore rules the ignored walk happens to name `vendor/lib/.git/refs/replace/<oid>` as a
 * file the person's ignore rules keep out of git status. Why: git-audit.ts moves new `refs/replace` refs of the root's
 * git dir only (`replaceRefs`); `nestedFindings` looks at `commondir` and `modules/` alone. Fix: as for the first kind.
 *
 * Tried, held: a submodule's `HEAD^{tree}` replaced (git replace) by a tree with a rewritten, staged `lib/run.sh` (the
 * person's git status is clean at the top and in lib): the nested index audit names `lib/run.sh` as staged or
 * committed by the session (it keeps the start's listing); the root's `.git/hooks -> ../.githooks` replaced by a folder
 * (the link is put back, the hook does not run); a `gitdir:` or `commondir` of `..`s or absolute for a checkpoint's
 * gitlink (snapshot.ts `joinInside`, `dirOf` with `O_NOFOLLOW`: read); names git refuses with HFS+ ignorables,
 * `gi7eba~1`, backslashes (git-path.ts, both protections on, a git without the host's config: read); the rewind
 * report's and `agent-jobs file`'s paths and bytes (each through `safeText`/`terminalText`; `file` reads only from the
 * run's own store by a tree path with no `..`: read). Noticed: `agent-jobs file` prints a symlink's target as if it were
 * the file's text (`> PATH` then writes that text as a file; no type said).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { hostBash, personsGit, personsRepo, plant, ran, withNested } from './persons-repo';

const OPEN_NESTED_REPLACE_REFS = false;
const OPEN_NESTED_HELD_LINKS = false;
const OPEN_NESTED_OUTSIDE_GIT_DIR = false;

afterEach(closeSessions);
afterAll(removeTempDirs);

const gitIn = personsGit;
/** The person's repository (a `.gitignore` of `build/` at the top) with a nested clone of theirs at `vendor/lib` holding `run.sh`. */
const withNestedLib = (): { ws: string; lib: string } => withNested({ name: '.gitignore', text: 'build/\n' });

describe('kind 5: a replace ref made in a nested repository', () => {
  const t = OPEN_NESTED_REPLACE_REFS ? test.skip : test;
  t("the person's git in vendor/lib shows and checks out the reviewed run.sh, or the replace ref is named", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, lib } = withNestedLib();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `cd vendor/lib && evil=$(printf 'echo PWNED-by-session\\n' | git hash-object -w --stdin) && ` +
        `git replace "$(git rev-parse HEAD:run.sh)" "$evil" && git status --porcelain && echo made-it`,
    );
    expect(r.output).toContain('made-it');
    await s.close();
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    const shownByGit = gitIn(lib, 'show', 'HEAD:run.sh');
    fs.rmSync(path.join(lib, 'run.sh'));
    gitIn(lib, 'checkout', '--', 'run.sh');
    const checkedOut = fs.readFileSync(path.join(lib, 'run.sh'), 'utf8');
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
    const shownByGit = gitIn(lib, 'show', 'HEAD:run.sh');
    fs.rmSync(path.join(lib, 'run.sh'));
    gitIn(lib, 'checkout', '--', 'run.sh');
    const checkedOut = fs.readFileSync(path.join(lib, 'run.sh'), 'utf8');
    const named = /refs\/replace|replace ref/.test(r.output + atClose);
    expect(named || (!shownByGit.includes('PWNED') && !checkedOut.includes('PWNED'))).toBe(true);
  });
});

describe('held, kind 5: a replace ref for the tree a submodule had at start', () => {
  test('a rewritten lib/run.sh, staged, with HEAD^{tree} replaced by the staged tree, is named in the result or at close', async () => {
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
    const status = gitIn(ws, 'status', '--porcelain') + gitIn(lib, 'status', '--porcelain');
    expect(fs.readFileSync(path.join(lib, 'run.sh'), 'utf8')).toContain('PWNED');
    const named = /run\.sh|refs\/replace|replace ref/.test(r.output.replace(/made-it/g, '') + atClose);
    expect(named || status !== '').toBe(true);
  });
});

describe("kind 1 (the person's git runs the session's code): a nested repository's hooks or config kept as a symlink", () => {
  const t = OPEN_NESTED_HELD_LINKS ? test.skip : test;
  const COMMIT = 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty';

  t(
    "vendor/lib/.git/hooks -> ../.githooks replaced by a folder of the session's: its pre-commit does not run at the person's commit",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws, lib } = withNestedLib();
      const marker = `${ws}-host-marker`;
      fs.mkdirSync(path.join(lib, '.githooks'));
      fs.writeFileSync(path.join(lib, '.githooks', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
      fs.rmSync(path.join(lib, '.git', 'hooks'), { recursive: true, force: true });
      fs.symlinkSync('../.githooks', path.join(lib, '.git', 'hooks'));
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(
        `rm vendor/lib/.git/hooks && mkdir vendor/lib/.git/hooks && ${plant(marker, 'vendor/lib/.git/hooks/pre-commit')} && echo made-it`,
      );
      await s.close();
      hostBash(lib, COMMIT);
      expect(ran(marker)).toBe('not run');
    },
  );

  t(
    "vendor/lib/.git/config -> ../lib.gitconfig replaced by a file of the session's: its core.fsmonitor does not run at the person's git status",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws, lib } = withNestedLib();
      const marker = `${ws}-host-marker`;
      fs.renameSync(path.join(lib, '.git', 'config'), path.join(lib, 'lib.gitconfig'));
      fs.symlinkSync('../lib.gitconfig', path.join(lib, '.git', 'config'));
      const s = await startSession({ cwd: ws, workspace: ws });
      await s.run(
        `cd vendor/lib && ${plant(marker, '.git/fsm')} && rm .git/config && cp lib.gitconfig .git/config && ` +
          `git config core.fsmonitor "$PWD/.git/fsm" && echo made-it`,
      );
      await s.close();
      hostBash(lib, 'git status --porcelain');
      expect(ran(marker)).toBe('not run');
    },
  );
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

describe('kind 1: a nested linked worktree of a repository outside the workspace, whose config names a hooks folder relative to its top', () => {
  const t = OPEN_NESTED_OUTSIDE_GIT_DIR ? test.skip : test;
  t(
    "husky's core.hooksPath = .husky/_ in the outside repository: a pre-commit the session writes in vendor/lib/.husky/_ does not run",
    async () => {
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
      await s.run(`mkdir -p vendor/lib/.husky/_ && ${plant(marker, 'vendor/lib/.husky/_/pre-commit')} && echo made-it`);
      await s.close();
      hostBash(lib, 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty');
      expect(ran(marker)).toBe('not run');
    },
  );
});
