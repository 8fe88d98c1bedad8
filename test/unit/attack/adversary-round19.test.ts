/**
 * Adversary round 19: attacks on the control layer of eda3e67 (main), as root, in real sessions of the
 * unit harness. Each test asserts the safe behaviour and is skipped while `OPEN` is true (main stays
 * green); I ran each un-skipped on eda3e67 and it failed as written below.
 *
 * Kind 6 (git files the person's host git will obey): a program the person's config names, missing
 * when the session starts. Steps: the person's repository's `.git/config` names a program in the
 * work tree that is not there yet (`alias.lint = !node_modules/.bin/eslint .` before `npm install`,
 * `credential.helper = !scripts/cred.sh` in a folder that exists, `core.fsmonitor = tools/fsmon.sh`:
 * a generated file, a file of another branch, a gitignored helper; or `alias.fmt = !./scripts/fmt.sh`
 * where `scripts/fmt.sh` is the person's symlink to a missing `build/fmt.sh`); a session starts there and runs
 * `mkdir -p <folder> && printf '#!/bin/sh …' > <file> && chmod +x <file>`; it closes; the person
 * runs `git lint`, `git credential fill`, `git status`, `git fmt` on the host. OBSERVED: the file is
 * written, with no audit note and no note at close, and the person's git runs it: the marker file on
 * the host holds `root` (the person's uid here), in all four cases. Why: git-guard.ts binds read-only "each existing
 * regular file that any word of any value names" (`valueFiles` skips what `isFile` does not find,
 * git-guard.ts:583) and git-audit.ts watches only git's own metadata, so a path the config names
 * but that is missing at the start is the session's to create; includes, `core.hooksPath`, `hooks/`
 * and `info/` are made when missing for this very reason, programs are not. Fix for the kind: treat
 * every path a word of a config value names in the workspace as the includes are treated, whether it
 * exists or not: record the missing ones at start (`GuardedGit.named` already lists what the
 * config names) and have the audit move a file that appears there to the quarantine with a note
 * (a bind cannot cover what is not there, and an empty placeholder would break `npm install`
 * writing `node_modules/.bin`); at the least say at close which named programs the session created.
 * HELD since (OPEN_MISSING false): git-guard.ts records such paths (`GuardedGit.missing`) and the git
 * audit moves what appears there to the quarantine with a note; more routes in missing-named.test.ts.
 *
 * Kind 6 (git files the person's host git will obey): a workspace that is a linked worktree of the
 * person's repository (`git worktree add ../feature`, the run started in `../feature`). Steps: the main
 * repository's `.git/config` says `core.hooksPath = .husky/_` (what husky 9 writes) or `alias.fmt =
 * !./scripts/fmt.sh`, the files committed; the person adds the worktree; a session starts in it and
 * rewrites `.husky/_/pre-commit` (or `scripts/fmt.sh`) in place; it closes; the person runs `git
 * commit` (or `git fmt`) in the worktree. OBSERVED: the write succeeds and the person's git runs the
 * session's program: the marker holds `root`, both cases. Why: git-guard.ts `guardInto`, for a `.git`
 * file whose admin folder lies outside the workspace, binds the `.git` file and, only when the common
 * dir lies inside, the common dir's entries; otherwise it never reads the main repository's config,
 * so nothing that config names in the workspace is bound: a relative `core.hooksPath` and relative
 * programs resolve against the worktree's top, which is the workspace (the config itself is outside
 * and read-only, which is all round 11 checked), and the git audit skips such a workspace too. Fix for
 * the kind: for a `.git` file, read the configs git reads there (the common dir's `config`, the admin
 * folder's `config.worktree` when `extensions.worktreeConfig`, their includes) with the work tree's
 * top as the base, as `codeEntries` does for a git dir in the workspace, and bind and pin what they
 * name inside the workspace (`core.hooksPath` made when missing, programs, includes), whatever side of
 * the workspace the git dir is on.
 * The same, observed (marker `root` after the person's `git commit`), in two more layouts whose git dir
 * lies outside the workspace: a git dir kept apart (`git init --separate-git-dir`; a submodule's
 * `.git` file naming `<super>/.git/modules/<name>` takes the same path in `guardInto`) with
 * `core.hooksPath = hooks-dir`, and a monorepo whose package folder is the workspace (husky 9 set
 * up in `frontend/` writes `core.hooksPath = frontend/.husky/_`): `guardedGit` returns nothing when
 * the workspace's root holds no `.git`, though the person's git in that folder obeys the
 * repository's config above it. The fix above covers them if the configs are found as git finds
 * them from the workspace (`git rev-parse --git-dir --git-common-dir --show-toplevel`, run by the
 * worker with no repository code), not only through `<workspace>/.git`.
 * HELD since (OPEN_OUTSIDE false): git-guard.ts `guardOutside` finds the repository as git's discovery does (by
 * reading, `outsideRepo`) and reads its configs with the work tree's top as the base; more routes in
 * outside-git-dir.test.ts, which keeps one open: the audit does not watch a missing program there.
 *
 * Tried and held (one line each):
 * - held-binds.ts: a held folder deleted (nlink 0) and made again is re-held: a sibling must empty
 *   it first, and its held files (`commondir`, `gitdir`) then refuse the launch (ENOENT from the
 *   dead parent's descriptor): a denial of service only, which the module says.
 * - held-binds.ts: a held file re-held when another regular file is at its path: only a process in
 *   whose namespace it is no mount point can rename over it (the person's git, or a sibling started
 *   before the file existed, which can write it anyway): nothing beyond what that sibling has.
 * - a hard link to a guarded file from inside the sandbox: EXDEV/EROFS across the bind (read).
 * - sandbox.ts `resolvedPath` of the workspace at every launch (a bind by path): its ancestors are
 *   read-only to the session and the worker's run folders are hidden; only nested `--workdir`s of
 *   two runs (the operator's choice) let one run move the other's workspace (read, not tried).
 * - policy `matchRule` prefix rules: literal words only, every builtin classified (read).
 * - display.ts `displayCommand`, a sweep of every code point alone in `ls a?b` and `echo ?`: what
 *   passes unescaped is letters and digits of other scripts, and 18 combining marks after a blank
 *   (drawn over the blank, visibly); `mv א 1` (an RTL letter before a European number, which a
 *   terminal draws as `mv 1 א`), `mv ١ ٢`, `mv ا 1`, Syriac and NKo letters: all flagged and escaped.
 * - `core.hooksPath = .` (the work tree's top): `codeEntries` skips a hooks folder that is the
 *   workspace, so nothing is bound and `./pre-commit` is the session's (read, not tried; rare).
 * - husky 9's stubs in `.husky/_` (bound) run `.husky/<hook>`, tracked and not bound: the open class
 *   "what a program reads that no value names" (docs/security.md), husky's layout its most common
 *   instance (read, not reported as new).
 * - kind 2: `--network` refuses `::ffff:0:0/96` and slirp4netns runs without IPv6; TCP/UDP 53 to
 *   slirp's forwarder reaches only the host's resolver (read).
 * - the shell, exact runs and the editor's helper are spawned detached (setsid): no controlling
 *   terminal to inject into with TIOCSTI, though `dev.tty.legacy_tiocsti` is 1 here (read).
 * - an edit's diff and a checkpoint diff: every line prefixed (`+`, `-`, ` `), so file content
 *   cannot make an unprefixed `diff --git` or `@@` line; controls and bidi escaped (read).
 * - sandbox `none`: no git guard or audit at all there (session.ts records the baseline only under
 *   bwrap), which the guard's row in docs/security.md scopes to the sandbox (not reported).
 */
import * as fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { hostBash, personsRepo, plant } from './persons-repo';

/** Open on eda3e67, each test failing un-skipped (see the doc comment); the first kind is held since (the git audit's missing paths). */
const OPEN_MISSING = false;
/** Still open: the git dir outside the workspace (the second and third describes). */
const OPEN_OUTSIDE = false;

afterEach(closeSessions);
afterAll(removeTempDirs);

const isRoot = process.getuid?.() === 0;
const dRoot = isRoot ? describe : describe.skip;
const tMissing = OPEN_MISSING ? test.skip : test;
const t = OPEN_OUTSIDE ? test.skip : test;

dRoot("kind 6: a program the person's config names, missing when the session starts", () => {
  // `link`: a symlink at the named path, made by the person, to `file` (missing): the config names an existing link.
  const cases: { key: string; value: string; file: string; folder?: string; link?: string; run: string }[] = [
    { key: 'alias.lint', value: '!node_modules/.bin/eslint .', file: 'node_modules/.bin/eslint', run: 'git lint' },
    {
      key: 'credential.helper',
      value: '!scripts/cred.sh',
      file: 'scripts/cred.sh',
      folder: 'scripts',
      run: 'printf "protocol=https\\nhost=example.com\\n\\n" | GIT_TERMINAL_PROMPT=0 git credential fill',
    },
    { key: 'core.fsmonitor', value: 'tools/fsmon.sh', file: 'tools/fsmon.sh', run: 'git status --short' },
    { key: 'alias.fmt', value: '!./scripts/fmt.sh', file: 'build/fmt.sh', folder: 'scripts', link: 'scripts/fmt.sh', run: 'git fmt' },
  ];
  for (const { key, value, file, folder, link, run } of cases)
    tMissing(
      `${key} = ${value}, ${file} missing at start${link ? ` (${link} a link to it)` : ''}: the session cannot create what the person's \`${run.split('|').pop()!.trim()}\` runs`,
      async () => {
        const { ws, git, marker } = personsRepo();
        try {
          if (folder) fs.mkdirSync(path.join(ws, folder));
          if (link) fs.symlinkSync(path.relative(path.dirname(link), file), path.join(ws, link));
          git('config', key, value);
          const s = await startSession({ cwd: ws, workspace: ws });
          await s.run(`mkdir -p ${path.dirname(file)} && ${plant(marker, file)} && echo planted`);
          await s.close();
          hostBash(ws, run);
          // Safe: the session could not write it, or the worker took it away (quarantine) before the person's git ran.
          // On eda3e67 the marker holds `root`: the person's git ran the session's program as the person.
          expect(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : 'not run').toBe('not run');
        } finally {
          fs.rmSync(marker, { force: true });
        }
      },
    );
});

dRoot("kind 6: a workspace that is a linked worktree, and the programs the main repository's config names in it", () => {
  // The person's `git worktree add ../feature`, the run started there: the main repository (config, hooks) lies outside.
  const cases: { key: string; value: string; file: string; run: string }[] = [
    // husky 9 sets this in the main repository's config; git resolves it against the worktree's top, the workspace.
    { key: 'core.hooksPath', value: '.husky/_', file: '.husky/_/pre-commit', run: 'git commit -qm m --allow-empty' },
    { key: 'alias.fmt', value: '!./scripts/fmt.sh', file: 'scripts/fmt.sh', run: 'git fmt' },
  ];
  for (const { key, value, file, run } of cases)
    t(`${key} = ${value}: the session cannot rewrite ${file} of the worktree, which the person's \`${run}\` there runs`, async () => {
      const { ws: main, git, marker } = personsRepo();
      const ws = `${main}-wt`;
      try {
        fs.mkdirSync(path.join(main, path.dirname(file)), { recursive: true });
        fs.writeFileSync(path.join(main, file), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
        git('add', '-f', file);
        git('commit', '-qm', 'tools');
        git('config', key, value);
        git('config', 'user.name', 'p');
        git('config', 'user.email', 'p@example.com');
        git('worktree', 'add', '-q', ws, '-b', 'feature');
        const s = await startSession({ cwd: ws, workspace: ws });
        await s.run(plant(marker, file));
        await s.close();
        hostBash(ws, run);
        // On eda3e67 the marker holds `root`: the person's git in the worktree ran the session's program as the person.
        expect(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : 'not run').toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
        fs.rmSync(ws, { recursive: true, force: true });
      }
    });
});

dRoot('kind 6: other layouts whose git dir lies outside the workspace, and the hooks folder their config names in it', () => {
  // Each: the person's repository laid out so, `core.hooksPath` naming a folder inside the workspace; the session rewrites the hook.
  const cases: { what: string; layout: (main: string, git: (...a: string[]) => string) => { ws: string; hook: string } }[] = [
    {
      what: 'a monorepo whose package is the workspace (husky 9 in `frontend/`: core.hooksPath = frontend/.husky/_)',
      layout: (main, git) => {
        fs.mkdirSync(path.join(main, 'frontend', '.husky', '_'), { recursive: true });
        fs.writeFileSync(path.join(main, 'frontend', '.husky', '_', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
        git('config', 'core.hooksPath', 'frontend/.husky/_');
        return { ws: path.join(main, 'frontend'), hook: '.husky/_/pre-commit' };
      },
    },
    {
      what: 'a git dir kept apart (`git init --separate-git-dir`: `.git` is a file naming a folder outside)',
      layout: (main) => {
        const apart = `${main}-gitdir`;
        fs.renameSync(path.join(main, '.git'), apart);
        fs.writeFileSync(path.join(main, '.git'), `gitdir: ${apart}\n`);
        fs.mkdirSync(path.join(main, 'hooks-dir'));
        fs.writeFileSync(path.join(main, 'hooks-dir', 'pre-commit'), '#!/bin/sh\nexit 0\n', { mode: 0o755 });
        execGit(main, ['config', 'core.hooksPath', 'hooks-dir']);
        return { ws: main, hook: 'hooks-dir/pre-commit' };
      },
    },
  ];
  for (const { what, layout } of cases)
    t(`${what}: the session cannot rewrite the hook the person's \`git commit\` runs`, async () => {
      const { ws: main, git, marker } = personsRepo();
      const { ws, hook } = layout(main, git);
      try {
        const s = await startSession({ cwd: ws, workspace: ws });
        await s.run(plant(marker, hook));
        await s.close();
        hostBash(ws, 'git -c user.name=p -c user.email=p@example.com commit -qm m --allow-empty');
        expect(fs.existsSync(marker) ? fs.readFileSync(marker, 'utf8').trim() : 'not run').toBe('not run');
      } finally {
        fs.rmSync(marker, { force: true });
        fs.rmSync(`${main}-gitdir`, { recursive: true, force: true });
      }
    });
});

/** git as the person (root) in `cwd`. */
function execGit(cwd: string, args: string[]): void {
  spawnSync('git', args, { cwd, stdio: 'pipe' });
}
