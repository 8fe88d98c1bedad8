/**
 * Every run an integration test starts is replayed against the current
 * workflow code when its test bed closes: runs started through the bed,
 * named or not, and runs started by the CLI on the bed's server. A run
 * still open at close is terminated and not replayed.
 */
import { cli } from './cli-process';
import { TestBed, toolUse } from './harness';

test("close replays every closed run on the bed's server, the CLI's and unnamed ones included", async () => {
  const bed = await TestBed.create({
    script: {
      responses: [
        { content: [toolUse('toolu_t', 'true')], stop_reason: 'tool_use' },
        { content: [{ type: 'text', text: 'done' }], stop_reason: 'end_turn' },
      ],
    },
  });
  let closed = false;
  try {
    const fromCli = `replay-cli-${Date.now()}`;
    // Started by the CLI; its end is awaited through the client (--follow's watch adds its own timing under a loaded CI machine).
    const started = await cli(bed.address, 'start', 'started', 'by', 'the', 'cli', '--id', fromCli, '--approval', 'auto');
    expect(started.code).toBe(0);
    expect(await bed.client.workflow.getHandle(fromCli).result()).toMatchObject({ status: 'completed' });
    const unnamed = await bed.start({ task: 'started without a name', approval: 'auto' });
    expect(await unnamed.result()).toMatchObject({ status: 'completed' });
    const open = await bed.start({ task: 'left waiting for approval', approval: 'always' });
    await bed.pendingApproval(open);

    await bed.close();
    closed = true;
    const ids = bed.replayed.map((r) => r.workflowId);
    expect(ids).toEqual(expect.arrayContaining([fromCli, unnamed.workflowId]));
    expect(ids).not.toContain(open.workflowId);
    expect(bed.replayed.every((r) => typeof r.runId === 'string' && r.runId.length > 0)).toBe(true);
  } finally {
    if (!closed) await bed.close();
  }
});
