/**
 * Bypasses of protocol honesty (BashSession.run), beyond
 * test/unit/session/protocol-attacks.test.ts. Scripts in ./fixtures.
 *
 * 1. A background job steals the NEXT command: it kept copies of bash's saved
 *    stdin/stdout (fds 12 and 10 during a command), SIGSTOPs bash when idle,
 *    reads the next control line itself and forges that command's output,
 *    fence, status and housekeeping record. The later command never runs
 *    and is reported as `exitCode 0` with the attacker's output. No memory
 *    reading needed.
 * 2. A command forges its own end while it still runs: `exec 0<&12 1>&10`
 *    makes bash's fds 0/1 the original pipes again, so the pipes check
 *    accepts forged records (tokens from bash's heap); `false` is reported
 *    as 0 and the command escapes its timeout.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, handOverTokens, removeTempDirs, startSession, tempDir } from '../session/helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

const fixture = (name: string): string =>
  fs
    .readFileSync(path.join(__dirname, 'fixtures', name), 'utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'))
    .join('\n');

test('a background job cannot steal and fake the result of the next command', async () => {
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run(fixture('steal-next-command.sh'));
  await new Promise((r) => setTimeout(r, 2000));
  const r = await s.run('echo second; (exit 7)');
  expect(r.output).not.toMatch(/FAKE/);
  if (r.exitCode === null) expect(r.output).toMatch(/could not be confirmed|unknown/);
  else expect(r).toMatchObject({ exitCode: 7, output: 'second\n' });
});

test("a background job that steals the next command cannot pass off its own reads, added to bash's when bash reaps it, as bash reading the line", async () => {
  // Held by the per-thread count (/proc/<pid>/task/<pid>/io) in shell.ts bytesRead.
  const dir = tempDir();
  const s = await startSession({ cwd: dir, workspace: dir });
  await s.run(fixture('steal-reaped-reads.sh'));
  await new Promise((r) => setTimeout(r, 2000));
  const r = await s.run('echo second; (exit 7)');
  expect(r.output).not.toMatch(/FAKE/);
  if (r.exitCode === null) expect(r.output).toMatch(/could not be confirmed|unknown/);
  else expect(r).toMatchObject({ exitCode: 7, output: 'second\n' });
});

test("a command cannot forge its own end (status 0) while it still runs by restoring bash's fds 0/1 first", async () => {
  const dir = tempDir();
  const toks = path.join(dir, 'toks');
  const s = await startSession({ cwd: dir, workspace: dir, env: { AJ_TOKS: toks } });
  const running = s.run(fixture('forge-own-end.sh'));
  await handOverTokens(s.bashPid, toks);
  const r = await running;
  if (r.exitCode === null) expect(r.output).toMatch(/could not be confirmed|unknown/);
  else {
    expect(r.exitCode).toBe(1);
    expect(fs.existsSync(path.join(dir, 'really-ended'))).toBe(true);
  }
});
