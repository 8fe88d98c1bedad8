/**
 * Cancellation (C02, C12): cancelling a run kills a running command's whole
 * process group before the run ends, closes the session, and answers every
 * tool_use; a run cancelled while it waits for approval pairs the pending
 * tool_use too.
 */
import type { ToolResultBlock } from '../../src/workflows/types';
import { processesMatching, TestBed, toolUse, waitFor } from './harness';

describe('cancellation', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('cancel during `sleep 300` kills the process group and pairs every tool_use', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_sleep', 'bash -c "trap \'\' TERM; sleep 300.5" & sleep 300.25'), toolUse('toolu_after', 'echo never')], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'unreachable' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'sleep for long', approval: 'auto' }, 'cancel-mid-command');
    await waitFor('the sleep to run', () => processesMatching('sleep 300.25').length > 0 && processesMatching('sleep 300.5').length > 0);
    await handle.cancel();
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'cancelled', turns: 1 });
    // The whole group is gone, the SIGTERM-ignoring child included, by the time the run has ended.
    expect(processesMatching('sleep 300.25')).toEqual([]);
    expect(processesMatching('sleep 300.5')).toEqual([]);
    const transcript = await bed.transcript(handle);
    const results = transcript[transcript.length - 1]!.content as ToolResultBlock[];
    expect(results.map((r) => [r.tool_use_id, r.is_error])).toEqual([
      ['toolu_sleep', true],
      ['toolu_after', true],
    ]);
    expect(results[0]!.content).toBe('The run was cancelled while this command ran: its process group was killed, so it may have partly run.');
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
      content: [{ type: 'tool_result', tool_use_id: 'toolu_rm', content: 'The run was cancelled while this command waited for approval; it did not run.', is_error: true }],
    });
    expect(bed.audit()).toHaveLength(0);
  });
});
