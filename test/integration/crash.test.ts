/**
 * Crash resume: worker processes are SIGKILLed while a command runs and
 * while the run waits on the model; a second worker finishes the run. No
 * completed model step is requested again, no command runs twice, and
 * Claude is told the shell was lost (C02, C11).
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import { napSeconds, processesMatching, TestBed, toolUse, waitFor, type WorkerProcess } from './harness';

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
}

function stepCounts(bed: TestBed): Record<number, number> {
  const counts: Record<number, number> = {};
  for (const r of bed.requests()) if (r.step !== null) counts[r.step] = (counts[r.step] ?? 0) + 1;
  return counts;
}

/** A sleep length only this suite uses (processesMatching is machine-wide). */
const NAP = napSeconds('31.25');

describe('crash resume', () => {
  let bed: TestBed;
  afterEach(async () => {
    await bed?.close();
  });

  test('the worker holding the session is SIGKILLed mid-command: another worker finishes, Claude is told', async () => {
    // In the run's workspace: the session's sandbox has a private /tmp, and the workspace is what it may write.
    const workflowId = `it-crash-${process.pid}-${Date.now()}`;
    bed = await TestBed.create({
      workers: 1,
      script: {
        responses: [
          { content: [toolUse('toolu_1', 'echo one >> crash.log')], stop_reason: 'tool_use' },
          {
            content: [toolUse('toolu_2', `echo two-start >> crash.log; sleep ${NAP}; echo two-end >> crash.log`)],
            stop_reason: 'tool_use',
          },
          { content: [toolUse('toolu_3', 'echo three >> crash.log; pwd')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'recovered' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const log = path.join(bed.workspaces, workspaceFolderName(workflowId), 'crash.log');
    const first = bed.workers[0]!;
    const handle = await bed.start({ task: 'survive a crash', approval: 'auto' }, 'worker-lost-mid-command', workflowId);
    await waitFor('the long command to start', () => lines(log).includes('two-start'));
    const second = await bed.startWorker();
    const holder = (await bed.status(handle)).session?.workerId;
    expect(holder).toBe(first.workerId);
    const killedAt = Date.now();
    await first.kill();

    const result = await handle.result();
    const recoverySeconds = (Date.now() - killedAt) / 1000;
    expect(result).toMatchObject({ status: 'completed', text: 'recovered', turns: 4 });

    const lost = bed.resultsSentIn(2);
    expect(lost).toHaveLength(1);
    expect(lost[0]).toMatchObject({ tool_use_id: 'toolu_2', is_error: true });
    expect(lost[0]!.content).toMatch(/bash session was lost/);
    expect(lost[0]!.content).toMatch(/may or may not have run/);
    // The replacement session started where the lost one was.
    const third = bed.resultsSentIn(3);
    expect(third[0]!.content).toContain(path.join(bed.workspaces, ''));
    expect((await bed.status(handle)).session).toBeNull(); // closed at the end

    // Each command ran at most once; the killed one never finished; its processes died with the worker.
    expect(lines(log)).toEqual(['one', 'two-start', 'three']);
    expect(processesMatching(`sleep ${NAP}`)).toEqual([]);
    // No model step was requested twice (the kill hit a command, not a model call).
    expect(stepCounts(bed)).toEqual({ 0: 1, 1: 1, 2: 1, 3: 1 });
    expect(second.output()).not.toMatch(/Error|error/);
    // Noticed within the heartbeat timeout (5 s) plus the sticky-queue timeout and scheduling slack.
    expect(recoverySeconds).toBeLessThan(30);
  });

  test('a worker is SIGKILLed while the run waits on the model: the call runs again elsewhere', async () => {
    bed = await TestBed.create({
      workers: 2,
      script: {
        responses: [{ content: [{ type: 'text', text: 'slow answer' }], stop_reason: 'end_turn', delay_ms: 4_000 }],
      },
    });
    const handle = await bed.start({ task: 'slow model', approval: 'auto' }, 'worker-lost-mid-model-call');
    const caller = await waitFor('the model call to start', async () => {
      const d = await handle.describe();
      const pending = d.raw.pendingActivities?.find((a) => a.activityType?.name === 'callClaude' && a.lastWorkerIdentity);
      return pending?.lastWorkerIdentity
        ? bed.workers.find((w: WorkerProcess) => pending.lastWorkerIdentity === `${w.workerId}@agent-jobs`)
        : undefined;
    });
    await waitFor('the request to reach the model server', () => bed.requests().length > 0);
    await caller.kill();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'slow answer', turns: 1 });
    // The cut call was asked again once; its first answer never reached history.
    expect(stepCounts(bed)).toEqual({ 0: 2 });
  });
});
