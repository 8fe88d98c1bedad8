/**
 * Attacks on the index audit's part on what the person's own ignore rules keep out of `git status`
 * (src/session/git-index-audit.ts (4), src/session/ignored-walk.ts; adversary round 25, F3), in real sessions of the
 * unit harness, as root: code the person runs, put where nearly every repository ignores it (a `__pycache__` bytecode
 * file whose header claims the reviewed source's mtime and size, a `node_modules/.bin` program, a `.pth` file and
 * `activate` in `.venv`), and what must be left alone (the person's own bytecode from before the session, a big
 * node_modules the session does not touch).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { personsRepo } from './persons-repo';
import { closeSessions, removeTempDirs, startSession } from '../session/helpers';
import { fastDescribe, slowDescribe } from '../../slow';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/** Python as the person runs it on the host (writing bytecode, as by default), in `cwd`: its output. */
const personsPython = (cwd: string, code: string): string => {
  const env = { ...process.env };
  delete env.PYTHONDONTWRITEBYTECODE;
  return execFileSync('python3', ['-c', code], { cwd, env, encoding: 'utf8' }).trim();
};

/**
 * The person's repository: `app.py` and `util.py` tracked, `.gitignore` ignoring `__pycache__/`, `node_modules/` and
 * `.venv/`; util's bytecode compiled by the person before the session; `node_modules/.bin/jest` a link to
 * `../jest/bin/jest.js`; `.venv/bin/activate`; and pyc-swap.py copied in (untracked).
 */
function repo(): ReturnType<typeof personsRepo> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const r = personsRepo();
  const w = (rel: string, text: string): void => {
    fs.mkdirSync(path.dirname(path.join(r.ws, rel)), { recursive: true });
    fs.writeFileSync(path.join(r.ws, rel), text);
  };
  w('app.py', 'print("hello from app")\n');
  w('util.py', 'print("hello from util")\n');
  w('.gitignore', '__pycache__/\nnode_modules/\n.venv/\n');
  r.git('add', 'app.py', 'util.py', '.gitignore');
  r.git('commit', '-qm', 'python');
  personsPython(r.ws, 'import py_compile; py_compile.compile("util.py")');
  w('node_modules/jest/bin/jest.js', 'console.log("jest")\n');
  fs.mkdirSync(path.join(r.ws, 'node_modules', '.bin'));
  fs.symlinkSync('../jest/bin/jest.js', path.join(r.ws, 'node_modules', '.bin', 'jest'));
  w('.venv/bin/activate', 'export VIRTUAL_ENV=.venv\n');
  w('.venv/lib/python3.11/site-packages/six.py', '# six\n');
  fs.copyFileSync(path.join(__dirname, 'fixtures', 'pyc-swap.py'), path.join(r.ws, 'pyc-swap.py'));
  return r;
}

const status = (git: (...a: string[]) => string): string => git('status', '--porcelain', '--untracked-files=all');

fastDescribe('the ignored-files audit, attacked', () => {
  test("bytecode swapped under the person's __pycache__/ rule: removed, and the person's import runs the reviewed source", async () => {
    const { ws, git } = repo();
    const util = path.join(ws, '__pycache__', `util.${personsPython(ws, 'import sys; print(sys.implementation.cache_tag)')}.pyc`);
    const utilBefore = fs.readFileSync(util);
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`python3 pyc-swap.py app.py 'print("PWNED-by-session")' && rm pyc-swap.py`);
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(
      /which Python would run instead of its source .*; removed, Python writes it again from the source: __pycache__\/app\.cpython-\d+\.pyc \(written during the session\)/,
    );
    await s.close();
    expect(status(git)).toBe('');
    expect(personsPython(ws, 'import app')).toBe('hello from app');
    // The person's own bytecode from before the session: left, byte for byte, and never named.
    expect(fs.readFileSync(util).equals(utilBefore)).toBe(true);
    expect(r.output).not.toContain('util.');
    expect(s.gitNoteAtClose ?? '').not.toContain('util.');
  });

  test('bytecode written by a background job after the last command: removed at close all the same', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`(sleep 1; python3 pyc-swap.py app.py 'print("PWNED-by-session")'; : > swapped) > /dev/null 2>&1 &`);
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain('bytecode');
    // The swap is made after the command's audit, while no command runs: waited for by its mark, then the session closes.
    while (!fs.existsSync(path.join(ws, 'swapped'))) await new Promise((done) => setTimeout(done, 100));
    expect(fs.readdirSync(path.join(ws, '__pycache__')).some((n) => n.startsWith('app.'))).toBe(true);
    await s.close();
    expect(s.gitNoteAtClose).toMatch(/removed, Python writes it again from the source: __pycache__\/app\./);
    expect(personsPython(ws, 'import app')).toBe('hello from app');
  });

  test('a file named as bytecode that is none (no magic number) is named, not removed', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm pyc-swap.py && mkdir -p __pycache__ && echo 'SECRET=1' > __pycache__/app.cpython-311.pyc`);
    expect(r.output).toContain('app.cpython-311.pyc (Python bytecode NOT removed (no Python magic number); ');
    await s.close();
    expect(fs.readFileSync(path.join(ws, '__pycache__', 'app.cpython-311.pyc'), 'utf8')).toBe('SECRET=1\n');
  });

  test('node_modules/.bin/jest replaced by a program, and the file it linked to changed in place: both named', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r1 = await s.run(
      `rm pyc-swap.py node_modules/.bin/jest && printf '#!/bin/sh\\necho PWNED\\n' > node_modules/.bin/jest && chmod +x node_modules/.bin/jest`,
    );
    expect(r1.output).toContain(
      'the session made or changed files that your own ignore rules keep out of git status; review them: node_modules/.bin/jest (.gitignore:2 `node_modules/`)',
    );
    const r2 = await s.run(`echo 'require("child_process")' >> node_modules/jest/bin/jest.js`);
    expect(r2.output).toContain('node_modules/jest/bin/jest.js (.gitignore:2 `node_modules/`)');
    // Told once per change: the first file is not named again.
    expect(r2.output).not.toContain('node_modules/.bin/jest (');
    await s.close();
    expect(s.gitNoteAtClose).toContain('node_modules/.bin/jest (.gitignore:2 `node_modules/`)');
    expect(s.gitNoteAtClose).toContain('node_modules/jest/bin/jest.js (.gitignore:2 `node_modules/`)');
  });

  test('a .pth file added and bin/activate changed in .venv: both named', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `rm pyc-swap.py && echo 'import os; os.system("id")' > .venv/lib/python3.11/site-packages/zz.pth && echo 'alias git=true' >> .venv/bin/activate`,
    );
    expect(r.output).toMatch(/\.venv\/lib\/python3\.11\/site-packages\/zz\.pth \(\.gitignore:\d+ `/);
    expect(r.output).toMatch(/\.venv\/bin\/activate \(\.gitignore:\d+ `/);
    expect(r.output).not.toContain('six.py');
  });

  test('an old package renamed over another (its files keep their ctime): the folder is named', async () => {
    const { ws } = repo();
    fs.mkdirSync(path.join(ws, 'node_modules', 'evil', 'bin'), { recursive: true });
    fs.writeFileSync(path.join(ws, 'node_modules', 'evil', 'bin', 'jest.js'), 'console.log("PWNED")\n');
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm pyc-swap.py && rm -r node_modules/jest && mv node_modules/evil node_modules/jest`);
    expect(r.exitCode).toBe(0);
    expect(r.output).toMatch(/node_modules(\/jest)? \(a folder: an entry removed or renamed away, or the folder itself moved; \.gitignore/);
  });

  test('many files past the bound of one root: counted in one finding that names a few', async () => {
    const { ws } = repo();
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(
      `rm pyc-swap.py && mkdir node_modules/left-pad && for i in $(seq 40); do echo $i > node_modules/left-pad/f$i.js; done`,
    );
    expect(r.output).toMatch(/node_modules \(4\d files and folders in it, left-pad\/f\d+\.js, .*, …; \.gitignore:2 `node_modules\/`\)/);
  });

  test('left alone: a big node_modules the session does not touch, and ignored files from before the session', async () => {
    const { ws, git } = repo();
    for (let p = 0; p < 100; p++) {
      fs.mkdirSync(path.join(ws, 'node_modules', `pkg${p}`));
      for (let i = 0; i < 30; i++) fs.writeFileSync(path.join(ws, 'node_modules', `pkg${p}`, `f${i}.js`), `module.exports = ${i};\n`);
    }
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run(`rm pyc-swap.py && echo 'print("changed")' > app.py && cat node_modules/pkg1/f1.js && ls node_modules | wc -l`);
    expect(r.exitCode).toBe(0);
    expect(r.output).not.toContain('node_modules');
    expect(r.output).not.toContain('ignore rules');
    await s.close();
    expect(s.gitNoteAtClose).toBeUndefined();
    expect(status(git)).toBe(' M app.py\n');
  });
});

// A slow suite (test/slow-suites.js MIXED_FILES): past the walk's bound means more than 100,000 entries made, walked
// after the command and again, whole, at close (most of this file's time: 26.6 s of 38.3 s at a load average of 4.5).
slowDescribe("the ignored-files audit, attacked through the walk's bound", () => {
  test("past the walk's bound after a command (100,000 entries): named as NOT fully checked, and the close reads on and names the file", async () => {
    const { ws } = repo();
    // 100,100 entries in node_modules/big (100 folders of 1,000), before the session.
    execFileSync(
      'python3',
      [
        '-c',
        'import os\nfor d in range(100):\n  p = f"node_modules/big/d{d:03}"\n  os.makedirs(p)\n  for i in range(1000): open(f"{p}/f{i}", "w").close()',
      ],
      { cwd: ws },
    );
    const s = await startSession({ cwd: ws, workspace: ws });
    const r = await s.run('rm pyc-swap.py && mkdir node_modules/zz && echo evil > node_modules/zz/index.js', { timeoutMs: 120_000 });
    expect(r.output).toMatch(/ignored files NOT fully checked: .*the walk stopped: it read more than 100000 entries/);
    await s.close();
    expect(s.gitNoteAtClose).toContain('node_modules/zz/index.js (.gitignore:2 `node_modules/`)');
    expect(s.gitNoteAtClose).not.toContain('NOT fully checked');
  }, 180_000);
});
