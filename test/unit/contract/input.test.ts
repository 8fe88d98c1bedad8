import { DEFAULT_EDITOR_SYSTEM_PROMPT, DEFAULT_SYSTEM_PROMPT, durationToMs, resolveInput } from '../../../src/contract/input';
import { BUILTIN_MODELS } from '../../../src/contract/models';

describe('agentRun input', () => {
  test('defaults: policy approvals, a 24 hour approval wait, 50 turns, 2 minute commands', () => {
    const r = resolveInput({ task: 'do it' });
    expect(r).toEqual({
      ok: true,
      input: {
        task: 'do it',
        model: 'claude-opus-5-5',
        maxTurns: 50,
        maxTokens: 4096,
        system: DEFAULT_EDITOR_SYSTEM_PROMPT,
        tools: ['bash', 'text_editor'],
        approval: 'policy',
        workdir: undefined,
        network: false,
        commandTimeoutMs: 120_000,
        approvalTimeout: '24 hours',
        approvalTimeoutAction: 'deny',
        chat: false,
        chatIdleTimeout: '24 hours',
        checkpoints: { enabled: true, exclude: [], maxBytes: 1024 * 1024 * 1024 },
        transcriptBudgetChars: 200_000,
        // Runs that do not say (older runs, other clients) end on a spent budget, as before budgets paused.
        onBudget: 'end',
      },
    });
  });

  test('tools: both by default; bash alone for a run from before the editor (legacyTools), with the old system prompt; each name once', () => {
    const legacy = resolveInput({ task: 'x' }, { legacyTools: true });
    expect(legacy.ok && [legacy.input.tools, legacy.input.system]).toEqual([['bash'], DEFAULT_SYSTEM_PROMPT]);
    const chosen = resolveInput({ task: 'x', tools: ['text_editor'] }, { legacyTools: true });
    expect(chosen.ok && [chosen.input.tools, chosen.input.system]).toEqual([['text_editor'], DEFAULT_EDITOR_SYSTEM_PROMPT]);
    expect(resolveInput({ task: 'x', tools: [] })).toMatchObject({ ok: false, message: expect.stringMatching(/at least one/) });
    expect(resolveInput({ task: 'x', tools: ['bash', 'bash'] })).toMatchObject({ ok: false, message: expect.stringMatching(/twice/) });
    expect(resolveInput({ task: 'x', tools: ['computer'] })).toMatchObject({ ok: false });
  });

  test('budgets, thinking, the context window and modelInfo pass through resolved', () => {
    const modelInfo = BUILTIN_MODELS['claude-haiku-4-5']!;
    const r = resolveInput({
      task: 'x',
      model: 'claude-haiku-4-5',
      maxCostUsd: 2.5,
      maxTokensTotal: 1_000_000,
      maxDuration: '2h',
      onBudget: 'pause',
      thinking: 2_048,
      contextWindow: 150_000,
      modelInfo,
    });
    expect(r).toMatchObject({
      ok: true,
      input: {
        maxCostUsd: 2.5,
        maxTokensTotal: 1_000_000,
        maxDuration: '2h',
        onBudget: 'pause',
        thinking: 2_048,
        contextWindow: 150_000,
        modelInfo,
      },
    });
  });

  test.each([
    [{ task: 'x', thinking: 1_000 }, 'thinking: the thinking budget must be at least 1024 tokens'],
    [{ task: 'x', thinking: 4_096 }, 'thinking: the thinking budget (4096 tokens) must be below maxTokens (4096)'],
    [{ task: 'x', thinking: 8_000, maxTokens: 8_000 }, 'must be below maxTokens (8000)'],
    [{ task: 'x', thinking: 2_048.5 }, 'thinking: Invalid input: expected int'],
    [{ task: 'x', maxCostUsd: 0 }, 'maxCostUsd: Too small'],
    [{ task: 'x', maxCostUsd: -1 }, 'maxCostUsd: Too small'],
    [{ task: 'x', maxCostUsd: 1e9 }, 'maxCostUsd: Too big'],
    [{ task: 'x', model: 'claude-nobody-knows', maxCostUsd: 1 }, 'maxCostUsd: the prices of claude-nobody-knows are unknown'],
    [{ task: 'x', maxTokensTotal: 0 }, 'maxTokensTotal: Too small'],
    [{ task: 'x', maxDuration: 'a while' }, 'maxDuration: must be a duration'],
    [{ task: 'x', onBudget: 'explode' }, 'onBudget: Invalid option'],
    [{ task: 'x', contextWindow: 10 }, 'contextWindow: Too small'],
    [{ task: 'x', modelInfo: { contextWindow: 200_000, prices: { input: -1 }, cacheTtl1h: true } }, 'modelInfo.prices'],
  ])('%j is rejected with a message naming the field', (raw, message) => {
    const r = resolveInput(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(message);
  });

  test('a model the table does not know takes a cost budget when the input gives its prices', () => {
    const modelInfo = {
      contextWindow: 100_000,
      prices: { input: 1, output: 2, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 },
      cacheTtl1h: false,
    };
    expect(resolveInput({ task: 'x', model: 'claude-nobody-knows', maxCostUsd: 1, modelInfo }).ok).toBe(true);
  });

  test.each([
    [5000, 5000],
    ['90s', 90_000],
    ['1.5h', 5_400_000],
    ['24 hours', 86_400_000],
    ['2 weeks', 1_209_600_000],
    ['250', 250],
    ['10 ms', 10],
  ])('durationToMs(%j) is %d', (d, ms) => {
    expect(durationToMs(d)).toBe(ms);
  });

  test.each([
    [{}, 'task: Invalid input: expected string, received undefined'],
    [{ task: '   ' }, 'task: task must not be empty'],
    [{ task: 'x', maxTurns: 0 }, 'maxTurns: Too small'],
    [{ task: 'x', approval: 'sometimes' }, 'approval: Invalid option'],
    [{ task: 'x', approvalTimeout: 'soon' }, 'approvalTimeout: must be a duration'],
    [{ task: 'x', approvalTimeoutAction: 'ignore' }, 'approvalTimeoutAction: Invalid option'],
    [{ task: 'x', chat: 'yes' }, 'chat: Invalid input'],
    [{ task: 'x', chatIdleTimeout: 'later' }, 'chatIdleTimeout: must be a duration'],
    [{ task: 'x', maxTurn: 3 }, 'Unrecognized key: "maxTurn"'],
  ])('%j is rejected with a message naming the field', (raw, message) => {
    const r = resolveInput(raw);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toContain(message);
  });

  test.each(['24 hours', '30s', '1.5h', '90 minutes', 5000])('approvalTimeout %j is a Temporal duration', (approvalTimeout) => {
    expect(resolveInput({ task: 'x', approvalTimeout }).ok).toBe(true);
  });
});
