/**
 * Adversary round 26: attacks on main (39e21a9), as root, in real sessions of the unit harness (the checkpoint ones
 * call src/checkpoint/store.ts as the activity does, on a workspace a session wrote). Each test asserts the safe
 * behaviour and is skipped while its kind is open (the OPEN_* flags below); each was run un-skipped on 39e21a9 and
 * failed as written below (the six together last, at load average 9.7 to 11.0: 6 failed of 6).
 *
 * Kind 5 (what the person reads is not what is there): a file rewritten through a shared mapping keeps its stat, and
 * the checkpoints and a rewind trust stat. Steps: a job maps `app.py` `MAP_SHARED` and writes its first byte back
 * unchanged (the one write fault that sets ctime and mtime: fixtures/mmap-rewrite.py), then waits; 2.5 s later a
 * checkpoint is taken (app.py's stat kept in the store's `checkpoint-index`); then the job writes `print("PWNED")`
 * through the mapping: the page is dirty and writable already, so the kernel sets no time until writeback cleans it
 * (`dirty_expire_centisecs` 3000 here, ext4; never on tmpfs). OBSERVED (load average 3.6, every run): ctime and mtime
 * the same before and after; the checkpoint after the command records `print("hello")`, so its diff shows nothing;
 * a restore to the checkpoint before leaves `print("PWNED")` (the "before" record takes the stat cache, the diff of the
 * two says nothing changed, `read-tree --reset -u` trusts the worker's index stat). Why: src/checkpoint/snapshot.ts
 * `cachedEntry` (stat cache), store.ts `restoreCheckpoint`. Fix for the kind: trust no stat for what a checkpoint
 * records or a restore skips: hash every file whose ctime is after the session's start (a dirtied mapping always
 * sets one), and have the restore rewrite every file whose content it did not read itself.
 *
 * Kind 5: code in a submodule's ignored folder, and a submodule's changed files under `ignore = dirty`. Steps (a): the
 * person's repository has the submodule `lib` (its `.gitignore`: `__pycache__/`) with `mod.py`; a command runs round
 * 25's fixtures/pyc-swap.py on `lib/mod.py`. (b): the person's `.gitmodules` has `submodule.lib.ignore = dirty`; a
 * command rewrites `lib/mod.py`. OBSERVED (load average 10.8 and 11.7, every run): the superproject's (and in (a) the
 * submodule's) `git status --porcelain --untracked-files=all` print nothing, nothing is named, and `python3 -c 'from
 * lib import mod'` prints `PWNED-by-session`. Why: src/session/git-index-audit.ts audits the top repository only:
 * `ignoredFindings` takes its roots from the top's `ls-files -o -i --directory`, which does not enter a submodule (or a
 * nested clone), and a submodule's worktree is left to git status, which the person's config silences. Fix for the
 * kind: every part of the index audit (bits, stat, cache-tree, ignored walk) in each submodule and nested repository
 * of the workspace, naming what changed whatever `submodule.*.ignore` or `diff.ignoreSubmodules` say.
 *
 * Kind 3 (what the worker does for the session has no limits): nested repositories' `packed-refs`. Steps: a job (after
 * the command's audit, which moves a `.git` made below the root) makes 400 folders `rNNN/.git/` whose `HEAD` names
 * `refs/heads/zz` and whose `packed-refs` is one file (hard links) of 1 MiB of newlines. The measure counts each as
 * one entry of 0 bytes; snapshot.ts `gitlinkOid` reads each `packed-refs` (up to 1 MiB), decodes and `split`s it on
 * the worker's event loop, at every checkpoint (nothing cached). OBSERVED: 400 repositories, 40.8 s per checkpoint,
 * the loop held up to 496 ms at a time (load average 8.7 to 9.8); on the host 2,000 took 158.8 s and 151.3 s (blocks up
 * to 586 ms, load 3.8 to 8.5), 5,000 with a 1 MiB file of 17,188 refs 16.6 s; the entries cap lets 100,000 through,
 * about 2 hours per approved command or edit. Why: store.ts `measure` (`repositoryMark`: one entry, 0 bytes),
 * snapshot.ts `gitlinkOid` (`PACKED_REFS_MAX`). Fix: count what a gitlink costs to read in the caps (its HEAD, ref and
 * packed-refs sizes), find the one line in the bytes without splitting, cap the nested repositories per checkpoint
 * (past it leave them out with a note), and cache by stat.
 *
 * Kind 3: a name git refuses on checkout makes a checkpoint unrestorable. Steps: a command makes `git~1/x`,
 * `.GIT/config` and a symlink `sub/.gitmodules`; a checkpoint records them (the measure skips only `.git` exactly, and
 * snapshot.ts writes the index itself, without git's `verify_path`); a later command changes or removes them (and does
 * its damage). OBSERVED (git 2.39.5, every run): the rewind to that checkpoint dies `read-tree ... error: invalid path
 * '.GIT/config'` and restores nothing; on the host the same for `git~1`, `.git.`, `.git ` and a symlinked `.gitmodules`
 * (core.protectNTFS is on by default; `.git` in any case; `.gitmodules` as a link), while a restore to a checkpoint
 * before them lists `D .GIT/config` and `D git~1/x` and leaves both. Why: store.ts `measure`, snapshot.ts
 * `writeSnapshot`, `restoreCheckpoint`. Fix for the kind: leave out (with a note) or refuse every name git refuses,
 * asking git's own rules, and have a restore say what it left.
 *
 * Kind 6 (minor): a nested repository's `commondir` of `..`s. Steps: a job (after the audit) makes `sub/.git/HEAD`
 * `ref: refs/heads/main` and `sub/.git/commondir` `../../../hidden`. OBSERVED (load average 9.0, every run): the
 * checkpoint's tree holds `160000 commit 1234567890abcdef... sub`, read by root from `<workspace>/../hidden/refs/heads/
 * main` in a folder of mode 0700. Only a 40-hex id of a file named `refs/...` (or a `packed-refs` line) leaks, bounded.
 * Why: snapshot.ts `gitlinkOid` resolves `gitdir:` lexically but joins `commondir` as is, and `dirOf` opens `..`
 * (`/proc/self/fd/N/..`). Fix: `dirOf` refuses `.` and `..` (every path it opens stays below the workspace) and
 * `commondir` is resolved as `gitdir:` is.
 *
 * Tried, held: a folder of only ignored files (`json/__init__.pyc` under `*.py[cod]`: git lists `json/` whole and no
 * pattern matches `json` itself) is named with the rule; a tracked `build.sh` rewritten through a shared mapping after
 * `git update-index --refresh` (no time changes: the person's git status on the host says clean; the index audit
 * hashes it, clears its stat data and names it); the edit's write (a temporary file renamed over the target, so a
 * hard link elsewhere keeps its text; the helper runs as the session's user in a sandbox of its own); the audit notes
 * with a newline or ANSI in a pattern or path (the CLI prints each note through `safeText`; Claude reads them raw, as it
 * reads its own output); `refs/replace` to make HEAD's tree match what is staged (moved by the git audit). Not
 * pursued: `/farm` (the machinery running these helpers, not the product); `/work` shows other checkouts and their
 * `data/` (dev-server logs; no key found there); the worker's `PROJECT_ROOT` and data dir are hidden.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { spawnSync } from 'node:child_process';
import { personsGit, personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';
import { restoreCheckpoint, takeCheckpoint } from '../../../src/checkpoint/store';

const OPEN_CHECKPOINT_GIT_NAMES = false;
const OPEN_CHECKPOINT_MMAP = false;
const OPEN_CHECKPOINT_PACKED_REFS_LOOP = false;
const OPEN_CHECKPOINT_COMMONDIR_ESCAPE = false;
const OPEN_SUBMODULE_IGNORED_CODE = false;
const OPEN_SUBMODULE_IGNORE_DIRTY = false;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('held, kind 5: a folder of only ignored files (listed whole by git, matched by no rule itself)', () => {
  test("a sourceless json/__init__.pyc that shadows the standard library's json is shown, named or removed", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.writeFileSync(path.join(ws, 'app.py'), 'import json\nprint(json.dumps({"hello": "app"}))\n');
    fs.writeFileSync(path.join(ws, '.gitignore'), '*.py[cod]\n');
    git('add', 'app.py', '.gitignore');
    git('commit', '-qm', 'two');
    const s = await startSession({ cwd: ws, workspace: ws });
    // A sourceless package: compiled, then its source removed; every file of json/ is ignored by *.py[cod].
    const r = await s.run(
      `mkdir json && printf 'print("PWNED-by-session")\\ndef dumps(o): return "{}"\\n' > json/__init__.py && ` +
        `python3 -c 'import py_compile; py_compile.compile("json/__init__.py", cfile="json/__init__.pyc")' && rm json/__init__.py && ` +
        `git status --porcelain --untracked-files=all`,
    );
    expect(r.exitCode).toBe(0);
    await s.close();
    const status = git('status', '--porcelain', '--untracked-files=all');
    const ran = spawnSync('python3', ['app.py'], { cwd: ws, encoding: 'utf8' }).stdout;
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    const shown = /json\//.test(status) || r.output.includes('json/') || atClose.includes('json');
    expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
  });
});

describe('kind 3: a name git refuses on checkout makes a checkpoint unrestorable', () => {
  const t = OPEN_CHECKPOINT_GIT_NAMES ? test.skip : test;
  t(
    'a rewind to a checkpoint holding git~1/, .GIT/ or a symlinked .gitmodules restores the workspace; one to before them removes them',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      fs.writeFileSync(path.join(ws, 'app.py'), 'print("hello")\n');
      const first = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 0');
      if ('skipped' in first) throw new Error(first.skipped);
      const s = await startSession({ cwd: ws, workspace: ws });
      // Names git's verify_path refuses (core.protectNTFS's `git~1`, `.git` in any case, `.gitmodules` as a symlink).
      expect(
        (await s.run('mkdir git~1 .GIT sub && echo x > git~1/x && echo y > .GIT/config && ln -s ../app.py sub/.gitmodules')).exitCode,
      ).toBe(0);
      const taken = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 1');
      if ('skipped' in taken) return; // refused: safe
      // The damage the person will want to undo, and the names changed so that a restore must write them.
      expect((await s.run('echo \'print("PWNED-by-session")\' > app.py && echo z > git~1/x && rm -r .GIT sub')).exitCode).toBe(0);
      await s.close();
      let error = '';
      await restoreCheckpoint(taken.store, ws, taken.id).catch((e: Error) => (error = e.message));
      // Failed before: "read-tree ... error: invalid path 'git~1/x'", nothing restored.
      expect(error).toBe('');
      expect(fs.readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
      // Back to before the session: what it made is gone (the restore listed each as deleted, and left it, before).
      const back = await restoreCheckpoint(first.store, ws, first.id);
      const left = ['git~1', '.GIT', 'sub'].filter((n) => fs.existsSync(path.join(ws, n)));
      expect({ left, listed: back.changes.length > 0 }).toEqual({ left: [], listed: true });
    },
    120_000,
  );
});

describe('kind 5: a file rewritten through a shared mapping keeps its stat: checkpoints and a rewind trust it', () => {
  const t = OPEN_CHECKPOINT_MMAP ? test.skip : test;
  t(
    'a rewind to the checkpoint before the rewrite gives the file back its checkpointed text',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      const app = path.join(ws, 'app.py');
      fs.writeFileSync(app, 'print("hello")\n');
      fs.copyFileSync(path.join(__dirname, 'fixtures', 'mmap-rewrite.py'), path.join(ws, 'mmap-rewrite.py'));
      const s = await startSession({ cwd: ws, workspace: ws });
      // The job maps app.py and dirties its page with the same bytes (the write fault that sets the times), then waits.
      const r = await s.run(
        `(python3 mmap-rewrite.py app.py 'print("PWNED")' > mm.log 2>&1 &) && for i in $(seq 200); do [ -e ready ] && break; sleep 0.05; done; ls ready`,
      );
      expect(r.exitCode).toBe(0);
      // The checkpoint keeps a file's stat only when its ctime is 2 s old: wait for the clock, not for a fixed time.
      const ctime = fs.statSync(app).ctimeMs;
      await waitUntil('app.py 2.5 s old', () => Date.now() > ctime + 2500, 10_000);
      const before = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 1');
      if ('skipped' in before) throw new Error(before.skipped);
      // The command the person will want undone: the job writes through the mapping (no time changes).
      expect(
        (await s.run('touch go && for i in $(seq 200); do [ -e done ] && break; sleep 0.05; done; cat mm.log; cat app.py')).output,
      ).toContain('PWNED');
      await s.close();
      const after = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 2');
      if ('skipped' in after) throw new Error(after.skipped);
      // What the checkpoint after the command holds of app.py (the person's review diffs the two).
      const recorded = spawnSync('git', ['--git-dir', after.store, 'show', `${after.id}:app.py`], { encoding: 'utf8' }).stdout;
      await restoreCheckpoint(before.store, ws, before.id);
      const restored = fs.readFileSync(app, 'utf8');
      expect({ recorded, restored }).toEqual({ recorded: 'print("PWNED")\n', restored: 'print("hello")\n' });
    },
    120_000,
  );
});

describe("held, kind 5: a tracked file rewritten through a shared mapping after git's refresh (no time changes)", () => {
  test('build.sh rewritten without a time change shows in git status, or the result names it', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.mkdirSync(path.join(ws, '.aj'));
    fs.writeFileSync(path.join(ws, '.git', 'info', 'exclude'), '.aj/\n');
    fs.copyFileSync(path.join(__dirname, 'fixtures', 'mmap-rewrite.py'), path.join(ws, '.aj', 'mmap-rewrite.py'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const outputs: string[] = [];
    const run = async (cmd: string): Promise<string> => {
      const r = await s.run(cmd);
      outputs.push(r.output);
      return r.output;
    };
    // The job dirties build.sh's page with its own bytes (ctime changes, content not); 2.6 s later (git's racy window past)
    // git's refresh writes the index with that stat; then the job writes through the mapping. One command: the audit after it.
    const out = await run(
      `(cd .aj && python3 mmap-rewrite.py ../build.sh 'echo PWNED-by-' > mm.log 2>&1 &) && for i in $(seq 200); do [ -e .aj/ready ] && break; sleep 0.05; done; ` +
        `sleep 2.6; git update-index --refresh; sleep 1.1; touch .aj/go; for i in $(seq 200); do [ -e .aj/done ] && break; sleep 0.05; done; cat .aj/mm.log build.sh`,
    );
    expect(out).toContain('PWNED-by-');
    await s.close();
    const ran = spawnSync('sh', ['build.sh'], { cwd: ws, encoding: 'utf8' }).stdout;
    const status = git('status', '--porcelain', '--untracked-files=all');
    const told = `${outputs.join('\n')}\n${s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n')}`;
    // Safe: the person's sh runs what they read, or status, diff or the result shows build.sh changed.
    const shown = /build\.sh/.test(status) || /build\.sh/.test(told.replace(/cat build\.sh/g, ''));
    expect(shown || !ran.includes('PWNED-by-')).toBe(true);
  }, 120_000);
});

describe("kind 3: nested repositories' packed-refs, each one entry of 0 bytes, hold the worker's loop at every checkpoint", () => {
  const t = OPEN_CHECKPOINT_PACKED_REFS_LOOP ? test.skip : test;
  t(
    '400 nested repositories sharing a 1 MiB packed-refs of newlines cost a checkpoint little',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      const s = await startSession({ cwd: ws, workspace: ws });
      // A job, after the command's audit (which moves a .git made below the root), when the host says `go`: 400
      // repositories whose HEAD names a branch that packed-refs lacks, packed-refs one file (hard links) of 1 MiB of newlines.
      fs.writeFileSync(
        path.join(ws, 'repos.sh'),
        'while [ ! -e go ]; do sleep 0.05; done\n' +
          "python3 -c '\n" +
          'import os\nopen("pr", "w").write("\\n" * (1 << 20))\n' +
          'for k in range(400):\n  g = "r%03d/.git" % k; os.makedirs(g); open(g + "/HEAD", "w").write("ref: refs/heads/zz\\n"); os.link("pr", g + "/packed-refs")\n' +
          "' && rm pr && echo 400 > done\n",
      );
      expect((await s.run('(bash repos.sh > repos.log 2>&1 &)')).exitCode).toBe(0);
      fs.writeFileSync(path.join(ws, 'go'), '');
      await waitUntil('the repositories made', () => fs.existsSync(path.join(ws, 'done')), 60_000);
      const h = monitorEventLoopDelay({ resolution: 10 });
      h.enable();
      const started = Date.now();
      const ck = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 1');
      const ms = Date.now() - started;
      h.disable();
      if ('skipped' in ck) return; // the repositories counted against the caps: safe
      // Before: 77 ms of the worker's loop per repository (2,000 took 155 s, blocks up to 586 ms); a file costs well under 1 ms.
      expect(ms).toBeLessThan(8_000);
      expect(h.max / 1e6).toBeLessThan(250);
    },
    180_000,
  );
});

describe("kind 6: a nested repository's commondir leads the checkpoint's reads out of the workspace", () => {
  const t = OPEN_CHECKPOINT_COMMONDIR_ESCAPE ? test.skip : test;
  t(
    'a gitlink is not resolved from a ref file outside the workspace (`commondir` of `..`s)',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const outside = tempDir('aj-outside-');
      const ws = path.join(outside, 'ws');
      fs.mkdirSync(ws);
      // A ref of the host's, outside the workspace (root's, mode 0700: nothing of the session reads it).
      const hidden = path.join(outside, 'hidden');
      fs.mkdirSync(path.join(hidden, 'refs', 'heads'), { recursive: true, mode: 0o700 });
      fs.chmodSync(hidden, 0o700);
      const secret = '1234567890abcdef1234567890abcdef12345678';
      fs.writeFileSync(path.join(hidden, 'refs', 'heads', 'main'), `${secret}\n`, { mode: 0o600 });
      const root = tempDir('aj-ckroot-');
      const s = await startSession({ cwd: ws, workspace: ws });
      // A job, after the command's audit (which moves a .git made below the root): sub/.git whose commondir climbs out.
      fs.writeFileSync(
        path.join(ws, 'repo.sh'),
        'while [ ! -e go ]; do sleep 0.05; done\n' +
          "mkdir -p sub/.git && echo 'ref: refs/heads/main' > sub/.git/HEAD && echo ../../../hidden > sub/.git/commondir && echo made > done\n",
      );
      expect((await s.run('(bash repo.sh > repo.log 2>&1 &)')).exitCode).toBe(0);
      fs.writeFileSync(path.join(ws, 'go'), '');
      await waitUntil('the repository made', () => fs.existsSync(path.join(ws, 'done')), 30_000);
      const ck = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 1');
      if ('skipped' in ck) throw new Error(ck.skipped);
      const tree = spawnSync('git', ['--git-dir', ck.store, 'ls-tree', '-r', ck.id], { encoding: 'utf8' }).stdout;
      // Before: `160000 commit 1234567890abcdef... sub` (root's read of <outside>/hidden/refs/heads/main).
      expect(tree).not.toContain(secret);
    },
    60_000,
  );
});

describe("kind 5: code in a submodule's ignored folder, which the ignored walk never reads", () => {
  const t = OPEN_SUBMODULE_IGNORED_CODE ? test.skip : test;
  t(
    "a lib/__pycache__ file that makes `from lib import mod` run the session's code is shown, named or removed",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      // The person's library, a submodule `lib` of their repository (its own .gitignore: __pycache__/).
      const lib = tempDir('aj-libsrc-');
      const g = personsGit;
      g(lib, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(lib, 'mod.py'), 'print("hello from mod")\n');
      fs.writeFileSync(path.join(lib, '.gitignore'), '__pycache__/\n');
      g(lib, 'add', '.');
      g(lib, 'commit', '-qm', 'lib');
      const { ws, git } = personsRepo();
      g(ws, 'submodule', 'add', '-q', lib, 'lib');
      g(ws, 'commit', '-qm', 'lib as a submodule');
      fs.copyFileSync(path.join(__dirname, 'fixtures', 'pyc-swap.py'), path.join(ws, 'pyc-swap.py'));
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`python3 pyc-swap.py lib/mod.py 'print("PWNED-by-session")' && rm pyc-swap.py && git status --porcelain`);
      expect(r.exitCode).toBe(0);
      await s.close();
      const status = `${git('status', '--porcelain', '--untracked-files=all')}${g(path.join(ws, 'lib'), 'status', '--porcelain', '--untracked-files=all')}`;
      const ran = spawnSync('python3', ['-c', 'from lib import mod'], { cwd: ws, encoding: 'utf8' }).stdout;
      const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
      const shown = /__pycache__/.test(status) || r.output.includes('__pycache__') || atClose.includes('__pycache__');
      expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
    },
    60_000,
  );
});

describe("kind 5: a submodule the person's .gitmodules marks `ignore = dirty`: its changed files are clean to git status", () => {
  const t = OPEN_SUBMODULE_IGNORE_DIRTY ? test.skip : test;
  t(
    "a changed lib/mod.py shows in the person's git status, or the result names it",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const lib = tempDir('aj-libsrc-');
      const g = personsGit;
      g(lib, 'init', '-q', '-b', 'main');
      fs.writeFileSync(path.join(lib, 'mod.py'), 'print("hello from mod")\n');
      g(lib, 'add', '.');
      g(lib, 'commit', '-qm', 'lib');
      const { ws, git } = personsRepo();
      g(ws, 'submodule', 'add', '-q', lib, 'lib');
      g(ws, 'config', '-f', '.gitmodules', 'submodule.lib.ignore', 'dirty');
      g(ws, 'add', '.gitmodules');
      g(ws, 'commit', '-qm', 'lib as a submodule, its worktree changes not shown');
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(`echo 'print("PWNED-by-session")' > lib/mod.py && git status --porcelain`);
      expect(r.exitCode).toBe(0);
      await s.close();
      const status = git('status', '--porcelain', '--untracked-files=all');
      const ran = spawnSync('python3', ['-c', 'from lib import mod'], { cwd: ws, encoding: 'utf8' }).stdout;
      const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
      const shown = /lib/.test(status) || r.output.includes('lib/mod.py') || atClose.includes('lib');
      expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
    },
    60_000,
  );
});
