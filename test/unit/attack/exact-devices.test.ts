/**
 * A program run unasked (the policy's `run`, session.ts `runExact`) that waits without reading or computing, as an
 * attacker would make it (adversary round 33, finding F4): the checked path swapped, after the check, for a symlink to
 * `/dev/ptmx` (a pty's master: `cat` waits for input that never comes), for a pty's slave held by a job, for
 * `/dev/tty`, or any device whose read waits. No bound of its reads, output or CPU sees such a run, and the FIFO watch
 * did not: it held the session to the command's timeout (forever with none). Each must end within the watch's look
 * (src/session/exact.ts `blockerInUse`, `HARMLESS_DEVICES`) or, for any other wait, the wall bound
 * (`EXACT_MAX_WALL_MS`), with the reason in its result, and the session must work after.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decideApproval } from '../../../src/policy';
import type { BashSession, CommandResult } from '../../../src/session';
import { EXACT_BOUNDS, EXACT_MAX_WALL_MS, deviceNumbers, refusedDevice, runExactProgram, type ExactRun } from '../../../src/session/exact';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** The command's timeout in these sessions: what a run that waits would reach without the fix. */
const TIMEOUT_MS = 60_000;

/** A session (mode `sandbox`, the default, or `none`) at a new workspace holding `a.txt` (`x`). */
async function session(sandbox?: 'none'): Promise<{ ws: string; s: BashSession }> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const ws = fs.realpathSync(tempDir('aj-devices-'));
  // Without the sandbox's bind, the session user needs the search bit.
  if (sandbox) fs.chmodSync(ws, 0o711);
  const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: TIMEOUT_MS, ...(sandbox ? { sandbox } : {}) });
  expect((await s.run('echo x > a.txt && echo made')).output).toBe('made\n');
  return { ws, s };
}

/**
 * Leaves a job in `s` that renames, in a loop, a symlink to `target` and a regular file over `a.txt`, then runs
 * `cat a.txt` as the policy lets it run unasked until one run is stopped (or `tries` ran): every result that came.
 */
async function race(s: BashSession, ws: string, target: string, tries = 150): Promise<CommandResult[]> {
  await s.run(
    `(i=0; while [ $i -lt 20000 ]; do ln -sf ${target} a.l && mv -f a.l a.txt; echo x > a.f && mv -f a.f a.txt; i=$((i+1)); done) >/dev/null 2>&1 &`,
  );
  const d = decideApproval('cat a.txt', 'policy', { workspace: ws, cwd: ws });
  expect(d.action).toBe('run');
  if (d.action !== 'run') throw new Error('not run');
  const results: CommandResult[] = [];
  for (let i = 0; i < tries; i++) {
    // Refused at the check (the link leaves the workspace): nothing ran.
    const r = await s.runExact(d.argv, { paths: d.paths, command: 'cat a.txt' }).catch(() => undefined);
    if (!r) continue;
    results.push(r);
    if (r.timedOut || /stopped/.test(r.output)) break;
  }
  return results;
}

/** The session still runs commands, and an unasked `cat` of a regular file gives it whole. */
async function stillWorks(s: BashSession, ws: string): Promise<void> {
  expect((await s.run('echo fine > b.txt; echo ok')).output).toBe('ok\n');
  const d = decideApproval('cat b.txt', 'policy', { workspace: ws, cwd: ws });
  if (d.action !== 'run') throw new Error('not run');
  const r = await s.runExact(d.argv, { paths: d.paths, command: 'cat b.txt' });
  expect({ output: r.output, exitCode: r.exitCode }).toEqual({ output: 'fine\n', exitCode: 0 });
}

/** No result reached the timeout, each ended within `ms`; the last was stopped for holding a terminal matching `what`. */
function expectStoppedOnTerminal(results: CommandResult[], what: RegExp, ms = 10_000): void {
  for (const r of results) expect({ timedOut: r.timedOut, long: r.durationMs > ms }).toEqual({ timedOut: false, long: false });
  const last = results[results.length - 1]!;
  expect(last.output).toMatch(/stopped: cat \(pid \d+\) had the terminal /);
  expect(last.output).toMatch(what);
  expect(last.output).toMatch(/a program run unasked never reads a terminal or a device other than \/dev\/null.*ask for approval/);
  expect(last.exitCode).toBeNull();
}

describe('a terminal swapped in for a checked path: the unasked run is stopped at once and says why', () => {
  test('/dev/ptmx (a new pty master: cat waits for input forever), a job racing the check', async () => {
    const { ws, s } = await session();
    const results = await race(s, ws, '/dev/ptmx');
    expectStoppedOnTerminal(results, /\/dev\/pts\/ptmx \(5:2\) open/);
    await stillWorks(s, ws);
  }, 300_000);

  test("a pty slave whose master a job of the session holds (mode none: the host's /dev/pts)", async () => {
    const { ws, s } = await session('none');
    await s.run(
      `/usr/bin/python3 -c 'import os, time; m, t = os.openpty(); open("tty.name", "w").write(os.ttyname(t)); time.sleep(300)' >/dev/null 2>&1 &`,
    );
    const deadline = Date.now() + 20_000;
    while (!fs.existsSync(path.join(ws, 'tty.name')) || fs.readFileSync(path.join(ws, 'tty.name'), 'utf8') === '') {
      if (Date.now() > deadline) throw new Error('the job made no pty');
      await new Promise((r) => setTimeout(r, 50));
    }
    const slave = fs.readFileSync(path.join(ws, 'tty.name'), 'utf8');
    expect(slave).toMatch(/^\/dev\/pts\/\d+$/);
    const results = await race(s, ws, slave);
    expectStoppedOnTerminal(results, new RegExp(`${slave} \\(13[6-9]:\\d+\\) open`));
    await stillWorks(s, ws);
  }, 300_000);

  test('/dev/tty (no controlling terminal: the open fails) ends by itself, never at the timeout', async () => {
    const { ws, s } = await session();
    const results = await race(s, ws, '/dev/tty', 40);
    for (const r of results) expect({ timedOut: r.timedOut, long: r.durationMs > 10_000 }).toEqual({ timedOut: false, long: false });
    for (const r of results)
      expect(r.output).toMatch(/^x\n$|No such device or address|stopped: cat \(pid \d+\) had the terminal \/dev\/tty/);
    await stillWorks(s, ws);
  }, 300_000);
});

/** Runs `file args` as an exact run without a sandbox (the worker's own view, as root), with a 20 s timeout. */
async function bare(file: string, args: string[], wallMs = EXACT_BOUNDS.wallMs): Promise<ExactRun & { output: string }> {
  const chunks: Buffer[] = [];
  const run = await runExactProgram({ file, args }, '/', { PATH: '/usr/bin:/bin' }, 20_000, (c) => chunks.push(c), undefined, {
    ...EXACT_BOUNDS,
    wallMs,
  });
  return { ...run, output: Buffer.concat(chunks).toString() };
}

describe('a device whose read waits, and any other wait, is stopped', () => {
  test('/dev/kmsg (its read waits for the next kernel message once the buffer is read) is stopped within a look', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const r = await bare('/bin/cat', ['/dev/kmsg']);
    expect(r.timedOut).toBe(false);
    expect(r.stoppedOnDevice).toMatch(/^cat \(pid \d+\) had the character device \/dev\/kmsg \(1:11\) open$/);
    expect(r.durationMs).toBeLessThan(10_000);
  }, 60_000);

  test('a pty slave held by the run itself is named as such', async () => {
    const script = 'import os; m, t = os.openpty(); os.dup2(m, 9); os.close(m); os.read(t, 1)';
    const r = await bare('/usr/bin/python3', ['-c', script]);
    expect(r.timedOut).toBe(false);
    expect(r.stoppedOnDevice).toMatch(/^python3 \(pid \d+\) had the terminal \/dev\/pts\/\d+ \(13[6-9]:\d+\) open$/);
  }, 60_000);

  test('the harmless devices (/dev/null, zero, full, random, urandom) held for a while are not stopped', async () => {
    const r = await bare('/bin/sh', ['-c', 'exec 3</dev/zero 4</dev/urandom 5>/dev/full 6</dev/random 7>/dev/null; sleep 0.5; echo done']);
    expect({ output: r.output, exitCode: r.exitCode, stoppedOnDevice: r.stoppedOnDevice }).toEqual({
      output: 'done\n',
      exitCode: 0,
      stoppedOnDevice: undefined,
    });
  }, 60_000);

  test('a wait the watch does not see (a sleep) is stopped by the wall bound', async () => {
    const r = await bare('/bin/sleep', ['30'], 1_000);
    expect(r.timedOut).toBe(false);
    expect(r.stoppedOnWall).toBeGreaterThan(1_000);
    expect(r.durationMs).toBeLessThan(10_000);
  }, 60_000);

  test(`in a session, an unasked run that waits is stopped after ${EXACT_MAX_WALL_MS} ms, its result says why, and the session works after`, async () => {
    const { ws, s } = await session();
    // Not a command the policy runs unasked; runExact runs any trusted program, so this stands for a wait nothing else sees.
    const r = await s.runExact(['sleep', '100'], { command: 'sleep 100' });
    expect(r.timedOut).toBe(false);
    expect(r.exitCode).toBeNull();
    expect(r.durationMs).toBeGreaterThanOrEqual(EXACT_MAX_WALL_MS);
    expect(r.durationMs).toBeLessThan(TIMEOUT_MS);
    expect(r.output).toMatch(
      new RegExp(`stopped: it ran \\d+ ms, longer than the ${EXACT_MAX_WALL_MS} ms a program run unasked may run .*ask for approval`),
    );
    await stillWorks(s, ws);
  }, 200_000);
});

test('device numbers are split as Linux encodes them (a major past 255, a minor past 255)', () => {
  expect(deviceNumbers(0x103)).toEqual({ major: 1, minor: 3 });
  // makedev(259, 70000): minor's low 8 bits, then major's 12, then minor's high bits.
  const rdev = (70000 & 0xff) | (259 << 8) | ((70000 & ~0xff) << 12);
  expect(deviceNumbers(rdev)).toEqual({ major: 259, minor: 70000 });
  expect(refusedDevice('/dev/urandom', 0x109)).toBeUndefined();
  expect(refusedDevice('/dev/pts/3', (136 << 8) | 3)).toBe('the terminal /dev/pts/3 (136:3)');
  expect(refusedDevice('/dev/kmsg', 0x10b)).toBe('the character device /dev/kmsg (1:11)');
});
