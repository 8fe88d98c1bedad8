/**
 * Adversary round 26: attacks on main (39e21a9), as root, in real sessions of the unit harness.
 * Each test asserts the safe behaviour and is skipped while its kind is open (the OPEN_* flags below).
 * FINDINGS.md at the worktree's root holds the same, as it was written during the round.
 *
 * Kind 5 (what the person's own python runs is not what they read): a folder of ignored files only has no rule.
 * Steps: the person's repository has `.gitignore` `*.py[cod]` (GitHub's Python template) and `app.py` that does
 * `import json`; a command makes `json/__init__.pyc`, a sourceless package compiled from the session's code. git's
 * `ls-files -o -i --directory` lists the folder whole (`json/`: all of it ignored), but no pattern ignores `json`
 * itself, so `git check-ignore -v` prints nothing for it. OBSERVED: see the test's header below.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { execFileSync, spawnSync as run0 } from 'node:child_process';
import { personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir, waitUntil } from '../session/helpers';
import { restoreCheckpoint, takeCheckpoint } from '../../../src/checkpoint/store';

const OPEN_IGNORED_FOLDER_NO_RULE = false;
const OPEN_CHECKPOINT_GIT_NAMES = true;
const OPEN_CHECKPOINT_MMAP = true;
const OPEN_GIT_STATUS_MMAP = false;
const OPEN_CHECKPOINT_PACKED_REFS_LOOP = true;
const OPEN_CHECKPOINT_COMMONDIR_ESCAPE = true;
const OPEN_SUBMODULE_IGNORED_CODE = true;
const OPEN_SUBMODULE_IGNORE_DIRTY = true;

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('kind 5: a folder of only ignored files, which no rule names, hides code the person runs', () => {
  const t = OPEN_IGNORED_FOLDER_NO_RULE ? test.skip : test;
  t("a sourceless json/__init__.pyc that shadows the standard library's json is shown, named or removed", async () => {
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
    fs.writeFileSync('/tmp/adv26/f1.json', JSON.stringify({ status, ran, output: r.output, atClose }, null, 1));
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
      expect((await s.run('mkdir git~1 .GIT sub && echo x > git~1/x && echo y > .GIT/config && ln -s ../app.py sub/.gitmodules')).exitCode).toBe(0);
      const taken = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 1');
      if ('skipped' in taken) return; // refused: safe
      // The damage the person will want to undo, and the names changed so that a restore must write them.
      expect((await s.run("echo 'print(\"PWNED-by-session\")' > app.py && echo z > git~1/x && rm -r .GIT sub")).exitCode).toBe(0);
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

describe("kind 5: a file rewritten through a shared mapping keeps its stat: checkpoints and a rewind trust it", () => {
  const t = OPEN_CHECKPOINT_MMAP ? test.skip : test;
  t(
    "a rewind to the checkpoint before the rewrite gives the file back its checkpointed text",
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
      expect((await s.run('touch go && for i in $(seq 200); do [ -e done ] && break; sleep 0.05; done; cat mm.log; cat app.py')).output).toContain('PWNED');
      await s.close();
      const st = fs.statSync(app);
      fs.writeFileSync('/tmp/adv26/mmap.json', JSON.stringify({ ctimeBefore: ctime, ctimeAfter: st.ctimeMs, mtime: st.mtimeMs }));
      const after = await takeCheckpoint(root, ws, { maxBytes: 1 << 20 }, 'turn 2');
      if ('skipped' in after) throw new Error(after.skipped);
      // What the checkpoint after the command holds of app.py (the person's review diffs the two).
      const recorded = spawnSync('git', ['--git-dir', after.store, 'show', `${after.id}:app.py`], { encoding: 'utf8' }).stdout;
      await restoreCheckpoint(before.store, ws, before.id);
      const restored = fs.readFileSync(app, 'utf8');
      fs.writeFileSync('/tmp/adv26/mmap2.json', JSON.stringify({ recorded, restored }));
      expect({ recorded, restored }).toEqual({ recorded: 'print("PWNED")\n', restored: 'print("hello")\n' });
    },
    120_000,
  );
});

describe("kind 5: a tracked file rewritten through a shared mapping after git's refresh is clean to the person's git status", () => {
  const t = OPEN_GIT_STATUS_MMAP ? test.skip : test;
  t('build.sh rewritten without a time change shows in git status, or the result names it', async () => {
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
    fs.writeFileSync('/tmp/adv26/gs.json', JSON.stringify({ ran, status, told, diff: git('diff', 'HEAD') }, null, 1));
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
    "a gitlink is not resolved from a ref file outside the workspace (`commondir` of `..`s)",
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
  t("a lib/__pycache__ file that makes `from lib import mod` run the session's code is shown, named or removed", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    // The person's library, a submodule `lib` of their repository (its own .gitignore: __pycache__/).
    const lib = tempDir('aj-libsrc-');
    const g = (cwd: string, ...a: string[]): string =>
      execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', '-c', 'protocol.file.allow=always', ...a], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
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
    const ran = run0('python3', ['-c', 'from lib import mod'], { cwd: ws, encoding: 'utf8' }).stdout;
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    fs.writeFileSync('/tmp/adv26/sub.json', JSON.stringify({ status, ran, out: r.output, atClose }, null, 1));
    const shown = /__pycache__/.test(status) || r.output.includes('__pycache__') || atClose.includes('__pycache__');
    expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
  }, 60_000);
});

describe("kind 5: a submodule the person's .gitmodules marks `ignore = dirty`: its changed files are clean to git status", () => {
  const t = OPEN_SUBMODULE_IGNORE_DIRTY ? test.skip : test;
  t("a changed lib/mod.py shows in the person's git status, or the result names it", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const lib = tempDir('aj-libsrc-');
    const g = (cwd: string, ...a: string[]): string =>
      execFileSync('git', ['-C', cwd, '-c', 'user.name=p', '-c', 'user.email=p@example.com', '-c', 'protocol.file.allow=always', ...a], {
        encoding: 'utf8',
        stdio: 'pipe',
      });
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
    const ran = run0('python3', ['-c', 'from lib import mod'], { cwd: ws, encoding: 'utf8' }).stdout;
    const atClose = s.gitFindingsAtClose.map((f) => `${f.path} ${f.why}`).join('\n');
    fs.writeFileSync('/tmp/adv26/sub2.json', JSON.stringify({ status, ran, out: r.output, atClose }, null, 1));
    const shown = /lib/.test(status) || r.output.includes('lib/mod.py') || atClose.includes('lib');
    expect(shown || !ran.includes('PWNED-by-session')).toBe(true);
  }, 60_000);
});
