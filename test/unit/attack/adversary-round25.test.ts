/**
 * Adversary round 25: attacks on main (5909064), as root, in real sessions of the unit harness.
 * Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags
 * below); each was run un-skipped on 5909064 and failed as written below (the eight together last, at load average 7.7 to 9.2: 8 failed of 8).
 *
 * Fixed since, their flags false: the cache-tree (git-index-audit.ts `checkCacheTree`), the index audit on the
 * worker's loop (`MAX_INDEX_ENTRIES`, parsing that yields, entries read again only when the index changed), the
 * sweep's listing (git-audit.ts `folderNames`: at most 20,000 names, again only when the folder changed; the sweep
 * test makes 200,000 files now, 600,000 when found); the checkpoint's reads (src/checkpoint/snapshot.ts: the worker
 * reads each measured file, at most its measured size, into one `git fast-import`, and a nested repository's HEAD
 * itself, bounded, so no git process of a checkpoint opens a workspace file or resolves a nested repository's refs);
 * code under the person's own ignore rules (src/session/ignored-walk.ts: bytecode the session wrote is removed, what
 * else it made or changed under ignored folders is named); the edit's path (src/session/edit.ts: the review names where
 * a path through a symlink writes, so the approval's hash binds it, and the helper writes walking the path without
 * following a symlink, refusing one the review did not show). Every kind of round 25 is fixed: no flag is true.
 *
 * Kind 5 (what the person reads is not what is there): the index's cache-tree (its `TREE` extension)
 * hides staged changes. Steps: in a run on the person's repository, a command stages the session's
 * `scripts/build.sh` (which `make test` runs) and a new `scripts/conftest.py` (`git add scripts`: the
 * worktree then matches the index, so the index audit's stat and content check finds every entry
 * holding its object), then rewrites the index's `TREE` extension to say the folder `scripts` is
 * HEAD's tree with 2 entries (fixtures/index-cache-tree.py: the extension replaced, EOIE/IEOT dropped, the
 * checksum recomputed). git's `diff-index --cached`, which `git status` runs, skips a folder whose
 * cache-tree node is valid and names the same tree as HEAD (unpack-trees.c
 * `cache_tree_matches_traversal`). OBSERVED (load average 2.7 to 3.1, git 2.39.5, every run): after
 * close, the person's `git status --porcelain --untracked-files=all` prints nothing, `git diff HEAD`
 * nothing, neither the result nor `gitFindingsAtClose` names a path, and `make test` prints
 * `PWNED-by-session`. Why: src/session/git-index-audit.ts checks the untracked cache and fsmonitor
 * extensions only (`hasCacheExtension`, `dropCaches`). Fix for the kind: keep only the index
 * extensions git needs to read the index and drop or verify every one git trusts instead of reading
 * files or trees (the cache-tree at each audit; `sdir` and the split index with it), and name what the
 * session staged against HEAD (`git diff-index --cached HEAD` once the cache-tree is dropped).
 *
 * Kind 5, without any index trick: code the person runs, where the person's own ignore rule hides it.
 * Steps: the person's repository holds `app.py` and a `.gitignore` with `__pycache__/` (GitHub's Python
 * template); a command writes `__pycache__/app.cpython-311.pyc` compiled from the session's code with
 * the header's source mtime and size set to `app.py`'s (fixtures/pyc-swap.py), which Python's default
 * check compares; `app.py` is untouched. OBSERVED (load average 2.6, every run): the person's `git
 * status` prints nothing, `app.py` reads as committed, nothing is named, and `python3 -c 'import app'`
 * prints `PWNED-by-session`. The same kind: `node_modules/.bin/<tool>` for `npm test`, a `.pth` or
 * `bin/activate` in `.venv/` (not run). Why: git-index-audit.ts `selfIgnored` names only what a rule
 * of the session's ignores; "files ignored by the person's own rules (node_modules) are not named".
 * Fix for the kind: at close drop the bytecode caches the session wrote (Python rebuilds them), and name
 * (count and list the entry points of) what it changed under the person's ignored folders.
 *
 * Kind 5: an approved edit is written where a folder of its path, made a symlink after the review,
 * leads. Steps (a): a job waits; the model asks `create docs/deploy.yml` (a GitHub Actions workflow);
 * under `policy` the person is asked with `+++ b<ws>/docs/deploy.yml`, no symlink on the way then;
 * while the person decides the job runs `mkdir -p .github/workflows && ln -s .github/workflows docs`;
 * the person approves and the run re-runs the edit with the approved hash: the new read finds no file
 * through the link, the diff is the same text (its header names the lexical path), the hash matches,
 * and the helper writes through the link. (b): an exact rule for `create <ws>/docs/notes.md`; a job
 * (fixtures/on-open.py) waits with inotify until root's checkpoint git opens a file (the measure only
 * lstats, so the first open is git's), then swaps `docs` for the same link; `viaSymlink` was taken
 * before the edit's checkpoint (`beforeWrite`), so the rule applied and the write follows the link.
 * OBSERVED (load average 3 and 6.2, every run): `applied: true` ("Successfully created file
 * <ws>/docs/...") and the file in `.github/workflows/`. Why: src/activities/session.ts `editGate`
 * applies an approved hash whatever `viaSymlink` is now; src/session/edit.ts `performEdit` checks
 * `viaSymlink` before `beforeWrite`; the helper's `write` follows links inside the workspace. Fix for
 * the kind: bind the approval and the rule to the real path: the helper refuses a symlink on the way
 * that the gate did not see, walking with `O_NOFOLLOW` after `beforeWrite`, and the review names the
 * real path (so its hash changes when the path leads elsewhere).
 *
 * Kind 3 (what the worker does for the session has no limits): a checkpoint records what a job grows
 * after the measure. Steps: the session makes `a`, 500 small files and an empty `zzz`, and a job
 * (fixtures/on-open.py) waits with inotify until root's checkpoint git opens `a`, then `truncate
 * -s`es `zzz` to a sparse size; git, reaching `zzz` later in its sorted list, reads it whole. OBSERVED:
 * with a 1 MiB cap the checkpoint measures 3,081 bytes and its tree holds a 64 MiB `zzz`;
 * on the host with the default 1 GiB cap and `zzz` grown to 20 GiB (load average 2.1 to 3.3) the
 * checkpoint took 134 s of root's git and succeeded (`bytes: 3081`); a file of 90 GiB or more holds it
 * until the 10-minute confined timeout, per approved command or edit, outside the session's cgroup.
 * docs/rewind.md lists "a job making every checkpoint fail or grow (a symlink to `/dev/zero`)" as a
 * race left open; this one needs no race and no symlink. Why: src/checkpoint/store.ts `measure` lstats,
 * then `writeListed` hands the paths to `git update-index --add --stdin`, which reads each file as it
 * is then. Fix for the kind: what root's git reads is bounded by what was measured: hash in the worker
 * up to each measured size (refusing a file whose size changed) and feed `update-index --index-info`,
 * or check the tree's blob sizes against the cap, and run the checkpoint's git under the session's
 * cgroup, memory and time limits.
 *
 * Kind 3: a nested repository's refs. Steps: a job (after a command's audit, which moves a `.git` made
 * below the root) makes `r1` a repository whose `packed-refs` holds 1,000,001 refs in random order
 * with no `sorted` trait (git sorts a copy in memory), HEAD's branch last, and `r2`..`r4` whose
 * `packed-refs` is a hard link to it. `measure` counts each as one entry of 0 bytes
 * (`repositoryMark`); root's `update-index` resolves each gitlink's HEAD. OBSERVED: the checkpoint
 * records 4 gitlinks with `bytes: 549` (load average 3.2); on the host with a 310 MB file one repository
 * cost root's git 688 MB RSS and 5.0 s, four hard-linked ones 1.6 GB and 18.3 s (load average 2.8); the
 * session's 8 GiB file-size limit allows one file that asks for about twice that per repository (not
 * run: this machine has 23 GB). A nested repository whose HEAD does not resolve makes `update-index`
 * die, so every checkpoint fails (10.4 s for its two tries). Why: `measure` does not count what git
 * reads to record a gitlink. Fix: record a nested repository from what the worker reads of it (HEAD and
 * one loose ref, bounded) with `--cacheinfo`, or leave it out with a note; and the limits above.
 *
 * Kind 3: the index audit parses an index of the session's size on the worker's event loop. Steps: a
 * command stages 2,000,000 entries that need no files (`update-index --index-info`, one blob; index
 * 144 MB). OBSERVED (load average 2.0 to 4.2): the next command (`true`) took 12.8 s and the worker's
 * event loop was held 6.7 s in one block (13.6 s in the final un-skipped run, load average 7.7 to 9.2), after every command; `auditIndex` alone on the host 7.7 s,
 * longest block 3.2 s (load 4.2); past about 4,000,000 entries `ls-files` passes the 512 MiB buffer and
 * the index part of the audit gives up for the session (named "unchecked"). Why: git-index-audit.ts
 * `readEntries` parses all of `ls-files -s -v --debug` in one synchronous loop; `hasCacheExtension`
 * reads the whole index synchronously. Fix for the kind (round 24's rule: no work on the worker's loop
 * that the session sizes): stream and parse in bounded chunks with yields, read only the extension
 * table, and past a bound say so and fall back to work git does.
 *
 * Kind 3: the missing-path sweep lists a folder the session fills. Steps: the person's config has
 * `alias.lint = !node scripts/lint`, `scripts/lint.js` missing at start, so the guard records the
 * family `scripts/lint.*`; a command makes 600,000 empty files in `scripts/`, none of the family.
 * OBSERVED (load average 5.9 to 7.9): over 3 idle seconds the longest gap of a 10 ms timer was 4,511 ms (5,837 ms in the final un-skipped run, load average 7.7 to 9.2; 18 ms without the alias, same files); the test took 260 s against 34 s. Why: git-audit.ts
 * `watchMissing` runs `moveCompleted` every 250 ms, whose `folderNames` lists the folder with
 * `readdirSync` and decodes every name. Fix: look up only the names an interpreter completes to (a
 * short list) with `lstat`, or read the folder in bounded batches with yields.
 *
 * Tried, held: the watch budget (`WATCH_EVENT_BUDGET`): past 64 events the 250 ms sweep still moves
 * every recorded missing path (read: `moveMissing` needs no event), and the window is documented; only
 * its cost falls (above). The edit diff (read, not run): the middle, summaries and hunk counts follow
 * the written text; added lines a summary stands for are refused to a person; an empty `old_str` is
 * refused before `occurrences` (no endless loop). A `.git` the session makes below the root (the
 * checkpoint's gitlink) is moved by the command's audit (hence the job in the nested-refs test). A
 * sparse index (`sdir`) expands into skip-worktree entries that the audit's `ls-files` reads and
 * clears (on the host by hand: a cone-mode sparse index copied into the person's repository
 * hides a changed `scripts/build.sh` from `git status`; `update-index --no-skip-worktree` on it
 * shows it again). Noticed, not pursued: an index entry named `.GIT/x` (any case) is refused
 * by `update-index` ("Ignoring path"), so the checkpoint silently leaves out a folder named `.GIT`
 * that the measure counted, and a rewind neither restores nor removes it; the audit's
 * findings quote an ignore rule's pattern and its file's path unescaped (`showName` escapes only bytes
 * that are not UTF-8); the sandbox shows the host's `/work`, `/home` and `/farm` read-only (other
 * workspaces a session user may read).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { takeCheckpoint } from '../../../src/checkpoint/store';
import { editGate } from '../../../src/activities/session';
import { editRuleSubject, type RunEditInput } from '../../../src/contract/text-editor';
import { sha256Hex } from '../../../src/session/edit';

const OPEN_CACHE_TREE = false;
const OPEN_CHECKPOINT_GROWS = false;
const OPEN_PERSONS_IGNORED_CODE = false;
const OPEN_CHECKPOINT_NESTED_REFS = false;
const OPEN_INDEX_AUDIT_LOOP = false;
const OPEN_EDIT_PATH_SWAP = false;
const OPEN_SWEEP_FOLDER = false;
const OPEN_EDIT_RULE_SWAP = false;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const TREE = path.join(__dirname, 'fixtures', 'index-cache-tree.py');

describe("kind 5: the index's cache-tree hides the session's staged changes from the person's git status", () => {
  const t = OPEN_CACHE_TREE ? test.skip : test;
  t('a staged scripts/build.sh under a forged TREE extension still shows in git status, or the result names it', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.mkdirSync(path.join(ws, 'scripts'));
    fs.writeFileSync(path.join(ws, 'scripts', 'build.sh'), 'echo building\n');
    fs.writeFileSync(path.join(ws, 'Makefile'), 'test:\n\tsh scripts/build.sh\n');
    git('add', 'Makefile', 'scripts/build.sh');
    git('commit', '-qm', 'two');
    fs.copyFileSync(TREE, path.join(ws, 'index-cache-tree.py'));
    const s = await startSession({ cwd: ws, workspace: ws });
    // Stage the session's build.sh and a new conftest.py, then say in the index's cache-tree that scripts/ is HEAD's tree.
    const r = await s.run(
      `T=$(git rev-parse HEAD:scripts) && echo 'echo PWNED-by-session' > scripts/build.sh && echo 'import os' > scripts/conftest.py && ` +
        `git add scripts && python3 index-cache-tree.py .git/index scripts "$T" && rm index-cache-tree.py && git status --porcelain`,
    );
    expect(r.exitCode).toBe(0);
    await s.close();
    // The attack took: the person's make runs the session's code.
    expect(spawnSync('make', ['-s', 'test'], { cwd: ws, encoding: 'utf8' }).stdout).toContain('PWNED-by-session');
    // The person's review, on the host: git status (staged or not) shows the change, or the result named it.
    const status = git('status', '--porcelain', '--untracked-files=all');
    const told = `${r.output}\n${s.gitFindingsAtClose.map((f) => f.path).join('\n')}`;
    const named = told.includes('scripts/build.sh') && told.includes('scripts/conftest.py');
    expect(named || (/scripts\/build\.sh/.test(status) && /scripts\/conftest\.py/.test(status))).toBe(true);
    expect(git('diff', 'HEAD')).toContain('PWNED-by-session');
  });
});

describe('kind 3: the checkpoint records what a job grew after the measure, past the byte cap', () => {
  const t = OPEN_CHECKPOINT_GROWS ? test.skip : test;
  t(
    'a file grown (sparse) once git opens the first file is not recorded past the cap',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      for (const f of ['on-open.py', 'open_watch.py']) fs.copyFileSync(path.join(__dirname, 'fixtures', f), path.join(ws, f));
      const s = await startSession({ cwd: ws, workspace: ws });
      // 500 small files between `a` (the first git hashes) and `zzz` (empty when measured), then the job that waits for git.
      const r = await s.run(
        `echo a > a && for i in $(seq -w 500); do echo $i > f$i; done && : > zzz && ` +
          `(python3 on-open.py a 'truncate -s ${64 << 20} zzz' > grow.log 2>&1 &) && ` +
          `for i in $(seq 100); do grep -q ready grow.log 2>/dev/null && break; sleep 0.05; done; cat grow.log`,
      );
      expect(r.output).toContain('ready');
      const cap = 1 << 20;
      const ck = await takeCheckpoint(root, ws, { maxBytes: cap }, 'turn 1');
      if ('skipped' in ck) return; // refused: safe
      // What the checkpoint holds: the sum of its blobs' sizes.
      const tree = spawnSync('git', ['--git-dir', ck.store, 'ls-tree', '-r', '-l', ck.id], { encoding: 'utf8' }).stdout;
      const recorded = tree
        .split('\n')
        .filter((l) => l !== '')
        .reduce((n, l) => n + Number(/^\S+ blob \S+\s+(\d+)\t/.exec(l)?.[1] ?? 0), 0);
      // Measured 3,081 bytes; recorded 64 MiB before (the grown file read whole by root's git).
      expect(recorded).toBeLessThanOrEqual(cap);
    },
    120_000,
  );
});

describe("kind 5: code the person runs, written where the person's own ignore rule hides it (Python's bytecode cache)", () => {
  const t = OPEN_PERSONS_IGNORED_CODE ? test.skip : test;
  t("a __pycache__ file that makes `import app` run the session's code is shown, named or removed", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    fs.writeFileSync(path.join(ws, 'app.py'), 'print("hello from app")\n');
    fs.writeFileSync(path.join(ws, '.gitignore'), '__pycache__/\n');
    git('add', 'app.py', '.gitignore');
    git('commit', '-qm', 'two');
    fs.copyFileSync(path.join(__dirname, 'fixtures', 'pyc-swap.py'), path.join(ws, 'pyc-swap.py'));
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`python3 pyc-swap.py app.py 'print("PWNED-by-session")' && rm pyc-swap.py`);
    expect(r.exitCode).toBe(0);
    await s.close();
    // The person's review reads a clean tree and app.py as committed.
    const status = git('status', '--porcelain', '--untracked-files=all');
    const ran = spawnSync('python3', ['-c', 'import app'], { cwd: ws, encoding: 'utf8' }).stdout;
    // Safe: the person's python runs app.py as it reads, or the review shows (status or the result) what will run instead.
    const atClose = s.gitFindingsAtClose.map((f) => f.path).join('\n');
    const shown = /__pycache__/.test(status) || r.output.includes('__pycache__') || atClose.includes('__pycache__');
    expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
  });
});

describe("kind 3: a nested repository's refs, read whole by root's checkpoint git, count as nothing in the measure", () => {
  const t = OPEN_CHECKPOINT_NESTED_REFS ? test.skip : test;
  t(
    'four nested repositories sharing one unsorted packed-refs (hard links) are not resolved past the cap',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const ws = tempDir();
      const root = tempDir('aj-ckroot-');
      const s = await startSession({ cwd: ws, workspace: ws });
      // A job, after the command's audit (which moves a .git made below the root): one packed-refs of 1,000,001 refs
      // (62 MB), unsorted (no \`sorted\` trait: git sorts a copy in memory), HEAD's branch last; three more repositories
      // hold hard links to it, so the session's disk pays once. The job starts when the host says \`go\`.
      fs.writeFileSync(
        path.join(ws, 'repos.sh'),
        'while [ ! -e go ]; do sleep 0.05; done\n' +
          "mkdir r1 && git -C r1 init -q -b main && python3 -c '" +
          'import random; o="0"*39+"1"; ids=list(range(1000000)); random.shuffle(ids); f=open("r1/.git/packed-refs","w"); ' +
          '[f.write(o+" refs/heads/b%08d\\n" % i) for i in ids]; f.write(o+" refs/heads/main\\n")\'\n' +
          'for i in 2 3 4; do mkdir r$i && git -C r$i init -q -b main && ln -f r1/.git/packed-refs r$i/.git/packed-refs; done\n' +
          'git -C r4 rev-parse HEAD > done.tmp && stat -c %h r1/.git/packed-refs >> done.tmp && mv done.tmp done\n',
      );
      const r = await s.run('(bash repos.sh > /dev/null 2>&1 &)');
      expect(r.exitCode).toBe(0);
      fs.writeFileSync(path.join(ws, 'go'), '');
      for (let i = 0; i < 1200 && !fs.existsSync(path.join(ws, 'done')); i++) await new Promise((res) => setTimeout(res, 100));
      expect(fs.readFileSync(path.join(ws, 'done'), 'utf8')).toMatch(/^0{39}1\n4\n$/);
      const cap = 1 << 20;
      const ck = await takeCheckpoint(root, ws, { maxBytes: cap }, 'turn 1');
      if ('skipped' in ck) return; // the refs counted: safe
      // Recorded before: four gitlinks, each resolved by reading and sorting the 62 MB file (the measure said 549 bytes).
      const tree = spawnSync('git', ['--git-dir', ck.store, 'ls-tree', '-r', ck.id], { encoding: 'utf8' }).stdout;
      expect({ bytes: ck.bytes, gitlinks: tree.split('\n').filter((l) => l.startsWith('160000 ')).length }).toEqual({
        bytes: ck.bytes,
        gitlinks: 0,
      });
    },
    180_000,
  );
});

describe("kind 3: the index audit parses an index of the session's size on the worker's event loop", () => {
  const t = OPEN_INDEX_AUDIT_LOOP ? test.skip : test;
  t(
    "after the session stages 2,000,000 entries (no files), a command's audit does not hold the worker",
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws } = personsRepo();
      const s = await startSession({ cwd: ws, workspace: ws });
      // Entries need no files: one blob, 2,000,000 paths (index 144 MB; `ls-files -s -v --debug` prints 278 MB).
      const made = await s.run(
        `B=$(echo x | git hash-object -w --stdin) && python3 -c 'import sys\nfor i in range(2000000): sys.stdout.write("100644 '"$B"' 0\\tp/%07d\\n" % i)' | ` +
          `git update-index --index-info && git ls-files | wc -l`,
      );
      expect(made.output).toMatch(/^2000001$/m);
      const delay = monitorEventLoopDelay({ resolution: 10 });
      delay.enable();
      const r = await s.run('true');
      expect(r.exitCode).toBe(0);
      await new Promise((res) => setTimeout(res, 20));
      delay.disable();
      // Every session of the worker waits while the loop is held; a bound of seconds, far above bounded work on a loaded machine.
      expect(delay.max / 1e6).toBeLessThan(2_000);
    },
    300_000,
  );
});

describe('kind 5: an approved edit lands where a folder on its path, made a symlink while the person decided, leads', () => {
  const t = OPEN_EDIT_PATH_SWAP ? test.skip : test;
  t('a `create docs/deploy.yml` a person approved is not written to .github/workflows/deploy.yml', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws } = personsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    // A job that, once the person is asked (the host says \`go\`), puts a symlink where the edit's folder will be.
    const job = await s.run(
      `(while [ ! -e go ]; do sleep 0.05; done; mkdir -p .github/workflows && ln -s .github/workflows docs && touch swapped) > /dev/null 2>&1 &`,
    );
    expect(job.exitCode).toBe(0);
    const edit = {
      command: 'create' as const,
      path: 'docs/deploy.yml',
      fileText: 'on: push\njobs:\n  x:\n    runs-on: ubuntu-latest\n    steps:\n      - run: echo PWNED\n',
    };
    const opts = { maxCharacters: 100_000, ruleSubject: editRuleSubject };
    const base = { sessionId: 's', workflowId: 'w', toolUseId: 't', edit } as RunEditInput;
    const asked = await s.edit(edit, editGate({ ...base, autoApprove: 'policy', rules: [] }), opts);
    const review = asked.needsApproval?.review ?? '';
    // What the person reads: a new file docs/deploy.yml, through no symlink.
    expect(review).toContain('+++ b' + path.join(ws, 'docs', 'deploy.yml'));
    fs.writeFileSync(path.join(ws, 'go'), '');
    for (let i = 0; i < 200 && !fs.existsSync(path.join(ws, 'swapped')); i++) await new Promise((res) => setTimeout(res, 50));
    expect(fs.lstatSync(path.join(ws, 'docs')).isSymbolicLink()).toBe(true);
    // The person approves that review; the run applies the edit with its hash.
    const done = await s.edit(edit, editGate({ ...base, approvedSha256: sha256Hex(review) }), opts);
    // Before: applied (`Successfully created file .../docs/deploy.yml.`), the file in .github/workflows.
    expect(done.applied && fs.existsSync(path.join(ws, '.github', 'workflows', 'deploy.yml'))).toBe(false);
  });
});

describe("kind 3: the missing-path sweep reads a folder the session fills, on the worker's event loop, every 250 ms", () => {
  const t = OPEN_SWEEP_FOLDER ? test.skip : test;
  t(
    'with `alias.lint = !node scripts/lint` (scripts/lint.js missing) and 200,000 files in scripts/, the idle session does not hold the worker',
    async () => {
      if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
      const { ws, git } = personsRepo();
      fs.mkdirSync(path.join(ws, 'scripts'));
      fs.writeFileSync(path.join(ws, 'scripts', 'README'), 'scripts\n');
      git('add', 'scripts/README');
      git('commit', '-qm', 'two');
      // The person's alias names a program missing at start: the guard records its family (scripts/lint, scripts/lint.*).
      git('config', 'alias.lint', '!node scripts/lint');
      const s = await startSession({ cwd: ws, workspace: ws });
      // Names outside the family: nothing is moved; the folder just grows. 600,000 when found; 200,000 since it is fixed
      // (ten times the listing's bound of 20,000, and a third of the time to make under load).
      const made = await s.run(
        `python3 -c 'import os\nfor i in range(200000): open("scripts/n%07d" % i, "w").close()' && ls scripts | wc -l`,
        {
          timeoutMs: 240_000,
        },
      );
      expect(made.output).toMatch(/^200001$/m);
      // The session is idle now; every 250 ms the sweep lists scripts/ (src/session/git-audit.ts moveCompleted, folderNames).
      // The longest gap between ticks of a 10 ms timer over 3 s.
      let last = Date.now();
      let longest = 0;
      const tick = setInterval(() => {
        const now = Date.now();
        longest = Math.max(longest, now - last);
        last = now;
      }, 10);
      await new Promise((res) => setTimeout(res, 3_000));
      clearInterval(tick);
      // Before: 4,511 ms with the alias, 18 ms without it (the same files). A bound far above bounded work on a loaded machine.
      expect(longest).toBeLessThan(1_000);
    },
    300_000,
  );
});

describe("kind 5: an edit a rule approves is written through a symlink made during the edit's checkpoint", () => {
  const t = OPEN_EDIT_RULE_SWAP ? test.skip : test;
  t('an exact rule for `create docs/notes.md` never writes .github/workflows/notes.md', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir());
    const root = tempDir('aj-ckroot-');
    for (const f of ['on-open.py', 'open_watch.py']) fs.copyFileSync(path.join(__dirname, 'fixtures', f), path.join(ws, f));
    const s = await startSession({ cwd: ws, workspace: ws });
    // 500 files for the checkpoint's git to hash after \`a\`; a job that, when git opens \`a\`, puts a symlink in docs' place.
    const r = await s.run(
      `echo a > a && for i in $(seq -w 500); do echo $i > f$i; done && mkdir docs .github && mkdir .github/workflows && ` +
        `(python3 on-open.py a 'mv docs docs.old && ln -s .github/workflows docs' > job.log 2>&1 &) && ` +
        `for i in $(seq 100); do grep -q ready job.log 2>/dev/null && break; sleep 0.05; done; cat job.log`,
    );
    expect(r.output).toContain('ready');
    const notes = path.join(ws, 'docs', 'notes.md');
    const rules = [{ id: 1, kind: 'exact' as const, text: editRuleSubject('create', notes) }];
    const edit = { command: 'create' as const, path: 'docs/notes.md', fileText: 'on: push\n' };
    const gate = editGate({ sessionId: 's', workflowId: 'w', toolUseId: 't', edit, autoApprove: 'policy', rules });
    // The edit's checkpoint, as runEdit takes it once the gate said apply (activities/session.ts checkpointBefore).
    const done = await s.edit(edit, gate, {
      maxCharacters: 20_000,
      ruleSubject: editRuleSubject,
      beforeWrite: async () => void (await takeCheckpoint(root, ws, { maxBytes: 1 << 30 }, 'edit')),
    });
    expect(fs.readFileSync(path.join(ws, 'job.log'), 'utf8')).toContain('done');
    // Before: applied by the rule, the file in .github/workflows.
    expect(done.applied && fs.existsSync(path.join(ws, '.github', 'workflows', 'notes.md'))).toBe(false);
  });
});
