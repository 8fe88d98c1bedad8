/** The model table: prices and windows, the override merged over it (and refused when malformed), and the fallback. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DEFAULT_MODEL } from '../../../src/config';
import { NO_USAGE } from '../../../src/contract';
import {
  BUILTIN_MODELS,
  DEFAULT_COMPACTION_TRIGGER,
  FALLBACK_CAPABILITIES,
  FALLBACK_MODEL_INFO,
  MIN_COMPACTION_TRIGGER,
  capabilitiesOf,
  compactionTrigger,
  contextStrategyOf,
  contextWindowOf,
  costUsd,
  lookupModel,
  mergeModels,
  modelInfoOf,
  parseModelOverrides,
} from '../../../src/contract/models';
import { modelTable } from '../../../src/settings';

describe('the built-in table', () => {
  test('has the default model and the current public models, at the published prices', () => {
    expect(BUILTIN_MODELS[DEFAULT_MODEL]).toBeDefined();
    const p = (id: string) => BUILTIN_MODELS[id]!.prices!;
    expect(p('claude-opus-4-5')).toEqual({ input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 });
    expect(p('claude-opus-4-1')).toEqual({ input: 15, output: 75, cacheWrite5m: 18.75, cacheWrite1h: 30, cacheRead: 1.5 });
    expect(p('claude-sonnet-4-5')).toEqual({
      input: 3,
      output: 15,
      cacheWrite5m: 3.75,
      cacheWrite1h: 6,
      cacheRead: expect.closeTo(0.3, 12),
    });
    expect(p('claude-sonnet-4-0')).toEqual(p('claude-sonnet-4-5'));
    expect(p('claude-haiku-4-5')).toEqual({ input: 1, output: 5, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0.1 });
    for (const [id, info] of Object.entries(BUILTIN_MODELS)) {
      // The 1M models are those with compaction (the 5.x line and Opus/Sonnet 4.6 on).
      expect([id, info.contextWindow]).toEqual([id, info.compaction ? 1_000_000 : 200_000]);
      expect(info.cacheTtl1h).toBe(true);
      expect(info.source).toMatch(/^https:\/\/platform\.claude\.com\/docs\/en\/models\/.+ \(read 2026-12-02\)$/);
    }
    expect(BUILTIN_MODELS['claude-sonnet-4-5']!.longContextWindow).toBe(1_000_000);
    expect(BUILTIN_MODELS['claude-haiku-4-5']!.longContextWindow).toBeUndefined();
  });

  test("today's models, as their overview pages publish them (read 2026-12-02)", () => {
    const row = (id: string) => BUILTIN_MODELS[id]!;
    expect(DEFAULT_MODEL).toBe('claude-opus-5-5');
    expect(row('claude-opus-5-5')).toMatchObject({
      contextWindow: 1_000_000,
      maxOutputTokens: 128_000,
      prices: { input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2 },
      thinking: 'adaptive-only',
      thinkingBudget: false,
      preservedThinking: true,
      compaction: true,
      defaultEffort: 'medium',
    });
    expect(row('claude-opus-5')).toMatchObject({
      contextWindow: 1_000_000,
      prices: { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 },
      thinking: 'adaptive',
      preservedThinking: false,
      defaultEffort: 'high',
    });
    expect(row('claude-sonnet-5-5')).toMatchObject({ prices: { input: 2, output: 10, cacheRead: 0.2 }, preservedThinking: true });
    expect(row('claude-sonnet-5')).toMatchObject({ prices: { input: 2, output: 10 }, thinkingBudget: false, preservedThinking: false });
    expect(row('claude-fable-5-1')).toMatchObject({ prices: { input: 10, output: 50, cacheRead: 0.25 }, thinking: 'adaptive-only' });
    expect(row('claude-haiku-4-5')).toMatchObject({
      contextWindow: 200_000,
      maxOutputTokens: 64_000,
      thinking: 'budget',
      compaction: false,
    });
  });

  test('capabilities: the input first, then the table, then the fallback; the strategy follows from them', () => {
    // An input recorded before the capability fields existed resolves through the table.
    const old = { model: 'claude-opus-5-5', modelInfo: { contextWindow: 200_000, prices: null, cacheTtl1h: true } };
    expect(capabilitiesOf(old)).toMatchObject({ thinking: 'adaptive-only', preservedThinking: true, compaction: true });
    expect(capabilitiesOf({ model: 'claude-opus-5-5', modelInfo: { ...old.modelInfo, compaction: false } }).compaction).toBe(false);
    expect(capabilitiesOf({ model: 'gpt-nothing' })).toEqual(FALLBACK_CAPABILITIES);
    expect(contextStrategyOf(capabilitiesOf({ model: 'claude-opus-5-5' }))).toBe('compaction');
    expect(contextStrategyOf(capabilitiesOf({ model: 'claude-haiku-4-5' }))).toBe('clearing');
    // Bound thinking without compaction: nothing may be edited.
    expect(contextStrategyOf({ ...FALLBACK_CAPABILITIES, preservedThinking: true })).toBe('none');
  });

  test('the compaction trigger: 80% of the window less max_tokens, within the API minimum and its default', () => {
    expect(compactionTrigger(1_000_000, 4_096)).toBe(DEFAULT_COMPACTION_TRIGGER);
    expect(compactionTrigger(100_000, 4_096)).toBe(76_723);
    expect(compactionTrigger(40_000, 4_096)).toBe(MIN_COMPACTION_TRIGGER);
  });

  test('a dated id is looked up without its date', () => {
    expect(lookupModel(BUILTIN_MODELS, 'claude-sonnet-4-5-20250929')).toBe(BUILTIN_MODELS['claude-sonnet-4-5']);
    expect(lookupModel(BUILTIN_MODELS, 'claude-sonnet-4-20250514')).toBe(BUILTIN_MODELS['claude-sonnet-4']);
    expect(lookupModel(BUILTIN_MODELS, 'claude-unknown-20250101')).toBeUndefined();
    expect(lookupModel(BUILTIN_MODELS, 'toString')).toBeUndefined();
  });
});

describe('modelInfoOf, contextWindowOf', () => {
  test("the input's modelInfo first, then the table, then the fallback (never a throw)", () => {
    const own = { contextWindow: 50_000, prices: null, cacheTtl1h: false };
    expect(modelInfoOf({ model: 'claude-haiku-4-5', modelInfo: own })).toBe(own);
    expect(modelInfoOf({ model: 'claude-haiku-4-5' })).toBe(BUILTIN_MODELS['claude-haiku-4-5']);
    expect(modelInfoOf({ model: 'gpt-nothing' })).toEqual({ contextWindow: 200_000, prices: null, cacheTtl1h: false });
    expect(modelInfoOf({ model: 'gpt-nothing' })).toBe(FALLBACK_MODEL_INFO);
  });

  test('--context-window overrides the model window', () => {
    expect(contextWindowOf({ model: 'claude-opus-4-5' })).toBe(200_000);
    expect(contextWindowOf({ model: 'claude-opus-4-5', contextWindow: 120_000 })).toBe(120_000);
    expect(contextWindowOf({ model: 'x', modelInfo: { contextWindow: 64_000, prices: null, cacheTtl1h: false } })).toBe(64_000);
  });
});

describe('costUsd', () => {
  test('every kind of token at its price per MTok; cache writes at the 5-minute price', () => {
    const usage = { inputTokens: 1_000_000, outputTokens: 100_000, cacheCreationInputTokens: 200_000, cacheReadInputTokens: 2_000_000 };
    // Opus 4.5: $5 + $2.50 + $1.25 + $1.00
    expect(costUsd(usage, BUILTIN_MODELS['claude-opus-4-5']!.prices)).toBeCloseTo(9.75, 12);
    expect(costUsd(NO_USAGE, BUILTIN_MODELS['claude-opus-4-5']!.prices)).toBe(0);
  });

  test('1-hour cache writes at the 1-hour price, web searches at $10 per 1,000', () => {
    const prices = BUILTIN_MODELS['claude-opus-5-5']!.prices;
    const usage = { ...NO_USAGE, cacheCreationInputTokens: 1_000_000, cacheCreation1hInputTokens: 400_000, webSearchRequests: 3 };
    // 600K at $5 + 400K at $8 + 3 searches at $0.01
    expect(costUsd(usage, prices)).toBeCloseTo(3 + 3.2 + 0.03, 12);
    // A 1-hour count above the writes (a malformed usage) never prices more than the writes.
    expect(costUsd({ ...NO_USAGE, cacheCreationInputTokens: 10, cacheCreation1hInputTokens: 1_000_000 }, prices)).toBeCloseTo(80 / 1e6, 12);
  });

  test('unknown prices: null', () => {
    expect(costUsd({ ...NO_USAGE, inputTokens: 5 }, null)).toBeNull();
  });
});

describe('overrides (AGENT_JOBS_MODELS)', () => {
  test('merge over the table: named fields replace, cache prices default to the multipliers, new models start from the fallback', () => {
    const table = parseModelOverrides(
      JSON.stringify({
        'claude-opus-4-5': { contextWindow: 500_000 },
        'claude-haiku-4-5': { prices: { input: 2, output: 10 } },
        'my-proxy-model': { prices: { input: 1, output: 1, cacheRead: 0 } },
        'claude-sonnet-4-5': { prices: null },
      }),
      'test',
    );
    expect(table['claude-opus-4-5']).toEqual({ ...BUILTIN_MODELS['claude-opus-4-5'], contextWindow: 500_000 });
    expect(table['claude-haiku-4-5']!.prices).toEqual({
      input: 2,
      output: 10,
      cacheWrite5m: 2.5,
      cacheWrite1h: 4,
      cacheRead: expect.closeTo(0.2, 12),
    });
    expect(table['my-proxy-model']).toEqual({
      contextWindow: 200_000,
      cacheTtl1h: false,
      prices: { input: 1, output: 1, cacheWrite5m: 1.25, cacheWrite1h: 2, cacheRead: 0 },
    });
    expect(table['claude-sonnet-4-5']).toEqual({ ...BUILTIN_MODELS['claude-sonnet-4-5'], prices: null });
    // The rest is the built-in table, untouched.
    expect(table['claude-opus-4-1']).toBe(BUILTIN_MODELS['claude-opus-4-1']);
    expect(mergeModels(BUILTIN_MODELS, {})).toEqual(BUILTIN_MODELS);
  });

  test.each([
    ['{not json', /test is not JSON/],
    ['[]', /is not a model table.*expected record/],
    ['{"m": {"contextWindow": 10}}', /m\.contextWindow: Too small/],
    ['{"m": {"prices": {"input": -3, "output": 1}}}', /m\.prices\.input: Too small/],
    ['{"m": {"prices": {"input": 3}}}', /m\.prices\.output/],
    ['{"m": {"window": 100000}}', /Unrecognized key: "window"/],
    ['{"m": {"cacheTtl1h": "yes"}}', /m\.cacheTtl1h/],
  ])('%s is refused, naming the source and the problem', (text, message) => {
    expect(() => parseModelOverrides(text, 'test')).toThrow(message);
  });

  test('modelTable reads inline JSON or a file; a missing or bad file is an error naming it', () => {
    expect(modelTable({})).toEqual(BUILTIN_MODELS);
    expect(modelTable({ AGENT_JOBS_MODELS: '  ' })).toEqual(BUILTIN_MODELS);
    expect(modelTable({ AGENT_JOBS_MODELS: '{"x": {"contextWindow": 2048}}' }).x!.contextWindow).toBe(2048);
    const dir = mkdtempSync(path.join(tmpdir(), 'models-'));
    const good = path.join(dir, 'good.json');
    writeFileSync(good, '{"claude-haiku-4-5": {"cacheTtl1h": false}}');
    expect(modelTable({ AGENT_JOBS_MODELS: good })['claude-haiku-4-5']!.cacheTtl1h).toBe(false);
    const bad = path.join(dir, 'bad.json');
    writeFileSync(bad, '{"claude-haiku-4-5": {"prices": {"input": "cheap", "output": 1}}}');
    expect(() => modelTable({ AGENT_JOBS_MODELS: bad })).toThrow(
      new RegExp(`AGENT_JOBS_MODELS file ${bad} is not a model table.*prices\\.input`),
    );
    expect(() => modelTable({ AGENT_JOBS_MODELS: path.join(dir, 'missing.json') })).toThrow(
      /AGENT_JOBS_MODELS names .*missing\.json, which cannot be read: ENOENT/,
    );
  });
});
