/**
 * The per-worker session cap (`AGENT_JOBS_MAX_SESSIONS`): a worker at its
 * cap refuses `openSession` (`WorkerFull`, retried), so runs wait for room
 * instead of failing, and a session lands on a worker with room. What a
 * worker held at once is read from the runs' histories (the server's
 * clock), not from the worker's own count.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { workspaceFolderName } from '../../src/activities/session';
import { WORKER_FULL } from '../../src/contract';
import { approveBySignal } from './steering-helpers';
import { peakSessions, sessionSpans, waitedForRoom, type SessionSpan } from '../../src/dev/testing/session-spans';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { release, TestBed, toolUse, UNTIL_GO, waitFor } from './harness';

async function spansOf(handles: WorkflowHandle[]): Promise<SessionSpan[]> {
  const spans: SessionSpan[] = [];
  for (const h of handles) spans.push(...sessionSpans(h.workflowId, await decodedHistory(await h.fetchHistory())));
  return spans;
}

describe('AGENT_JOBS_MAX_SESSIONS', () => {
  let bed: TestBed;
  afterEach(async () => {
    await bed?.close();
  });

  test('one worker with a cap of 1 and 3 runs at once: all complete, one session at a time, the others waited for room', async () => {
    bed = await TestBed.create({
      workers: 1,
      workerEnv: { AGENT_JOBS_MAX_SESSIONS: '1' },
      script: {
        responses: [
          // The first session's first command runs until the test has seen the other two runs refused (then each goes on at once).
          { content: [toolUse('toolu_1', `${UNTIL_GO}; echo one`)], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_2', 'echo two')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const worker = bed.workers[0]!;
    const handles = await Promise.all([1, 2, 3].map(() => bed.start({ task: 'take turns', approval: 'auto' })));
    const refused = async (h: WorkflowHandle): Promise<boolean> =>
      ((await h.describe()).raw.pendingActivities ?? []).some(
        (p) => p.activityType?.name === 'openSession' && p.lastFailure?.applicationFailureInfo?.type === WORKER_FULL,
      );
    await waitFor(
      'two runs’ openSession to be refused for a full worker while the first holds its session',
      async () => (await Promise.all(handles.map(refused))).filter(Boolean).length === 2,
      60_000,
    );
    // Each workspace exists once its run has a session: `go` is written into each as it appears.
    const workspaces = handles.map((h) => path.join(bed.workspaces, workspaceFolderName(h.workflowId)));
    const releasing = setInterval(() => workspaces.filter((ws) => existsSync(ws)).forEach((ws) => release(ws)), 100);
    const results = await Promise.all(handles.map((h) => h.result())).finally(() => clearInterval(releasing));
    expect(results.map((r) => r.status)).toEqual(['completed', 'completed', 'completed']);

    const spans = await spansOf(handles);
    // One session per run, all on the one worker, each closed at the end.
    expect(spans).toHaveLength(3);
    expect(new Set(spans.map((s) => s.workerId))).toEqual(new Set([worker.workerId]));
    expect(spans.every((s) => Number.isFinite(s.closedAt))).toBe(true);
    // Never two at once: without the cap the three would open within milliseconds and overlap for seconds.
    expect(peakSessions(spans)).toBe(1);
    // Two of the three were refused at first (WorkerFull) and opened on a retry.
    expect(spans.filter(waitedForRoom)).toHaveLength(2);
    // Every command ran once, in its own run's session.
    expect(
      bed
        .audit()
        .map((a) => a.sessionId)
        .sort(),
    ).toEqual(spans.flatMap((s) => [s.sessionId, s.sessionId]).sort());
  }, 90_000);

  test('two workers with a cap of 1: two waiting sessions land on different workers; a third run waits until one closes', async () => {
    bed = await TestBed.create({
      workers: 2,
      workerEnv: { AGENT_JOBS_MAX_SESSIONS: '1' },
      script: {
        responses: [
          // Not read-only: under `policy` the session opens to judge it, and then the run waits for a human.
          { content: [toolUse('toolu_w', 'touch made-by-agent')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const [a, b] = await Promise.all([1, 2].map(() => bed.start({ task: 'wait with a session open', approval: 'policy' })));
    await bed.pendingApproval(a!, 75_000);
    await bed.pendingApproval(b!, 75_000);
    const holders = [(await bed.status(a!)).session?.workerId, (await bed.status(b!)).session?.workerId];
    expect(new Set(holders)).toEqual(new Set(bed.workers.map((w) => w.workerId)));

    // The cluster is full: a third run gets no session (nor fails) while both are held.
    const c = await bed.start({ task: 'wait for room', approval: 'policy' });
    const refused = await waitFor(
      'the third run’s openSession to be refused for a full worker',
      async () =>
        ((await c.describe()).raw.pendingActivities ?? []).find(
          (p) => p.activityType?.name === 'openSession' && p.lastFailure?.applicationFailureInfo?.type === WORKER_FULL,
        ),
      20_000,
    );
    expect(refused.attempt).toBeGreaterThan(1);
    expect((await bed.status(c)).session).toBeNull();
    expect((await c.describe()).status.name).toBe('RUNNING');

    // One run ends and closes its session: the third run's session opens on that worker.
    await approveBySignal(a!, 'toolu_w', 'test');
    expect((await a!.result()).status).toBe('completed');
    // The refused open is retried up to 10 s apart, each time on either worker: give it several tries.
    const third = await bed.pendingApproval(c, 75_000);
    expect(third.toolUseId).toBe('toolu_w');
    expect((await bed.status(c)).session?.workerId).toBe(holders[0]);

    for (const h of [b!, c]) await approveBySignal(h, 'toolu_w', 'test');
    expect((await b!.result()).status).toBe('completed');
    expect((await c.result()).status).toBe('completed');
    const spans = await spansOf([a!, b!, c]);
    for (const w of bed.workers) expect(peakSessions(spans, w.workerId)).toBe(1);
    expect(spans.find((s) => s.workflowId === c.workflowId)).toMatchObject({ lastFailureType: WORKER_FULL });
  }, 300_000);
});
