/**
 * A big workspace (a git repository with a git-ignored node_modules of 30,000 files, made here) must
 * not stall the worker or hang a run (user round 32, F31 and F32), against real sessions and the real
 * activities: the open's ACL grant leaves the event loop free (a 50 ms timer keeps firing); an open
 * given up (its signal aborted) stops and releases its descriptors; an open whose earlier attempts
 * were abandoned (their heartbeat details count them) fails for good instead of retrying forever; a
 * checkpoint that outlives its activity's time answers that the command did not run, and why.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSessionActivities, OPEN_ABANDONED, SessionRegistry } from '../../../src/activities/session';
import type { OpenSessionOutput, RunCommandInput, RunCommandOutput } from '../../../src/contract';
import { BashSession } from '../../../src/session';

const asRoot = process.getuid?.() === 0 ? describe : describe.skip;

/** A git repository at `dir` with `node_modules/` ignored and 30,000 files in 3,000 folders under it. */
function bigRepo(dir: string): void {
  mkdirSync(dir, { recursive: true });
  writeFileSync(path.join(dir, '.gitignore'), 'node_modules/\n');
  writeFileSync(path.join(dir, 'README.md'), 'hi\n');
  const git = (...args: string[]): void => void execFileSync('git', ['-C', dir, ...args], { stdio: 'ignore' });
  git('init', '-q');
  git('-c', 'user.email=a@b', '-c', 'user.name=a', 'add', '.');
  git('-c', 'user.email=a@b', '-c', 'user.name=a', 'commit', '-qm', 'init');
  for (let p = 0; p < 300; p++)
    for (let l = 0; l < 10; l++) {
      const d = path.join(dir, 'node_modules', `pkg${p}`, `lib${l}`);
      mkdirSync(d, { recursive: true });
      for (let f = 0; f < 10; f++) writeFileSync(path.join(d, `f${f}.js`), 'x');
    }
}

/** The longest gap, ms, between ticks of a 50 ms timer while `work` runs: how long the event loop was taken. */
async function longestStall<T>(work: () => Promise<T>): Promise<{ value: T; stallMs: number }> {
  let last = Date.now();
  let stallMs = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 50);
  try {
    const value = await work();
    return { value, stallMs: Math.max(stallMs, Date.now() - last) };
  } finally {
    clearInterval(timer);
  }
}

/** This process's open descriptors. */
const openFds = (): number => readdirSync('/proc/self/fd').length;

/** This process's children that exited and were not reaped. */
function zombieChildren(): string[] {
  const out: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const stat = execFileSync('cat', [`/proc/${pid}/stat`], { encoding: 'utf8' });
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (f[0] === 'Z' && Number(f[1]) === process.pid) out.push(pid);
    } catch {
      /* gone */
    }
  }
  return out;
}

asRoot('a big workspace (30,000 git-ignored files)', () => {
  let root: string;
  let ws: string;
  beforeAll(() => {
    root = mkdtempSync('/var/tmp/aj-big-');
    ws = path.join(root, 'ws');
    bigRepo(ws);
  }, 120_000);
  afterAll(() => rmSync(root, { recursive: true, force: true }));

  test('its open (ACL grant as agent-jobs in the sandbox) never takes the event loop for a second', async () => {
    const { value: session, stallMs } = await longestStall(() => BashSession.start({ cwd: ws, workspace: ws, killGraceMs: 200 }));
    try {
      expect((await session.run('id -un')).output).toBe('agent-jobs\n');
      // The grant ran (the session user may write deep in node_modules).
      expect((await session.run('touch node_modules/pkg299/lib9/new.js && echo ok')).output).toMatch(/^ok\n/);
    } finally {
      await session.close();
    }
    // Before the fix the synchronous setfacl runs took it for 3.4 to 5.7 s at load ~17 (the heartbeat timeout is 5 s).
    expect(stallMs).toBeLessThan(1_000);
  }, 120_000);

  test('an open given up while it grants stops, keeps no descriptor and leaves no unreaped child', async () => {
    const before = openFds();
    const abort = new AbortController();
    const started = BashSession.start({ cwd: ws, workspace: ws, killGraceMs: 200, startSignal: abort.signal });
    setTimeout(() => abort.abort(new Error('abandoned by the test')), 300);
    await expect(started).rejects.toThrow('abandoned by the test');
    // Children already spawned end by themselves (a batch's setfacl); none is left a zombie once they did.
    for (let i = 0; i < 100 && (openFds() > before || zombieChildren().length > 0); i++) await new Promise((r) => setTimeout(r, 50));
    expect(openFds()).toBeLessThanOrEqual(before);
    expect(zombieChildren()).toEqual([]);
  }, 120_000);

  /** The session activities over a registry of 2 slots, bash in the sandbox as the worker runs it. */
  function activities(info: ConstructorParameters<typeof MockActivityEnvironment>[0]) {
    const registry = new SessionRegistry(2);
    const acts = createSessionActivities({
      registry,
      workerId: 'w1',
      taskQueue: 'q1',
      workspaceRoot: root,
      checkpointRoot: path.join(root, 'checkpoints'),
      sessionOptions: { auditLog: path.join(root, 'audit.jsonl'), killGraceMs: 200 },
    });
    const env = new MockActivityEnvironment(info);
    const beats: unknown[] = [];
    env.on('heartbeat', (d: unknown) => beats.push(d));
    return { registry, acts, env, beats };
  }

  test('an open whose 3 earlier attempts began and were abandoned fails for good, at once, its slot free', async () => {
    // What Temporal hands the 4th attempt after 3 heartbeat timeouts (WorkerFull refusals in between heartbeat nothing).
    const { registry, acts, env } = activities({ attempt: 9, heartbeatDetails: { openAttempts: 3 } });
    const opened = env.run(acts.openSession, { workflowId: 'run-abandoned', workdir: ws });
    await expect(opened).rejects.toBeInstanceOf(ApplicationFailure);
    await expect(opened).rejects.toMatchObject({ type: OPEN_ABANDONED, nonRetryable: true });
    await expect(opened).rejects.toThrow(/3 attempts to open it were abandoned before bash started/);
    expect(registry.count).toBe(0);
    await registry.closeAll();
  });

  test('an attempt after one abandoned opens, and heartbeats at once that it is the 2nd to begin', async () => {
    const { registry, acts, env, beats } = activities({ attempt: 2, heartbeatDetails: { openAttempts: 1 } });
    try {
      const ref: OpenSessionOutput = await env.run(acts.openSession, { workflowId: 'run-second', workdir: ws });
      expect(ref.user).toBe('agent-jobs');
      expect(beats[0]).toEqual({ openAttempts: 2 });
    } finally {
      await registry.closeAll();
    }
  }, 120_000);

  test('a checkpoint that outlives the activity answers that the command did not run, and why', async () => {
    // 10.5 s to close leaves the checkpoint 0.5 s (10 s are kept to answer): 30,000 files take far longer.
    const { registry, acts, env } = activities({ startToCloseTimeoutMs: 10_500 });
    try {
      const ref: OpenSessionOutput = await env.run(acts.openSession, { workflowId: 'run-ckpt', workdir: ws });
      const run = (e: MockActivityEnvironment, input: RunCommandInput): Promise<RunCommandOutput> => e.run(acts.runCommand, input);
      const out = await run(env, {
        sessionId: ref.sessionId,
        workflowId: 'run-ckpt',
        toolUseId: 'toolu_1',
        command: 'touch w.txt',
        timeoutMs: 30_000,
        checkpoint: { turn: 1, maxBytes: 1e9, exclude: [] },
      });
      expect(out.exitCode).toBeNull();
      expect(out.notes?.join('\n')).toMatch(/command not run: the workspace's checkpoint .* was still being taken after \d+ s/);
      expect(out.notes?.join('\n')).toContain('--checkpoint-exclude node_modules');
      expect(existsSync(path.join(ws, 'w.txt'))).toBe(false);
      // With time to close as a real command has, the next one waits for that checkpoint, takes its own, and runs.
      const next = await run(new MockActivityEnvironment({ startToCloseTimeoutMs: 150_000 }), {
        sessionId: ref.sessionId,
        workflowId: 'run-ckpt',
        toolUseId: 'toolu_2',
        command: 'touch w.txt',
        timeoutMs: 30_000,
        checkpoint: { turn: 1, maxBytes: 1e9, exclude: ['node_modules'] },
      });
      expect(next.exitCode).toBe(0);
      expect(existsSync(path.join(ws, 'w.txt'))).toBe(true);
    } finally {
      await registry.closeAll();
    }
  }, 180_000);
});
