/** What `start` puts in the input: the budgets, onBudget (pause unless told), thinking, the window and the model's entry of the table. */
import { buildInput } from '../../../src/cli/commands/start';
import { BUILTIN_MODELS } from '../../../src/contract/models';

describe('start: the input it builds', () => {
  test("pauses on a spent budget unless told to end; the model's entry goes into the input", () => {
    const input = buildInput(
      ['do', 'it'],
      { maxCost: 2.5, maxTokensTotal: 10_000, maxDuration: 1_800_000, thinking: 2_048, contextWindow: 100_000 },
      {},
    );
    expect(input).toEqual({
      task: 'do it',
      maxCostUsd: 2.5,
      maxTokensTotal: 10_000,
      maxDuration: 1_800_000,
      onBudget: 'pause',
      thinking: 2_048,
      contextWindow: 100_000,
      modelInfo: BUILTIN_MODELS['claude-sonnet-5-5'],
    });
    expect(buildInput(['x'], { onBudget: 'end' }, {}).onBudget).toBe('end');
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
    expect(() => buildInput(['x'], { thinking: 4_096 }, {})).toThrow(
      /thinking: the thinking budget \(4096 tokens\) must be below maxTokens \(4096\)/,
    );
    expect(() => buildInput(['x'], { model: 'other-model', maxCost: 1 }, {})).toThrow(/the prices of other-model are unknown/);
    expect(() => buildInput(['x'], {}, { AGENT_JOBS_MODELS: '{"m": {"prices": {"input": -1, "output": 1}}}' })).toThrow(
      /AGENT_JOBS_MODELS is not a model table.*m\.prices\.input/,
    );
  });
});
