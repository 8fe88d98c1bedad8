/**
 * A file rewritten through a shared mapping keeps its stat (adversary round 26, F2): after the first write fault the
 * page is dirty and writable, and the kernel changes no time for later writes (on ext4 until writeback; on tmpfs
 * never, not even for the first). A checkpoint that trusted the stat cache recorded the old text, and a restore's
 * `read-tree` that trusted the index left the new one. Real jobs (fixtures/mmap-rewrite.py), real checkpoints and
 * restores; through the session activities (the worker's registry gives the sessions' start) and the store.
 */
import { spawn, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSessionActivities, SessionRegistry } from '../../../src/activities/session';
import { restoreCheckpoint, takeCheckpoint, type Checkpoint } from '../../../src/checkpoint/store';
import type { OpenSessionOutput, RunCommandInput, RunCommandOutput } from '../../../src/contract/activities';
import { waitUntil } from '../session/helpers';

const FIXTURE = path.join(__dirname, '..', 'attack', 'fixtures', 'mmap-rewrite.py');

/** app.py's text in checkpoint `cp`. */
function recorded(cp: { store: string; id: string }): string {
  return spawnSync('git', ['--git-dir', cp.store, 'show', `${cp.id}:app.py`], { encoding: 'utf8' }).stdout;
}

/** Waits until `file`'s ctime is more than 2.5 s old: past the checkpoint's own racy window, so only the fix keeps its stat out. */
async function pastRacyWindow(file: string): Promise<void> {
  const ctime = statSync(file).ctimeMs;
  await waitUntil(`${file} 2.5 s old`, () => Date.now() > ctime + 2500, 20_000);
}

describe('a file rewritten through a shared mapping', () => {
  let dir: string;
  let registry: SessionRegistry | undefined;
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'aj-mapped-'))));
  afterEach(async () => {
    await registry?.closeAll();
    rmSync(dir, { recursive: true, force: true });
  });

  test("a session's job: the next checkpoint records the new text, and a rewind gives the old one back", async () => {
    registry = new SessionRegistry(2);
    const acts = createSessionActivities({
      registry,
      workerId: 'w1',
      taskQueue: 'q1',
      workspaceRoot: path.join(dir, 'workspaces'),
      checkpointRoot: path.join(dir, 'checkpoints'),
      sessionOptions: { sandbox: 'none', user: null, auditLog: path.join(dir, 'audit.jsonl') },
    });
    const env = new MockActivityEnvironment();
    const ref: OpenSessionOutput = await env.run(acts.openSession, { workflowId: 'run-1' });
    const ws = path.join(dir, 'workspaces', 'run-1');
    writeFileSync(path.join(ws, 'app.py'), 'print("hello")\n');
    copyFileSync(FIXTURE, path.join(ws, 'mmap-rewrite.py'));
    let turn = 0;
    const run = async (command: string): Promise<RunCommandOutput> => {
      turn++;
      const input: RunCommandInput = {
        sessionId: ref.sessionId,
        command,
        timeoutMs: 60_000,
        workflowId: 'run-1',
        toolUseId: `toolu_${turn}`,
        checkpoint: { turn, maxBytes: 1 << 20, exclude: [] },
      };
      return env.run(acts.runCommand, input);
    };
    // The job maps app.py and dirties its page with the same bytes (the fault that sets the times), then waits.
    const started = await run(
      `(python3 mmap-rewrite.py app.py 'print("PWNED")' > mm.log 2>&1 &) ; for i in $(seq 400); do [ -e ready ] && break; sleep 0.05; done; ls ready`,
    );
    expect(started.exitCode).toBe(0);
    await pastRacyWindow(path.join(ws, 'app.py'));
    // This command's checkpoint is taken first (app.py still says hello); then the job writes through the mapping.
    const wrote = await run('touch go && for i in $(seq 400); do [ -e done ] && break; sleep 0.05; done; cat app.py');
    expect(wrote.output).toContain('PWNED');
    const before = wrote.checkpoint!;
    if (!('id' in before)) throw new Error(before.skipped);
    expect(recorded(before)).toBe('print("hello")\n');
    // The next checkpoint: app.py's stat is as the last one kept it, its text is not.
    const next = (await run('touch z')).checkpoint!;
    if (!('id' in next)) throw new Error(next.skipped);
    expect(recorded(next)).toBe('print("PWNED")\n');

    // A rewind: the session closed, a new one opened with the workspace restored to the checkpoint before the write.
    await env.run(acts.closeSession, { sessionId: ref.sessionId });
    await env.run(acts.openSession, { workflowId: 'run-1', restore: { store: before.store, id: before.id, exclude: [] } });
    expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
  }, 120_000);

  /** Starts the mapping job on `file` (its own process, not a session), waits for its first write and for 2.5 s past it. */
  async function mapped(ws: string): Promise<{ go(): Promise<void> }> {
    writeFileSync(path.join(ws, 'app.py'), 'print("hello")\n');
    const job = spawn('python3', [FIXTURE, 'app.py', 'print("PWNED")'], { cwd: ws, stdio: 'ignore' });
    await waitUntil('the job mapped app.py', () => existsSync(path.join(ws, 'ready')), 20_000);
    await pastRacyWindow(path.join(ws, 'app.py'));
    return {
      go: async () => {
        writeFileSync(path.join(ws, 'go'), '');
        await waitUntil('the job wrote', () => existsSync(path.join(ws, 'done')), 20_000);
        if (job.exitCode === null) await new Promise((resolve) => job.once('exit', resolve));
      },
    };
  }

  async function taken(root: string, ws: string, trustStatBefore: number): Promise<Checkpoint> {
    const cp = await takeCheckpoint(root, ws, { maxBytes: 1 << 20, trustStatBefore }, 'turn');
    if ('skipped' in cp) throw new Error(cp.skipped);
    return cp;
  }

  test('the stat of a file changed since the given start is not trusted; before it, it is (ext4 here)', async () => {
    const ws = path.join(dir, 'ws');
    mkdirSync(ws);
    const sessionStart = Date.now() - 1000;
    const job = await mapped(ws);
    const root = path.join(dir, 'store');
    // A start after the job's first write (the file's ctime): its stat is trusted, as all were before the fix.
    const trusting = path.join(dir, 'store-trusting');
    const t1 = await taken(trusting, ws, Date.now());
    const s1 = await taken(root, ws, sessionStart);
    await job.go();
    expect(recorded(await taken(trusting, ws, Date.now()))).toBe('print("hello")\n');
    // The session's start: the file changed since, so it is read.
    expect(recorded(await taken(root, ws, sessionStart))).toBe('print("PWNED")\n');
    // The restore rewrites it, also from the store that trusted it.
    await restoreCheckpoint(t1.store, ws, t1.id, [], { trustStatBefore: sessionStart });
    expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
    expect(recorded(s1)).toBe('print("hello")\n');
  }, 120_000);

  test('on tmpfs, where such a write changes no time at all, no stat is trusted', async () => {
    if (!existsSync('/dev/shm')) throw new Error('this test needs /dev/shm (tmpfs)');
    const shm = mkdtempSync('/dev/shm/aj-mapped-');
    try {
      const ws = path.join(shm, 'ws');
      mkdirSync(ws);
      const job = await mapped(ws);
      const ctime = statSync(path.join(ws, 'app.py')).ctimeMs;
      const cp = await taken(path.join(dir, 'store'), ws, Date.now() + 3_600_000);
      await job.go();
      // tmpfs kept every time: nothing but the content says the file changed.
      expect(statSync(path.join(ws, 'app.py')).ctimeMs).toBe(ctime);
      expect(recorded(await taken(path.join(dir, 'store'), ws, Date.now() + 3_600_000))).toBe('print("PWNED")\n');
      await restoreCheckpoint(cp.store, ws, cp.id, [], { trustStatBefore: Date.now() + 3_600_000 });
      expect(readFileSync(path.join(ws, 'app.py'), 'utf8')).toBe('print("hello")\n');
    } finally {
      rmSync(shm, { recursive: true, force: true });
    }
  }, 120_000);
});
