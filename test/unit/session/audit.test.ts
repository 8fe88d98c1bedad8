/**
 * Audit log: one JSON line per command, with the fields operators need.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeSessions, removeTempDirs, startSession, tempDir } from './helpers';

afterEach(async () => {
  await closeSessions();
  removeTempDirs();
});

test('one JSON line per command: time, session id, command, exit code, duration, output bytes, truncated, timed out', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'audit.jsonl');
  const s = await startSession({ cwd: dir, auditLog: log, id: 'audit-session', runId: 'run-7', maxOutputBytes: 1000 });
  await s.run('echo hello');
  await s.run('seq 1 10000; exit 3');
  await s.run('sleep 5', { timeoutMs: 200 });
  const lines = fs
    .readFileSync(log, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatchObject({
    sessionId: 'audit-session',
    runId: 'run-7',
    command: 'echo hello',
    exitCode: 0,
    outputBytes: 6,
    truncated: false,
    timedOut: false,
    cwd: dir,
  });
  expect(lines[1]).toMatchObject({
    command: 'seq 1 10000; exit 3',
    exitCode: 3,
    truncated: true,
    sessionRestarted: true,
    shellExit: { code: 3, signal: null },
  });
  expect(lines[1]!.outputBytes).toBe(48894);
  expect(lines[2]).toMatchObject({ command: 'sleep 5', exitCode: null, timedOut: true });
  for (const line of lines) {
    expect(new Date(line.time as string).getTime()).toBeGreaterThan(Date.now() - 60_000);
    expect(typeof line.durationMs).toBe('number');
  }
  expect(lines[2]!.durationMs as number).toBeGreaterThanOrEqual(200);
});

test('secret values in the command are redacted in the audit log', async () => {
  const dir = tempDir();
  const log = path.join(dir, 'audit.jsonl');
  process.env.AJ_TEST_TOKEN = 'tok-0123456789abcdef';
  try {
    const s = await startSession({ auditLog: log });
    await s.run('echo tok-0123456789abcdef');
    expect(fs.readFileSync(log, 'utf8')).toContain('"command":"echo [REDACTED:AJ_TEST_TOKEN]"');
  } finally {
    delete process.env.AJ_TEST_TOKEN;
  }
});

test('an unwritable audit log does not fail the command', async () => {
  const s = await startSession({ auditLog: '/nonexistent-dir/audit.jsonl' });
  const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
  try {
    expect((await s.run('echo fine')).output).toBe('fine\n');
    expect(warn).toHaveBeenCalled();
  } finally {
    warn.mockRestore();
  }
});
