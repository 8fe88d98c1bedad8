/**
 * Presence records (src/activities/presence.ts): the liveness check takes
 * only evidence of death from them, and only from a record nobody else could
 * have written, of this boot and pid namespace. The attacks: a planted or
 * loosely-owned record, a symlink, another machine's record, a reused pid, a
 * stopped process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  exitedOnThisMachine,
  presenceDir,
  processStart,
  readPresence,
  writePresence,
  type PresenceRecord,
} from '../../../src/activities/presence';

const isRoot = process.getuid?.() === 0;
let env: NodeJS.ProcessEnv;
let dir: string;

beforeEach(() => {
  dir = path.join(mkdtempSync(path.join(tmpdir(), 'presence-')), 'p');
  env = { AGENT_JOBS_PRESENCE_DIR: dir };
});

/** A child `sleep`, and when it has exited (reaped). */
function sleeper(): { child: ChildProcess; exited: Promise<void> } {
  const child = spawn('sleep', ['60'], { stdio: 'ignore' });
  return { child, exited: new Promise((resolve) => child.once('exit', () => resolve())) };
}

/** Writes a record for `pid` as this worker would, in the test's folder (made by writePresence). */
function plant(workerId: string, pid: number, over: Partial<PresenceRecord> = {}): string {
  const mine = readPresence('self', env)!;
  const record: PresenceRecord = { ...mine, workerId, pid, startTicks: processStart(pid)?.startTicks ?? '1', ...over };
  const file = path.join(dir, `${workerId}.json`);
  writeFileSync(file, JSON.stringify(record), { mode: 0o600 });
  return file;
}

test('this process writes its record, which shows it alive; removing it leaves no evidence', () => {
  const remove = writePresence('self', env)!;
  expect(remove).not.toBeNull();
  expect(readPresence('self', env)).toMatchObject({ workerId: 'self', pid: process.pid });
  expect(exitedOnThisMachine('self', env)).toBeNull();
  remove();
  expect(readPresence('self', env)).toBeNull();
  expect(exitedOnThisMachine('self', env)).toBeNull();
  expect(presenceDir(env)).toBe(dir);
});

test('a worker whose process exited is gone; one running or stopped (SIGSTOP) is not judged', async () => {
  writePresence('self', env);
  const { child, exited } = sleeper();
  try {
    plant('w1', child.pid!);
    expect(exitedOnThisMachine('w1', env)).toBeNull();
    child.kill('SIGSTOP');
    // The signal is delivered asynchronously: wait for the state to say so (a busy machine takes its time).
    const deadline = Date.now() + 10_000;
    while (processStart(child.pid!)?.state !== 'T' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(processStart(child.pid!)?.state).toBe('T');
    expect(exitedOnThisMachine('w1', env)).toBeNull();
  } finally {
    child.kill('SIGKILL');
  }
  await exited;
  expect(exitedOnThisMachine('w1', env)).toBe(`its process (pid ${child.pid} on this machine) has exited`);
});

test('a pid that is another process now (another start time) means the worker exited', () => {
  writePresence('self', env);
  plant('w2', process.pid, { startTicks: '1' });
  expect(exitedOnThisMachine('w2', env)).toMatch(/has exited \(the pid is another process's now\)/);
});

test("another boot's or pid namespace's record is no evidence (a container with the same name, a reboot)", () => {
  writePresence('self', env);
  plant('w3', 999_999_999, { bootId: '00000000-0000-0000-0000-000000000000' });
  expect(exitedOnThisMachine('w3', env)).toBeNull();
  plant('w4', 999_999_999, { pidNamespace: 'pid:[1]' });
  expect(exitedOnThisMachine('w4', env)).toBeNull();
  // The same record of this machine is evidence: the checks above are what refused it.
  plant('w5', 999_999_999);
  expect(exitedOnThisMachine('w5', env)).toMatch(/has exited/);
});

test('a record anyone else could have written is ignored: group/other-writable, a symlink, an odd id', () => {
  writePresence('self', env);
  const loose = plant('w6', 999_999_999);
  chmodSync(loose, 0o666);
  expect(exitedOnThisMachine('w6', env)).toBeNull();
  const real = plant('w7-real', 999_999_999);
  symlinkSync(real, path.join(dir, 'w7.json'));
  expect(readFileSync(path.join(dir, 'w7.json'), 'utf8')).toContain('999999999');
  expect(exitedOnThisMachine('w7', env)).toBeNull();
  expect(exitedOnThisMachine('../p/w5', env)).toBeNull();
  // A folder others may write into taints every record in it.
  plant('w8', 999_999_999);
  expect(exitedOnThisMachine('w8', env)).toMatch(/has exited/);
  chmodSync(dir, 0o777);
  expect(exitedOnThisMachine('w8', env)).toBeNull();
});

(isRoot ? test : test.skip)("a record another user owns (a session user's plant) is ignored", () => {
  writePresence('self', env);
  const planted = plant('w9', 999_999_999);
  expect(exitedOnThisMachine('w9', env)).toMatch(/has exited/);
  chownSync(planted, 4321, 4321);
  expect(exitedOnThisMachine('w9', env)).toBeNull();
});
