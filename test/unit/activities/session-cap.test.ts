/**
 * The session cap in the registry: `openSession` reserves its slot in the
 * same synchronous step as the check, so many opens at once (bash takes
 * tens of ms to start, during which each call awaits) never hold more than
 * the cap; a refused open is a retryable `WorkerFull`; a closed session, a
 * failed start and a run's stale session give their slot back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSessionActivities, SessionRegistry } from '../../../src/activities/session';
import { WORKER_FULL } from '../../../src/contract';

describe('SessionRegistry capacity through openSession', () => {
  let root: string;
  let registry: SessionRegistry;
  beforeEach(() => (root = mkdtempSync(path.join(tmpdir(), 'agent-jobs-cap-'))));
  afterEach(async () => {
    await registry?.closeAll();
    rmSync(root, { recursive: true, force: true });
  });

  function activities(capacity: number, attempt = 1) {
    registry = new SessionRegistry(capacity);
    const acts = createSessionActivities({
      registry,
      workerId: 'w1',
      taskQueue: 'q1',
      workspaceRoot: root,
      checkpointRoot: path.join(root, 'checkpoints'),
      sessionOptions: { sandbox: 'none', user: null, auditLog: path.join(root, 'audit.jsonl') },
    });
    const env = new MockActivityEnvironment({ attempt });
    return {
      ...acts,
      run: <A extends unknown[], R>(fn: (...a: A) => Promise<R>, ...args: A): Promise<R> =>
        env.run<A, R, (...a: A) => Promise<R>>(fn, ...args),
    };
  }

  test('5 opens at once with a cap of 2: 2 sessions, 3 retryable WorkerFull refusals', async () => {
    const a = activities(2);
    const outcomes = await Promise.allSettled([1, 2, 3, 4, 5].map((i) => a.run(a.openSession, { workflowId: `run-${i}` })));
    const opened = outcomes.filter((o) => o.status === 'fulfilled');
    const refused = outcomes.flatMap((o) => (o.status === 'rejected' ? [o.reason as unknown] : []));
    expect(opened).toHaveLength(2);
    expect(refused).toHaveLength(3);
    for (const err of refused) {
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err).toMatchObject({ type: WORKER_FULL, nonRetryable: false });
      expect((err as Error).message).toContain('worker w1 holds 2 of its 2 bash sessions');
    }
    expect(registry.count).toBe(2);
  });

  test('a closed session frees its slot for the next open', async () => {
    const a = activities(1);
    const first = await a.run(a.openSession, { workflowId: 'run-1' });
    await expect(a.run(a.openSession, { workflowId: 'run-2' })).rejects.toMatchObject({ type: WORKER_FULL });
    await a.run(a.closeSession, { sessionId: first.sessionId });
    const second = await a.run(a.openSession, { workflowId: 'run-2' });
    expect(second.sessionId).not.toBe(first.sessionId);
    expect(registry.count).toBe(1);
  });

  test('a run that opens again replaces its own stale session here, even at the cap', async () => {
    const a = activities(1);
    const first = await a.run(a.openSession, { workflowId: 'run-1' });
    const again = await a.run(a.openSession, { workflowId: 'run-1' });
    expect(again.sessionId).not.toBe(first.sessionId);
    expect(registry.count).toBe(1);
    expect(() => registry.require(first.sessionId, 'w1')).toThrow(/holds no bash session/);
  });

  test('a start whose working directory cannot be one gives its slot back and fails for good at once (WorkdirUnusable)', async () => {
    const bad = { workflowId: 'run-1', workdir: '/proc/self/no-such-dir' };
    const early = activities(1, 2);
    await expect(early.run(early.openSession, bad)).rejects.toThrow(/cannot create the working directory/);
    await expect(early.run(early.openSession, bad)).rejects.toMatchObject({ nonRetryable: true, type: 'WorkdirUnusable' });
    expect(registry.count).toBe(0);
  });
});
