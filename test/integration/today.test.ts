/**
 * Runs on today's models against the scripted server in today's mode (`"api": "today"`:
 * per-model rules, thinking blocks whose signatures are bound to the model and the prefix,
 * server-side compaction, server tools; docs/scripted-server.md). Each case would fail
 * against the real API of today if the product edited a byte it already sent, sent a
 * budget to an adaptive-only model, or lost a compaction block.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { workspaceFolderName } from '../../src/activities/session';
import { claudeCalls } from '../../src/dev/bench/long';
import { decodedHistory } from '../../src/dev/testing/history-codec';
import { BUILTIN_MODELS, costUsd } from '../../src/contract/models';
import type { Message } from '../../src/contract';
import type { LoggedRequest, ScriptFile } from '../../src/dev/model-server';
import { withoutCacheControl } from '../../src/dev/model-server/request';
import { TestBed, toolUse, waitFor } from './harness';

/** The messages requests the server answered, oldest first. */
function answered(bed: TestBed): LoggedRequest[] {
  return bed.requests().filter((r) => r.path === '/v1/messages');
}

/** A request's prefix as the API compares it: system, tools and messages, without `cache_control` markers (prefix-checks page). */
function prefixOf(body: unknown): { system: unknown; tools: unknown; messages: unknown[] } {
  const b = body as { system?: unknown; tools?: unknown; messages: unknown[] };
  return { system: withoutCacheControl(b.system), tools: withoutCacheControl(b.tools), messages: withoutCacheControl(b.messages) };
}

/**
 * Every request extends the one before it: the same system and tools, and the earlier
 * request's messages as the first messages of the later one, byte for byte, across worker kills too.
 */
function expectAppendOnly(requests: LoggedRequest[]): void {
  for (let i = 1; i < requests.length; i++) {
    const before = prefixOf(requests[i - 1]!.body);
    const after = prefixOf(requests[i]!.body);
    expect({ i, system: after.system, tools: after.tools }).toEqual({ i, system: before.system, tools: before.tools });
    // A retried step sends the same messages; a later one sends more.
    expect(JSON.stringify(after.messages.slice(0, before.messages.length))).toBe(JSON.stringify(before.messages));
  }
}

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
}

describe("today's API (claude-opus-5-5 and its kin, strict scripted server)", () => {
  let bed: TestBed;
  afterEach(async () => {
    await bed?.close();
  });

  // C19, C20, C28: thinking kept exactly, the prefix byte-stable across a worker kill, the cache read after it.
  test('a run on the default model across a worker kill: thinking blocks kept exactly, the prefix byte-identical, zero 400s, the cache read after the kill', async () => {
    const workflowId = `it-today-${process.pid}-${Date.now()}`;
    const script: ScriptFile = {
      api: 'today',
      responses: [
        { content: [{ type: 'text', text: 'Listing first.' }, toolUse('toolu_a', 'echo one >> steps.log')], stop_reason: 'tool_use' },
        {
          content: [toolUse('toolu_b', 'echo two-start >> steps.log; sleep 30.5; echo two-end >> steps.log')],
          stop_reason: 'tool_use',
        },
        { content: [toolUse('toolu_c', 'echo three >> steps.log')], stop_reason: 'tool_use' },
        { content: [{ type: 'text', text: 'done after the crash' }], stop_reason: 'end_turn' },
      ],
    };
    bed = await TestBed.create({ workers: 1, script });
    const log = path.join(bed.workspaces, workspaceFolderName(workflowId), 'steps.log');
    const handle = await bed.start(
      {
        task: 'survive a crash on today API',
        // Over the model's minimum cacheable prefix (512 tokens), so the cache can be read.
        system: `You are a careful agent. ${'Keep every step small and check it. '.repeat(80)}`,
        approval: 'auto',
        effort: 'high',
        thinkingDisplay: 'summarized',
      } as never,
      'today-worker-lost',
      workflowId,
    );
    await waitFor('the long command to start', () => lines(log).includes('two-start'));
    await bed.startWorker();
    await bed.workers[0]!.kill();
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'done after the crash', turns: 4 });

    const requests = answered(bed);
    expect(requests.map((r) => r.response.status)).toEqual([200, 200, 200, 200]);
    const first = requests[0]!.body as Record<string, unknown>;
    expect(first).toMatchObject({
      model: 'claude-opus-5-5',
      thinking: { type: 'adaptive', display: 'summarized' },
      output_config: { effort: 'high' },
      context_management: { edits: [{ type: 'compact_20260112', trigger: { type: 'input_tokens', value: 150_000 } }] },
    });
    expect(first).not.toHaveProperty('tool_choice');
    expect(requests[0]!.headers['anthropic-beta']).toContain('compact-2026-01-12');
    expectAppendOnly(requests);

    // Answers opened with thinking blocks (signed, bound), and they went back exactly as received.
    const transcript = await bed.transcript(handle);
    const assistants = transcript.filter((m) => m.role === 'assistant');
    for (const m of assistants) expect((m.content as Array<{ type: string }>)[0]!.type).toBe('thinking');
    const last = requests.at(-1)!.body as { messages: Message[] };
    expect(prefixOf({ messages: last.messages.filter((m) => m.role === 'assistant') }).messages).toEqual(
      prefixOf({ messages: assistants.slice(0, 3) }).messages,
    );
    // The text before the first tool call came back inside a thinking block (Opus 5.5), shown at display "summarized".
    expect(JSON.stringify(assistants[0]!.content)).toContain('Listing first.');

    // The kill hit the command: Claude is told, and the request after it still reads the cache.
    expect(bed.resultsSentIn(2)[0]).toMatchObject({ tool_use_id: 'toolu_b', is_error: true });
    const calls = claudeCalls([(await decodedHistory(await handle.fetchHistory())).events ?? []]);
    expect(calls).toHaveLength(4);
    for (const c of calls.slice(1)) expect(c.usage.cacheReadInputTokens).toBeGreaterThan(0);
    expect(lines(log)).toEqual(['one', 'two-start', 'three']);
  });

  test('a run that outgrows a small window compacts on the server: the compaction block is kept and sent back, nothing is cleared on the client, its tokens are counted', async () => {
    const turns = 16;
    const window = 80_000;
    // Each output is ~20 KB (~5,000 tokens): past the 50,000-token trigger by turn 10, past the window by turn 16.
    const responses = Array.from({ length: turns }, (_, i) => ({
      content: [toolUse(`toolu_p${i}`, `head -c 20000 /dev/zero | tr '\\0' x; echo " out ${i}"`)],
      stop_reason: 'tool_use',
    }));
    const script = {
      api: 'today',
      context_window: window,
      responses: [...responses, { content: [{ type: 'text', text: 'compacted and finished' }], stop_reason: 'end_turn' }],
    };
    bed = await TestBed.create({ script: script as never });
    const handle = await bed.start(
      { task: 'a run past its window', approval: 'auto', maxTurns: turns + 2, contextWindow: window } as never,
      'today-compaction',
    );
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'completed', text: 'compacted and finished', turns: turns + 1 });
    const requests = answered(bed);
    expect(requests.filter((r) => r.response.status !== 200)).toEqual([]);
    expectAppendOnly(requests);
    const trigger = (requests[0]!.body as { context_management: { edits: Array<{ trigger: { value: number } }> } }).context_management
      .edits[0]!.trigger.value;
    expect(trigger).toBe(Math.floor(0.8 * (window - 4_096)));

    // The compaction block is in the transcript, and every request after it carries it back.
    const transcript = await bed.transcript(handle);
    const at = transcript.findIndex((m) => m.role === 'assistant' && JSON.stringify(m.content).includes('"type":"compaction"'));
    expect(at).toBeGreaterThan(0);
    const compaction = (transcript[at]!.content as Array<{ type: string; content?: string }>).find((b) => b.type === 'compaction')!;
    expect(compaction.content).toMatch(/Summary of the \d+ earlier message/);
    const after = requests.filter((r) => (r.body as { messages: unknown[] }).messages.length > at);
    expect(after.length).toBeGreaterThan(0);
    for (const r of after) expect(JSON.stringify((r.body as { messages: unknown[] }).messages[at])).toContain('"type":"compaction"');
    // Nothing was cleared on the client: every output went back whole.
    expect(JSON.stringify(requests.at(-1)!.body)).not.toContain('output cleared');

    // The compaction's own tokens (left out of usage's top-level fields) are in the run's usage and cost.
    const status = await bed.status(handle);
    expect(status).toMatchObject({ model: 'claude-opus-5-5', contextWindow: window, contextStrategy: 'compaction' });
    expect(status.usage.compactions).toBeGreaterThanOrEqual(1);
    const calls = claudeCalls([(await decodedHistory(await handle.fetchHistory())).events ?? []]);
    const compacted = calls.filter((c) => c.content.some((b) => b.type === 'compaction'));
    expect(compacted.map((c) => c.usage.compactions)).toEqual(compacted.map(() => 1));
    expect(status.costUsd).toBeCloseTo(costUsd(status.usage, BUILTIN_MODELS['claude-opus-5-5']!.prices)!, 9);
  });

  test('web search: the server tool blocks are kept exactly, pause_turn continues, each search is billed', async () => {
    const search = {
      type: 'server_tool_use',
      id: 'srvtoolu_01',
      name: 'web_search',
      input: { query: 'temporal continue-as-new' },
    };
    const results = {
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_01',
      content: [{ type: 'web_search_result', url: 'https://example.com/can', title: 'CAN', encrypted_content: 'enc', page_age: null }],
    };
    bed = await TestBed.create({
      script: {
        api: 'today',
        responses: [
          { content: [search, results], stop_reason: 'pause_turn' },
          { content: [{ type: 'text', text: 'found it' }], stop_reason: 'end_turn' },
        ],
      } as never,
    });
    const handle = await bed.start({ task: 'look it up', approval: 'auto', webSearch: true } as never);
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'found it' });
    const requests = answered(bed);
    expect(requests.map((r) => r.response.status)).toEqual([200, 200]);
    expect((requests[0]!.body as { tools: Array<{ type: string }> }).tools.map((t) => t.type)).toContain('web_search_20250305');
    expectAppendOnly(requests);
    // The paused turn went back as it came (the server checks the blocks are its own).
    const sentBack = (requests[1]!.body as { messages: Message[] }).messages.at(-1)!;
    expect(sentBack.role).toBe('assistant');
    expect(JSON.stringify(sentBack.content)).toContain('"srvtoolu_01"');
    const status = await bed.status(handle);
    expect(status.usage.webSearchRequests).toBe(1);
    expect(status.costUsd).toBeCloseTo(costUsd(status.usage, BUILTIN_MODELS['claude-opus-5-5']!.prices)!, 9);
  });

  test('an unknown model ends the run at once with the API 404, no retries', async () => {
    bed = await TestBed.create({ script: { api: 'today', responses: [{ content: [{ type: 'text', text: 'never' }] }] } as never });
    const handle = await bed.start({ task: 'x', approval: 'auto', model: 'claude-opus-9' } as never);
    const result = await handle.result();
    expect(result).toMatchObject({ status: 'failed' });
    expect(result.error).toMatch(/404.*model: claude-opus-9|not_found_error/);
    expect(answered(bed)).toHaveLength(1);
  });
  test('the text editor on the default model: create, view, str_replace applied, the tool list fixed in every request, zero 400s', async () => {
    const workflowId = `it-today-editor-${process.pid}-${Date.now()}`;
    const edit = (id: string, input: Record<string, unknown>) => ({
      type: 'tool_use' as const,
      id,
      name: 'str_replace_based_edit_tool',
      input,
    });
    bed = await TestBed.create({
      script: {
        api: 'today',
        responses: [
          {
            content: [edit('toolu_create', { command: 'create', path: 'notes.txt', file_text: 'alpha\nbeta\n' })],
            stop_reason: 'tool_use',
          },
          { content: [edit('toolu_view', { command: 'view', path: 'notes.txt' })], stop_reason: 'tool_use' },
          {
            content: [edit('toolu_replace', { command: 'str_replace', path: 'notes.txt', old_str: 'beta', new_str: 'gamma' })],
            stop_reason: 'tool_use',
          },
          { content: [{ type: 'text', text: 'edited' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const handle = await bed.start({ task: 'edit a file on today API', approval: 'auto' }, undefined, workflowId);
    expect(await handle.result()).toMatchObject({ status: 'completed', text: 'edited', turns: 4 });
    const ws = path.join(bed.workspaces, workspaceFolderName(workflowId));
    expect(readFileSync(path.join(ws, 'notes.txt'), 'utf8')).toBe('alpha\ngamma\n');
    const requests = answered(bed);
    expect(requests.map((r) => r.response.status)).toEqual([200, 200, 200, 200]);
    const tools = requests.map((r) => JSON.stringify(prefixOf(r.body).tools));
    expect(new Set(tools).size).toBe(1);
    expect(JSON.parse(tools[0]!)).toEqual([
      { type: 'bash_20250124', name: 'bash' },
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 20000 },
    ]);
    const view = (requests[2]!.body as { messages: Message[] }).messages.at(-1)!;
    expect(JSON.stringify(view.content)).toContain('1: alpha');
  });
});
