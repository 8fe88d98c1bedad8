/**
 * Nothing lost under faults: a worker killed while its run waits
 * for approval; the Temporal server restarted mid-run; transient API
 * failures (500, reset connection, a request that never answers) retried.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDevServerOnFreePort, startDevServer, type DevServer } from '../../src/dev/devserver';
import { approveBySignal } from './steering-helpers';
import { TestBed, toolUse, waitFor } from './harness';

const end = { content: [{ type: 'text' as const, text: 'ok' }], stop_reason: 'end_turn' };

describe('faults', () => {
  let bed: TestBed | undefined;
  afterEach(async () => {
    await bed?.close();
    bed = undefined;
  });

  test('the worker holding the session dies while the run waits for approval: the approved command is reported as not run, on a new session', async () => {
    bed = await TestBed.create({
      workers: 1,
      script: {
        responses: [
          { content: [toolUse('toolu_cd', 'mkdir -p deep && cd deep && pwd')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_wait', 'touch approved.txt')], stop_reason: 'tool_use' },
          { content: [toolUse('toolu_next', 'pwd; ls')], stop_reason: 'tool_use' },
          end,
        ],
      },
    });
    const handle = await bed.start({ task: 'approve after a crash', approval: 'policy' }, 'worker-lost-awaiting-approval');
    await waitFor('the cd to be approved-pending', async () => (await bed!.status(handle)).pendingApproval?.toolUseId === 'toolu_cd');
    await approveBySignal(handle, 'toolu_cd');
    await waitFor('the touch to be pending', async () => (await bed!.status(handle)).pendingApproval?.toolUseId === 'toolu_wait');
    const survivor = await bed.startWorker();
    await bed.workers[0]!.kill();
    await approveBySignal(handle, 'toolu_wait');
    await waitFor('the next command to wait', async () => (await bed!.status(handle)).pendingApproval?.toolUseId === 'toolu_next');
    await approveBySignal(handle, 'toolu_next');
    expect(await handle.result()).toMatchObject({ status: 'completed' });

    const lost = bed.resultsSentIn(2)[0]!;
    expect(lost).toMatchObject({ tool_use_id: 'toolu_wait', is_error: true });
    expect(lost.content).toMatch(/The command did not run\. A new bash session was started in .*\/deep/);
    // The new session starts in the last working directory, and the command never ran anywhere.
    const next = bed.resultsSentIn(3)[0]!;
    expect(next.content).toMatch(/\/deep\n\(no output\)|\/deep$/);
    expect(bed.audit().map((a) => a.command)).toEqual(['mkdir -p deep && cd deep && pwd', 'pwd; ls']);
    expect(survivor.output()).not.toMatch(/unhandled|TypeError/i);
  });

  test('the Temporal server restarts mid-run (SQLite kept): the run continues and completes', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'agent-jobs-restart-'));
    let server: DevServer = await startDevServerOnFreePort({ headless: true, dbFile: path.join(dir, 'temporal.db') });
    // A restart keeps the port: the run's workers and client reconnect to the same address.
    const options = { port: server.port, headless: true, dbFile: path.join(dir, 'temporal.db') };
    try {
      bed = await TestBed.create({
        address: server.address,
        script: {
          responses: [
            { content: [toolUse('toolu_1', 'echo before')], stop_reason: 'tool_use' },
            { content: [toolUse('toolu_2', 'sleep 4; echo during')], stop_reason: 'tool_use' },
            { content: [toolUse('toolu_3', 'echo after')], stop_reason: 'tool_use' },
            end,
          ],
        },
      });
      const handle = await bed.start({ task: 'survive a server restart', approval: 'auto' }, 'server-restart');
      await waitFor('the slow command', () => bed!.audit().some((a) => a.command === 'echo before') && bed!.requests().length >= 2);
      await server.stop();
      server = await startDevServer(options);
      expect(await handle.result()).toMatchObject({ status: 'completed', turns: 4 });
      expect(bed.audit().map((a) => a.command)).toEqual(['echo before', 'sleep 4; echo during', 'echo after']);
      expect(bed.resultsSentIn(2)[0]!.content).toBe('during');
    } finally {
      await bed?.close();
      bed = undefined;
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('500, a reset connection and a request that never answers are retried until the answer comes', async () => {
    bed = await TestBed.create({
      workerEnv: { AGENT_JOBS_CLAUDE_IDLE_TIMEOUT_MS: '1500' },
      script: { responses: [{ error: { status: 500 } }, { error: { kind: 'connection_reset' } }, { error: { kind: 'hang' } }, end] },
    });
    const result = await (await bed.start({ task: 'transient failures', approval: 'auto' }, 'api-transient-retried')).result();
    expect(result).toMatchObject({ status: 'completed', turns: 1 });
    expect(bed.requests().map((r) => r.response.kind)).toEqual(['error', 'connection_reset', 'hang', 'message']);
  });

  // C21: the idle watchdog ends a stalled stream with a retryable failure.
  test('a stream silent past the idle timeout is abandoned and retried; the retry, pinging through a longer silence, is the answer', async () => {
    bed = await TestBed.create({
      workerEnv: { AGENT_JOBS_CLAUDE_IDLE_TIMEOUT_MS: '1500' },
      script: {
        responses: [
          { error: { kind: 'stream_stall', after_events: 2 } },
          { content: [{ type: 'text', text: 'Thought it through.' }], think_ms: 4_000, ping_every_ms: 250 },
        ],
      },
    });
    const result = await (await bed.start({ task: 'think at length', approval: 'auto' }, 'api-idle-pings')).result();
    expect(result).toMatchObject({ status: 'completed', turns: 1, text: 'Thought it through.' });
    expect(bed.requests().map((r) => r.response.kind)).toEqual(['stream_stall', 'message']);
  });

  test.each([403, 404, 413])('%d ends the run at once, no retries', async (status) => {
    bed = await TestBed.create({ script: { responses: [{ error: { status } }, end] } });
    const result = await (await bed.start({ task: `fatal ${status}`, approval: 'auto' })).result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(new RegExp(`^Claude API ${status} `));
    expect(bed.requests()).toHaveLength(1);
  });
});
