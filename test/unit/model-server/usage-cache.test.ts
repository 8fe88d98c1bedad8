/**
 * Usage, prompt caching, count_tokens and the context window of the scripted
 * server, through the real SDK, with the numbers the token rule gives
 * (`src/dev/model-server/tokens.ts`).
 */
import { BadRequestError } from '@anthropic-ai/sdk';
import type { MessageCreateParamsNonStreaming, MessageParam, TextBlockParam } from '@anthropic-ai/sdk/resources/messages';
import { countInputTokens, measure, type ScriptFile } from '../../../src/dev/model-server';
import { caught, clientFor, closeServers, MODEL, start } from './harness';

afterEach(closeServers);

const BASH = { type: 'bash_20250124', name: 'bash' } as const;
const task: MessageParam = { role: 'user', content: 'Make the failing test pass.' };
/** A system prompt of about 1,300 tokens, over the default minimum of 1024. */
const LONG = `You are a careful engineer. ${'Follow the house rules. '.repeat(220)}`;
const EPHEMERAL = { type: 'ephemeral' } as const;

/** A script answering `n` steps with a short text each. */
function texts(n: number, extra: Partial<ScriptFile> = {}): ScriptFile {
  return { responses: Array.from({ length: n }, (_, i) => ({ content: [{ type: 'text', text: `answer ${i}` }] })), ...extra };
}

function cachedSystem(ttl?: '5m' | '1h'): TextBlockParam[] {
  return [{ type: 'text', text: LONG, cache_control: ttl ? { ...EPHEMERAL, ttl } : EPHEMERAL }];
}

function body(messages: MessageParam[], extra: Partial<MessageCreateParamsNonStreaming> = {}): MessageCreateParamsNonStreaming {
  return { model: MODEL, max_tokens: 1024, tools: [BASH], messages, ...extra };
}

/** Input tokens the usage of a message adds up to. */
function total(usage: {
  input_tokens: number;
  cache_creation_input_tokens: number | null;
  cache_read_input_tokens: number | null;
}): number {
  return usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}

describe('the token rule', () => {
  test('input tokens are ceil(UTF-8 bytes / 4) of JSON.stringify of the normalized tools, system and messages', () => {
    const messages: MessageParam[] = [
      { role: 'user', content: 'héllo 🚀' },
      { role: 'assistant', content: [{ type: 'text', text: 'hi', cache_control: EPHEMERAL }] },
      { role: 'user', content: [{ text: 'keys in any order', type: 'text' }] },
    ];
    const system = 'be brief';
    // Written out by hand: strings become text blocks, cache_control is gone, block keys are sorted, role before content.
    const canonical = JSON.stringify({
      tools: [{ name: 'bash', type: 'bash_20250124' }],
      system: [{ text: 'be brief', type: 'text' }],
      messages: [
        { role: 'user', content: [{ text: 'héllo 🚀', type: 'text' }] },
        { role: 'assistant', content: [{ text: 'hi', type: 'text' }] },
        { role: 'user', content: [{ text: 'keys in any order', type: 'text' }] },
      ],
    });
    const measured = measure({ tools: [BASH], system, messages });
    expect(measured.text).toBe(canonical);
    expect(measured.bytes).toBe(Buffer.byteLength(canonical));
    expect(measured.tokens).toBe(Math.ceil(Buffer.byteLength(canonical) / 4));
    expect(countInputTokens({ tools: [BASH], system, messages })).toBe(measured.tokens);
    // Prefix sizes are cumulative bytes of the same text, up to the end of each block.
    expect(measured.blocks.map((b) => b.path)).toEqual([
      'tools.0',
      'system.0',
      'messages.0.content.0',
      'messages.1.content.0',
      'messages.2.content.0',
    ]);
    for (const block of measured.blocks) {
      expect(Buffer.from(canonical).subarray(0, block.endBytes).toString().endsWith('}')).toBe(true);
      expect(block.prefixTokens).toBe(Math.ceil(block.endBytes / 4));
    }
    expect(measured.blocks.at(-1)!.endBytes).toBe(measured.bytes - ']}]}'.length);
  });

  test('a request without cache_control: usage.input_tokens is the whole input, the cache fields are zero', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([task], { system: 'be brief' });
    const message = await client.messages.create(params);
    expect(message.usage).toMatchObject({
      input_tokens: countInputTokens(params),
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    });
    expect(message.usage.output_tokens).toBeGreaterThan(0);
    expect(await client.messages.countTokens(params)).toEqual({ input_tokens: message.usage.input_tokens });
  });
});

describe('prompt caching', () => {
  test('the first request writes the prefix, the second reads it; input + creation + read = the total', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([task], { system: cachedSystem() });
    const measured = measure(params);
    const prefix = measured.blocks.find((b) => b.path === 'system.0')!.prefixTokens;
    expect(prefix).toBeGreaterThanOrEqual(1024);

    const first = await client.messages.create(params);
    expect(first.usage).toMatchObject({
      input_tokens: measured.tokens - prefix,
      cache_creation_input_tokens: prefix,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: prefix, ephemeral_1h_input_tokens: 0 },
    });
    const second = await client.messages.create(params);
    expect(second.usage).toMatchObject({
      input_tokens: measured.tokens - prefix,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: prefix,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    });
    expect(total(first.usage)).toBe(measured.tokens);
    expect(total(second.usage)).toBe(measured.tokens);
    // count_tokens answers the same total, cache or not.
    expect((await client.messages.countTokens(params)).input_tokens).toBe(measured.tokens);
    // Streamed, the final message carries the same usage.
    const streamed = await client.messages.stream(params).finalMessage();
    expect(streamed.usage).toEqual(second.usage);
  });

  test('a growing conversation reads the previous turn from the cache and writes only what is new', async () => {
    const server = await start(texts(2));
    const client = clientFor(server);
    const turn1: MessageParam[] = [
      { role: 'user', content: [{ type: 'text', text: `${LONG} Task: list files.`, cache_control: EPHEMERAL }] },
    ];
    const first = await client.messages.create(body(turn1));
    const turn2: MessageParam[] = [
      { role: 'user', content: [{ type: 'text', text: `${LONG} Task: list files.` }] },
      { role: 'assistant', content: first.content },
      { role: 'user', content: [{ type: 'text', text: 'Now read them.', cache_control: EPHEMERAL }] },
    ];
    const second = await client.messages.create(body(turn2));
    const before = measure(body(turn1)).blocks.at(-1)!.prefixTokens;
    const after = measure(body(turn2));
    expect(second.usage).toMatchObject({
      cache_read_input_tokens: before,
      cache_creation_input_tokens: after.blocks.at(-1)!.prefixTokens - before,
      input_tokens: after.tokens - after.blocks.at(-1)!.prefixTokens,
    });
    expect(total(second.usage)).toBe(after.tokens);
  });

  // "at most 20 positions per breakpoint, counting the breakpoint itself as the first": the docs' example
  // (https://platform.claude.com/docs/en/build-with-claude/prompt-caching) misses an entry 20 blocks back.
  test('lookback: an entry 19 blocks before the breakpoint is found, one 20 blocks before is not', async () => {
    const blocks = (marked: number): MessageParam[] => [
      {
        role: 'user',
        content: Array.from({ length: 30 }, (_, i) => ({
          type: 'text' as const,
          text: `block ${i}`,
          ...(i === marked ? { cache_control: EPHEMERAL } : {}),
        })),
      },
    ];
    for (const [later, hit] of [
      [24, true],
      [25, false],
    ] as const) {
      const server = await start(texts(1));
      const client = clientFor(server);
      await client.messages.create(body(blocks(5), { system: LONG }));
      const message = await client.messages.create(body(blocks(later), { system: LONG }));
      const measured = measure(body(blocks(later), { system: LONG }));
      const at5 = measured.blocks.find((b) => b.path === 'messages.0.content.5')!.prefixTokens;
      const atLater = measured.blocks.find((b) => b.path === `messages.0.content.${later}`)!.prefixTokens;
      expect(message.usage).toMatchObject(
        hit
          ? { cache_read_input_tokens: at5, cache_creation_input_tokens: atLater - at5 }
          : { cache_read_input_tokens: 0, cache_creation_input_tokens: atLater },
      );
      expect(total(message.usage)).toBe(measured.tokens);
    }
  });

  test('a 5m entry expires 5 minutes after its last use; each read starts its TTL again', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([task], { system: cachedSystem() });
    const prefix = measure(params).blocks.find((b) => b.path === 'system.0')!.prefixTokens;
    const read = async (): Promise<number | null> => (await client.messages.create(params)).usage.cache_read_input_tokens;

    // The server's clock also runs with the wall clock, so each step leaves a second to spare.
    expect(await read()).toBe(0); // written
    server.advanceClock(5 * 60_000 - 1000);
    expect(await read()).toBe(prefix); // still there; read, so its TTL starts again
    server.advanceClock(5 * 60_000 - 1000);
    expect(await read()).toBe(prefix);
    server.advanceClock(5 * 60_000);
    const expired = await client.messages.create(params);
    expect(expired.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation_input_tokens: prefix });
    expect(() => server.advanceClock(-1)).toThrow(RangeError);
  });

  test('a 1h entry outlives 5 minutes and expires after an hour; its tokens are reported as ephemeral_1h', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([task], { system: cachedSystem('1h') });
    const prefix = measure(params).blocks.find((b) => b.path === 'system.0')!.prefixTokens;

    const first = await client.messages.create(params);
    expect(first.usage.cache_creation).toEqual({ ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: prefix });
    server.advanceClock(30 * 60_000);
    expect((await client.messages.create(params)).usage.cache_read_input_tokens).toBe(prefix);
    server.advanceClock(60 * 60_000);
    const expired = await client.messages.create(params);
    expect(expired.usage).toMatchObject({ cache_read_input_tokens: 0, cache_creation: { ephemeral_1h_input_tokens: prefix } });
  });

  test('a 1h breakpoint then a 5m one: the creation is split by TTL', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([{ role: 'user', content: [{ type: 'text', text: LONG, cache_control: EPHEMERAL }] }], {
      system: cachedSystem('1h'),
    });
    const measured = measure(params);
    const [atSystem, atMessage] = [measured.blocks[1]!.prefixTokens, measured.blocks[2]!.prefixTokens];
    const message = await client.messages.create(params);
    expect(message.usage).toMatchObject({
      cache_creation_input_tokens: atMessage,
      cache_creation: { ephemeral_1h_input_tokens: atSystem, ephemeral_5m_input_tokens: atMessage - atSystem },
      input_tokens: measured.tokens - atMessage,
    });
  });

  test('a prefix under the minimum is not cached, silently; min_cacheable_tokens sets the minimum, at its exact value', async () => {
    const short: MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'short and marked', cache_control: EPHEMERAL }] }];
    const params = body(short);
    const measured = measure(params);
    const prefix = measured.blocks.at(-1)!.prefixTokens;
    expect(prefix).toBeLessThan(1024);

    const server = await start(texts(1));
    const client = clientFor(server);
    for (let i = 0; i < 2; i++) {
      expect((await client.messages.create(params)).usage).toMatchObject({
        input_tokens: measured.tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
      });
    }

    const justAbove = clientFor(await start(texts(1, { min_cacheable_tokens: prefix + 1 })));
    expect((await justAbove.messages.create(params)).usage.cache_creation_input_tokens).toBe(0);
    const exact = clientFor(await start(texts(1, { min_cacheable_tokens: { [MODEL]: prefix } })));
    expect((await exact.messages.create(params)).usage.cache_creation_input_tokens).toBe(prefix);
    expect((await exact.messages.create(params)).usage.cache_read_input_tokens).toBe(prefix);
  });

  test('the cache is per model', async () => {
    const server = await start(texts(1));
    const client = clientFor(server);
    const params = body([task], { system: cachedSystem() });
    await client.messages.create(params);
    const other = await client.messages.create({ ...params, model: 'claude-opus-4-6' });
    expect(other.usage.cache_read_input_tokens).toBe(0);
    expect(other.usage.cache_creation_input_tokens).toBeGreaterThan(0);
  });
});

describe('what the API refuses', () => {
  async function refusal(params: MessageCreateParamsNonStreaming, script: ScriptFile = texts(1)): Promise<string> {
    const server = await start(script);
    const err = await caught(clientFor(server).messages.create(params));
    expect(err).toBeInstanceOf(BadRequestError);
    expect(err).toMatchObject({ status: 400, error: { type: 'error', error: { type: 'invalid_request_error' } } });
    expect(server.requests().map((r) => r.response.kind)).toEqual(['invalid_request']);
    return (err as BadRequestError).message;
  }

  test('five cache_control blocks', async () => {
    const marked = (text: string) => ({ type: 'text' as const, text, cache_control: EPHEMERAL });
    const params = body([{ role: 'user', content: [marked('a'), marked('b'), marked('c')] }], {
      tools: [{ ...BASH, cache_control: EPHEMERAL }],
      system: [marked('system')],
    });
    expect(await refusal(params)).toContain('A maximum of 4 blocks with cache_control may be provided. Found 5.');
    // Four are fine.
    const four = body([{ role: 'user', content: [marked('a'), marked('b'), marked('c')] }], { system: [marked('system')] });
    await expect(clientFor(await start(texts(1))).messages.create(four)).resolves.toBeDefined();
  });

  test('cache_control on an empty text block, in system or in a message', async () => {
    expect(
      await refusal(
        body([task], {
          system: [
            { type: 'text', text: 'rules' },
            { type: 'text', text: '', cache_control: EPHEMERAL },
          ],
        }),
      ),
    ).toContain('system.1.text: cache_control cannot be set for empty text blocks');
    expect(
      await refusal(
        body([
          {
            role: 'user',
            content: [
              { type: 'text', text: 'hi' },
              { type: 'text', text: '', cache_control: EPHEMERAL },
            ],
          },
        ]),
      ),
    ).toContain('messages.0.content.1.text: cache_control cannot be set for empty text blocks');
  });

  test('cache_control on a thinking block', async () => {
    const thinking = { type: 'thinking' as const, thinking: 'hmm', signature: 'x', cache_control: EPHEMERAL };
    const message = await refusal(
      body([task, { role: 'assistant', content: [thinking, { type: 'text', text: 'ok' }] }, { role: 'user', content: 'go on' }]),
    );
    expect(message).toContain('messages.1.content.0.thinking.cache_control: cache_control cannot be set on `thinking` blocks');
  });

  test("a ttl='1h' breakpoint after a 5m one, and an unknown ttl", async () => {
    const params = body([{ role: 'user', content: [{ type: 'text', text: 'later', cache_control: { ...EPHEMERAL, ttl: '1h' } }] }], {
      system: cachedSystem('5m'),
    });
    expect(await refusal(params)).toContain("A cache_control block with ttl='1h' must not come after a cache_control block with ttl='5m'");
    const odd = body([task], { system: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '10m' as '5m' } }] });
    expect(await refusal(odd)).toContain("system.0.cache_control.ttl: Input should be '5m' or '1h'");
  });

  test('the context window at its exact boundary: W tokens of input + max_tokens pass, W + 1 are refused', async () => {
    const params = body([task], { max_tokens: 100 });
    const n = countInputTokens(params);

    const fits = await start(texts(1, { context_window: n + 100 }));
    await expect(clientFor(fits).messages.create(params)).resolves.toBeDefined();
    expect(await refusal(params, texts(1, { context_window: n + 99 }))).toBe(
      `400 {"type":"error","error":{"type":"invalid_request_error","message":"input length and \`max_tokens\` exceed context limit: ${n} + 100 > ${n + 99}, decrease input length or \`max_tokens\` and try again"},"request_id":"req_scripted_000001"}`,
    );
    // Input alone over the window is "prompt is too long"; at exactly W it is the other message.
    expect(await refusal(params, texts(1, { context_window: n - 1 }))).toContain(`prompt is too long: ${n} tokens > ${n - 1} maximum`);
    expect(await refusal(params, texts(1, { context_window: n }))).toContain(`exceed context limit: ${n} + 100 > ${n}`);
    // A map applies to the models it names only.
    const mapped = await start(texts(1, { context_window: { 'claude-haiku-4-5': 10 } }));
    await expect(clientFor(mapped).messages.create(params)).resolves.toBeDefined();
  });

  test('the default window is 200,000 tokens for every model', async () => {
    const n = countInputTokens(body([task]));
    const server = await start(texts(1));
    await expect(clientFor(server).messages.create(body([task], { max_tokens: 200_000 - n }))).resolves.toBeDefined();
    const message = await refusal(body([task], { max_tokens: 200_001 - n }));
    expect(message).toContain(`exceed context limit: ${n} + ${200_001 - n} > 200000`);
  });
});

describe('POST /v1/messages/count_tokens', () => {
  test('counts through the SDK by the same rule, needs no max_tokens, and refuses a bad body with 400', async () => {
    const server = await start(texts(0));
    const client = clientFor(server);
    const params = { model: MODEL, tools: [BASH], system: cachedSystem(), messages: [task] };
    expect(await client.messages.countTokens(params)).toEqual({ input_tokens: countInputTokens(params) });
    expect(server.requests()[0]).toMatchObject({
      path: '/v1/messages/count_tokens',
      step: null,
      response: { status: 200, kind: 'count_tokens' },
    });

    const empty = await caught(client.messages.countTokens({ model: MODEL, messages: [] }));
    expect(empty).toBeInstanceOf(BadRequestError);
    expect((empty as BadRequestError).message).toContain('messages: at least one message is required');
    const thinking = await caught(
      client.messages.countTokens({ model: MODEL, messages: [task], thinking: { type: 'enabled', budget_tokens: 10 } }),
    );
    expect((thinking as BadRequestError).message).toContain('budget_tokens: Input should be greater than or equal to 1024');
    const breakpoints = await caught(
      client.messages.countTokens({
        model: MODEL,
        messages: [
          { role: 'user', content: ['a', 'b', 'c', 'd', 'e'].map((text) => ({ type: 'text' as const, text, cache_control: EPHEMERAL })) },
        ],
      }),
    );
    expect((breakpoints as BadRequestError).message).toContain('Found 5.');
    // Counting uses no script step and leaves the cache alone.
    expect(server.requests().map((r) => r.response.kind)).toEqual([
      'count_tokens',
      'invalid_request',
      'invalid_request',
      'invalid_request',
    ]);
  });

  test('the count equals the usage total of the same request, with a cache read in it', async () => {
    const server = await start(texts(3));
    const client = clientFor(server);
    const messages: MessageParam[] = [{ role: 'user', content: [{ type: 'text', text: `${LONG} Go.`, cache_control: EPHEMERAL }] }];
    const params = body(messages, { system: cachedSystem() });
    await client.messages.create(params);
    const message = await client.messages.create(params);
    expect(message.usage.cache_read_input_tokens).toBeGreaterThan(0);
    const { model, system, tools } = params;
    const counted = await client.messages.countTokens({ model, messages, ...(system ? { system } : {}), ...(tools ? { tools } : {}) });
    expect(counted.input_tokens).toBe(total(message.usage));
  });
});
