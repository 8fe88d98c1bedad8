/**
 * Long runs on the real dev server, real workers and the scripted model server (which
 * counts a token per 4 bytes, emulates the prompt cache, and refuses a request over the
 * window or with altered thinking blocks): history linear in the turns, the whole
 * context until the window nears, honest clearing near it, cache reads, thinking blocks
 * sent back exactly as received.
 */
import type { ScriptEntry } from '../../src/dev/model-server';
import type { Message, ToolResultBlock } from '../../src/contract';
import { figuresOf } from '../../src/dev/bench/long';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { pairingProblem } from '../../src/workflows/transcript';
import { TestBed, toolUse } from './harness';

/** A model with budget thinking and client-side clearing (src/contract/models.ts): these runs speak the API of the 4.x line. */
const CLEARING_MODEL = 'claude-sonnet-4-5';

/** Script entries: `turns` commands each printing `bytes` bytes, then an answer. */
function printing(turns: number, bytes: number, text = 'long run done'): ScriptEntry[] {
  const responses: ScriptEntry[] = [];
  for (let i = 0; i < turns; i++)
    responses.push({
      content: [toolUse(`toolu_${i}`, `head -c ${bytes} /dev/zero | tr '\\0' x; echo " out ${i}"`)],
      stop_reason: 'tool_use',
    });
  responses.push({ content: [{ type: 'text', text }], stop_reason: 'end_turn' });
  return responses;
}

/** The tool_result contents of a request's messages, in order. */
function outputs(messages: Message[]): string[] {
  return messages
    .flatMap((m) => (typeof m.content === 'string' ? [] : (m.content.filter((b) => b.type === 'tool_result') as ToolResultBlock[])))
    .map((b) => b.content);
}

describe('long runs', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('30 turns of 20 KB outputs: history per turn is flat and about twice what the turn adds; Claude sees every output in full', async () => {
    const turns = 30;
    bed = await TestBed.create({ script: { responses: printing(turns, 20_000) } });
    const handle = await bed.start({ task: 'a long run', approval: 'auto', maxTurns: turns + 2 });
    expect(await handle.result()).toMatchObject({ status: 'completed', turns: turns + 1 });

    const history = (await decodedHistory(await handle.fetchHistory())).events ?? [];
    const f = figuresOf([history], { turns, outputBytes: 20_000 });
    expect(f.historyBytesPerTurn.all.median).toBeLessThan(50_000);
    expect(f.historyBytesPerTurn.late / f.historyBytesPerTurn.early).toBeLessThan(1.5);
    expect(f.largestPayload.bytes).toBeLessThan(100_000);
    // The last request holds every output whole: nothing was cleared below the window.
    const last = bed.sentMessages().at(-1)!;
    const sent = outputs(last);
    expect(sent).toHaveLength(turns);
    sent.forEach((o, i) => expect(o).toMatch(new RegExp(`^x{20000} out ${i}$`)));
    expect(f.clearedAtTurns).toEqual([]);
  });

  test('near a small window the oldest outputs are cleared with a note naming each command; the task and latest turns stay; the cache is read', async () => {
    const turns = 24;
    const window = 20_000;
    bed = await TestBed.create({ script: { context_window: window, responses: printing(turns, 3_000) } });
    const handle = await bed.start(
      // Client-side clearing is for models whose thinking is not bound to its prefix (a 4.x model).
      {
        task: 'a run that outgrows its window',
        model: CLEARING_MODEL,
        approval: 'auto',
        maxTurns: turns + 2,
        contextWindow: window,
      } as never,
      'long-run-compaction',
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', turns: turns + 1 });
    const sent = bed.sentMessages();
    // Every request was accepted by a server that refuses input + max_tokens over the window.
    expect(bed.requests().filter((r) => r.path === '/v1/messages' && r.response.status !== 200)).toEqual([]);
    const f = figuresOf([(await decodedHistory(await handle.fetchHistory())).events ?? []], { turns, outputBytes: 3_000 });
    expect(f.clearedAtTurns.length).toBeGreaterThanOrEqual(1);
    expect(f.contextTokens.max).toBeLessThanOrEqual(window - 4_096);
    const final = sent.at(-1)!;
    expect(final[0]).toEqual({ role: 'user', content: 'a run that outgrows its window' });
    expect(pairingProblem(final)).toBeNull();
    const results = outputs(final);
    const cleared = results.filter((o) => o.startsWith('[output cleared'));
    expect(cleared.length).toBeGreaterThan(0);
    expect(cleared[0]).toMatch(
      /^\[output cleared to keep the conversation within the context window: `head -c 3000 .*` gave 30\d\d characters\]$/,
    );
    // The newest outputs are whole.
    expect(results.at(-1)).toMatch(/^x{3000} out 23$/);
    expect(results.at(-2)).toMatch(/^x{3000} out 22$/);
    // Claude was told, in the request that cleared, and the note stays in the conversation.
    const notice = JSON.stringify(final).match(/\[agent-jobs: this conversation neared the model's context window \(20000 tokens\)/g) ?? [];
    expect(notice.length).toBe(f.clearedAtTurns.length);
    // Most input tokens after turn 2 are read from the prompt cache.
    expect(f.cacheReadShare).toBeGreaterThanOrEqual(0.7);
  });

  // C19: thinking blocks are never edited on their way back.
  test('thinking and redacted_thinking blocks go back exactly as received, in order, across tool use', async () => {
    const thinking = (text: string): never => ({ type: 'thinking', thinking: text, signature: '' }) as never;
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [thinking('I should look at the files.'), toolUse('toolu_t1', 'ls')], stop_reason: 'tool_use' },
          {
            content: [thinking('Now count them.'), { type: 'redacted_thinking', data: 'opaque' }, toolUse('toolu_t2', 'ls | wc -l')],
            stop_reason: 'tool_use',
          },
          { content: [thinking('Done.'), { type: 'text', text: 'thought it through' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start(
      { task: 'think, then act', model: CLEARING_MODEL, approval: 'auto', maxTokens: 8_000, thinking: 2_048 } as never,
      'thinking-round-trip',
    );
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'thought it through' });
    const requests = bed.requests().filter((r) => r.path === '/v1/messages');
    expect(requests.map((r) => r.response.status)).toEqual([200, 200, 200]);
    expect((requests[0]!.body as { thinking?: unknown }).thinking).toEqual({ type: 'enabled', budget_tokens: 2_048 });
    // What the server answered at step 1 is what it got back at step 2, block for block.
    const answered = (await bed.transcript(handle)).filter((m) => m.role === 'assistant');
    const third = bed.sentMessages()[2]!;
    expect(third.filter((m) => m.role === 'assistant')).toEqual(answered.slice(0, 2));
    const blocks = answered[1]!.content as Array<{ type: string; signature?: string; data?: string }>;
    expect(blocks.map((b) => b.type)).toEqual(['thinking', 'redacted_thinking', 'tool_use']);
    expect(blocks[0]!.signature).toMatch(/.{16,}/);
  });

  // C19: only a whole answer enters the transcript.
  test('a thinking turn cut off at max_tokens is never kept in the transcript', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [toolUse('toolu_c1', 'true')], stop_reason: 'tool_use' },
          { content: [{ type: 'thinking', thinking: 'half a thou', signature: '' }], stop_reason: 'max_tokens' },
        ],
      },
    });
    const handle = await bed.start({
      task: 'think too long',
      model: CLEARING_MODEL,
      approval: 'auto',
      maxTokens: 4_000,
      thinking: 1_024,
    } as never);
    expect(await handle.result()).toMatchObject({ status: 'max_tokens' });
    const transcript = await bed.transcript(handle);
    expect(JSON.stringify(transcript)).not.toContain('half a thou');
    expect(transcript.at(-1)!.role).toBe('user');
  });

  test("an answer asking for 40 commands of 30 KB each: the turn's results are cut with a note, and no payload nears 2 MB", async () => {
    const uses = Array.from({ length: 40 }, (_, i) => toolUse(`toolu_p${i}`, `head -c 30000 /dev/zero | tr '\\0' z`));
    bed = await TestBed.create({
      script: {
        responses: [
          { content: uses, stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'many done' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'many at once', approval: 'auto' });
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'many done' });
    const results = bed.resultsSentIn(1);
    expect(results).toHaveLength(40);
    const total = results.reduce((n, r) => n + r.content.length, 0);
    expect(total).toBeLessThan(400_000 + 40 * 200);
    expect(results.at(-1)!.content).toMatch(/^\[output cut: the results of this turn's commands passed 400000 bytes together/);
    const f = figuresOf([(await decodedHistory(await handle.fetchHistory())).events ?? []], { turns: 1, outputBytes: 30_000 });
    expect(f.largestPayload.bytes).toBeLessThan(1_000_000);
  });

  // C20: the cache TTL is chosen by whether the run may wait for a person.
  test('a run that may wait for a person writes its cache breakpoints with the 1-hour TTL; an auto run with the 5-minute default', async () => {
    const script = {
      responses: [
        { content: [toolUse('toolu_l1', 'ls')], stop_reason: 'tool_use' },
        { content: [{ type: 'text', text: 'listed' }], stop_reason: 'end_turn' },
      ],
    } as const;
    bed = await TestBed.create({ script: script as never });
    const policy = await bed.start({ task: 'list, under the policy', approval: 'policy' });
    expect(await policy.result()).toMatchObject({ status: 'completed', text: 'listed' });
    const auto = await bed.start({ task: 'list, unasked', approval: 'auto' });
    expect(await auto.result()).toMatchObject({ status: 'completed', text: 'listed' });
    const bodies = bed
      .requests()
      .filter((r) => r.path === '/v1/messages')
      .map((r) => r.body as { system: Array<{ cache_control?: unknown }>; messages: Message[] });
    const ttls = bodies.map((b) => JSON.stringify(b.system.at(-1)!.cache_control));
    expect(ttls).toEqual([...Array(2).fill('{"type":"ephemeral","ttl":"1h"}'), ...Array(2).fill('{"type":"ephemeral"}')]);
    // Every breakpoint of a request has the same TTL, and there are at most 4.
    for (const body of bodies) {
      const marks = JSON.stringify(body).match(/"cache_control":\{[^}]*\}/g) ?? [];
      expect(marks.length).toBeLessThanOrEqual(4);
      expect(new Set(marks).size).toBe(1);
    }
  });
});
