/**
 * What a program run unasked (the policy's `run`, session.ts `runExact`) may consume, as an attacker would try it, in
 * real sessions as root: reads of a sparse 8 GiB file (`truncate -s 8G`, no disk) by allowlisted programs (`wc`, `cat`, `head`) that print little or
 * nothing until each file ends, a FIFO that never ends, `/dev/zero` swapped in for a path after the check. Each must
 * end long before the command timeout with the reason in its result (src/session/exact.ts `EXACT_MAX_READ_BYTES`,
 * `EXACT_MAX_CPU_MS`); a large legitimate read (a 100 MB log, `grep -r` over a tree) must pass.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { decideApproval } from '../../../src/policy';
import type { BashSession, CommandResult } from '../../../src/session';
import { closeSessions, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(closeSessions);
afterAll(removeTempDirs);

/** A session at a new workspace holding `big`, a sparse 8 GiB file (an approved command made it), with a 120 s timeout. */
async function withHole(): Promise<{ ws: string; s: BashSession }> {
  if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
  const ws = fs.realpathSync(tempDir('aj-bounds-'));
  const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
  expect((await s.run('truncate -s 8G big && echo made')).output).toBe('made\n');
  return { ws, s };
}

/** Runs `command` as the policy lets it run unasked (it must): the result. */
async function unasked(s: BashSession, ws: string, command: string): Promise<CommandResult> {
  const d = decideApproval(command, 'policy', { workspace: ws, cwd: ws });
  expect(d.action).toBe('run');
  if (d.action !== 'run') throw new Error('not run');
  return s.runExact(d.argv, { paths: d.paths, command });
}

describe('kind 3: a read to no end by a program run unasked is stopped and says why', () => {
  test.each([
    `wc -l${' big'.repeat(40)}`,
    `wc -m${' big'.repeat(40)}`,
    `cat${' big'.repeat(40)}`,
    `head -n 1 big`,
    `wc -w${' big'.repeat(40)}`,
  ])(
    '%s on a sparse 8 GiB file ends by a bound, not the timeout',
    async (command) => {
      const { ws, s } = await withHole();
      const r = await unasked(s, ws, command);
      expect(r.timedOut).toBe(false);
      expect(r.exitCode).toBeNull();
      expect(r.output).toMatch(/stopped: it (read \d+ bytes|used \d+ ms of CPU|printed more than)/);
    },
    200_000,
  );

  test('a FIFO swapped in after the check is stopped within a tick', async () => {
    const { ws, s } = await withHole();
    fs.writeFileSync(path.join(ws, 'log'), 'x\n');
    // The check sees a regular file; the job puts a FIFO there and keeps it (no writer ever comes).
    await s.run('(sleep 0.3; rm log; mkfifo log) >/dev/null 2>&1 &');
    const d = decideApproval('wc -l log', 'policy', { workspace: ws, cwd: ws });
    if (d.action !== 'run') throw new Error('not run');
    let r: CommandResult;
    for (;;) {
      r = await s.runExact(d.argv, { paths: d.paths, command: 'wc -l log' }).catch((e: Error) => ({ output: e.message }) as CommandResult);
      if (!/^\d+ log\n$/.test(r.output)) break;
    }
    expect(r.timedOut ?? false).toBe(false);
    expect(r.output).toMatch(/FIFO|not a regular file/);
  }, 60_000);

  test('/dev/zero swapped in for a path after the check: wc -l (prints nothing until the end) is stopped by its reads or CPU', async () => {
    const { ws, s } = await withHole();
    fs.writeFileSync(path.join(ws, 'x'), 'x\n');
    // A job swaps a symlink to /dev/zero and a regular file over x in a loop; some run opens the device.
    await s.run(
      '(i=0; while [ $i -lt 4000 ]; do ln -sf /dev/zero x.l && mv -f x.l x; echo x > x.f && mv -f x.f x; i=$((i+1)); done) >/dev/null 2>&1 &',
    );
    const d = decideApproval('wc -l x', 'policy', { workspace: ws, cwd: ws });
    if (d.action !== 'run') throw new Error('not run');
    const stopped: CommandResult[] = [];
    for (let i = 0; i < 60 && stopped.length === 0; i++) {
      const r = await s.runExact(d.argv, { paths: d.paths, command: 'wc -l x' }).catch(() => undefined);
      if (r?.timedOut) throw new Error(`timed out: ${r.output}`);
      if (r && /stopped/.test(r.output)) stopped.push(r);
    }
    // Each run ended by itself or by a bound (none reached the timeout); when the device was read, the result says why.
    for (const r of stopped) expect(r.output).toMatch(/stopped: it (read \d+ bytes|used \d+ ms of CPU)/);
  }, 200_000);
});

describe('kind 3: a large legitimate read run unasked passes', () => {
  test('wc -l and wc -w of a 100 MB log, grep -r over a tree of 300 files of 1 MB: whole results, no stop', async () => {
    if (process.getuid?.() !== 0) throw new Error('this attack test needs root (the worker setting)');
    const ws = fs.realpathSync(tempDir('aj-bounds-ok-'));
    const line = '2026-12-07T17:00:00Z INFO request served path=/api/v1/items status=200 ms=12\n';
    const chunk = line.repeat(Math.ceil((1 << 20) / line.length));
    const fd = fs.openSync(path.join(ws, 'app.log'), 'w');
    for (let i = 0; i < 100; i++) fs.writeSync(fd, chunk);
    fs.closeSync(fd);
    for (let d = 0; d < 3; d++) {
      fs.mkdirSync(path.join(ws, 'src', `d${d}`), { recursive: true });
      for (let f = 0; f < 100; f++) fs.writeFileSync(path.join(ws, 'src', `d${d}`, `f${f}.log`), chunk);
    }
    const s = await startSession({ cwd: ws, workspace: ws, timeoutMs: 120_000 });
    const lines = (100 * chunk.length) / line.length;
    const wc = await unasked(s, ws, 'wc -l app.log');
    expect(wc.output).toBe(`${lines} app.log\n`);
    const words = await unasked(s, ws, 'wc -w app.log');
    expect(words.output).toBe(`${lines * line.split(' ').length} app.log\n`);
    const grep = await unasked(s, ws, 'grep -rc ERROR src');
    expect(grep.exitCode).toBe(1);
    expect(grep.output.split('\n').filter((l) => l.endsWith(':0'))).toHaveLength(300);
  }, 300_000);
});
