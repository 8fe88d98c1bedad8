/**
 * Attacks on the index audit's part on repositories nested in the workspace (src/session/git-index-audit.ts
 * `auditIndex` on `b.nested`, `changedFindings`, the shared walk of ignored files; adversary round 26, F5 and F6), in
 * real sessions of the unit harness, as root: the person's git status at the top shows a submodule as one line at most
 * (none under `submodule.<name>.ignore` or `diff.ignoreSubmodules`), and its `ls-files` lists none of a submodule's or
 * a nested clone's ignored files. Each test plants what the person would run or review in such a repository, by the
 * ways around the audit an attacker would try: bytecode under the submodule's own ignore rules, every setting that
 * silences the top's status, the index tricks of round 24 inside the submodule, a nested clone the top does not track,
 * the bounds (more nested repositories than the audit reads, an ignored folder past the walk's entry cap).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { personsGit, personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';
import { fastDescribe, slowDescribe } from '../../slow';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const g = personsGit;

/** Python as the person runs it on the host (writing bytecode, as by default), in `cwd`: its output. */
const personsPython = (cwd: string, code: string): string => {
  const env = { ...process.env };
  delete env.PYTHONDONTWRITEBYTECODE;
  return execFileSync('python3', ['-c', code], { cwd, env, encoding: 'utf8' }).trim();
};

/**
 * The person's repository with the submodule `lib` (`mod.py`, `util.py`, its own `.gitignore`: `__pycache__/`), util's
 * bytecode compiled by the person before the session; `ignore`, when given, is `submodule.lib.ignore` in `.gitmodules`
 * (committed). pyc-swap.py and index-stat.py are copied in, untracked, for the session.
 */
function withSubmodule(ignore?: string): { ws: string; git: (...a: string[]) => string; lib: string } {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const src = tempDir('aj-libsrc-');
  g(src, 'init', '-q', '-b', 'main');
  fs.writeFileSync(path.join(src, 'mod.py'), 'print("hello from mod")\n');
  fs.writeFileSync(path.join(src, 'util.py'), 'print("hello from util")\n');
  fs.writeFileSync(path.join(src, '.gitignore'), '__pycache__/\n');
  g(src, 'add', '.');
  g(src, 'commit', '-qm', 'lib');
  const { ws, git } = personsRepo();
  g(ws, 'submodule', 'add', '-q', src, 'lib');
  if (ignore !== undefined) g(ws, 'config', '-f', '.gitmodules', 'submodule.lib.ignore', ignore);
  g(ws, 'add', '.gitmodules');
  g(ws, 'commit', '-qm', 'lib as a submodule');
  const lib = path.join(ws, 'lib');
  personsPython(lib, 'import py_compile; py_compile.compile("util.py")');
  for (const f of ['pyc-swap.py', 'index-stat.py']) fs.copyFileSync(path.join(__dirname, 'fixtures', f), path.join(ws, f));
  fs.appendFileSync(path.join(ws, '.git', 'info', 'exclude'), 'pyc-swap.py\nindex-stat.py\n');
  return { ws, git, lib };
}

const status = (git: (...a: string[]) => string): string => git('status', '--porcelain', '--untracked-files=all');

fastDescribe('repositories nested in the workspace, attacked', () => {
  test("bytecode swapped under a submodule's own __pycache__/ rule: removed, named, and `from lib import mod` runs the reviewed source", async () => {
    const { ws, git, lib } = withSubmodule();
    const tag = personsPython(ws, 'import sys; print(sys.implementation.cache_tag)');
    const util = path.join(lib, '__pycache__', `util.${tag}.pyc`);
    const utilBefore = fs.readFileSync(util);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`python3 pyc-swap.py lib/mod.py 'print("PWNED-by-session")'`);
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toMatch(
      /removed, Python writes it again from the source: lib\/__pycache__\/mod\.cpython-\d+\.pyc \(written during the session\)/,
    );
    await s.close();
    expect(fs.existsSync(path.join(lib, '__pycache__', `mod.${tag}.pyc`))).toBe(false);
    expect(status(git)).toBe('');
    expect(personsPython(ws, 'from lib import mod')).toBe('hello from mod');
    // The person's own bytecode from before the session: left, byte for byte, and never named.
    expect(fs.readFileSync(util).equals(utilBefore)).toBe(true);
    expect(`${r.output}${s.gitNoteAtClose ?? ''}`).not.toContain('util.');
  });

  test('`ignore = dirty` in .gitmodules: a rewritten lib/mod.py, clean to the top git status, is named in the result and at close', async () => {
    const { ws, git, lib } = withSubmodule('dirty');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`echo 'print("PWNED-by-session")' > lib/mod.py`);
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toMatch(
      /a repository nested in the workspace, which the person's git status may not show; review them there: lib\/mod\.py \(changed by the session in the repository nested at lib/,
    );
    // Told once per change: the next command does not name it again.
    const again = await s.run('true');
    expect(again.output).not.toContain('mod.py');
    await s.close();
    expect(status(git)).toBe('');
    expect(g(lib, 'status', '--porcelain')).toBe(' M mod.py\n');
    expect(s.gitNoteAtClose).toContain('lib/mod.py (changed by the session in the repository nested at lib');
  });

  test("`ignore = all` in the person's .git/config and diff.ignoreSubmodules: an untracked file, a deletion and a staged change in lib are each named", async () => {
    const { ws, git } = withSubmodule();
    git('config', 'submodule.lib.ignore', 'all');
    git('config', 'diff.ignoreSubmodules', 'all');
    git('config', 'status.submoduleSummary', 'false');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `echo 'import os' > lib/sitecustomize.py && rm lib/util.py && echo 'print("PWNED-by-session")' > lib/mod.py && git -c safe.directory='*' -C lib add mod.py`,
    );
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toContain('lib/sitecustomize.py (made by the session, untracked in the repository nested at lib,');
    expect(r.output).toContain('lib/util.py (deleted by the session in the repository nested at lib');
    expect(r.output).toContain('lib/mod.py (staged or committed by the session in the repository nested at lib');
    await s.close();
    expect(status(git)).toBe('');
  });

  test("a commit the session made in a submodule under `ignore = all` (the top's git status and diff say nothing) is named", async () => {
    const { ws, git, lib } = withSubmodule('all');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `echo 'print("PWNED-by-session")' > lib/mod.py && git -c safe.directory='*' -C lib -c user.name=s -c user.email=s@example.com commit -qam 'tidy'`,
    );
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toContain('lib/mod.py (staged or committed by the session in the repository nested at lib');
    await s.close();
    expect(status(git)).toBe('');
    expect(git('diff')).toBe('');
    expect(g(lib, 'status', '--porcelain')).toBe('');
    expect(s.gitNoteAtClose).toContain('lib/mod.py (staged or committed by the session');
  });

  test('round 24 inside a submodule marked `ignore = dirty`: an assume-unchanged bit and forged stat data hide nothing', async () => {
    const { ws, lib } = withSubmodule('dirty');
    const gitdir = path.join(ws, '.git', 'modules', 'lib');
    const s = await startSession({ cwd: ws, workspace: ws });
    // mod.py behind an assume-unchanged bit; util.py rewritten and the index's stat data written to match it (its object
    // id kept), last, so that git status in lib takes it for the committed file.
    const r = await s.run(
      [
        `git -c safe.directory='*' -C lib update-index --assume-unchanged mod.py && echo 'print("PWNED-by-session")' > lib/mod.py`,
        `printf 'print("PWNED-from-util")\\n' > lib/util.py`,
        `python3 index-stat.py ${gitdir}/index util.py lib/util.py`,
      ].join(' && '),
    );
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toMatch(/lib\/mod\.py \(marked assume-unchanged by the session.*the bit is cleared/);
    expect(r.output).toMatch(/lib\/util\.py \(changed by the session while the index's stat data still said unchanged/);
    expect(r.output).toContain('lib/mod.py (changed by the session in the repository nested at lib');
    expect(r.output).toContain('lib/util.py (changed by the session in the repository nested at lib');
    await s.close();
    expect(g(lib, 'status', '--porcelain')).toBe(' M mod.py\n M util.py\n');
  });

  test("a nested clone the top does not track: a changed file and a node_modules/.bin program under the clone's own rules are named", async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws, git } = personsRepo();
    const x = path.join(ws, 'vendor', 'x');
    fs.mkdirSync(x, { recursive: true });
    g(x, 'init', '-q', '-b', 'main');
    fs.writeFileSync(path.join(x, 'index.js'), 'console.log("x")\n');
    fs.writeFileSync(path.join(x, '.gitignore'), 'node_modules/\n');
    g(x, 'add', '.');
    g(x, 'commit', '-qm', 'x');
    fs.mkdirSync(path.join(x, 'node_modules', '.bin'), { recursive: true });
    fs.writeFileSync(path.join(x, 'node_modules', 'left.js'), "// the person's\n");
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `echo 'require("child_process")' > vendor/x/index.js && printf '#!/bin/sh\\necho PWNED\\n' > vendor/x/node_modules/.bin/jest`,
    );
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).toContain('vendor/x/index.js (changed by the session in the repository nested at vendor/x');
    expect(r.output).toMatch(
      /your own ignore rules keep out of git status; review them: .*vendor\/x\/node_modules\/\.bin\/jest \(vendor\/x\/\.gitignore:1 `node_modules\/`\)/,
    );
    expect(r.output).not.toContain('left.js');
    await s.close();
    expect(status(git)).toBe('?? vendor/x/\n');
  });

  test("a submodule's folder swapped for a symlink to a folder only the owner reads, once and back and forth: none of its names reaches the result", async () => {
    const { ws, lib } = withSubmodule('dirty');
    // The owner's folder the session cannot list: its names must not come back through the audit's git, which runs as
    // the owner (an untracked file named, or an ignored root).
    const secret = tempDir('aj-owners-');
    fs.chmodSync(secret, 0o700);
    fs.writeFileSync(path.join(secret, 'owner-secret-name.txt'), 'x');
    fs.mkdirSync(path.join(secret, '__pycache__'));
    fs.writeFileSync(path.join(secret, '__pycache__', 'owner-secret-cache.pyc'), 'x');
    fs.writeFileSync(path.join(secret, '.gitignore'), '__pycache__/\n');
    expect(fs.readdirSync(lib)).toContain('mod.py');
    const s = await startSession({ cwd: ws, workspace: ws });
    const once = await s.run(`mv lib lib.away && ln -s ${secret} lib && ls lib 2>&1 | head -1`);
    const told = [once.output];
    // Back, then a job that swaps it to and fro while the audits run.
    told.push(
      (
        await s.run(
          `rm lib && mv lib.away lib && (for i in $(seq 1 400); do mv lib lib.away; ln -s ${secret} lib; rm lib; mv lib.away lib; done > /dev/null 2>&1 &)`,
        )
      ).output,
    );
    for (let i = 0; i < 6; i++) told.push((await s.run('true')).output);
    await s.run('sleep 1; while pgrep -f "seq 1 400" > /dev/null; do sleep 0.2; done; true');
    await s.close();
    told.push(s.gitNoteAtClose ?? '');
    expect(told.join('\n')).not.toMatch(/owner-secret/);
  }, 120_000);

  test('no noise: a file of a submodule only touched, and a change the person made before the session, are not named', async () => {
    const { ws, lib } = withSubmodule('dirty');
    fs.writeFileSync(path.join(lib, 'util.py'), 'print("the person\'s own change")\n');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('touch lib/mod.py && cat lib/util.py');
    expect(`${r.exitCode} ${r.output}`).toMatch(/^0 /);
    expect(r.output).not.toContain('nested');
    await s.close();
    expect(s.gitNoteAtClose).toBeUndefined();
  });
});

// A slow suite (test/slow-suites.js MIXED_FILES): each bound is passed by making what it bounds, more nested
// repositories than the audit reads (33, each read at every command and at close) and more than 100,000 ignored entries.
slowDescribe('repositories nested in the workspace, attacked through the bounds', () => {
  test('more nested repositories than the audit reads: the ones past the bound are named as NOT checked', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const { ws } = personsRepo();
    for (let i = 0; i < 33; i++) g(ws, 'init', '-q', `n${String(i).padStart(2, '0')}`);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('true');
    expect(r.output).toMatch(
      /n\d\d \(a nested repository NOT checked for what the session changed in it \(more nested repositories than the 32/,
    );
    await s.close();
    expect(s.gitNoteAtClose).toMatch(/a nested repository NOT checked/);
  }, 120_000);

  test("past the walk's bound, shared with the top's ignored files: a submodule's ignored folder is named NOT fully checked, and the close names the file", async () => {
    const { ws } = withSubmodule();
    fs.appendFileSync(path.join(ws, '.git', 'info', 'exclude'), 'node_modules/\n');
    // 100,100 entries in the top's ignored node_modules/big (100 folders of 1,000), before the session.
    execFileSync(
      'python3',
      [
        '-c',
        'import os\nfor d in range(100):\n  p = f"node_modules/big/d{d:03}"\n  os.makedirs(p)\n  for i in range(1000): open(f"{p}/f{i}", "w").close()',
      ],
      { cwd: ws },
    );
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`mkdir lib/__pycache__/zz && echo evil > lib/__pycache__/zz/index.js`, { timeoutMs: 120_000 });
    expect(r.output).toMatch(
      /ignored files NOT fully checked: .*lib\/__pycache__ \(ignored files and folders .*NOT fully checked.*it read more than 100000 entries/,
    );
    await s.close();
    expect(s.gitNoteAtClose).toMatch(/lib\/__pycache__\/zz\/index\.js \([^)]*\.gitignore:\d+ `__pycache__\/`\)/);
    expect(s.gitNoteAtClose).not.toContain('NOT fully checked');
  }, 180_000);
});
