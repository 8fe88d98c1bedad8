/**
 * Cancellation (C02, C12): cancelling a run kills a running command's whole
 * process group before the run ends, closes the session, and answers every
 * tool_use; a run cancelled while it waits for approval pairs the pending
 * tool_use too.
 */
import type { ToolResultBlock } from '../../src/contract';
import { napSeconds, processesMatching, TestBed, toolUse, waitFor } from './harness';

/** Sleep lengths only this suite uses (processesMatching is machine-wide). */
const NAP_OUTER = napSeconds('300.25');
const NAP_INNER = napSeconds('300.5');

describe('cancellation', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('cancel during `sleep 300` kills the process group and pairs every tool_use', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [
              toolUse('toolu_sleep', `bash -c "trap '' TERM; sleep ${NAP_INNER}" & sleep ${NAP_OUTER}`),
              toolUse('toolu_after', 'echo never'),
            ],
            stop_reason: 'tool_use',
          },
          { content: [{ type: 'text', text: 'unreachable' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'sleep for long', approval: 'auto' }, 'cancel-mid-command');
    await waitFor(
      'the sleep to run',
      () => processesMatching(`sleep ${NAP_OUTER}`).length > 0 && processesMatching(`sleep ${NAP_INNER}`).length > 0,
    );
    await handle.cancel();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'cancelled', turns: 1 });
    // The whole group is gone, the SIGTERM-ignoring child included, by the time the run has ended.
    expect(processesMatching(`sleep ${NAP_OUTER}`)).toEqual([]);
    expect(processesMatching(`sleep ${NAP_INNER}`)).toEqual([]);
    const transcript = await bed.transcript(handle);
    const results = transcript[transcript.length - 1]!.content as ToolResultBlock[];
    expect(results.map((r) => [r.tool_use_id, r.is_error])).toEqual([
      ['toolu_sleep', true],
      ['toolu_after', true],
    ]);
    expect(results[0]!.content).toBe(
      'The run was cancelled while this command ran: its process group was killed, so it may have partly run.',
    );
    expect(results[1]!.content).toBe('The run was cancelled before this command started; it did not run.');
    expect((await bed.status(handle)).session).toBeNull();
    expect(bed.requests()).toHaveLength(1);
  });

  test('cancel while a command waits for approval answers the pending tool_use', async () => {
    bed = await TestBed.create({
      script: { responses: [{ content: [toolUse('toolu_rm', 'rm -rf build')], stop_reason: 'tool_use' }] },
    });
    const handle = await bed.start({ task: 'wait for approval', approval: 'policy' }, 'cancel-awaiting-approval');
    await bed.pendingApproval(handle);
    await handle.cancel();
    expect(await handle.result()).toMatchObject({ status: 'cancelled' });
    const transcript = await bed.transcript(handle);
    expect(transcript[transcript.length - 1]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_rm',
          content: 'The run was cancelled while this command waited for approval; it did not run.',
          is_error: true,
        },
      ],
    });
    expect(bed.audit()).toHaveLength(0);
  });

  test('cancel while the session restarts: Claude is told the restart may have happened, never that it did not run', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [{ type: 'tool_use', id: 'toolu_restart', name: 'bash', input: { restart: true } }], stop_reason: 'tool_use' },
        ],
        conversations: [
          {
            task: 'hold the only session',
            responses: [
              { content: [{ type: 'tool_use', id: 'toolu_hold', name: 'bash', input: { command: 'sleep 300' } }], stop_reason: 'tool_use' },
            ],
          },
        ],
      },
      // One session per worker, held by another run: every openSession of the run under test is refused with the
      // retryable WorkerFull, so its restart (there is no session yet: it opens one) is still in flight when the cancel comes.
      workerEnv: { AGENT_JOBS_MAX_SESSIONS: '1' },
    });
    const holder = await bed.start({ task: 'hold the only session', approval: 'auto' });
    await waitFor('the holder to run its command', async () => {
      const pending = (await holder.describe()).raw.pendingActivities ?? [];
      return pending.some((a) => a.activityType?.name === 'runCommand');
    });
    const handle = await bed.start({ task: 'restart then get cancelled', approval: 'auto' }, 'cancel-mid-restart');
    await waitFor('openSession to be retried', async () => {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      return pending.some((a) => a.activityType?.name === 'openSession' && (a.attempt ?? 0) >= 2);
    });
    await handle.cancel();
    expect(await handle.result()).toMatchObject({ status: 'cancelled', turns: 1 });
    const transcript = await bed.transcript(handle);
    expect(transcript[transcript.length - 1]).toEqual({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'toolu_restart',
          content: 'The run was cancelled while the bash session restarted: the restart may or may not have happened.',
          is_error: true,
        },
      ],
    });
  });
});
