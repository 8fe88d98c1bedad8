/**
 * C30: one workflow task over the server's limits. A run whose task is
 * 1.65 MB continues as new after a turn of 14 outputs (about 380 KB): the
 * continue-as-new input (the run's input plus the carried tail) would be
 * over `MAX_TASK_PAYLOAD_BYTES` in one workflow task.
 *
 * - Claim check off (`AGENT_JOBS_BLOB_STORE=none`): the run fails itself
 *   with a message naming the bytes, the bound and what to do; it never
 *   commands the continue-as-new, and no task in its history passes the
 *   bound.
 * - The same for a model call whose input alone is over the bound (a task
 *   of 2 MB): never made.
 * - Claim check on (the default): the run continues as new and completes;
 *   the big payloads are references, and no workflow task of the chain
 *   carries more than a few KB of payloads.
 *
 * A dev server of this file's own, which suggests continue-as-new after 40
 * events (so after the first turn).
 */
import { randomBytes } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { MAX_TASK_PAYLOAD_BYTES } from '../../src/config';
import { REFERENCE_ENCODING } from '../../src/codec';
import { startDevServerOnFreePort, type DevServer } from '../../src/dev/devserver';
import { largestTaskPayloadBytes, payloadsOf } from '../../src/dev/testing/history-payloads';
import { TASK_PAYLOAD_BOUND_PATCH } from '../../src/workflows/task-payloads';
import { runChain, TestBed } from './harness';
import { asks, end } from './steering-helpers';

const COMMANDS = 14;
const TASK_CHARS = 1_650_000;
/** A context window (tokens) the task fits in: about 412,000 tokens of it. */
const WINDOW = 1_000_000;

let server: DevServer | undefined;
beforeAll(async () => {
  server = await startDevServerOnFreePort({
    headless: true,
    dynamicConfig: { 'limit.historyCount.suggestContinueAsNew': 40 },
  });
}, 120_000);
afterAll(async () => {
  await server?.stop();
});

/** One answer asking for {@link COMMANDS} commands, each printing `print` (about 27 KB). */
const manyOutputs = (print: (i: number) => string): ReturnType<typeof asks> =>
  asks(...Array.from({ length: COMMANDS }, (_, i): [string, string] => [`toolu_out${i}`, print(i)]));

const encodingOf = (p: { metadata?: Record<string, Uint8Array | null | undefined> | null }): string =>
  Buffer.from(p.metadata?.['encoding'] ?? new Uint8Array()).toString();

test('claim check off: a continue-as-new over the bound is never sent; the run fails itself and says why', async () => {
  const bed = await TestBed.create({
    address: server!.address,
    script: {
      context_window: WINDOW,
      responses: [manyOutputs((i) => `head -c 27000 /dev/zero | tr '\\0' y; echo " out${i}"`), end('never reached')],
    },
    workerEnv: { AGENT_JOBS_BLOB_STORE: 'none' },
  });
  try {
    // Compressible, so the client's own claim check keeps it inline (this worker could not read a reference).
    const task = `summarize this log:\n${'x'.repeat(TASK_CHARS)}`;
    const h = await bed.start({ task, approval: 'auto', maxTurns: 5, contextWindow: WINDOW }, 'task-payload-bound');
    const result = await h.result();
    expect(result.status).toBe('failed');
    expect(result.error).toMatch(/^continuing as new would put [\d,]+ bytes of payloads in one workflow task, over the bound of 1,966,080/);
    expect(result.error).toMatch(/AGENT_JOBS_BLOB_STORE=none\): turn it on, or start the run with a shorter task/);
    const bytes = Number(/put ([\d,]+) bytes/.exec(result.error!)![1]!.replace(/,/g, ''));
    expect(bytes).toBeGreaterThan(MAX_TASK_PAYLOAD_BYTES);
    expect(bytes).toBeGreaterThan(TASK_CHARS + COMMANDS * 27_000);
    // Every output was run and sent nowhere else; the second model call was never made.
    expect(bed.audit()).toHaveLength(COMMANDS);
    expect(bed.sentMessages()).toHaveLength(1);
    // One run, no continue-as-new commanded: the run ended itself, not the server.
    const chain = await runChain(bed.client, h.workflowId);
    expect(chain.map((r) => r.status)).toEqual(['COMPLETED']);
    const history = await h.fetchHistory();
    const events = history.events ?? [];
    expect(events.some((e) => e.workflowExecutionContinuedAsNewEventAttributes)).toBe(false);
    expect(events.some((e) => e.workflowExecutionTerminatedEventAttributes || e.workflowExecutionFailedEventAttributes)).toBe(false);
    // The bound was asked of the worker (a local activity) behind its patch marker.
    const markers = events.map((e) => e.markerRecordedEventAttributes?.markerName).filter(Boolean);
    expect(markers).toEqual(expect.arrayContaining(['core_patch', 'core_local_activity']));
    const patches = events
      .filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch')
      .flatMap((e) => payloadsOf(e.markerRecordedEventAttributes!.details).map((p) => Buffer.from(p.data ?? new Uint8Array()).toString()));
    expect(patches.some((p) => p.includes(`"id":"${TASK_PAYLOAD_BOUND_PATCH}"`))).toBe(true);
    expect(largestTaskPayloadBytes(history)).toBeLessThan(MAX_TASK_PAYLOAD_BYTES);
    expect((await bed.status(h)).session).toBeNull();
  } finally {
    await bed.close();
  }
}, 300_000);

test('claim check off: a model call whose input is over the bound is never made; the run fails itself and says why', async () => {
  const bed = await TestBed.create({
    address: server!.address,
    script: { context_window: WINDOW, responses: [end('never reached')] },
    workerEnv: { AGENT_JOBS_BLOB_STORE: 'none' },
  });
  try {
    const task = `summarize this log:\n${'x'.repeat(MAX_TASK_PAYLOAD_BYTES)}`;
    const h = await bed.start({ task, approval: 'auto', contextWindow: WINDOW });
    const result = await h.result();
    expect(result).toMatchObject({ status: 'failed', turns: 0 });
    expect(result.error).toMatch(
      /^the model call of turn 1 would put [\d,]+ bytes of payloads in one workflow task, over the bound of 1,966,080/,
    );
    expect(bed.requests().filter((r) => r.path === '/v1/messages')).toEqual([]);
    const events = (await h.fetchHistory()).events ?? [];
    expect(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callClaude')).toEqual([]);
  } finally {
    await bed.close();
  }
}, 300_000);

test('claim check on: the same continue-as-new goes ahead, its payloads are references, every task of the chain stays small', async () => {
  const bed = await TestBed.create({
    address: server!.address,
    script: {
      context_window: WINDOW,
      responses: [manyOutputs((i) => `echo OUT${i}; head -c 20000 /dev/urandom | base64 -w0; echo`), end('all carried')],
    },
  });
  try {
    // Incompressible (random base64), so only the claim check can keep it out of history.
    const task = `summarize this log:\n${randomText(TASK_CHARS)}`;
    const h = await bed.start({ task, approval: 'auto', maxTurns: 5, contextWindow: WINDOW });
    expect(await h.result()).toMatchObject({ status: 'completed', text: 'all carried', turns: 2 });
    const chain = await runChain(bed.client, h.workflowId);
    expect(chain.map((r) => r.status)).toEqual(['CONTINUED_AS_NEW', 'COMPLETED']);
    // The second call, made by the next run of the chain, got every output of the first turn.
    const second = JSON.stringify(bed.sentMessages()[1]);
    for (let i = 0; i < COMMANDS; i++) expect(second).toContain(`OUT${i}`);
    const first = await bed.client.workflow.getHandle(h.workflowId, chain[0]!.runId).fetchHistory();
    const can = first.events!.find(
      (e) => e.workflowExecutionContinuedAsNewEventAttributes,
    )!.workflowExecutionContinuedAsNewEventAttributes!;
    const carried = payloadsOf(can.input);
    expect(carried).toHaveLength(2);
    for (const p of carried) expect(encodingOf(p)).toBe(REFERENCE_ENCODING);
    for (const run of chain) {
      const history = await bed.client.workflow.getHandle(h.workflowId, run.runId).fetchHistory();
      const largest = largestTaskPayloadBytes(history);
      // A task holds references and small payloads only: far below the server's 512 KiB warning.
      expect(largest).toBeLessThan(64 * 1024);
      const encoded = temporal.api.history.v1.History.encode(history).finish().length;
      expect(encoded).toBeLessThan(1024 * 1024);
    }
  } finally {
    await bed.close();
  }
}, 300_000);

/** `n` characters of random base64 (incompressible but for base64's own 25 %). */
function randomText(n: number): string {
  return randomBytes(Math.ceil((n * 3) / 4))
    .toString('base64')
    .slice(0, n);
}
