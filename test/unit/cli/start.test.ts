/** What `start` puts in the input: the budgets, onBudget (pause unless told), thinking and effort as the model takes them, the window, the model's entry of the table. */
import { buildInput } from '../../../src/cli/commands/start';
import { DEFAULT_EDITOR_SYSTEM_PROMPT, DEFAULT_SYSTEM_PROMPT } from '../../../src/contract/input';
import { toolList } from '../../../src/cli/parse';
import { BUILTIN_MODELS } from '../../../src/contract/models';

describe('start: the input it builds', () => {
  test('--subagent-workspace worktree goes into the input with --subagents; shared (the default) adds nothing; alone it is refused', () => {
    expect(buildInput(['x'], { subagents: 2, subagentWorkspace: 'worktree' }, {})).toMatchObject({
      subagents: 2,
      subagentWorkspace: 'worktree',
    });
    expect(buildInput(['x'], { subagents: 2, subagentWorkspace: 'shared' }, {})).not.toHaveProperty('subagentWorkspace');
    expect(buildInput(['x'], { subagents: 2 }, {})).not.toHaveProperty('subagentWorkspace');
    expect(() => buildInput(['x'], { subagentWorkspace: 'worktree' }, {})).toThrow('--subagent-workspace worktree needs --subagents');
  });

  test("pauses on a spent budget unless told to end; the model's entry goes into the input", () => {
    const input = buildInput(
      ['do', 'it'],
      { model: 'claude-haiku-4-5', maxCost: 2.5, maxTokensTotal: 10_000, maxDuration: 1_800_000, thinking: 2_048, contextWindow: 100_000 },
      {},
    );
    expect(input).toEqual({
      task: 'do it',
      model: 'claude-haiku-4-5',
      tools: ['bash', 'text_editor'],
      system: DEFAULT_EDITOR_SYSTEM_PROMPT,
      maxCostUsd: 2.5,
      maxTokensTotal: 10_000,
      maxDuration: 1_800_000,
      onBudget: 'pause',
      thinking: 2_048,
      contextWindow: 100_000,
      modelInfo: BUILTIN_MODELS['claude-haiku-4-5'],
    });
    expect(buildInput(['x'], { onBudget: 'end' }, {}).onBudget).toBe('end');
  });

  test('the model and the system prompt are always written out (the prefix is fixed at start); AGENT_JOBS_MODEL names the model', () => {
    expect(buildInput(['x'], {}, {})).toMatchObject({ model: 'claude-opus-5-5', system: DEFAULT_EDITOR_SYSTEM_PROMPT });
    // --tools bash: no editor, and the bash-only prompt.
    expect(buildInput(['x'], { tools: toolList('bash') }, {})).toMatchObject({ tools: ['bash'], system: DEFAULT_SYSTEM_PROMPT });
    expect(() => toolList('bash,editor')).toThrow(/comma-separated list of bash, text_editor/);
    expect(() => toolList('bash,bash')).toThrow(/each once/);
    expect(buildInput(['x'], {}, { AGENT_JOBS_MODEL: 'claude-opus-5' })).toMatchObject({
      model: 'claude-opus-5',
      modelInfo: BUILTIN_MODELS['claude-opus-5'],
    });
    expect(buildInput(['x'], { system: 'be brief' }, {}).system).toBe('be brief');
  });

  test('effort and the thinking display go into the input; a budget on a model that thinks adaptively is refused naming --effort', () => {
    expect(buildInput(['x'], { effort: 'xhigh', thinkingDisplay: 'summarized', webSearch: true, webFetch: true }, {})).toMatchObject({
      effort: 'xhigh',
      thinkingDisplay: 'summarized',
      webSearch: true,
      webFetch: true,
    });
    for (const model of ['claude-opus-5-5', 'claude-fable-5-1', 'claude-sonnet-5-5', 'claude-opus-5']) {
      expect(() => buildInput(['x'], { model, thinking: 2_048 }, {})).toThrow(/takes no thinking budget: use --effort/);
    }
    // Models that take a budget still do.
    expect(buildInput(['x'], { model: 'claude-opus-4-6', thinking: 2_048 }, {}).thinking).toBe(2_048);
    expect(() => buildInput(['x'], { model: 'claude-haiku-4-5', thinkingDisplay: 'summarized' }, {})).toThrow(/no adaptive thinking/);
    expect(() => buildInput(['x'], { model: 'claude-haiku-4-5', maxTokens: 100_000 }, {})).toThrow(
      /above claude-haiku-4-5's max output \(64000/,
    );
    // An override can teach the table a model's capabilities.
    const env = { AGENT_JOBS_MODELS: '{"claude-opus-5-5": {"thinkingBudget": true}}' };
    expect(buildInput(['x'], { thinking: 2_048 }, env).thinking).toBe(2_048);
  });

  test('AGENT_JOBS_MODELS is merged in; a model no table knows gets no modelInfo (the workflow falls back)', () => {
    const env = { AGENT_JOBS_MODELS: '{"my-model": {"prices": {"input": 1, "output": 2}}}' };
    expect(buildInput(['x'], { model: 'my-model', maxCost: 1 }, env).modelInfo).toMatchObject({
      contextWindow: 200_000,
      prices: { input: 1, output: 2 },
    });
    expect(buildInput(['x'], { model: 'other-model' }, env).modelInfo).toBeUndefined();
  });

  test('refused with the reason: a thinking budget not below --max-tokens, a cost budget without prices, a bad AGENT_JOBS_MODELS', () => {
    expect(() => buildInput(['x'], { model: 'claude-haiku-4-5', thinking: 4_096 }, {})).toThrow(
      /thinking: the thinking budget \(4096 tokens\) must be below maxTokens \(4096\)/,
    );
    expect(() => buildInput(['x'], { model: 'other-model', maxCost: 1 }, {})).toThrow(/the prices of other-model are unknown/);
    expect(() => buildInput(['x'], {}, { AGENT_JOBS_MODELS: '{"m": {"prices": {"input": -1, "output": 1}}}' })).toThrow(
      /AGENT_JOBS_MODELS is not a model table.*m\.prices\.input/,
    );
  });
});
