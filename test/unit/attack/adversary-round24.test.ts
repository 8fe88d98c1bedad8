/**
 * Adversary round 24: attacks on main (6834580), as root, in real sessions of the unit harness.
 * Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped once on 6834580 and failed as written below.
 *
 * Kind 5 (what the person reads is not what is there), with kind 6 (the person's git): the index's
 * per-entry bits hide the session's changes from the review docs/security.md asks for. Steps: in a run
 * on the person's repository (bwrap, as root; the session user is `agent-jobs`), a command runs
 * `git update-index --skip-worktree Makefile .gitignore` (the index is writable in the session, as
 * `git add` needs), rewrites `Makefile` so that `make test` runs the session's code, appends
 * `conftest.py` to `.gitignore` and writes `conftest.py` (pytest imports it unasked). OBSERVED (load
 * average about 25, every run): after the session closed, the person's `git status --porcelain
 * --untracked-files=all` on the host prints nothing, `git diff` nothing, `git ls-files -v` shows `S
 * Makefile` and `S .gitignore`, and the person's `make test` prints `PWNED-by-session`; no result
 * says anything. `--assume-unchanged` (the `h` bit) hides `Makefile` the same way, and so does no bit
 * at all: the session renames new files into place, sets their mtime back (`touch -d`, so that git does
 * not take them for racily clean) and writes the index's stat data of both entries as the new files'
 * (fixtures/index-stat.py: ctime, mtime, device, inode, uid, gid, size; object ids kept; the index's
 * checksum recomputed): `git ls-files -v` shows `H` for both, `git status` and `git diff` nothing. docs/security.md
 * tells the person to "look at `git status`, `git log origin/main..main` and
 * `.git/agent-jobs-quarantine/` before pushing": that review reads a clean tree. Why: the git audit
 * (src/session/git-audit.ts) guards the code git runs and the refs that change what it runs; it never
 * compares the index's skip-worktree and assume-unchanged bits (nor its untracked-cache and
 * fsmonitor extensions) with the start. Fix for the kind: at each audit and at close, compare those
 * bits and extensions with a baseline taken at start; clear what the session set (the worker's git,
 * hooks and config off, as the audit's other git calls) and name the paths in the result, so that the
 * person's `git status` shows the change again; since forged stat data needs no bit, also drop the
 * index's stat data of every entry at close (git then hashes each file: `git update-index
 * --really-refresh` in a copy, or clear the cached stat) or compare content, not stat.
 * Fixed since: the git audit (after each command and edit, and at close) clears the skip-worktree and
 * assume-unchanged bits the session set, and gives empty stat data to every entry whose file changed
 * after the session started (its ctime, which no process of the session can set back) while the
 * index's stat data say unchanged and the content is not the entry's object (hashed by the worker); an
 * untracked cache or fsmonitor extension is dropped; each path is named in the result
 * (src/session/git-index-audit.ts; index-audit.test.ts holds the attacks on the fix). The test runs.
 *
 * Kind 5, the same review without any git command: a new folder's `.gitignore` that ignores itself.
 * Steps: the session writes `tests/.gitignore` holding `.gitignore` and `conftest.py`, then
 * `tests/conftest.py` (pytest imports every conftest.py it meets, whatever git ignores). OBSERVED
 * (load average about 25): the person's `git status --porcelain --untracked-files=all` on the host
 * prints nothing; the result says nothing. Why: an ignore file can ignore itself, so whatever the
 * session adds under a new folder, and the ignore file, stay out of `git status`; the audit looks for
 * code git runs, not for what the person's review will not show. Fix (the kind above): at close, list
 * for the person the files the session created or changed that `git status` does not show (ignored
 * by an ignore file the session wrote, or hidden by the index's bits), or make the review the docs
 * ask for one that shows them (`git status --ignored` on what the run touched).
 * Fixed since: the git audit names in the result each file or folder the session made or changed that
 * is ignored by a rule the session wrote (`git check-ignore -v` gives the rule's file and line; a rule
 * is the session's when its file changed during the session and the line was not in it at start), once
 * per change and all again at close; files ignored by the person's own rules are not named
 * (src/session/git-index-audit.ts). The test runs.
 *
 * Kind 4 (what a rule approves): the program of a rule is looked up on the worker's PATH as it is,
 * relative entries included. Steps: a worker whose PATH holds a relative or empty entry (a Dockerfile's
 * `ENV PATH=node_modules/.bin:$PATH`, a service file's `PATH=:/usr/bin:/bin`, `PATH=$PATH:$EXTRA` with
 * `EXTRA` unset gives a trailing empty entry); a job or an earlier command writes `node_modules/.bin/git`
 * (or `./git`); the person's rule for `git status` (or `npm test`, any program) then lets the command
 * run in the shell unasked. OBSERVED (load average about 25): with `node_modules/.bin:/usr/bin:/bin`,
 * `:/usr/bin:/bin` and `.:/usr/bin:/bin`, `git --version` in the session prints
 * `FAKE-GIT-from-the-workspace`. Why: src/session/env.ts `buildSessionEnv` keeps the worker's PATH
 * whole, and bash searches a relative or empty entry from its current directory, the workspace; exact
 * runs look programs up in /usr/bin and /bin only (session.ts `runExact`), rules in the shell do not.
 * Fix: the session's PATH keeps only absolute entries that lie outside every writable path of the
 * session (drop `.`, empty and relative entries, and any entry inside the workspace or /tmp), and a
 * rule's program is resolved on that PATH when it is matched.
 * Fixed since: the shell's PATH keeps only absolute folders outside the workspace, /tmp, /var/tmp and
 * /dev/shm (src/session/env.ts `sessionSearchPath`); the test runs.
 *
 * Kind 3 (what runs without a person has no limits): the workspace checkpoint before an edit. Steps: a
 * job of the session makes 200,000 empty files (200 folders of 1,000, 100-character names: 0 bytes,
 * far under the checkpoint's 1 GiB cap); the model then asks for any `str_replace` or `create`. The
 * `runEdit` activity (src/activities/session.ts) takes the workspace checkpoint before the edit's gate,
 * so before any person is asked (commands take theirs only once approved), and every later edit
 * request takes another. OBSERVED (load average 33 to 35, from this harness's `takeCheckpoint`): the
 * checkpoint is taken (200,000 files), root's confined `git add -A` ran 37 s the first time and 87 s
 * the next after a job renamed the folders (the private index rewritten whole), outside the session's
 * cgroups and limits; the test's run took 151 s with making the files (20 s at load average 13, in the
 * last un-skipped run). Up to the confined timeout (10
 * minutes) of the worker's CPU and memory per edit request, repeated at will, with nothing a person
 * decided. Why: src/checkpoint/store.ts `measure` caps bytes only (`DEFAULT_CHECKPOINT_MAX_BYTES`),
 * counts files but bounds nothing by them, and `runConfined` runs git as root in no cgroup of the
 * session. Fix for the kind: bound a checkpoint by what it costs (files and folders as well as bytes,
 * skipped with a reason past a cap), run its git in the session's cgroups with the session's limits,
 * and take the edit's checkpoint only once the edit is approved (as commands do).
 * Fixed since: a checkpoint is skipped with a reason past 100,000 entries (files, symlinks and folders:
 * src/checkpoint/store.ts `DEFAULT_CHECKPOINT_MAX_ENTRIES`), measured as a stream that stops at the cap;
 * root's git records exactly the paths measured (`update-index --stdin`, no walk of its own), so a folder
 * renamed in after the measure costs nothing; an edit's checkpoint is taken once the edit may be written
 * (src/activities/session.ts `runEdit`), none while a person decides. The checkpoint's git still runs
 * outside the session's cgroups, bounded by the cap. The test runs.
 *
 * Kind 3 (and 6): the unified diff of an edit is computed on the worker's event loop, before any
 * person is asked, with no bound but the editor's 10 MiB read. Steps: a command or job writes
 * `big.txt`, 10 MiB of `x` lines (5,242,880 lines); the model asks for `create big.txt` with `y`.
 * `performEdit` (src/session/edit.ts) calls `planDiff` before the gate; src/session/edit-diff.ts
 * `editScript` runs Myers up to `MAX_DIFF_STEPS` (4,000 steps, a 32 KB trace copied per step), then
 * builds the whole middle as removed lines, and `unifiedDiff` spreads the hunk's 5 million lines into
 * `out.push(...)`. OBSERVED: the worker's event loop held 10.5 s (load average 12; 7.1 s at 13; 5.1 s to 16.5 s in
 * other runs at load 23 to 25, from a histogram and from `unifiedDiff` timed alone), then `RangeError:
 * Maximum call stack size exceeded`, so the edit answers "could not be made" and `BashSession.edit`
 * skips its memory note and git audit. Meanwhile every session of the worker waits: commands' results,
 * heartbeats, and the missing-path watch (git-audit.ts `watchMissing`), whose documented window is
 * "longer only while the worker's event loop is blocked": here the session holds it open at will, by
 * repeating the request. A file of more than about 120,000 changed lines can never be edited either
 * (the spread). A `view` of the same file, which runs unasked under `policy`, held the loop 2.5 s
 * (load average 16, measured with a timer's largest gap; no test of its own, the same fix covers it).
 * Fix for the kind: no work on the worker's loop that the session sizes: cap the diff
 * (lines and steps, a hunk shown as "N lines removed" past a bound, no spread of arrays), or compute
 * it in the helper's process under the session's limits; the edit's audit in a `finally`.
 * Fixed since: the diff finds the common head and tail by comparing characters (no array of the
 * file's lines), splits and searches only a changed middle whose sides are within 50,000 lines and
 * 1,000,000 characters, stops the search at 4,000 steps or 20,000,000 units of work, and shows a side
 * past its bound as one summary line (its lines, characters and SHA-256); added lines a summary stands
 * for are never put to a person (src/session/edit-diff.ts `editDiff`, edit.ts `performEdit`). A `view`
 * and an `insert` scan the file without splitting it (edit.ts `viewFile`, `planEdit`). The edit's git
 * audit runs in a `finally` (session.ts `BashSession.edit`). Measured in a real session (load average
 * 12 to 14): the `create` held the loop 10.7 and 11.0 s and threw before, 343 and 348 ms after (the
 * person asked, a 298-character diff); the `view` 2.7 and 4.2 s before, 258 and 260 ms after. The
 * test runs; attackers' variants in test/unit/attack/edit-diff-bounds.test.ts.
 *
 * Tried, held: every plain builtin of src/policy/builtins.ts with `'a[$(touch F)]'` and `'$(touch F)'`
 * words in real bash 5.2.15 (`dirs +W`, `kill -l W`, `kill -s W`, `kill -n W`, `kill %W`, `caller W`,
 * `wait %W`, `jobs %W`, `type W`, `help W`, `printf` with `%d %i %u %x %o %e %f %g %a %c %b %q %s %*d
 * %.*s %(..)T`, `test 1 -eq W`, `[ 1 -lt W`, `echo`, `pwd -L`, `:`, `true`): nothing ran. A bare
 * repository made in a subfolder (`git init --bare docs/x` with `core.pager`): moved to the quarantine
 * by the command's audit, the person's `git -p log` there found no repository. The sandbox's view
 * (`/run` empty, no capabilities, seccomp mode 2, no_new_privs); a `--network` session's DNS is
 * 10.0.2.3 port 53 only (read in network.ts, not run). The transcript's layout (notes at column 2,
 * headings at 0, output at 4, Claude's words hanging at 8): no way found for output or words to pass
 * for a heading or a note. The fence write under a writer that keeps the FIFO full gives up after
 * `FENCE_WRITE_MS` (read). A diff of model-sized texts (20,000 against 10,000 lines: 0.8 s) is bounded
 * by `MAX_DIFF_STEPS`; only a file the session made large is not (F5 above). Noticed, not pursued: a
 * session lists every other session's cgroup names and `cgroup.procs` under `/sys/fs/cgroup` (host
 * pids of other runs' processes; the root is bound read-only whole).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { personsRepo } from './persons-repo';
import { DEFAULT_CHECKPOINT_MAX_BYTES } from '../../../src/contract/checkpoint';
import { takeCheckpoint } from '../../../src/checkpoint/store';
import { editRuleSubject } from '../../../src/contract/text-editor';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

const OPEN_INDEX_BITS = false;
const OPEN_SELF_IGNORED = false;
const OPEN_RELATIVE_PATH = false;
const OPEN_CHECKPOINT_FILES = false;
const OPEN_EDIT_DIFF = false;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe("kind 5: the index's bits hide what the session changed from the person's git status", () => {
  const t = OPEN_INDEX_BITS ? test.skip : test;
  const rewrite = `printf 'test:\\n\\techo PWNED-by-session\\n' > Makefile && echo conftest.py >> .gitignore && echo 'import os' > conftest.py && rm -f index-stat.py`;
  t.each([
    { how: 'git update-index --skip-worktree', hide: `git update-index --skip-worktree Makefile .gitignore && ${rewrite}` },
    { how: 'git update-index --assume-unchanged', hide: `git update-index --assume-unchanged Makefile .gitignore && ${rewrite}` },
    {
      // No bit at all: the index's stat data of both entries made the new files' (their mtime set back, so git does not
      // take them for racily clean), the object ids kept; `git ls-files -v` shows `H`, as for any file.
      how: 'forged stat data in the index',
      // The files are made anew (renamed into place), so that the session user owns them and may set their times.
      hide:
        `printf 'test:\\n\\techo PWNED-by-session\\n' > m.new && mv m.new Makefile && cp .gitignore g.new && echo conftest.py >> g.new && ` +
        `mv g.new .gitignore && echo 'import os' > conftest.py && touch -d @1600000000 Makefile .gitignore && python3 index-stat.py .git/index Makefile Makefile && python3 index-stat.py .git/index .gitignore .gitignore && rm index-stat.py`,
    },
  ])('after $how, the person still sees the changed Makefile and the new conftest.py', async ({ hide }) => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.writeFileSync(path.join(ws, 'Makefile'), 'test:\n\techo testing\n');
    fs.writeFileSync(path.join(ws, '.gitignore'), 'node_modules/\n');
    git('add', 'Makefile', '.gitignore');
    git('commit', '-qm', 'two');
    fs.copyFileSync(path.join(__dirname, 'fixtures', 'index-stat.py'), path.join(ws, 'index-stat.py'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(hide);
    expect(r.exitCode).toBe(0);
    await s.close();
    // The attack took: the files on disk are the session's.
    expect(spawnSync('make', ['-s', 'test'], { cwd: ws, encoding: 'utf8' }).stdout).toContain('PWNED-by-session');
    expect(fs.existsSync(path.join(ws, 'conftest.py'))).toBe(true);
    // The person's review, on the host, as the docs ask for it.
    const status = git('status', '--porcelain', '--untracked-files=all');
    expect(status).toMatch(/^ M Makefile$/m);
    expect(status).toMatch(/conftest\.py|\.gitignore/);
    expect(git('diff')).toContain('PWNED-by-session');
  });
});

describe("kind 5: a folder whose new .gitignore ignores itself hides a conftest.py from the person's git status", () => {
  const t = OPEN_SELF_IGNORED ? test.skip : test;
  t('a new tests/conftest.py is shown to the person, by git status or by the result', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'tests'));
    fs.writeFileSync(path.join(ws, 'tests', 'test_a.py'), 'def test_a():\n    assert True\n');
    git('add', 'tests/test_a.py');
    git('commit', '-qm', 'two');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`printf '.gitignore\\nconftest.py\\n' > tests/.gitignore && echo 'import os' > tests/conftest.py`);
    expect(r.exitCode).toBe(0);
    await s.close();
    expect(fs.readFileSync(path.join(ws, 'tests', 'conftest.py'), 'utf8')).toContain('import os');
    const status = git('status', '--porcelain', '--untracked-files=all');
    if (!status.includes('conftest.py')) expect(r.output).toContain('tests/conftest.py');
  });
});

describe("kind 4: an approval rule's program found through a relative entry of the worker's PATH", () => {
  const t = OPEN_RELATIVE_PATH ? test.skip : test;
  t.each(['node_modules/.bin:/usr/bin:/bin', ':/usr/bin:/bin', '.:/usr/bin:/bin'])(
    'with the worker PATH %j, `git --version` in the shell runs the system git, not the workspace file',
    async (workerPath) => {
      const ws = tempDir();
      // The worker's own PATH, as its service or image set it.
      const saved = process.env.PATH;
      process.env.PATH = workerPath;
      let s: Awaited<ReturnType<typeof startSession>>;
      try {
        s = await startSession({ cwd: ws, workspace: ws });
      } finally {
        process.env.PATH = saved;
      }
      const plantGit = await s.run(
        `mkdir -p node_modules/.bin && printf '#!/bin/sh\\necho FAKE-GIT-from-the-workspace\\n' > node_modules/.bin/git && ` +
          `cp node_modules/.bin/git git && chmod +x node_modules/.bin/git git`,
      );
      expect(plantGit.exitCode).toBe(0);
      // What a rule `git --version` (or `git status`) lets run unasked in the session shell.
      const r = await s.run('git --version');
      expect(r.output).not.toContain('FAKE-GIT');
      expect(r.output).toMatch(/^git version/m);
    },
  );
});

describe('kind 3: the checkpoint before an edit (no person asked yet) is bounded by bytes only', () => {
  const t = OPEN_CHECKPOINT_FILES ? test.skip : test;
  t(
    "a workspace of 200,000 empty files (0 bytes) gets no checkpoint of root's git",
    async () => {
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      // What a job of the session makes in seconds: 200 folders of 1,000 empty files with 100-character names.
      const made = spawnSync(
        'python3',
        [
          '-c',
          'import os,sys\nfor d in range(200):\n  p=os.path.join(sys.argv[1],"d%d"%d); os.mkdir(p)\n  for i in range(1000): open(os.path.join(p,"n"*100+str(i)),"w").close()',
          ws,
        ],
        { stdio: 'pipe' },
      );
      expect(made.status).toBe(0);
      const started = Date.now();
      const r = await takeCheckpoint(root, ws, { maxBytes: DEFAULT_CHECKPOINT_MAX_BYTES }, 'turn 1');
      expect('skipped' in r ? r.skipped : `taken: ${r.files} files`).toMatch(/more than 100000 files and folders/);
      // No store was written: root's git never ran.
      expect(fs.readdirSync(root)).toEqual([]);
      // The measure stops at the cap: seconds, not the 37 s and more of root's git (a bound far above it on a loaded machine).
      expect(Date.now() - started).toBeLessThan(60_000);
    },
    // Making the files took 20 s at load average 13 and about 100 s at 33; the measure adds seconds.
    300_000,
  );
});

describe("kind 3 (and 6): the diff of an edit, computed on the worker's event loop before anyone is asked", () => {
  const t = OPEN_EDIT_DIFF ? test.skip : test;
  t(
    'a `create` over a 10 MiB file of short lines gets an answer, and the worker is not held',
    async () => {
      const ws = tempDir();
      const s = await startSession({ cwd: ws, workspace: ws });
      // What a job of the session writes: 10 MiB (the editor's read cap) of two-byte lines.
      const made = await s.run(`python3 -c 'open("big.txt","w").write("x\\n"*(5*1024*1024))'`);
      expect(made.exitCode).toBe(0);
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      let outcome: Awaited<ReturnType<typeof s.edit>> | undefined;
      let thrown: unknown;
      try {
        // The gate asks a person: what it is handed is the diff; nothing is written.
        outcome = await s.edit({ command: 'create', path: 'big.txt', fileText: 'y\n' }, () => ({ ask: 'a person decides' }), {
          maxCharacters: 100_000,
          ruleSubject: editRuleSubject,
        });
      } catch (err) {
        thrown = err;
      }
      // One turn of the timer phase, so that the histogram's own timer records the delay of a block that just ended.
      await new Promise((r) => setTimeout(r, 20));
      delay.disable();
      // Every session of the worker, the missing-path watch and the heartbeats wait while the loop is held: 5 to 16 s here
      // before. A bound of seconds, far above what bounded work takes on a loaded machine.
      expect(delay.max / 1e6).toBeLessThan(2_000);
      expect(thrown === undefined ? 'answered' : thrown instanceof Error ? thrown.message : 'thrown').toBe('answered');
      expect(outcome?.needsApproval !== undefined || outcome?.isError === true).toBe(true);
    },
    120_000,
  );
});
