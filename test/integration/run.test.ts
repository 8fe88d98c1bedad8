/**
 * A multi-turn run end to end: real dev server, a real worker process, the
 * scripted model server. Checks the exact tool_result blocks Claude got
 * (C01, C03) and that the bash session keeps its state across commands.
 */
import { TestBed, toolUse } from './harness';
import type { Message } from '../../src/contract';

describe('agent run, end to end', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('a multi-turn run completes and Claude gets exactly one tool_result per tool_use, in order', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          // C01 two tool_use blocks in one message; C03 an empty text block beside them.
          { content: [{ type: 'text', text: '  ' }, toolUse('toolu_a', 'echo a'), toolUse('toolu_b', 'echo b')], stop_reason: 'tool_use' },
          // C06 no trailing newline; C03 no output at all.
          { content: [toolUse('toolu_c', 'printf abc'), toolUse('toolu_d', 'true')], stop_reason: 'tool_use' },
          // Session state: cd, export, a plain variable, a file.
          {
            content: [toolUse('toolu_e', 'mkdir -p sub && cd sub && export FOO=bar && x=1 && echo hello > f.txt')],
            stop_reason: 'tool_use',
          },
          {
            content: [toolUse('toolu_f', 'echo "$FOO $x $(basename "$PWD") $(cat f.txt)"; exit_code_test() { return 3; }; exit_code_test')],
            stop_reason: 'tool_use',
          },
          { content: [{ type: 'text', text: 'All done.' }], stop_reason: 'end_turn', usage: { input_tokens: 100, output_tokens: 5 } },
        ],
      },
    });
    const handle = await bed.start({ task: 'run some commands', approval: 'auto', model: 'claude-sonnet-4-6' }, 'multi-turn');
    const result = await handle.result();

    expect(result).toMatchObject({ status: 'completed', text: 'All done.', turns: 5 });
    expect(result.usage.inputTokens).toBeGreaterThan(0);

    const sent = bed.sentMessages();
    expect(sent).toHaveLength(5);
    // Request 2 carries ONE user message holding both results, in order, ids matching.
    const afterFirst = sent[1]!;
    expect(afterFirst).toHaveLength(3);
    expect(afterFirst[1]).toEqual({ role: 'assistant', content: [toolUse('toolu_a', 'echo a'), toolUse('toolu_b', 'echo b')] });
    expect(afterFirst[2]).toEqual({
      role: 'user',
      content: [
        { type: 'tool_result', tool_use_id: 'toolu_a', content: 'a' },
        { type: 'tool_result', tool_use_id: 'toolu_b', content: 'b' },
      ],
    });
    const last = (msgs: Message[]): Message => msgs[msgs.length - 1]!;
    expect(last(sent[2]!).content).toEqual([
      { type: 'tool_result', tool_use_id: 'toolu_c', content: 'abc' },
      { type: 'tool_result', tool_use_id: 'toolu_d', content: '(no output)' },
    ]);
    expect(last(sent[4]!).content).toEqual([{ type: 'tool_result', tool_use_id: 'toolu_f', content: 'bar 1 sub hello\n[exit code: 3]' }]);

    // Every request went out with the bash tool, streamed, SDK retries off.
    for (const r of bed.requests()) {
      // The default tools: bash, then the text editor (docs/text-editor.md), the same list in every request.
      expect(r.body).toMatchObject({
        tools: [
          { type: 'bash_20250124', name: 'bash' },
          { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool', max_characters: 20_000 },
        ],
        stream: true,
        model: 'claude-sonnet-4-6',
      });
      expect(r.headers['x-stainless-retry-count']).toBe('0');
    }
    // The final transcript (query) ends with Claude's answer.
    const transcript = await bed.transcript(handle);
    expect(transcript[transcript.length - 1]).toEqual({ role: 'assistant', content: [{ type: 'text', text: 'All done.' }] });
    // Each command ran once.
    expect(bed.audit().map((a) => a.command)).toEqual([
      'echo a',
      'echo b',
      'printf abc',
      'true',
      expect.stringContaining('mkdir'),
      expect.stringContaining('echo "$FOO'),
    ]);
  });

  test('max_tokens: a truncated tool_use never runs; one retry with doubled max_tokens, then the run ends', async () => {
    bed = await TestBed.create({
      script: {
        responses: [{ content: [{ type: 'text', text: 'partial' }, toolUse('toolu_cut', 'echo never')], stop_reason: 'max_tokens' }],
      },
    });
    const result = await (await bed.start({ task: 'truncate me', approval: 'auto', maxTokens: 1000 }, 'max-tokens')).result();
    expect(result).toMatchObject({
      status: 'max_tokens',
      turns: 2,
      error: 'the answer hit max_tokens even at 2000; nothing truncated was executed',
    });
    expect(bed.audit()).toHaveLength(0); // C04: the truncated tool_use never ran
    expect(bed.requests().map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([1000, 2000]);
  });

  test('max_tokens at the turn budget: the retry is a model call too, so maxTurns 1 makes exactly one call', async () => {
    bed = await TestBed.create({
      script: { responses: [{ content: [toolUse('toolu_cut', 'echo never')], stop_reason: 'max_tokens' }] },
    });
    const result = await (
      await bed.start({ task: 'truncate me once', approval: 'auto', maxTokens: 1000, maxTurns: 1 }, 'max-tokens-turn-budget')
    ).result();
    expect(result).toMatchObject({
      status: 'max_tokens',
      turns: 1,
      error: 'the answer hit max_tokens at 1000, and the turn budget of 1 model calls leaves no retry; nothing truncated was executed',
    });
    expect(bed.requests()).toHaveLength(1);
    expect(bed.audit()).toHaveLength(0);
  });

  test('max_tokens at or above the retry cap: no retry, and the result names the limit actually sent', async () => {
    bed = await TestBed.create({
      script: { responses: [{ content: [toolUse('toolu_cut', 'echo never')], stop_reason: 'max_tokens' }] },
    });
    const result = await (await bed.start({ task: 'truncate me big', approval: 'auto', maxTokens: 64_000 }, 'max-tokens-cap')).result();
    expect(result).toMatchObject({
      status: 'max_tokens',
      turns: 1,
      error: 'the answer hit max_tokens even at 64000; nothing truncated was executed',
    });
    expect(bed.requests().map((r) => (r.body as { max_tokens: number }).max_tokens)).toEqual([64_000]);
  });

  test.each([
    ['refusal', { status: 'refused', turns: 1 }],
    ['model_context_window_exceeded', { status: 'failed', error: 'unexpected stop_reason "model_context_window_exceeded"' }],
  ])('stop_reason %s ends the run with %j', async (stopReason, expected) => {
    bed = await TestBed.create({ script: { responses: [{ content: [{ type: 'text', text: 'no' }], stop_reason: stopReason }] } });
    const handle = await bed.start({ task: `stop with ${stopReason}`, approval: 'auto' }, `stop-${stopReason}`);
    expect(await handle.result()).toMatchObject(expected);
    // A refusal appends nothing to the transcript.
    if (stopReason === 'refusal') expect(await bed.transcript(handle)).toEqual([{ role: 'user', content: `stop with ${stopReason}` }]);
  });

  test('pause_turn sends the conversation back as it is and the run continues', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          { content: [{ type: 'text', text: 'thinking about it' }], stop_reason: 'pause_turn' },
          { content: [{ type: 'text', text: 'finished' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const result = await (await bed.start({ task: 'pause please', approval: 'auto' }, 'pause-turn')).result();
    expect(result).toMatchObject({ status: 'completed', text: 'finished', turns: 2 });
    expect(bed.sentMessages()[1]).toEqual([
      { role: 'user', content: 'pause please' },
      { role: 'assistant', content: [{ type: 'text', text: 'thinking about it' }] },
    ]);
  });

  test('bad tool input gets an is_error result, {"restart": true} restarts the session (C04)', async () => {
    bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [
              { type: 'tool_use', id: 'toolu_empty', name: 'bash', input: {} },
              toolUse('toolu_set', 'export KEEP=1; cd /tmp'),
              { type: 'tool_use', id: 'toolu_restart', name: 'bash', input: { restart: true } },
              toolUse('toolu_check', 'echo "KEEP=${KEEP:-unset}"'),
              { type: 'tool_use', id: 'toolu_other', name: 'str_replace_editor', input: { path: 'x' } },
            ],
            stop_reason: 'tool_use',
          },
          { content: [{ type: 'text', text: 'ok' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const result = await (await bed.start({ task: 'odd inputs', approval: 'auto' }, 'bad-input-and-restart')).result();
    expect(result.status).toBe('completed');
    const results = bed.sentMessages()[1]![2]!.content as Array<{ tool_use_id: string; content: string; is_error?: boolean }>;
    expect(results.map((r) => r.tool_use_id)).toEqual(['toolu_empty', 'toolu_set', 'toolu_restart', 'toolu_check', 'toolu_other']);
    expect(results[0]).toMatchObject({ is_error: true, content: expect.stringContaining('needs "command"') });
    expect(results[2]!.is_error).toBeUndefined();
    expect(results[2]!.content).toMatch(/restarted in \/tmp/);
    expect(results[3]!.content).toBe('KEEP=unset');
    expect(results[4]).toMatchObject({ is_error: true, content: expect.stringContaining('Unknown tool') });
  });

  test("secrets: the worker's key is not in bash's environment, not readable through /proc/$PPID/environ, and redacted from outputs", async () => {
    const key = 'sk-ant-test-secret-key-0123456789'; // the harness's worker key
    bed = await TestBed.create({
      script: {
        responses: [
          {
            content: [toolUse('toolu_env', 'env | grep -c "^ANTHROPIC_\\|^TEMPORAL_"; echo "key=${ANTHROPIC_API_KEY:-unset}"')],
            stop_reason: 'tool_use',
          },
          // The worker is bash's parent: its exec-time environment block, reversed so redaction cannot see it.
          {
            content: [toolUse('toolu_proc', 'tr "\\0" "\\n" < /proc/$PPID/environ | grep "^ANTHROPIC_API_KEY=" | rev')],
            stop_reason: 'tool_use',
          },
          { content: [toolUse('toolu_echo', `echo ${key}`)], stop_reason: 'tool_use' },
          { content: [{ type: 'text', text: 'nothing found' }], stop_reason: 'end_turn' },
        ],
      },
    });
    const result = await (await bed.start({ task: 'look for the key', approval: 'auto' }, 'secrets')).result();
    expect(result).toMatchObject({ status: 'completed', turns: 4 });
    const sent = bed.sentMessages();
    const resultOf = (i: number): unknown => bed.resultsSentIn(i)[0]!.content;
    expect(resultOf(1)).toBe('0\nkey=unset');
    // As root, bash runs as the session user (in a sandbox, $PPID is bwrap's pid 1): the worker's block is
    // unreadable. As the worker's own user it can read it, and sees the value overwritten.
    if (process.getuid?.() === 0) expect(resultOf(2)).toMatch(/environ: (Permission denied|No such file or directory)/);
    else expect(resultOf(2)).toBe(`${'*'.repeat(key.length)}=YEK_IPA_CIPORHTNA`);
    expect(resultOf(3)).toBe('[REDACTED:ANTHROPIC_API_KEY]');
    // What the commands printed (the model's own command text aside) never holds the key, plain or reversed.
    const outputs = JSON.stringify(sent[3]!.filter((m) => m.role === 'user').slice(1));
    expect(outputs).toContain('REDACTED');
    expect(outputs).not.toContain(key);
    expect(outputs).not.toContain([...key].reverse().join(''));
  });
});
