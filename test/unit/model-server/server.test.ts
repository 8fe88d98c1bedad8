import Anthropic, {
  APIConnectionError,
  APIConnectionTimeoutError,
  AuthenticationError,
  BadRequestError,
  InternalServerError,
  OverloadedError,
  RateLimitError,
} from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam } from '@anthropic-ai/sdk/resources/messages';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readRequestLog, startModelServer, type ModelServer, type ScriptFile } from '../../../src/dev/model-server';

const FIXTURES = join(__dirname, '../../fixtures/scripts');
// Not in the SDK's deprecated list (claude-sonnet-4-5 makes it print a warning on every call).
const MODEL = 'claude-sonnet-4-6';
const BASH = { type: 'bash_20250124', name: 'bash' } as const;

let dir: string;
const servers: ModelServer[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'model-server-test-'));
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

async function start(script: ScriptFile | string, extra: { logFile?: string; apiKey?: string } = {}): Promise<ModelServer> {
  const server = await startModelServer({ script, ...extra });
  servers.push(server);
  return server;
}

function clientFor(server: ModelServer, options: { apiKey?: string; timeout?: number } = {}): Anthropic {
  return new Anthropic({ baseURL: server.url, apiKey: options.apiKey ?? 'test-key', maxRetries: 0, timeout: options.timeout ?? 10_000 });
}

const task: MessageParam = { role: 'user', content: 'Make the failing test pass.' };

function request(messages: MessageParam[]): MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 1024, tools: [BASH], messages };
}

/** The user message answering every tool_use of `assistant`. */
function toolResults(assistant: Anthropic.Message, output = 'ok'): MessageParam {
  return {
    role: 'user',
    content: assistant.content
      .filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use')
      .map((b) => ({ type: 'tool_result' as const, tool_use_id: b.id, content: output })),
  };
}

/** A plain-JSON copy without the SDK's additions (`_request_id`, `parsed_output`). */
function plain(message: object): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(message)) as Record<string, unknown>;
  delete copy['_request_id'];
  delete copy['parsed_output'];
  return copy;
}

/** Polls `ready` every 10 ms; throws after 10 s. */
async function waitUntil(ready: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 10_000; !ready(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > deadline) throw new Error('timed out after 10 s');
  }
}

async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}

describe('scripted Messages API server', () => {
  test('answers a multi-step conversation by step; a retried step gets the same answer, tool_use ids included', async () => {
    const server = await start(join(FIXTURES, 'two-tool-uses.json'));
    const client = clientFor(server);

    const first = await client.messages.create(request([task]));
    expect(first).toMatchObject({ type: 'message', role: 'assistant', model: MODEL, stop_reason: 'tool_use', stop_sequence: null });
    expect(first.id).toMatch(/^msg_/);
    expect(first.content.map((b) => b.type)).toEqual(['text', 'tool_use', 'tool_use']);
    const uses = first.content.filter((b): b is Anthropic.ToolUseBlock => b.type === 'tool_use');
    expect(uses.map((u) => u.input)).toEqual([{ command: 'ls -la' }, { command: 'cat README.md' }]);
    expect(uses[0]!.id).toMatch(/^toolu_/);
    expect(new Set(uses.map((u) => u.id)).size).toBe(2);
    expect(first.usage).toMatchObject({ cache_creation_input_tokens: 0, cache_read_input_tokens: 0 });
    expect(first.usage.input_tokens).toBeGreaterThan(0);
    expect(first.usage.output_tokens).toBeGreaterThan(0);

    const again = await client.messages.create(request([task]));
    expect(plain(again)).toEqual(plain(first));

    const history: MessageParam[] = [task, { role: 'assistant', content: first.content }, toolResults(first)];
    const second = await client.messages.create(request(history));
    expect(second.content).toEqual([expect.objectContaining({ type: 'tool_use', input: { command: 'echo done > result.txt' } })]);
    expect((second.content[0] as Anthropic.ToolUseBlock).id).not.toEqual(uses[0]!.id);

    history.push({ role: 'assistant', content: second.content }, toolResults(second));
    const third = await client.messages.create(request(history));
    expect(third.stop_reason).toBe('end_turn');
    expect(third.content).toEqual([{ type: 'text', text: 'The workspace holds a README and result.txt now says done.' }]);
    // Scripted usage wins; the cache fields are filled in.
    expect(third.usage).toMatchObject({ input_tokens: 1200, output_tokens: 20, cache_read_input_tokens: 0 });

    expect(server.requests().map((r) => [r.step, r.attempt, r.response.kind])).toEqual([
      [0, 1, 'message'],
      [0, 2, 'message'],
      [1, 1, 'message'],
      [2, 1, 'message'],
    ]);
  });

  test('serves 529 three times, then the message (C05)', async () => {
    const server = await start(join(FIXTURES, 'overloaded-then-success.json'));
    const client = clientFor(server);

    for (let i = 0; i < 3; i++) {
      const err = await caught(client.messages.create(request([task])));
      expect(err).toBeInstanceOf(OverloadedError);
      expect(err).toMatchObject({ status: 529, error: { type: 'error', error: { type: 'overloaded_error' } } });
    }
    const message = await client.messages.create(request([task]));
    expect(message.stop_reason).toBe('tool_use');
    expect(server.requests().map((r) => [r.step, r.attempt, r.response.status])).toEqual([
      [0, 1, 529],
      [0, 2, 529],
      [0, 3, 529],
      [0, 4, 200],
    ]);
  });

  test('hold(): Messages requests wait at the gate until released one by one, then opened; count_tokens and health pass; close drops the held', async () => {
    const server = await start(join(FIXTURES, 'overloaded-then-success.json'));
    const client = clientFor(server);
    const gate = server.hold();
    const same = server.hold(); // while shut: the same gate, not a second one
    const settled: string[] = [];
    const call = (name: string): Promise<unknown> =>
      client.messages.create(request([task])).then(
        () => settled.push(`${name} 200`),
        (err: unknown) => settled.push(`${name} ${(err as { status?: number }).status}`),
      );
    const first = call('first');
    await waitUntil(() => gate.waiting() === 1);
    const second = call('second');
    await waitUntil(() => gate.waiting() === 2);
    expect(same.waiting()).toBe(2);
    // Not held: count_tokens answers while two Messages requests wait.
    expect((await client.messages.countTokens({ model: MODEL, messages: [task] })).input_tokens).toBeGreaterThan(0);
    expect(settled).toEqual([]);
    expect(server.requests().filter((r) => r.path === '/v1/messages')).toEqual([]);

    expect(gate.release()).toBe(true);
    await first;
    expect(settled).toEqual(['first 529']);
    expect(gate.waiting()).toBe(1);
    gate.open();
    await second;
    expect(settled).toEqual(['first 529', 'second 529']);
    expect(gate.release()).toBe(false);
    // Open: later requests are answered at once.
    await call('third');
    expect(settled.at(-1)).toBe('third 529');

    // A new gate holds again; closing the server drops what it holds unanswered.
    const again = server.hold();
    const dropped = caught(client.messages.create(request([task])));
    await waitUntil(() => again.waiting() === 1);
    await server.close();
    expect(await dropped).toBeInstanceOf(APIConnectionError);
    expect(server.requests().map((r) => r.response.status)).toEqual([200, 529, 529, 529]);
  });

  test('answerAllWith(): every later request gets that entry instead of its step, scripted errors included; an invalid entry is refused', async () => {
    const server = await start(join(FIXTURES, 'overloaded-then-success.json'));
    const client = clientFor(server);
    expect(await caught(client.messages.create(request([task])))).toBeInstanceOf(OverloadedError);
    server.answerAllWith({ content: [{ type: 'text', text: 'the end' }], stop_reason: 'end_turn' });
    const ended = await client.messages.create(request([task]));
    expect(ended).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text', text: 'the end' }] });
    // A later step of the same conversation too.
    const later = await client.messages.create(request([task, { role: 'assistant', content: 'hm' }, { role: 'user', content: 'go on' }]));
    expect(later.content).toEqual([{ type: 'text', text: 'the end' }]);
    expect(server.requests().map((r) => r.response.status)).toEqual([529, 200, 200]);
    expect(() => server.answerAllWith({ content: 'not blocks' } as never)).toThrow(/content/);
  });

  test('429 is a RateLimitError carrying the scripted retry-after header', async () => {
    const server = await start(join(FIXTURES, 'overloaded-then-success.json'));
    const client = clientFor(server);
    const step0 = { content: [{ type: 'tool_use', id: 'toolu_1', name: 'bash', input: { command: 'pwd' } }] } as const;
    const history: MessageParam[] = [
      task,
      { role: 'assistant', content: [...step0.content] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '/work' }] },
    ];

    const err = await caught(client.messages.create(request(history)));
    expect(err).toBeInstanceOf(RateLimitError);
    const rateLimited = err as RateLimitError;
    expect(rateLimited.status).toBe(429);
    // SDK 1.x: `headers` is a fetch Headers object, not a plain record.
    expect(rateLimited.headers.get('retry-after')).toBe('3');
    expect(rateLimited.requestID).toMatch(/^req_/);

    const message = await client.messages.create(request(history));
    expect(message.content).toEqual([{ type: 'text', text: 'Done after an overload and a rate limit.' }]);
  });

  test('x-should-retry, as the real API sends it, scripted as a header with a boolean value', async () => {
    const server = await start({
      responses: [
        { error: { status: 500, headers: { 'x-should-retry': false } } },
        { error: { status: 529, headers: { 'X-Should-Retry': true } } },
        { content: [{ type: 'text', text: 'ok' }] },
      ],
    });
    const client = clientFor(server);
    const first = (await caught(client.messages.create(request([task])))) as InternalServerError;
    expect(first).toBeInstanceOf(InternalServerError);
    expect(first.headers.get('x-should-retry')).toBe('false');
    const second = (await caught(client.messages.create(request([task])))) as OverloadedError;
    expect(second).toBeInstanceOf(OverloadedError);
    expect(second.headers.get('x-should-retry')).toBe('true');
  });

  test('400 and 401 give BadRequestError and AuthenticationError with the scripted message', async () => {
    const server = await start({
      responses: [
        {
          error: {
            status: 400,
            body: {
              type: 'error',
              error: { type: 'invalid_request_error', message: 'prompt is too long: 250000 tokens > 200000 maximum' },
            },
          },
        },
        { error: { status: 401 } },
        { content: [{ type: 'text', text: 'finally' }] },
      ],
    });
    const client = clientFor(server);

    const bad = await caught(client.messages.create(request([task])));
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).message).toContain('prompt is too long: 250000 tokens > 200000 maximum');
    expect((bad as BadRequestError).error).toMatchObject({ error: { type: 'invalid_request_error' } });

    const auth = await caught(client.messages.create(request([task])));
    expect(auth).toBeInstanceOf(AuthenticationError);
    expect(auth).toMatchObject({ status: 401, error: { type: 'error', error: { type: 'authentication_error' } } });

    expect((await client.messages.create(request([task]))).content).toEqual([{ type: 'text', text: 'finally' }]);
  });

  test('a step past the end of the script gets a 500 naming the step', async () => {
    const server = await start({ responses: [{ content: [{ type: 'text', text: 'only step 0' }] }] });
    const client = clientFor(server);
    const history: MessageParam[] = [task, { role: 'assistant', content: 'only step 0' }, { role: 'user', content: 'and then?' }];

    const err = await caught(client.messages.create(request(history)));
    expect(err).toBeInstanceOf(InternalServerError);
    expect(err).toMatchObject({ status: 500, error: { error: { type: 'api_error' } } });
    expect((err as InternalServerError).message).toMatch(/script <inline script> has no entry for step 1;.*answers steps 0-0/);
    expect(server.requests()[0]!.response.kind).toBe('past_end');
  });

  test('error entries after the last message are served, then the step is past the end', async () => {
    const server = await start(join(FIXTURES, 'fatal-errors.json'));
    const client = clientFor(server);
    const first = await client.messages.create(request([task]));
    const history: MessageParam[] = [task, { role: 'assistant', content: first.content }, toolResults(first)];

    const bad = await caught(client.messages.create(request(history)));
    expect(bad).toBeInstanceOf(BadRequestError);
    expect((bad as BadRequestError).message).toContain('scripted invalid request');
    const after = await caught(client.messages.create(request(history)));
    expect((after as InternalServerError).message).toMatch(/no entry for step 1 \(its error entries are used up/);
  });

  describe('streaming', () => {
    const script: ScriptFile = {
      responses: [
        {
          content: [
            { type: 'thinking', thinking: 'The user wants the tests fixed; list files first.', signature: 'sig-abc' },
            { type: 'text', text: 'Let me look around — ünïcödé 🚀 and a long sentence to force several text deltas.' },
            {
              type: 'tool_use',
              name: 'bash',
              input: { command: 'ls -la && cat "a b.txt"', restart: false, n: 1.5, nested: { list: [1, 'two', null] } },
            },
            { type: 'tool_use', id: 'toolu_scripted_fixed', name: 'bash', input: {} },
          ],
          stop_reason: 'tool_use',
          usage: { input_tokens: 321, output_tokens: 54, service_tier: 'standard' },
        },
      ],
    };

    test('messages.stream(...).finalMessage() equals the non-streamed message', async () => {
      const server = await start(script);
      const client = clientFor(server);
      const created = await client.messages.create(request([task]));
      const streamed = await client.messages.stream(request([task])).finalMessage();
      expect(plain(streamed)).toEqual(plain(created));
      expect(streamed.content[2]).toMatchObject({ type: 'tool_use', input: { nested: { list: [1, 'two', null] } } });
      expect(streamed.content[3]).toEqual({ type: 'tool_use', id: 'toolu_scripted_fixed', name: 'bash', input: {} });
      expect(streamed.usage).toMatchObject({ input_tokens: 321, output_tokens: 54, service_tier: 'standard' });
      expect(server.requests().map((r) => r.stream)).toEqual([false, true]);
    });

    test('sends the event sequence of the real API', async () => {
      const server = await start(script);
      const res = await fetch(`${server.url}/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': 'k', 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ ...request([task]), stream: true }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
      const text = await res.text();
      const names = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
      expect(names[0]).toBe('message_start');
      expect(names.slice(-2)).toEqual(['message_delta', 'message_stop']);
      expect(names.filter((n) => n === 'content_block_start')).toHaveLength(4);
      expect(names.filter((n) => n === 'content_block_stop')).toHaveLength(4);
      const deltas = [...text.matchAll(/^data: (.*)$/gm)]
        .map((m) => JSON.parse(m[1]!) as { type: string; delta?: { type: string } })
        .filter((e) => e.type === 'content_block_delta')
        .map((e) => e.delta!.type);
      expect(new Set(deltas)).toEqual(new Set(['thinking_delta', 'signature_delta', 'text_delta', 'input_json_delta']));
    });

    test('delta_delay_ms spaces the deltas of a streamed answer, so the text arrives piece by piece', async () => {
      const text = 'a'.repeat(16 * 4); // four text deltas of 16 characters
      const server = await start({ responses: [{ content: [{ type: 'text', text }], delta_delay_ms: 400 }] });
      const seen: Array<{ at: number; chars: number }> = [];
      const started = Date.now();
      const stream = clientFor(server).messages.stream(request([task]));
      stream.on('text', (_delta, snapshot) => seen.push({ at: Date.now() - started, chars: snapshot.length }));
      const message = await stream.finalMessage();
      expect(message.content).toMatchObject([{ type: 'text', text }]);
      expect(seen.map((s) => s.chars)).toEqual([16, 32, 48, 64]);
      // Each delta waits for the pause after the one before it: the last comes 3 pauses after the
      // request at the earliest, and no two arrive together. Measured where they arrive, so a loaded
      // machine that stalls this process may bunch two; a gap of a quarter pause still tells them apart.
      expect(seen[seen.length - 1]!.at).toBeGreaterThanOrEqual(3 * 400);
      for (let i = 1; i < seen.length; i++) expect(seen[i]!.at - seen[i - 1]!.at).toBeGreaterThanOrEqual(100);
      // The non-streamed answer is not slowed: faster than the 3 pauses the stream must take.
      const plainStarted = Date.now();
      await clientFor(server).messages.create(request([task]));
      expect(Date.now() - plainStarted).toBeLessThan(3 * 400);
    });

    test('errors are plain HTTP errors even for streaming requests', async () => {
      const server = await start({ responses: [{ error: { status: 529 } }, ...script.responses] });
      const client = clientFor(server);
      const err = await caught(client.messages.stream(request([task])).finalMessage());
      expect(err).toBeInstanceOf(OverloadedError);
      const message = await client.messages.stream(request([task])).finalMessage();
      expect(message.stop_reason).toBe('tool_use');
    });
  });

  describe('broken streams (C27)', () => {
    // A tool_use whose JSON input streams as many input_json_delta events.
    const bigInput = { command: `printf '%s' '${'y'.repeat(4_000)}' > big.txt` };
    const answer = {
      content: [
        { type: 'text', text: 'Writing the file now.' },
        { type: 'tool_use', name: 'bash', input: bigInput },
      ],
    };
    /** The SSE events of one streamed request, by type, and how it ended. */
    async function streamOnce(client: Anthropic): Promise<{ types: string[]; json: string; outcome: unknown }> {
      const stream = client.messages.stream(request([task]));
      const types: string[] = [];
      let json = '';
      stream.on('streamEvent', (e) => types.push(e.type));
      stream.on('inputJson', (delta) => {
        json += delta;
      });
      const outcome = await stream.finalMessage().catch((err: unknown) => err);
      return { types, json, outcome };
    }

    test('stream_cut closes the socket inside a large tool_use: the SDK rejects, no message_stop; served `times` times, then the answer', async () => {
      const server = await start({ responses: [{ error: { kind: 'stream_cut', after_events: 12, times: 2 } }, answer] });
      const client = clientFor(server);
      for (let i = 0; i < 2; i++) {
        const { types, json, outcome } = await streamOnce(client);
        // message_start + 3 events of the text block + content_block_start of the tool_use + 7 of its input deltas (ping is not an event to the SDK).
        expect(types).toHaveLength(11);
        expect(types.slice(-2)).toEqual(['content_block_delta', 'content_block_delta']);
        expect(types).not.toContain('message_stop');
        expect(json.length).toBeGreaterThan(0);
        expect(json.length).toBeLessThan(JSON.stringify(bigInput).length);
        // SDK 1.14: the dropped socket surfaces as a bare AnthropicError ("terminated"), not an APIConnectionError.
        expect(outcome).toBeInstanceOf(Anthropic.AnthropicError);
        expect(outcome).not.toBeInstanceOf(Anthropic.APIError);
        expect((outcome as Error).message).toMatch(/terminated/);
      }
      const { outcome } = await streamOnce(client);
      expect((outcome as Anthropic.Message).content[1]).toMatchObject({ type: 'tool_use', input: bigInput });
      expect(server.requests().map((r) => [r.response.kind, r.response.status, r.attempt])).toEqual([
        ['stream_cut', 200, 1],
        ['stream_cut', 200, 2],
        ['message', 200, 3],
      ]);
    });

    test('stream_error sends `event: error` (overloaded by default, or the scripted body) after N events, then ends', async () => {
      const custom = { type: 'error', error: { type: 'api_error', message: 'Internal server error mid-stream' } };
      const server = await start({
        responses: [
          { error: { kind: 'stream_error', after_events: 4 } },
          { error: { kind: 'stream_error', after_events: 4, body: custom } },
          answer,
        ],
      });
      const client = clientFor(server);
      const first = await streamOnce(client);
      expect(first.types).toEqual(['message_start', 'content_block_start', 'content_block_delta']);
      expect(first.outcome).toBeInstanceOf(Anthropic.APIError);
      expect(first.outcome).toMatchObject({
        status: undefined,
        type: 'overloaded_error',
        error: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
      });
      const second = await streamOnce(client);
      expect(second.outcome).toMatchObject({ status: undefined, type: 'api_error', error: custom });
      expect(((await streamOnce(client)).outcome as Anthropic.Message).stop_reason).toBe('tool_use');
      expect(server.requests().map((r) => r.response.kind)).toEqual(['stream_error', 'stream_error', 'message']);
    });

    test('after_events past the end still withholds message_stop; delta_delay_ms paces the cut stream too', async () => {
      const server = await start({
        responses: [{ error: { kind: 'stream_cut', after_events: 10_000 } }, { ...answer, delta_delay_ms: 30 }],
      });
      const started = Date.now();
      const { types, outcome } = await streamOnce(clientFor(server));
      expect(types.at(-1)).toBe('message_delta');
      expect(types).not.toContain('message_stop');
      expect(outcome).toBeInstanceOf(Anthropic.AnthropicError);
      // 2 text deltas + 251 input deltas, 30 ms each.
      expect(Date.now() - started).toBeGreaterThanOrEqual(30 * 200);
    });

    test('a non-streamed request: stream_cut drops the connection mid-body, stream_error is the HTTP error of its type', async () => {
      const server = await start({
        responses: [{ error: { kind: 'stream_cut', after_events: 3 } }, { error: { kind: 'stream_error', after_events: 3 } }, answer],
      });
      const client = clientFor(server);
      // The status line came, so the SDK does not call it a connection error: fetch's body read fails ("terminated").
      expect(await caught(client.messages.create(request([task])))).toMatchObject({ message: expect.stringMatching(/terminated/) });
      expect(await caught(client.messages.create(request([task])))).toBeInstanceOf(OverloadedError);
      expect((await client.messages.create(request([task]))).stop_reason).toBe('tool_use');
    });

    test('a stream fault in a step without a message entry gets the past-the-end 500', async () => {
      const server = await start({ responses: [answer, { error: { kind: 'stream_cut', after_events: 3 } }] });
      const client = clientFor(server);
      const first = await client.messages.create(request([task]));
      const err = await caught(client.messages.stream(request([task, first, toolResults(first)])).finalMessage());
      expect(err).toBeInstanceOf(InternalServerError);
      expect((err as Error).message).toContain('stream_cut but no message entry');
    });
  });

  describe('credentials and the request log', () => {
    const oneStep: ScriptFile = { responses: [{ content: [{ type: 'text', text: 'hello' }] }] };
    const body = JSON.stringify(request([task]));

    test('a request without x-api-key or Authorization gets 401; either header is accepted', async () => {
      const server = await start(oneStep);
      const post = (headers: Record<string, string>) =>
        fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });

      const none = await post({});
      expect(none.status).toBe(401);
      expect(await none.json()).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
      expect((await post({ 'x-api-key': 'k1' })).status).toBe(200);
      expect((await post({ authorization: 'Bearer k2' })).status).toBe(200);
      expect((await post({ authorization: 'Basic k3' })).status).toBe(401);
      expect(server.requests().map((r) => [r.auth, r.response.kind])).toEqual([
        ['none', 'unauthorized'],
        ['x-api-key', 'message'],
        ['bearer', 'message'],
        ['none', 'unauthorized'],
      ]);
      // Rejected requests do not count as attempts of a step.
      expect(
        server
          .requests()
          .filter((r) => r.step !== null)
          .map((r) => r.attempt),
      ).toEqual([1, 2]);
    });

    test('apiKey option: only that key is accepted', async () => {
      const server = await start(oneStep, { apiKey: 'right-key' });
      const err = await caught(clientFor(server, { apiKey: 'wrong-key' }).messages.create(request([task])));
      expect(err).toBeInstanceOf(AuthenticationError);
      const ok = await clientFor(server, { apiKey: 'right-key' }).messages.create(request([task]));
      expect(ok.content).toEqual([{ type: 'text', text: 'hello' }]);
    });

    test('the log file has one JSON line per request and never the key', async () => {
      const logFile = join(dir, 'nested', 'requests.jsonl');
      const secret = 'sk-ant-api03-SECRET-never-log-me';
      const server = await start(oneStep, { logFile });
      const client = clientFor(server, { apiKey: secret });
      await client.messages.create(request([task]));
      await client.messages.stream(request([task])).finalMessage();
      await fetch(`${server.url}/v1/messages`, { method: 'POST', headers: { 'x-api-key': secret }, body });
      await fetch(`${server.url}/health`);

      const text = readFileSync(logFile, 'utf8');
      expect(text).not.toContain(secret);
      expect(text.trimEnd().split('\n')).toHaveLength(4);
      const logged = readRequestLog(logFile);
      expect(logged).toEqual(server.requests());
      // The SDK 1.x sends the API key as `Authorization: Bearer`.
      expect(logged.map((r) => r.auth)).toEqual(['bearer', 'bearer', 'x-api-key', 'none']);
      expect(logged[0]).toMatchObject({
        step: 0,
        method: 'POST',
        path: '/v1/messages',
        stream: false,
        body: { model: MODEL, max_tokens: 1024, messages: [task] },
        response: { status: 200, kind: 'message' },
      });
      expect(logged[0]!.headers).toHaveProperty('anthropic-version');
      expect(logged[0]!.headers).not.toHaveProperty('authorization');
      expect(logged[0]!.headers['x-stainless-retry-count']).toBe('0');
      expect(logged[1]).toMatchObject({ stream: true, body: { stream: true } });
      expect(logged[3]).toMatchObject({ method: 'GET', path: '/health', step: null, response: { status: 200, kind: 'health' } });
    });
  });

  describe('faults', () => {
    test('connection_reset gives APIConnectionError; the next try is answered', async () => {
      const server = await start({ responses: [{ error: { kind: 'connection_reset' } }, { content: [{ type: 'text', text: 'back' }] }] });
      const client = clientFor(server);
      const err = await caught(client.messages.create(request([task])));
      expect(err).toBeInstanceOf(APIConnectionError);
      expect((await client.messages.create(request([task]))).content).toEqual([{ type: 'text', text: 'back' }]);
      expect(server.requests().map((r) => [r.response.kind, r.response.status])).toEqual([
        ['connection_reset', null],
        ['message', 200],
      ]);
    });

    test('hang never answers: the client times out; close() still returns', async () => {
      const server = await start({ responses: [{ error: { kind: 'hang' } }, { content: [{ type: 'text', text: 'late' }] }] });
      const err = await caught(clientFor(server, { timeout: 300 }).messages.create(request([task])));
      expect(err).toBeInstanceOf(APIConnectionTimeoutError);
      // A hanging request still open at close() does not block it.
      const pending = clientFor(server, { timeout: 10_000 }).messages.create(request([{ role: 'user', content: 'other run' }]));
      const settled = pending.then(
        () => 'answered',
        () => 'failed',
      );
      await waitFor(() => server.requests().length === 2);
      await server.close();
      expect(await settled).toBe('failed');
    });

    test('delay_ms delays the answer and the request is logged before it', async () => {
      const server = await start({ responses: [{ content: [{ type: 'text', text: 'slow' }], delay_ms: 400 }] });
      const started = Date.now();
      const answer = clientFor(server).messages.create(request([task]));
      await waitFor(() => server.requests().length === 1);
      expect(server.requests()[0]!.response).toMatchObject({ kind: 'message', delayMs: 400 });
      await answer;
      expect(Date.now() - started).toBeGreaterThanOrEqual(380);
    });
  });

  test('error counters are kept per conversation', async () => {
    const server = await start({ responses: [{ error: { status: 529 } }, { content: [{ type: 'text', text: 'ok' }] }] });
    const client = clientFor(server);
    await expect(client.messages.create(request([{ role: 'user', content: 'run A' }]))).rejects.toBeInstanceOf(OverloadedError);
    await expect(client.messages.create(request([{ role: 'user', content: 'run B' }]))).rejects.toBeInstanceOf(OverloadedError);
    await expect(client.messages.create(request([{ role: 'user', content: 'run A' }]))).resolves.toMatchObject({ stop_reason: 'end_turn' });
    const [a, b] = server.requests();
    expect(a!.conversation).not.toEqual(b!.conversation);
  });

  test('rejects, like the real API, a tool_use without its tool_result and an empty text block', async () => {
    const server = await start({ responses: [{ content: [{ type: 'text', text: 'a' }] }, { content: [{ type: 'text', text: 'b' }] }] });
    const client = clientFor(server);
    const unpaired = await caught(
      client.messages.create(
        request([
          task,
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_x', name: 'bash', input: { command: 'ls' } }] },
          { role: 'user', content: 'no result here' },
        ]),
      ),
    );
    expect(unpaired).toBeInstanceOf(BadRequestError);
    expect((unpaired as BadRequestError).message).toContain(
      '`tool_use` ids were found without `tool_result` blocks immediately after: toolu_x',
    );

    const empty = await caught(
      client.messages.create(
        request([task, { role: 'assistant', content: [{ type: 'text', text: '' }] }, { role: 'user', content: 'go on' }]),
      ),
    );
    expect((empty as BadRequestError).message).toContain('messages.1.content.0.text: text content blocks must be non-empty');
    expect(server.requests().map((r) => [r.step, r.response.kind])).toEqual([
      [null, 'invalid_request'],
      [null, 'invalid_request'],
    ]);
  });

  test('GET /health answers ok; unknown routes get an Anthropic-shaped 404', async () => {
    const server = await start({ responses: [] });
    const health = await fetch(`${server.url}/health`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ ok: true });
    const missing = await fetch(`${server.url}/v1/complete`, { method: 'POST', headers: { 'x-api-key': 'k' }, body: '{}' });
    expect(missing.status).toBe(404);
    expect(missing.headers.get('request-id')).toMatch(/^req_/);
    expect(await missing.json()).toMatchObject({ type: 'error', error: { type: 'not_found_error' } });
  });

  test('SDK quirk: a non-streaming call with a large max_tokens throws in the client unless a timeout is given', async () => {
    const server = await start({ responses: [{ content: [{ type: 'text', text: 'x' }] }] });
    const client = new Anthropic({ baseURL: server.url, apiKey: 'k', maxRetries: 0 });
    // It throws synchronously, not as a rejected promise: `create(...).catch(...)` would not catch it.
    expect(() => client.messages.create({ ...request([task]), max_tokens: 64_000 })).toThrow(/Streaming is required/);
    // With an explicit timeout the SDK lets it through.
    await expect(client.messages.create({ ...request([task]), max_tokens: 64_000 }, { timeout: 60_000 })).resolves.toBeDefined();
    expect(server.requests()).toHaveLength(1);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}
