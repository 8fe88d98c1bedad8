/**
 * Many Updates at once to one run whose worker is starved: the Temporal
 * server sheds what it cannot hold (more than 10 Updates in flight on one
 * run: RESOURCE_EXHAUSTED) and, while the worker is slow, drops the run's
 * in-memory Updates and aborts them (UNAVAILABLE "workflow update was
 * aborted"), nothing of either applied. The agent-jobs client sends a shed
 * Update again with the same id until its deadline, so every request gets
 * the run's answer (or the run's own refusal), and the run still works.
 * The client's connection here has no SDK retries, so what the server sheds
 * reaches it at once; with them (the CLI's) the same errors came through
 * after about 20 s of a storm on a worker niced under four CPU hogs
 * (docs/decisions.md, "Updates the server sheds").
 */
import { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { AgentJobsClient, UpdateRejectedError, isShedUpdate, updateIdOf } from '../../src/client';
import { pauseUpdate, resumeUpdate } from '../../src/contract';
import { TestBed, waitFor } from './harness';
import { asks, decide, end } from './steering-helpers';

describe('an Update storm on a starved worker', () => {
  let bed: TestBed;
  let connection: Connection | undefined;
  afterEach(async () => {
    await connection?.close();
    await bed?.close();
  });

  test('twenty pause/resume at once while the worker is stopped: each gets the run answer, and the run still works', async () => {
    bed = await TestBed.create({ script: { responses: [asks(['toolu_s', 'touch s.txt']), end('done')] } });
    const handle = await bed.start({ task: 'storm on a stopped worker', approval: 'always' }, 'update-storm-starved');
    await bed.pendingApproval(handle);
    // No SDK retries on this connection: what the server sheds reaches the agent-jobs client at once.
    connection = await Connection.connect({ address: bed.address, interceptors: [] });
    const jobs = new AgentJobsClient(connection, { address: bed.address, namespace: 'default' }, { updateTimeoutMs: 90_000 });
    const run = jobs.run(handle.workflowId);
    const worker = bed.workers[0]!;
    worker.signal('SIGSTOP');
    let outcomes: Array<{ i: number; status?: string; refused?: string; error?: string }>;
    try {
      const sent = Array.from({ length: 20 }, (_, i) =>
        (i % 2 === 0 ? run.pause({ by: `p${i}` }) : run.resume({ by: `p${i}` })).then(
          (a) => ({ i, status: a.status }),
          (err: unknown) =>
            err instanceof UpdateRejectedError
              ? { i, refused: err.message }
              : { i, error: `${String(err)}: ${String((err as Error).cause)}` },
        ),
      );
      // While the worker is stopped the server holds 10 of them and sheds the rest: a 21st (one the run
      // would refuse, so it changes nothing) is shed too. Without this the test would not test shedding.
      const raw = new AgentJobsClient(connection, { address: bed.address, namespace: 'default' }).temporal.workflow.getHandle(
        handle.workflowId,
      );
      await waitFor(
        'the server to shed an Update to the run (more than 10 in flight on it)',
        async () =>
          // Under a deadline: one the server holds waits for the stopped worker (and is refused once it runs).
          isShedUpdate(
            await connection!
              .withDeadline(Date.now() + 2_000, () => raw.executeUpdate(resumeUpdate, { args: [{ by: '' }] }))
              .catch((err: unknown) => err),
          ),
        20_000,
      );
      await new Promise((r) => setTimeout(r, 2_000)); // stopped past a workflow task timeout (4 s from the first send)
      worker.signal('SIGCONT');
      outcomes = await Promise.all(sent);
    } finally {
      worker.signal('SIGCONT');
    }
    // Every request got the run's answer or the run's own refusal (already paused / not paused): none an error from the server.
    expect(outcomes.filter((o) => o.error !== undefined)).toEqual([]);
    for (const o of outcomes.filter((x) => x.refused !== undefined)) expect(o.refused).toMatch(/already paused|not paused/);
    expect(outcomes.some((o) => o.status !== undefined)).toBe(true);
    // One state at the end: a last resume (or its refusal) leaves the run waiting for approval, and it still works.
    await run.resume({ by: 'last' }).catch((err: unknown) => expect(String(err)).toMatch(/not paused/));
    await waitFor('the run to wait for approval again', async () => (await bed.status(handle)).status === 'awaiting_approval');
    expect((await bed.status(handle)).pause).toBeNull();
    await decide(handle, { toolUseId: 'toolu_s' }, 'touch s.txt');
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch s.txt']);
  });

  test('a resume and then a pause in one workflow task, on a paused run: both answered, and the run stays paused', async () => {
    // The worker stopped, the server holds both Updates and hands them over in one activation: the
    // resume clears the pause and the pause asks again before the approval wait sees the run resumed.
    // The resume's answer once waited for the status to leave `paused`, which it never did: no answer.
    bed = await TestBed.create({ script: { responses: [asks(['toolu_rp', 'touch rp.txt']), end('done')] } });
    const handle = await bed.start({ task: 'resume then pause at once', approval: 'always' }, 'update-resume-pause');
    await bed.pendingApproval(handle);
    connection = await Connection.connect({ address: bed.address, interceptors: [] });
    const jobs = new AgentJobsClient(connection, { address: bed.address, namespace: 'default' }, { updateTimeoutMs: 60_000 });
    const run = jobs.run(handle.workflowId);
    expect((await run.pause({ by: 'first' })).status).toBe('paused');
    const worker = bed.workers[0]!;
    worker.signal('SIGSTOP');
    let answers: Array<{ status: string } | { error: string }>;
    try {
      const settle = (p: Promise<{ status: string }>): Promise<{ status: string } | { error: string }> =>
        p.then(
          (a) => ({ status: a.status }),
          (err: unknown) => ({ error: String(err) }),
        );
      const resumed = settle(run.resume({ by: 'second', requestId: 'rp-resume' }));
      // The pause goes to the server only once it holds the resume, so the run sees them in that order.
      await waitFor(
        'the server to hold the resume',
        async () => (await run.updateStage(updateIdOf(resumeUpdate.name, 'rp-resume', { by: 'second' }))) === 'admitted',
      );
      const paused = settle(run.pause({ by: 'third', requestId: 'rp-pause' }));
      await waitFor(
        'the server to hold the pause',
        async () => (await run.updateStage(updateIdOf(pauseUpdate.name, 'rp-pause', { by: 'third' }))) === 'admitted',
      );
      // Stopped past the workflow task timeout (4 s): the task the resume went out in times out, and the
      // next one carries both (checked below in the history).
      await new Promise((r) => setTimeout(r, 5_000));
      worker.signal('SIGCONT');
      answers = await Promise.all([resumed, paused]);
    } finally {
      worker.signal('SIGCONT');
    }
    // Both reached the run in one workflow task (no task completed between their acceptances).
    const events = (await handle.fetchHistory()).events ?? [];
    const accepted = (id: string): number =>
      events.findIndex((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.protocolInstanceId?.startsWith(id) === true);
    const [r, p] = [accepted('resume.rp-resume.'), accepted('pause.rp-pause.')];
    expect({ r: r >= 0, p: p > r }).toEqual({ r: true, p: true });
    expect(events.slice(r, p).some((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED)).toBe(false);
    // The resume answers with the state the run goes on in: paused again, by the pause after it.
    expect(answers).toEqual([{ status: 'paused' }, { status: 'paused' }]);
    const view = await bed.status(handle);
    expect({ status: view.status, by: view.pause?.by }).toEqual({ status: 'paused', by: 'third' });
    expect((await run.resume({ by: 'last' })).status).toBe('awaiting_approval');
    await decide(handle, { toolUseId: 'toolu_rp' }, 'touch rp.txt');
    expect((await handle.result()).status).toBe('completed');
    expect(bed.audit().map((a) => a.command)).toEqual(['touch rp.txt']);
  });
});
