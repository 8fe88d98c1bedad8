/**
 * Background jobs, timeouts, cancellation and the shell's own death: every
 * command comes back promptly with the truth, the whole process group is
 * killed, no orphan or zombie is left, and the session is usable after
 * (C08, C09, C12 in docs/cases.md).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import {
  closeSessions,
  findProcesses,
  liveProcesses,
  removeTempDirs,
  startSession,
  tempDir,
  timed,
  uniqueSleepSeconds,
  waitGone,
  waitUntil,
} from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

describe('background jobs', () => {
  // Promptly is structural: run() came back before the job's own end (the job is still running after it) and not
  // by the timeout; a run() that waited for the job would take the job's 60 s, past the session's 10 s timeout.
  test('`server & sleep 1; echo started` returns promptly; the job keeps running', async () => {
    const s = await startSession();
    const token = uniqueSleepSeconds(60);
    const [r, ms] = await timed(() => s.run(`(echo server-up; exec sleep ${token}) & sleep 1; echo started`));
    expect(r).toMatchObject({ output: 'server-up\nstarted\n', exitCode: 0, timedOut: false });
    expect(liveProcesses({ token })).toHaveLength(1);
    expect(ms).toBeGreaterThanOrEqual(1000);
    expect(ms).toBeLessThan(Number(token) * 1000);
  });

  test("a job's later output does not leak into the next command's result", async () => {
    const s = await startSession();
    await s.run('for i in 1 2 3 4 5 6; do sleep 0.1; echo "late $i"; echo "late err $i" >&2; done &');
    const results = [];
    for (let i = 0; i < 5; i++) {
      results.push((await s.run(`sleep 0.1; echo "next ${i}"`)).output);
    }
    expect(results).toEqual(['next 0\n', 'next 1\n', 'next 2\n', 'next 3\n', 'next 4\n']);
  });

  test('a job holding stdout and stderr open does not delay the result', async () => {
    const s = await startSession();
    const token = uniqueSleepSeconds(60);
    const [r, ms] = await timed(() => s.run(`nohup sleep ${token} >/dev/stdout 2>&1 & disown; echo detached`));
    expect(r).toMatchObject({ exitCode: 0, timedOut: false });
    expect(r.output).toMatch(/detached\n/);
    // The result came while the job still held the pipes: before the job's own end, and not by the timeout.
    expect(liveProcesses({ token })).toHaveLength(1);
    expect(ms).toBeLessThan(Number(token) * 1000);
  });

  test('a chatty background job neither blocks on a full pipe nor dies of SIGPIPE after its command ends', async () => {
    const dir = tempDir();
    const s = await startSession({ cwd: dir });
    const r = await s.run('(sleep 0.2; for i in $(seq 1 100000); do echo "log line $i"; done; echo finished > done.txt) & echo started');
    expect(r.output).toBe('started\n');
    const outputs: string[] = [];
    for (let i = 0; i < 40; i++) outputs.push((await s.run(`echo cmd ${i}`)).output);
    expect(outputs).toEqual(Array.from({ length: 40 }, (_, i) => `cmd ${i}\n`));
    const end = Date.now() + 10_000;
    while (!fs.existsSync(path.join(dir, 'done.txt')) && Date.now() < end) await new Promise((res) => setTimeout(res, 50));
    expect(fs.readFileSync(path.join(dir, 'done.txt'), 'utf8')).toBe('finished\n');
  });

  test('reopening /dev/stdout and /dev/stderr (echo x > /dev/stderr) keeps all output in order', async () => {
    const s = await startSession();
    const r = await s.run('echo a; echo err > /dev/stderr; echo b > /dev/stdout; printf c >> /dev/stdout; echo; echo d');
    expect(r.output).toBe('a\nerr\nb\nc\nd\n');
  });

  test('wait for a job started by an earlier command works', async () => {
    const s = await startSession();
    await s.run('(sleep 0.3; exit 5) & job=$!');
    const r = await s.run('wait $job; echo "job ended with $?"');
    expect(r.output).toBe('job ended with 5\n');
  });

  test('close() kills background jobs, including those in their own process group', async () => {
    const s = await startSession();
    const a = uniqueSleepSeconds();
    const b = uniqueSleepSeconds();
    const c = uniqueSleepSeconds();
    await s.run(`sleep ${a} & bash -c "trap '' TERM; sleep ${b}" & set -m; sleep ${c} & set +m; sleep 0.3; echo ok`);
    expect(liveProcesses({ token: a })).toHaveLength(1);
    expect(liveProcesses({ token: b }).length).toBeGreaterThanOrEqual(1);
    expect(liveProcesses({ token: c })).toHaveLength(1);
    const sid = s.pid;
    await s.close();
    for (const token of [a, b, c]) expect(liveProcesses({ token })).toEqual([]);
    expect(liveProcesses({ sid })).toEqual([]);
    expect(await waitGone({ sid })).toEqual([]);
  });

  test('restart() kills background jobs', async () => {
    const s = await startSession();
    const token = uniqueSleepSeconds();
    await s.run(`sleep ${token} &`);
    // The job's subshell may not have exec'd sleep yet when the command returns.
    await waitUntil('the background job to exec its sleep', () => liveProcesses({ token }).length > 0);
    expect(liveProcesses({ token })).toHaveLength(1);
    await s.restart();
    expect(liveProcesses({ token })).toEqual([]);
  });
});

describe('C08: timeouts kill the whole process group', () => {
  test('a child that ignores SIGTERM: timed out with the output so far, nothing left, next command works', async () => {
    const s = await startSession({ killGraceMs: 300 });
    const oldPid = s.pid;
    const token = uniqueSleepSeconds(60);
    await s.run('cd /tmp; keep=1');
    const [r, ms] = await timed(() =>
      s.run(`echo before; bash -c 'trap "" TERM; echo child-started; sleep ${token}; echo never'; echo never-either`, { timeoutMs: 700 }),
    );
    expect(r).toMatchObject({ timedOut: true, exitCode: null, sessionRestarted: true, cancelled: false, cwd: '/tmp' });
    expect(r.output).toBe('before\nchild-started\n');
    // The timeout's kill (SIGKILL after the grace, the child ignoring SIGTERM) ended it, not the child's own end.
    expect(ms).toBeGreaterThanOrEqual(700);
    expect(ms).toBeLessThan(Number(token) * 1000);
    // no process of the old shell is alive; zombies are reaped by init shortly after
    expect(liveProcesses({ token })).toEqual([]);
    expect(liveProcesses({ sid: oldPid })).toEqual([]);
    expect(await waitGone({ token })).toEqual([]);
    expect(await waitGone({ sid: oldPid })).toEqual([]);
    expect(s.pid).not.toBe(oldPid);
    const next = await s.run('echo "works in $PWD, keep=${keep:-lost}"');
    expect(next.output).toBe('works in /tmp, keep=lost\n');
  });

  test('a timed-out loop in the shell itself is stopped (no new children after the kill)', async () => {
    const s = await startSession();
    const token = uniqueSleepSeconds().slice(0, 8);
    const r = await s.run(`while true; do sleep 0.0${token.slice(5, 7)}1; done`, { timeoutMs: 400 });
    expect(r.timedOut).toBe(true);
    await new Promise((res) => setTimeout(res, 200));
    expect(findProcesses({ token: `sleep 0.0${token.slice(5, 7)}1` }).filter((p) => p.state !== 'Z')).toEqual([]);
  });

  test('the session timeout applies when run() gives none; run() can override it', async () => {
    const s = await startSession({ timeoutMs: 300 });
    const [r, ms] = await timed(() => s.run('sleep 30'));
    expect(r).toMatchObject({ timedOut: true, exitCode: null });
    // The session's 300 ms ended it, not the sleep's own 30 s.
    expect(ms).toBeGreaterThanOrEqual(300);
    expect(ms).toBeLessThan(30_000);
    const ok = await s.run('sleep 0.5; echo slept', { timeoutMs: 3000 });
    expect(ok).toMatchObject({ timedOut: false, output: 'slept\n' });
  });
});

describe('C12: cancellation through an AbortSignal', () => {
  test('abort kills the group (SIGTERM-ignoring children too), restarts, resolves cancelled; no orphan', async () => {
    const s = await startSession({ killGraceMs: 300 });
    const oldPid = s.pid;
    const token = uniqueSleepSeconds();
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 300);
    const [r, ms] = await timed(() =>
      s.run(`echo working; bash -c "trap '' TERM; sleep ${token}" & bash -c 'trap "" TERM; sleep ${token}'`, {
        signal: controller.signal,
        timeoutMs: 60_000,
      }),
    );
    expect(r).toMatchObject({ cancelled: true, timedOut: false, exitCode: null, sessionRestarted: true, output: 'working\n' });
    // The abort ended it, not the 60 s timeout (nor the children's own 1000 s).
    expect(ms).toBeLessThan(60_000);
    expect(liveProcesses({ token })).toEqual([]);
    expect(liveProcesses({ sid: oldPid })).toEqual([]);
    expect(await waitGone({ token })).toEqual([]);
    expect((await s.run('echo after')).output).toBe('after\n');
  });

  test('a signal aborted before the command starts: nothing runs', async () => {
    const s = await startSession();
    const controller = new AbortController();
    controller.abort();
    const r = await s.run('touch /tmp/should-not-exist-aj', { signal: controller.signal });
    expect(r).toMatchObject({ cancelled: true, exitCode: null, sessionRestarted: false });
    expect(r.output).toMatch(/nothing was run/);
  });
});

describe('C09: the shell itself exits', () => {
  // An exit not detected would leave the command waiting for its records until the timeout: detected at once is the
  // shell's exit reported (shellExit), not the timeout, in under half of it.
  const TIMEOUT_MS = 30_000;
  test.each([
    ['exit 3', { code: 3, signal: null }, 3],
    // bash replaced: no exit record proves that bash itself read the line, so the status is unknown.
    ['exec sh', { code: 0, signal: null }, null],
    ['kill -9 $$', { code: null, signal: 'SIGKILL' }, null],
    ['echo partial; exit 0', { code: 0, signal: null }, 0],
  ])('%s is detected at once, reported, and the session restarts', async (command, shellExit, exitCode) => {
    const s = await startSession({ timeoutMs: TIMEOUT_MS });
    await s.run('cd /usr; v=1');
    const oldPid = s.pid;
    const [r, ms] = await timed(() => s.run(command));
    expect(r).toMatchObject({ shellExit, exitCode, sessionRestarted: true, timedOut: false, cwd: '/usr' });
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
    expect(s.pid).not.toBe(oldPid);
    const next = await s.run('echo hi; echo "${v:-state lost}"; pwd');
    expect(next.output).toBe('hi\nstate lost\n/usr\n');
  });

  test('exit with background jobs running: jobs are killed with the old shell', async () => {
    const s = await startSession();
    const token = uniqueSleepSeconds();
    const r = await s.run(`sleep ${token} & exit 4`);
    expect(r.shellExit).toEqual({ code: 4, signal: null });
    expect(liveProcesses({ token })).toEqual([]);
  });

  test('a shell killed while idle is restarted before the next command, which says so', async () => {
    const s = await startSession();
    const shell = s.pid;
    await s.run('(sleep 0.2; kill -9 $$) &');
    // Gone from /proc once the worker has reaped it, so the session has seen its exit; a fixed pause could end first.
    await waitUntil('the idle shell to be killed and reaped', () => !fs.existsSync(`/proc/${shell}`));
    const r = await s.run('echo hi');
    expect(r.output).toMatch(/^hi\n\[agent-jobs: the shell had exited since the last command \(killed by SIGKILL\); it was restarted/);
    expect(r.sessionRestarted).toBe(true);
    expect(r.exitCode).toBe(0);
  });
});
