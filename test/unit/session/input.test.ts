/**
 * Commands that wait for input, pagers and prompts: they see end-of-input at
 * once (stdin is /dev/null, no controlling terminal), nothing hangs until
 * the timeout (C07, docs/cases.md).
 */
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { closeSessions, removeTempDirs, startSession, tempDir, timed } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

/**
 * The command timeout of these tests, ms. A command that waited for input or an answer would wait for this
 * timeout (nothing else ends the wait): so the proof that it did not is `timedOut: false` with the program's
 * own reaction to end-of-input, and it came back in under half of this, which a busy machine keeps to.
 */
const TIMEOUT_MS = 20_000;
/** npm starts a node process of its own, seconds on a busy machine: a longer timeout, the same rule. */
const NPM_TIMEOUT_MS = 60_000;

describe('C07: commands that read stdin see end-of-input', () => {
  test('cat with no file, read x, python3 input() return at once; the session stays usable', async () => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    const [cat, catMs] = await timed(() => s.run('cat'));
    expect(cat).toMatchObject({ output: '', exitCode: 0, timedOut: false });
    expect(catMs).toBeLessThan(TIMEOUT_MS / 2);

    const [read, readMs] = await timed(() => s.run('read x; echo "status $? x=[$x]"'));
    expect(read).toMatchObject({ output: 'status 1 x=[]\n', timedOut: false });
    expect(readMs).toBeLessThan(TIMEOUT_MS / 2);

    const [py, pyMs] = await timed(() => s.run('python3 -c "input()"'));
    expect(py).toMatchObject({ exitCode: 1, timedOut: false });
    expect(py.output).toMatch(/EOFError/);
    expect(pyMs).toBeLessThan(TIMEOUT_MS / 2);

    expect((await s.run('echo usable')).output).toBe('usable\n');
  });

  test('a command cannot read the control channel (the rest of its line is not eaten)', async () => {
    const s = await startSession();
    const r = await s.run('cat /dev/stdin; head -c 100 /proc/self/fd/0; echo end');
    expect(r.output).toBe('end\n');
    expect((await s.run('echo next')).output).toBe('next\n');
  });

  test('questions from programs get end-of-input: read -p, a y/N prompt, a password prompt', async () => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    const [r, ms] = await timed(() =>
      s.run('read -p "Continue? [y/N] " answer || echo "no answer"; python3 -c "import getpass; getpass.getpass()" 2>&1 | tail -1'),
    );
    expect(r.output).toMatch(/^no answer\n/);
    expect(r.timedOut).toBe(false);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });

  test('a package manager asking questions (npm init) does not wait for an answer', async () => {
    const dir = tempDir('aj-npm-');
    const s = await startSession({ cwd: dir, timeoutMs: NPM_TIMEOUT_MS });
    const [r, ms] = await timed(() => s.run('npm init'));
    expect(r.timedOut).toBe(false);
    expect(ms).toBeLessThan(NPM_TIMEOUT_MS / 2);
    expect((await s.run('echo next')).output).toBe('next\n');
  });

  test('no controlling terminal: /dev/tty cannot be opened, so nothing can prompt through it', async () => {
    const s = await startSession();
    const r = await s.run('echo hi > /dev/tty');
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/No such device or address|tty/);
  });
});

describe('pagers and editors are disabled', () => {
  function makeRepo(commits: number): string {
    const dir = tempDir('aj-git-');
    const git = (...args: string[]) => execFileSync('git', args, { cwd: dir, stdio: 'pipe' });
    git('init', '-q', '-b', 'main');
    git('config', 'user.email', 'test@example.com');
    git('config', 'user.name', 'Test');
    // fast-import builds a long history in one process
    let stream = '';
    for (let i = 1; i <= commits; i++) {
      const msg = `commit number ${i}\n`;
      stream += `commit refs/heads/main\ncommitter Test <test@example.com> ${1_700_000_000 + i} +0000\ndata ${Buffer.byteLength(msg)}\n${msg}`;
      stream += `M 644 inline file.txt\ndata ${String(i).length + 1}\n${i}\n\n`;
    }
    execFileSync('git', ['fast-import', '--quiet'], { cwd: dir, input: stream, stdio: ['pipe', 'pipe', 'pipe'] });
    git('reset', '-q', '--hard', 'main');
    return dir;
  }

  test('git log in a long repository prints everything without a pager', async () => {
    const repo = makeRepo(3000);
    const s = await startSession({ cwd: repo, timeoutMs: TIMEOUT_MS });
    const [r, ms] = await timed(() => s.run('git log'));
    expect(r).toMatchObject({ exitCode: 0, truncated: true, timedOut: false });
    expect(r.output).toMatch(/commit number 3000/);
    expect(r.output).toMatch(/commit number 1\n$/);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });

  test('git commit without -m aborts instead of opening an editor', async () => {
    const repo = makeRepo(1);
    const s = await startSession({ cwd: repo, timeoutMs: TIMEOUT_MS });
    const [r, ms] = await timed(() => s.run('echo change >> file.txt && git commit -a'));
    expect(r.exitCode).not.toBe(0);
    expect(r.timedOut).toBe(false);
    expect(r.output).toMatch(/empty commit message/i);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  });

  test('the environment says: no pager, no prompts, non-interactive', async () => {
    const s = await startSession({ cwd: path.sep });
    const r = await s.run('echo "$PAGER $GIT_PAGER $GIT_TERMINAL_PROMPT $DEBIAN_FRONTEND $GIT_EDITOR"');
    expect(r.output).toBe('cat cat 0 noninteractive true\n');
  });
});
