/**
 * Shell state persists between commands, and commands that change the shell
 * itself do not break the commands after them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { BashSession, InvalidCommandError, SessionClosedError, SessionStartError } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('state persists between commands', () => {
  test('working directory, plain and exported variables, functions, aliases, $?', async () => {
    const dir = tempDir();
    fs.mkdirSync(path.join(dir, 'sub'));
    const s = await startSession({ cwd: dir });
    expect(s.cwd).toBe(dir);
    expect((await s.run('cd sub')).cwd).toBe(path.join(dir, 'sub'));
    expect(s.cwd).toBe(path.join(dir, 'sub'));
    await s.run('plain=one; export EXPORTED=two; greet() { echo "hello $1"; }; alias ll="echo aliased"');
    const r = await s.run(
      'pwd; echo "$plain $EXPORTED"; bash -c \'echo "child sees ${EXPORTED:-nothing} ${plain:-nothing}"\'; greet you; ll',
    );
    expect(r.output).toBe(`${path.join(dir, 'sub')}\none two\nchild sees two nothing\nhello you\naliased\n`);
    expect(r.exitCode).toBe(0);
    await s.run('(exit 7)');
    expect((await s.run('echo "previous status $?"')).output).toBe('previous status 7\n');
  });

  test('declare, local and positional parameters behave as at top level of a script', async () => {
    const s = await startSession();
    await s.run('declare -A map=([k]=v); declare -i n=41; n+=1; set -- a b c');
    expect((await s.run('echo "${map[k]} $n $# $2"')).output).toBe('v 42 3 b\n');
    const r = await s.run('local x=1');
    expect(r.exitCode).not.toBe(0);
    expect(r.output).toMatch(/can only be used in a function/);
  });

  test('concurrent run() calls are serialized in call order', async () => {
    const s = await startSession();
    const results = await Promise.all([s.run('sleep 0.2; echo first; x=1'), s.run('echo second $x'), s.run('echo third')]);
    expect(results.map((r) => r.output)).toEqual(['first\n', 'second 1\n', 'third\n']);
  });

  test('pid and id are reported; id can be chosen', async () => {
    const s = await startSession({ id: 'my-session' });
    expect(s.id).toBe('my-session');
    // Without a sandbox bash is the spawned process; in one it is pid 2 of its own pid namespace, bashPid outside.
    if (s.sandbox === 'none') expect((await s.run('echo $$')).output).toBe(`${s.pid}\n`);
    else expect((await s.run('echo $$')).output).toBe('2\n');
    expect(fs.readFileSync(`/proc/${s.bashPid}/cmdline`, 'utf8').split('\0')[0]).toMatch(/bash$/);
  });
});

describe('commands that change the shell do not break later commands', () => {
  test('set -e on its own does not persist (a later failure does not kill the shell)', async () => {
    const s = await startSession();
    await s.run('x=kept; set -e');
    const r = await s.run('false');
    expect(r).toMatchObject({ exitCode: 1, sessionRestarted: false });
    expect((await s.run('echo $x')).output).toBe('kept\n');
  });

  test('set -e with a failure in the same command ends the shell: reported at once, restarted', async () => {
    const s = await startSession();
    const pid = s.pid;
    const r = await s.run('set -e; echo before; false; echo not-reached');
    expect(r.output).toBe('before\n');
    expect(r).toMatchObject({ exitCode: 1, sessionRestarted: true, shellExit: { code: 1, signal: null } });
    expect(s.pid).not.toBe(pid);
    expect((await s.run('echo works')).output).toBe('works\n');
  });

  test('set -u, set -x and set -v do not persist; set -o pipefail does', async () => {
    const s = await startSession();
    await s.run('set -u; set -x; set -v; set -o pipefail');
    const r = await s.run('echo "${UNSET_VAR_X:-default}" $UNSET_VAR_Y; false | true');
    expect(r.output).toBe('default\n');
    expect(r.exitCode).toBe(1); // pipefail kept
    expect(r.sessionRestarted).toBe(false);
  });

  test('trap is disabled in the session shell with a clear message, and cannot be brought back; scripts keep their traps', async () => {
    const s = await startSession();
    for (const attempt of [
      "trap 'echo x' DEBUG",
      "builtin trap 'echo x' DEBUG",
      "command trap 'echo x' DEBUG",
      "set -o posix; trap 'echo x' DEBUG",
      "enable trap; trap 'echo x' DEBUG",
      "unset -f trap; trap 'echo x' DEBUG",
    ]) {
      const r = await s.run(`${attempt}; echo after`);
      expect(r.output).not.toMatch(/^x$/m);
      expect(r.output).toMatch(/after\n/);
    }
    expect((await s.run("trap 'echo x' DEBUG")).output).toMatch(/trap: disabled in this session shell/);
    expect((await s.run('echo still ok; false')).output).toBe('still ok\n');
    // bash -c and scripts are other processes: their traps work
    expect((await s.run(`bash -c "trap 'echo exit-trap' EXIT; echo body"`)).output).toBe('body\nexit-trap\n');
    // a shell whose child ignores SIGTERM is still killed on timeout
    const t = await s.run(`bash -c "trap '' TERM; sleep 5"`, { timeoutMs: 300 });
    expect(t).toMatchObject({ timedOut: true, sessionRestarted: true });
    expect((await s.run('echo fresh')).output).toBe('fresh\n');
  });

  test('a raised-then-lowered soft ulimit is restored; a lowered hard limit restarts the shell', async () => {
    const s = await startSession({ limits: { maxOpenFiles: 1024 } });
    await s.run('ulimit -S -n 64');
    expect((await s.run('ulimit -n')).output).toBe('1024\n');
    const r = await s.run('ulimit -n 32; echo lowered');
    expect(r.output).toMatch(/^lowered\n\[agent-jobs: the command lowered the shell's resource limits/);
    expect(r.sessionRestarted).toBe(true);
    expect((await s.run('ulimit -n')).output).toBe('1024\n');
  });

  test('cd into a directory that is then deleted: the shell moves to the nearest existing parent and says so', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const r = await s.run('mkdir -p a/b && cd a/b && rm -rf ../../a && echo in-deleted');
    expect(r.output).toMatch(/^in-deleted\n\[agent-jobs: the working directory .*\/a\/b no longer exists; the shell moved to /);
    expect(r.cwd).toBe(dir);
    const next = await s.run('pwd; touch file && ls');
    expect(next.output).toBe(`${dir}\nfile\n`);
  });

  test('a working directory deleted and created again is re-entered', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    await s.run('mkdir build && cd build');
    const r = await s.run('rm -rf ../build && mkdir ../build && touch ../build/new');
    expect(r.output).toMatch(/was deleted and created again/);
    expect((await s.run('ls')).output).toBe('new\n');
  });

  test("a command that deletes the session's own temporary directory (rm -rf /tmp/*) does not break it", async () => {
    const s = await startSession();
    // The command's stdout is a FIFO in the session's private directory: delete that directory.
    const r = await s.run('d=$(dirname "$(readlink /proc/$$/fd/1)"); rm -rf "$d"; echo after-delete');
    // As the session user it cannot (the directory is root's): either way the session goes on.
    expect(r.output).toMatch(/after-delete\n$/);
    expect(r.exitCode).toBe(0);
    const next = await s.run('echo next');
    expect(next.output).toBe('next\n');
    const long = await s.run(`echo ${'x'.repeat(5000)} | wc -c`);
    expect(long.output).toBe('5001\n');
  });

  test('exec redirections inside a command stay inside it', async () => {
    const s = await startSession();
    const r = await s.run('exec 2>&1 >/dev/null; echo hidden; exec 0</dev/null');
    expect(r.exitCode).toBe(0);
    expect((await s.run('echo visible')).output).toBe('visible\n');
  });

  test('redefining shell builtins used by the protocol (cd, printf, set, eval, read) does not break it', async () => {
    const s = await startSession();
    await s.run('cd() { echo fake-cd; }; printf() { echo fake; }; set() { :; }; eval() { :; }; read() { :; }');
    const r = await s.run('echo "still works"');
    expect(r.output).toBe('still works\n');
    await s.run('unset -f cd printf set eval read');
    // The protocol's own functions are read-only.
    const u = await s.run('unset -f __aj_e; __aj_e() { :; }');
    expect(u.output).toMatch(/readonly function/);
    expect((await s.run('echo ok')).output).toBe('ok\n');
  });
});

describe('errors', () => {
  test('start: a missing working directory is a SessionStartError', async () => {
    await expect(BashSession.start({ cwd: '/nonexistent/dir/x' })).rejects.toBeInstanceOf(SessionStartError);
  });

  test('run: a command with NUL is rejected without running; the session is unchanged', async () => {
    const s = await startSession();
    await expect(s.run('echo a\0b')).rejects.toBeInstanceOf(InvalidCommandError);
    expect((await s.run('echo fine')).output).toBe('fine\n');
  });

  test('run after close, and runs queued behind close, reject with SessionClosedError', async () => {
    const s = await startSession();
    const running = s.run('sleep 5');
    const queued = s.run('echo never');
    await new Promise((r) => setTimeout(r, 100));
    await s.close();
    const r = await running;
    expect(r.cancelled).toBe(true);
    await expect(queued).rejects.toBeInstanceOf(SessionClosedError);
    await expect(s.run('echo x')).rejects.toBeInstanceOf(SessionClosedError);
    await expect(s.restart()).rejects.toBeInstanceOf(SessionClosedError);
    await s.close(); // idempotent
  });

  test('restart() gives a fresh shell in the last working directory', async () => {
    // A directory the sandbox shows (the worker's temp dirs are not in its private /tmp).
    const dir = '/usr/share';
    const s = await startSession({ cwd: '/' });
    await s.run(`cd ${dir}; x=1`);
    const pid = s.pid;
    await s.restart();
    expect(s.pid).not.toBe(pid);
    const r = await s.run('echo "${x:-unset}"; pwd');
    expect(r.output).toBe(`unset\n${dir}\n`);
  });
});
