/**
 * callClaude against streams that break (C27) and answers that think
 * (what the live view shows meanwhile): the real @anthropic-ai/sdk talks to the scripted
 * server (or, for shapes the server cannot script, to a bare HTTP server
 * that writes raw SSE), inside Temporal's MockActivityEnvironment.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createAnthropicClient, createClaudeActivities } from '../../../src/activities/claude';
import { PARTIAL_TEXT_MAX_CHARS, THINKING_TEXT_MAX_CHARS, type ClaudeProgress } from '../../../src/activities/claude-progress';
import { ClaudeFailureType, type CallClaudeInput, type CallClaudeOutput } from '../../../src/contract';
import { startModelServer, type ModelServer, type ScriptFile } from '../../../src/dev/model-server';

const SECRET_SYSTEM = 'system prompt that must never reach a heartbeat';
const input: CallClaudeInput = {
  model: 'claude-sonnet-4-6',
  maxTokens: 1024,
  system: SECRET_SYSTEM,
  messages: [{ role: 'user', content: 'Write big.txt.' }],
  turn: 1,
};
const bigInput = { command: `printf '%s' '${'y'.repeat(4_000)}' > big.txt` };

let server: ModelServer | undefined;
let raw: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  await new Promise<void>((resolve) => (raw ? raw.close(() => resolve()) : resolve()));
  raw = undefined;
});

/** Runs one callClaude against `baseURL` as attempt `attempt`; resolves with its outcome and every heartbeat it sent. */
async function call(baseURL: string, attempt = 1, idleTimeoutMs?: number): Promise<{ outcome: unknown; heartbeats: ClaudeProgress[] }> {
  const activities = createClaudeActivities(
    createAnthropicClient({ baseURL, apiKey: 'sk-ant-test' }),
    idleTimeoutMs !== undefined ? { idleTimeoutMs } : {},
  );
  const env = new MockActivityEnvironment({ attempt });
  const heartbeats: ClaudeProgress[] = [];
  env.on('heartbeat', (d: unknown) => heartbeats.push(d as ClaudeProgress));
  const outcome = await env.run((i: CallClaudeInput) => activities.callClaude(i), input).catch((err: unknown) => err);
  return { outcome, heartbeats };
}

async function scripted(script: ScriptFile): Promise<string> {
  server = await startModelServer({ script });
  return server.url;
}

/** A bare server answering every POST with `sse` (raw text) and a clean end of the body. */
async function rawSse(sse: string): Promise<string> {
  raw = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_raw' });
      res.end(sse);
    });
  });
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
}

/** A bare server answering every POST with `sse` and then holding the response open (no end of the body, no close). */
async function rawSseHeldOpen(sse: string): Promise<string> {
  raw = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'request-id': 'req_raw' });
      res.write(sse);
    });
  });
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
}

const sse = (data: Record<string, unknown> & { type: string }): string => `event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
const START = sse({
  type: 'message_start',
  message: {
    id: 'msg_raw',
    type: 'message',
    role: 'assistant',
    model: 'claude-sonnet-4-6',
    content: [],
    stop_reason: null,
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 1 },
  },
});
const TEXT_BLOCK =
  sse({ type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }) +
  sse({ type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'half an answer' } }) +
  sse({ type: 'content_block_stop', index: 0 });

function expectFailure(outcome: unknown, type: string, retryable: boolean): ApplicationFailure {
  expect(outcome).toBeInstanceOf(ApplicationFailure);
  const failure = outcome as ApplicationFailure;
  expect(failure.type).toBe(type);
  expect(failure.nonRetryable).toBe(!retryable);
  return failure;
}

describe('a streamed answer that breaks is never an answer (C27)', () => {
  test('a socket closed inside a large tool_use: retryable ClaudeStreamBroken, the partial text was in the heartbeats', async () => {
    const url = await scripted({
      responses: [
        { error: { kind: 'stream_cut', after_events: 120 } },
        {
          content: [
            { type: 'text', text: 'Writing the file now.' },
            { type: 'tool_use', name: 'bash', input: bigInput },
          ],
          delta_delay_ms: 15,
        },
      ],
    });
    const { outcome, heartbeats } = await call(url, 3);
    const failure = expectFailure(outcome, ClaudeFailureType.STREAM_BROKEN, true);
    expect(failure.message).toContain('21 characters of text');
    // It streamed for over a second before the cut: the live view had the text and the phase.
    expect(heartbeats.some((h) => h.partialText === 'Writing the file now.' && h.phase === 'tool_use' && h.attempt === 3)).toBe(true);
    for (const h of heartbeats) expect(JSON.stringify(h)).not.toContain(SECRET_SYSTEM);
    // The next request of the step gets the whole answer.
    const again = await call(url, 4);
    expect((again.outcome as CallClaudeOutput).content[1]).toMatchObject({ type: 'tool_use', input: bigInput });
  });

  test('an `event: error` overloaded mid-stream: retryable ClaudeApiUnavailable naming the type', async () => {
    const url = await scripted({
      responses: [{ error: { kind: 'stream_error', after_events: 8 } }, { content: [{ type: 'tool_use', name: 'bash', input: bigInput }] }],
    });
    const failure = expectFailure((await call(url)).outcome, ClaudeFailureType.API_UNAVAILABLE, true);
    expect(failure.message).toContain('overloaded_error');
    expect(failure.message).toContain('Overloaded');
  });

  test('an `event: error` of a type that cannot succeed again is not retried', async () => {
    const body = { type: 'error', error: { type: 'invalid_request_error', message: 'bad mid-stream' } };
    const url = await scripted({
      responses: [{ error: { kind: 'stream_error', after_events: 3, body } }, { content: [{ type: 'text', text: 'x' }] }],
    });
    expectFailure((await call(url)).outcome, ClaudeFailureType.REQUEST_REJECTED, false);
  });

  test('an `event: error` whose data is not JSON is still a retryable failure of the call', async () => {
    const url = await rawSse(START + 'event: error\ndata: upstream went away\n\n');
    const failure = expectFailure((await call(url)).outcome, ClaudeFailureType.API_UNAVAILABLE, true);
    expect(failure.message).toContain('(unknown)');
  });

  test('a body that ends cleanly without message_stop is broken, not a turn', async () => {
    const url = await rawSse(
      START +
        TEXT_BLOCK +
        sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }),
    );
    expectFailure((await call(url)).outcome, ClaudeFailureType.STREAM_BROKEN, true);
  });

  test('message_stop without a stop_reason (no message_delta) is broken, not a turn', async () => {
    const url = await rawSse(START + TEXT_BLOCK + sse({ type: 'message_stop' }));
    const failure = expectFailure((await call(url)).outcome, ClaudeFailureType.STREAM_BROKEN, true);
    expect(failure.message).toContain('no stop_reason');
  });

  test('the same answer with its message_delta and message_stop is a turn (the check is not refusing everything)', async () => {
    const url = await rawSse(
      START +
        TEXT_BLOCK +
        sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 4 } }) +
        sse({ type: 'message_stop' }),
    );
    const out = (await call(url)).outcome as CallClaudeOutput;
    expect(out.stopReason).toBe('end_turn');
    expect(out.content).toEqual([{ type: 'text', text: 'half an answer' }]);
  });
});

describe('heartbeats carry the thinking state', () => {
  test('omitted thinking (empty text): phase thinking, since when, 0 characters; then the text', async () => {
    const url = await scripted({
      responses: [
        {
          content: [
            { type: 'thinking', thinking: '' },
            { type: 'text', text: 'Done thinking, here is the answer.' },
          ],
          delay_ms: 0,
          delta_delay_ms: 1_300,
        },
      ],
    });
    const before = Date.now();
    const { outcome, heartbeats } = await call(url);
    expect((outcome as CallClaudeOutput).stopReason).toBe('end_turn');
    const thinking = heartbeats.filter((h) => h.phase === 'thinking');
    expect(thinking.length).toBeGreaterThan(0);
    for (const h of thinking) {
      expect(h.thinkingChars).toBe(0);
      expect(h.thinkingText).toBe('');
      expect(h.thinkingSinceMs).toBeGreaterThanOrEqual(before);
      expect(h.partialText).toBe('');
    }
    expect(heartbeats.some((h) => h.phase === 'text' && h.partialText.startsWith('Done thinking'))).toBe(true);
  });

  test('summarized thinking: its end streams in the heartbeats, bounded, as does the text; the payload stays small', async () => {
    const thought = `${'I should look at the failing test first. '.repeat(150)}THOUGHT END`;
    const text = `${'answer '.repeat(600)}TEXT END`;
    const url = await scripted({
      responses: [
        {
          content: [
            { type: 'thinking', thinking: thought },
            { type: 'text', text },
          ],
          delta_delay_ms: 4,
        },
      ],
    });
    const { outcome, heartbeats } = await call(url);
    expect((outcome as CallClaudeOutput).content[0]).toMatchObject({ type: 'thinking', thinking: thought });
    const during = heartbeats.filter((h) => h.phase === 'thinking' && (h.thinkingText ?? '').length > 0);
    expect(during.length).toBeGreaterThan(0);
    for (const h of heartbeats) {
      expect((h.thinkingText ?? '').length).toBeLessThanOrEqual(THINKING_TEXT_MAX_CHARS);
      expect(h.partialText.length).toBeLessThanOrEqual(PARTIAL_TEXT_MAX_CHARS);
      expect(Buffer.byteLength(JSON.stringify(h))).toBeLessThan(PARTIAL_TEXT_MAX_CHARS + THINKING_TEXT_MAX_CHARS + 300);
      expect(JSON.stringify(h)).not.toContain(SECRET_SYSTEM);
    }
    // Once the text streams, the thinking summary is still there (its end), the phase says text.
    const late = heartbeats.filter((h) => h.phase === 'text');
    expect(late.length).toBeGreaterThan(0);
    expect(late.at(-1)!.thinkingText!.endsWith('THOUGHT END')).toBe(true);
    expect(late.at(-1)!.thinkingChars).toBe(thought.length);
  });
});

describe('the idle watchdog counts what arrives on the wire, pings included (the SDK drops them)', () => {
  /** Shorter than each pause below: 1.5 s. */
  const IDLE_MS = 1_500;
  const answer = { content: [{ type: 'text', text: 'Thought it through.' }] };

  test('pings and no content for longer than the idle timeout: the answer completes', async () => {
    const url = await scripted({ responses: [{ ...answer, think_ms: 4_000, ping_every_ms: 250 }] });
    const started = Date.now();
    const { outcome } = await call(url, 1, IDLE_MS);
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_000);
    expect((outcome as CallClaudeOutput).content).toEqual([{ type: 'text', text: 'Thought it through.' }]);
    expect(server!.requests()).toHaveLength(1);
  });

  // C21: a complete answer is used at message_stop, whether or not the socket ever closes.
  test('a whole answer on a socket that is never closed: used at message_stop, not after the idle timeout', async () => {
    const whole =
      START +
      TEXT_BLOCK +
      sse({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 3 } }) +
      sse({ type: 'message_stop' });
    const url = await rawSseHeldOpen(whole);
    const idleMs = 10_000;
    const started = Date.now();
    const { outcome } = await call(url, 1, idleMs);
    // The answer itself, not the idle watchdog's abort (a retryable connection error), and before the watchdog's time.
    expect(outcome).toMatchObject({ stopReason: 'end_turn', content: [{ type: 'text', text: 'half an answer' }] });
    expect(Date.now() - started).toBeLessThan(idleMs);
    // Not held open by the call: the server's only connection was let go.
    raw!.closeAllConnections();
  });

  // C21: a stalled stream is aborted as retryable.
  test('no byte for that long (a silent pause, or a stalled stream): aborted as retryable ClaudeConnectionError, and the retry answers', async () => {
    const url = await scripted({
      responses: [{ error: { kind: 'stream_stall', after_events: 2 } }, { ...answer, think_ms: 4_000 }],
    });
    const stalled = await call(url, 1, IDLE_MS);
    expect(expectFailure(stalled.outcome, ClaudeFailureType.CONNECTION, true).message).toContain('sent nothing for 1.5 s');
    // The second attempt is silent for 4 s after message_start (no pings): abandoned as well.
    const silent = await call(url, 2, IDLE_MS);
    expectFailure(silent.outcome, ClaudeFailureType.CONNECTION, true);
    // With a watchdog longer than the pause, the same step answers.
    const again = await call(url, 3, 10_000);
    expect((again.outcome as CallClaudeOutput).content).toEqual([{ type: 'text', text: 'Thought it through.' }]);
    expect(server!.requests().map((r) => r.response.kind)).toEqual(['stream_stall', 'message', 'message']);
  });
});
