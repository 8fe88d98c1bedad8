/**
 * Attacks on the git audit's part on what the person's `git status` shows (src/session/git-index-audit.ts; adversary
 * round 24), in real sessions of the unit harness, as root: inputs chosen to get past it (a bit set and cleared in one
 * command, a stale index.lock that keeps the index from being written, the person's `.git/info/exclude` and global
 * excludes file, a forged entry whose file is gone, many files at once) and the work it must leave alone (a file
 * rewritten with its own content, what the person's own rules ignore, a sparse checkout's bits).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { fastDescribe, slowDescribe } from '../../slow';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const STAT = path.join(__dirname, 'fixtures', 'index-stat.py');

/** The person's repository with a tracked Makefile and a .gitignore ignoring node_modules, and index-stat.py copied in (untracked). */
function repo(): ReturnType<typeof personsRepo> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const r = personsRepo();
  fs.writeFileSync(path.join(r.ws, 'Makefile'), 'test:\n\techo testing\n');
  fs.writeFileSync(path.join(r.ws, '.gitignore'), 'node_modules/\n');
  r.git('add', 'Makefile', '.gitignore');
  r.git('commit', '-qm', 'two');
  fs.copyFileSync(STAT, path.join(r.ws, 'index-stat.py'));
  return r;
}

/** Shell text: Makefile replaced by a new file (renamed into place), its mtime set back and its stat data written into the index. */
const FORGE =
  `printf 'test:\\n\\techo PWNED\\n' > m.new && mv m.new Makefile && touch -d @1600000000 Makefile && ` +
  `python3 index-stat.py .git/index Makefile Makefile && rm index-stat.py`;

const status = (git: (...a: string[]) => string): string => git('status', '--porcelain', '--untracked-files=all');

fastDescribe('the index audit, attacked', () => {
  test('a bit set and cleared by the session within one command: the change shows, and no bit is reported', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `git update-index --skip-worktree Makefile && echo x >> Makefile && git update-index --no-skip-worktree Makefile && rm index-stat.py`,
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain('skip-worktree');
    await s.close();
    expect(status(git)).toMatch(/^ M Makefile$/m);
  });

  test('a bit set in one command and the file changed in the next: cleared after the first, named once', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r1 = await s.run(`git update-index --assume-unchanged Makefile && rm index-stat.py`);
    expect(r1.output).toContain('Makefile (marked assume-unchanged by the session');
    const r2 = await s.run(`echo x >> Makefile && git ls-files -v Makefile`);
    // The bit is gone already: the session's own git sees the file again, and nothing is named twice.
    expect(r2.output).toMatch(/^H Makefile$/m);
    expect(r2.output).not.toContain('assume-unchanged');
    await s.close();
    expect(status(git)).toMatch(/^ M Makefile$/m);
  });

  test('a file rewritten with its own content and the index refreshed: nothing reported, the tree clean', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`cp Makefile m.new && mv m.new Makefile && git status --porcelain >/dev/null && rm index-stat.py`);
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain('git status');
    await s.close();
    expect(s.gitNoteAtClose).toBeUndefined();
    expect(status(git)).toBe('');
  });

  test('forged stat data and a stale index.lock left so the index cannot be written: shown at close all the same', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${FORGE} && : > .git/index.lock`);
    expect(r.exitCode).toBe(0);
    // The command's audit cannot write the index and says so; the close moves the lock (no process of the session is left).
    expect(r.output).toContain('git status may still NOT show, check by hand: Makefile');
    await s.close();
    expect(s.gitNoteAtClose).toContain('git status shows again: Makefile');
    expect(status(git)).toMatch(/^ M Makefile$/m);
    expect(git('diff')).toContain('PWNED');
  });

  test('a forged entry whose file the session then deleted, and a skip-worktree entry deleted: both show as deleted', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`${FORGE} && rm Makefile && git update-index --skip-worktree .gitignore && rm .gitignore`);
    expect(r.exitCode).toBe(0);
    await s.close();
    expect(status(git)).toMatch(/^ D Makefile$/m);
    expect(status(git)).toMatch(/^ D \.gitignore$/m);
  });

  test('many files hidden at once (150 skip-worktree, 150 forged): every one shows, the result names some and counts the rest', async () => {
    const { ws, git } = repo();
    fs.mkdirSync(path.join(ws, 'a'));
    fs.mkdirSync(path.join(ws, 'b'));
    for (let i = 0; i < 150; i++) {
      fs.writeFileSync(path.join(ws, 'a', `f${i}.sh`), `echo a${i}\n`);
      fs.writeFileSync(path.join(ws, 'b', `f${i}.sh`), `echo b${i}\n`);
    }
    git('add', 'a', 'b');
    git('commit', '-qm', 'many');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      // Forged first: index-stat.py reads a version 2 index, and a skip-worktree bit makes it version 3.
      `for f in b/*.sh; do echo evil > $f.new && mv $f.new $f && touch -d @1600000000 $f; done && ` +
        `python3 - <<'EOF'
import subprocess
for i in range(150):
    subprocess.run(['python3', 'index-stat.py', '.git/index', f'b/f{i}.sh', f'b/f{i}.sh'], check=True, stdout=subprocess.DEVNULL)
EOF
[ $? = 0 ] && git ls-files -z a | xargs -0 git update-index --skip-worktree && for f in a/*.sh; do echo evil >> $f; done && rm index-stat.py`,
      { timeoutMs: 120_000 },
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/git status shows again: .* and 295 more/);
    await s.close();
    const lines = status(git)
      .split('\n')
      .filter((l) => l.startsWith(' M '));
    expect(lines).toHaveLength(300);
  });

  test('.git/info/exclude: the session cannot write it, or what its line hides is named', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`echo conftest.py >> .git/info/exclude; echo 'import os' > conftest.py; rm index-stat.py`);
    await s.close();
    expect(fs.readFileSync(path.join(ws, 'conftest.py'), 'utf8')).toContain('import os');
    if (!status(git).includes('conftest.py')) expect(r.output).toContain('conftest.py (ignored by a rule the session wrote: ');
  });

  test("the person's global excludes file in the workspace: the session's line is refused or named, and what the person's own rules ignore is named as theirs", async () => {
    const { ws } = repo();
    const home = tempDir();
    const cfg = path.join(home, 'gitconfig');
    const ignore = path.join(ws, '.personal-ignore');
    fs.writeFileSync(cfg, `[core]\n\texcludesFile = ${ignore}\n`);
    fs.writeFileSync(ignore, '*.log\n.personal-ignore\n');
    const saved = process.env.GIT_CONFIG_GLOBAL;
    process.env.GIT_CONFIG_GLOBAL = cfg;
    try {
      const s = await startSession({ cwd: ws, workspace: ws });
      const r = await s.run(
        `(echo conftest.py >> .personal-ignore || true) && echo 'import os' > conftest.py && echo noise > debug.log && mkdir -p node_modules/x && echo 1 > node_modules/x/i.js && rm index-stat.py`,
      );
      await s.close();
      const personsStatus = execFileSync('git', ['-C', ws, 'status', '--porcelain', '--untracked-files=all'], {
        encoding: 'utf8',
        env: { ...process.env, GIT_CONFIG_GLOBAL: cfg },
      });
      if (!personsStatus.includes('conftest.py')) expect(r.output).toContain('conftest.py (ignored by a rule the session wrote: ');
      // Ignored by the person's own rules (their excludes file's `*.log`, the repository's node_modules/): named as such.
      expect(r.output).toContain('the session made or changed files that your own ignore rules keep out of git status; review them: ');
      expect(r.output).toContain('debug.log (.personal-ignore:1 `*.log`)');
      expect(r.output).toContain('node_modules/x/i.js (.gitignore:1 `node_modules/`)');
    } finally {
      if (saved === undefined) delete process.env.GIT_CONFIG_GLOBAL;
      else process.env.GIT_CONFIG_GLOBAL = saved;
    }
  });

  test("a line added to the person's .gitignore hides a new file: named once, and node_modules as under the person's rule", async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r1 = await s.run(
      `echo conftest.py >> .gitignore && echo 'import os' > conftest.py && mkdir -p node_modules/x && echo 1 > node_modules/x/i.js && rm index-stat.py`,
    );
    expect(r1.output).toContain('an ignore rule it wrote keeps out of git status; review them (`git status --ignored` lists them): ');
    expect(r1.output).toContain('conftest.py (ignored by a rule the session wrote: .gitignore:2 `conftest.py`)');
    expect(r1.output).toContain('your own ignore rules keep out of git status; review them: ');
    expect(r1.output).toContain('node_modules/x/i.js (.gitignore:1 `node_modules/`)');
    const r2 = await s.run('true');
    expect(r2.output).not.toContain('conftest.py');
    await s.close();
    expect(s.gitNoteAtClose).toContain('conftest.py');
    expect(status(git)).toMatch(/^ M \.gitignore$/m);
  });

  test("a sparse checkout's skip-worktree bits, there at start, are left alone", async () => {
    const { ws, git } = repo();
    git('update-index', '--skip-worktree', 'build.sh');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('rm index-stat.py');
    expect(r.output).not.toContain('build.sh');
    await s.close();
    expect(git('ls-files', '-v', 'build.sh')).toBe('S build.sh\n');
  });

  test('an untracked cache the session added is dropped', async () => {
    const { ws, git } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      'rm index-stat.py && git update-index --force-untracked-cache && git -c core.untrackedCache=true status --porcelain >/dev/null',
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).toContain('an untracked cache or fsmonitor extension the session added');
    await s.close();
    expect(fs.readFileSync(path.join(ws, '.git', 'index')).includes('UNTR')).toBe(false);
    expect(status(git)).toBe('');
  });
});

/** The person's repository with `scripts/build.sh` (two levels: `scripts/ci/run.sh` too) and index-cache-tree.py copied in. */
function scriptsRepo(): ReturnType<typeof personsRepo> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const r = personsRepo();
  fs.mkdirSync(path.join(r.ws, 'scripts', 'ci'), { recursive: true });
  fs.writeFileSync(path.join(r.ws, 'scripts', 'build.sh'), 'echo building\n');
  fs.writeFileSync(path.join(r.ws, 'scripts', 'ci', 'run.sh'), 'echo ci\n');
  fs.writeFileSync(path.join(r.ws, 'scripts', 'lint.sh'), 'echo lint\n');
  r.git('add', 'scripts');
  r.git('commit', '-qm', 'scripts');
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'index-cache-tree.py'), path.join(r.ws, 'ct.py'));
  return r;
}

/** Shell text: the cache-tree says folder `dir` is HEAD's tree of it (the command's `T`), whatever was staged. */
const forgeNode = (dir: string): string => `python3 ct.py .git/index ${dir} "$T"`;

fastDescribe("the index audit, attacked through the cache-tree (the index's TREE extension)", () => {
  test('a changed and a new file staged under a folder said to be unchanged: named, and the person sees both', async () => {
    const { ws, git } = scriptsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `T=$(git rev-parse HEAD:scripts) && echo 'echo PWNED' > scripts/build.sh && echo 'import os' > scripts/conftest.py && ` +
        `git add scripts && ${forgeNode('scripts')} && rm ct.py && git status --porcelain | wc -l`,
    );
    expect(r.exitCode).toBe(0);
    // The forgery took inside the command (its own git status listed nothing); the audit after it named both files.
    expect(r.output).toMatch(/^0$/m);
    expect(r.output).toContain('scripts/build.sh (staged by the session under a cache-tree');
    expect(r.output).toContain('scripts/conftest.py (staged by the session under a cache-tree');
    await s.close();
    expect(status(git)).toMatch(/^M {2}scripts\/build\.sh$/m);
    expect(status(git)).toMatch(/^A {2}scripts\/conftest\.py$/m);
    expect(git('diff', 'HEAD')).toContain('PWNED');
  });

  test('a nested folder, and a file deleted from the index under its parent: both shown', async () => {
    const { ws, git } = scriptsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r1 = await s.run(
      `T=$(git rev-parse HEAD:scripts/ci) && echo 'echo PWNED' > scripts/ci/run.sh && git add -A scripts && ${forgeNode('scripts/ci')}`,
    );
    expect(r1.output).toContain('scripts/ci/run.sh (staged by the session under a cache-tree');
    const r2 = await s.run(`T=$(git rev-parse HEAD:scripts) && git rm -q scripts/lint.sh && ${forgeNode('scripts')} && rm ct.py`);
    expect(r2.output).toContain('scripts/lint.sh (staged by the session under a cache-tree');
    await s.close();
    expect(status(git)).toMatch(/^M {2}scripts\/ci\/run\.sh$/m);
    expect(status(git)).toMatch(/^D {2}scripts\/lint\.sh$/m);
  });

  test('HEAD moved in a later command, the index untouched, so that the forged folder matches it: shown', async () => {
    const { ws, git } = scriptsRepo();
    const s = await startSession({ cwd: ws, workspace: ws });
    // Command 1: a commit C (not on any branch) whose scripts/ is another tree X; the change staged and the cache-tree
    // saying scripts/ is X. Against HEAD, X differs: git status shows the change, and nothing is hidden yet.
    const G = 'git -c user.name=a -c user.email=a@example.com';
    const r1 = await s.run(
      `echo 'echo other' > scripts/build.sh && ${G} add scripts && C=$(${G} commit-tree -p HEAD -m x $(git write-tree)) && ` +
        `echo $C > c.txt && T=$(git rev-parse $C:scripts) && echo 'echo PWNED' > scripts/build.sh && git add scripts && ${forgeNode('scripts')} && rm ct.py`,
    );
    expect(r1.exitCode).toBe(0);
    // Command 2: HEAD's branch moved to C (a ref, not the index): the cache-tree now names HEAD's scripts/.
    const r2 = await s.run(`git update-ref refs/heads/main $(cat c.txt) && rm c.txt && git status --porcelain | wc -l`);
    expect(r2.output).toMatch(/^0$/m);
    expect(r2.output).toContain('scripts/build.sh (staged by the session under a cache-tree');
    await s.close();
    expect(git('diff', 'HEAD')).toContain('PWNED');
  });

  test("left alone: the person's change staged before the session, an intent-to-add entry, the session's own add and commit", async () => {
    const { ws, git } = scriptsRepo();
    fs.writeFileSync(path.join(ws, 'scripts', 'lint.sh'), 'echo lint --fix\n');
    git('add', 'scripts/lint.sh');
    fs.writeFileSync(path.join(ws, 'notes.md'), 'later\n');
    git('add', '-N', 'notes.md');
    const s = await startSession({ cwd: ws, workspace: ws });
    const G = 'git -c user.name=a -c user.email=a@example.com';
    const r = await s.run(
      `rm ct.py && echo x > new.txt && ${G} add new.txt && ${G} commit -qm new new.txt && echo y >> new.txt && git add new.txt`,
    );
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain('cache-tree');
    await s.close();
    expect(s.gitNoteAtClose ?? '').not.toContain('cache-tree');
    expect(status(git)).toMatch(/^M {2}scripts\/lint\.sh$/m);
    expect(status(git)).toMatch(/^ A notes\.md$/m);
    expect(status(git)).toMatch(/^M {2}new\.txt$/m);
    // Still intent-to-add (an entry written again would have lost the flag: `A ` staged instead).
    expect(git('diff', '--cached', '--name-only')).not.toContain('notes.md');
  });
});

// A slow suite (test/slow-suites.js MIXED_FILES): staging a million entries takes most of a minute under load.
slowDescribe('the index audit, attacked through the size of the index', () => {
  /** Shell text: `n` entries staged under `p/` with no file behind them (one blob), as `update-index --index-info` takes them. */
  const stageMany = (n: number): string =>
    `B=$(echo x | git hash-object -w --stdin) && python3 -c "import sys; w=sys.stdout.write; [w('100644 %s 0\\tp/%08d\\n' % (sys.argv[1], i)) for i in range(${n})]" $B | git update-index --index-info`;

  /** The longest time the worker's event loop was held while `work` ran, ms (perf_hooks' histogram, 10 ms resolution). */
  async function longestBlock<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
    const h = monitorEventLoopDelay({ resolution: 10 });
    h.enable();
    try {
      const value = await work();
      return { value, ms: h.max / 1e6 };
    } finally {
      h.disable();
    }
  }

  test('more entries than an audit reads: named as not checked, and the worker is not held while the next command is audited', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const made = await s.run(`rm index-stat.py && ${stageMany(1_000_050)} && echo staged`);
    expect(made.output).toContain('staged');
    // The person's 3 entries and the session's 1,000,050.
    expect(made.output).toMatch(
      /the index holds 1000053 entries, more than the 1000000 an audit reads: what git status shows was not checked/,
    );
    const { value: r, ms } = await longestBlock(() => s.run('true'));
    expect(r.output).toContain('more than the 1000000 an audit reads');
    console.log(`index-audit: 1,000,053 entries, longest block of the event loop ${ms.toFixed(0)} ms`);
    expect(ms).toBeLessThan(1_000);
  }, 180_000);

  test('many entries within the bound (400,000 with no file): the audit yields as it goes, and reads them once while the index stays', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const made = await s.run(`rm index-stat.py && ${stageMany(400_000)} && echo staged`);
    expect(made.output).toContain('staged');
    const first = await longestBlock(() => s.run('true'));
    const second = await longestBlock(() => s.run('true'));
    console.log(`index-audit: 400,000 entries, longest blocks ${first.ms.toFixed(0)} and ${second.ms.toFixed(0)} ms`);
    expect(first.ms).toBeLessThan(1_000);
    expect(second.ms).toBeLessThan(1_000);
    expect(first.value.output).not.toContain('not checked');
    await s.close();
    // The person sees what was staged.
    expect(execFileSync('sh', ['-c', 'git diff --cached --name-only | wc -l'], { cwd: ws, encoding: 'utf8' }).trim()).toBe('400000');
  }, 180_000);
});
