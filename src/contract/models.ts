/**
 * What the run needs to know about a model: its context window, its prices
 * and whether it offers the 1-hour cache TTL. A built-in table of the
 * current Claude models, the schema of an override (`AGENT_JOBS_MODELS`,
 * read and merged in src/settings.ts at `start`), and the pure functions the
 * workflow and the CLI share: {@link modelInfoOf}, {@link contextWindowOf},
 * {@link costUsd}.
 *
 * Deterministic (workflow code imports it): constants, zod and pure
 * functions only. The workflow never reads the override itself: `start`
 * resolves the run's entry and puts it in the input (`modelInfo`), so a
 * replay sees the same prices whatever the worker's environment says.
 */
import { z } from 'zod';
import type { Usage } from './messages';

/**
 * Prices of one model in USD per million tokens (MTok), as Anthropic
 * publishes them (https://docs.anthropic.com/en/docs/about-claude/pricing).
 * Cache writes cost 1.25× the input price for the 5-minute TTL and 2× for
 * the 1-hour TTL; cache reads 0.1×.
 */
export interface ModelPrices {
  /** Uncached input tokens (`usage.input_tokens`). */
  input: number;
  /** Output tokens, thinking included (`usage.output_tokens`). */
  output: number;
  /** Tokens written to the cache with the 5-minute TTL (`usage.cache_creation_input_tokens`). */
  cacheWrite5m: number;
  /** Tokens written to the cache with the 1-hour TTL. */
  cacheWrite1h: number;
  /** Tokens read from the cache (`usage.cache_read_input_tokens`). */
  cacheRead: number;
}

/** How a model thinks, as its overview page says (https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking). */
export type ThinkingMode =
  /** Adaptive thinking, always on: `thinking.type` "enabled" (budgets) and "disabled", and a forced `tool_choice`, get a 400 (Opus 5.5, Fable 5.1). */
  | 'adaptive-only'
  /** Adaptive thinking on by default, depth by `output_config.effort`; budgets only where {@link ModelInfo.thinkingBudget} says. */
  | 'adaptive'
  /** Extended thinking with `thinking: {type: "enabled", budget_tokens}` (the 4.x line before adaptive thinking, Haiku 4.5). */
  | 'budget';

/** `output_config.effort` levels (https://platform.claude.com/docs/en/build-with-claude/effort). */
export const EFFORT_LEVELS = ['low', 'medium', 'high', 'xhigh', 'max'] as const;
export type Effort = (typeof EFFORT_LEVELS)[number];

/** One model's entry: the shape of the input field `modelInfo` and of each entry of the table. */
export interface ModelInfo {
  /** Context window in tokens (input + output of one request). */
  contextWindow: number;
  /** Prices in USD per MTok; null when unknown (then `costUsd` is null and `maxCostUsd` is refused). */
  prices: ModelPrices | null;
  /** Whether the model offers the 1-hour cache TTL (`cache_control: {type: "ephemeral", ttl: "1h"}`). */
  cacheTtl1h: boolean;
  /**
   * A larger window the model offers on request (Sonnet 4 and 4.5: 1,000,000
   * tokens with the `context-1m-2025-08-07` beta header, at higher prices
   * past 200,000 input tokens). Information only: the run uses
   * `contextWindow` unless `start --context-window` says otherwise.
   */
  longContextWindow?: number;
  /** Most output tokens of one response (`max_tokens` above it is a 400). Absent in entries written before it existed: see {@link capabilitiesOf}. */
  maxOutputTokens?: number;
  /** How the model thinks ({@link ThinkingMode}). */
  thinking?: ThinkingMode;
  /** Whether `thinking: {type: "enabled", budget_tokens}` is accepted (`start --thinking N`). */
  thinkingBudget?: boolean;
  /**
   * Whether thinking blocks are bound to their prefix (system, tools, every earlier message): a
   * request whose prefix changed gets a 400 "bound to a different conversation"
   * (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks).
   * Such a run must never edit what it already sent: no client-side clearing.
   */
  preservedThinking?: boolean;
  /** Whether the model takes server-side compaction (`compact_20260112`, https://platform.claude.com/docs/en/build-with-claude/compaction). */
  compaction?: boolean;
  /** The effort the model uses when the request names none. */
  defaultEffort?: Effort;
  /** The page the row was read from, and when (information for `agent-jobs models`). */
  source?: string;
}

/** A model's capabilities with every optional field of {@link ModelInfo} filled in. */
export type ModelCapabilities = Required<
  Pick<ModelInfo, 'maxOutputTokens' | 'thinking' | 'thinkingBudget' | 'preservedThinking' | 'compaction'>
> &
  Pick<ModelInfo, 'defaultEffort'>;

/** Context window of a model the table does not know: 200,000 tokens (the standard window of the 4.x line). */
export const FALLBACK_CONTEXT_WINDOW = 200_000;

/** The entry of a model the table does not know and the input does not describe: 200,000 tokens, cost unknown, no 1-hour TTL. */
export const FALLBACK_MODEL_INFO: ModelInfo = { contextWindow: FALLBACK_CONTEXT_WINDOW, prices: null, cacheTtl1h: false };

/**
 * Capabilities assumed for a model nobody described: the request shape of the
 * 4.x line (budget thinking when asked, client-side clearing, no compaction),
 * which every model that is not adaptive-only accepts.
 */
export const FALLBACK_CAPABILITIES: ModelCapabilities = {
  maxOutputTokens: 128_000,
  thinking: 'budget',
  thinkingBudget: true,
  preservedThinking: false,
  compaction: false,
};

/** Prices with the cache prices derived from the input price by the multipliers of the 4.x line (1.25×, 2×, 0.1×). */
export function pricesFrom(input: number, output: number): ModelPrices {
  return { input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 2, cacheRead: input * 0.1 };
}

/** Date the rows below were read from the platform docs. */
export const MODEL_TABLE_READ = '2026-12-02';
const page = (slug: string): string => `https://platform.claude.com/docs/en/models/${slug}/overview (read ${MODEL_TABLE_READ})`;

/** The 5.x line: 1M tokens of context and 128K of output (each model's overview page). */
const fiveX = { contextWindow: 1_000_000, maxOutputTokens: 128_000, cacheTtl1h: true, compaction: true } as const;

const opus45: ModelInfo = {
  contextWindow: 200_000,
  prices: pricesFrom(5, 25),
  cacheTtl1h: true,
  maxOutputTokens: 64_000,
  thinking: 'budget',
  thinkingBudget: true,
  preservedThinking: false,
  compaction: false,
  source: page('opus-4-5'),
};
const opus4: ModelInfo = { ...opus45, prices: pricesFrom(15, 75), maxOutputTokens: 32_000, source: page('opus-4-1') };
const sonnet4: ModelInfo = { ...opus45, prices: pricesFrom(3, 15), longContextWindow: 1_000_000, source: page('sonnet-4-5') };
const haiku45: ModelInfo = { ...opus45, prices: pricesFrom(1, 5), source: page('haiku-4-5') };
/**
 * Opus 4.6 and Sonnet 4.6: 1M / 128K, adaptive thinking with budgets still accepted (deprecated),
 * compaction. Budgets are a 400 from Claude 4.7 on (Opus 4.7, 4.8, the 5.x line:
 * https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting).
 */
const adaptive4: ModelInfo = {
  ...fiveX,
  prices: pricesFrom(5, 25),
  thinking: 'adaptive',
  thinkingBudget: true,
  preservedThinking: false,
  defaultEffort: 'high',
};

/**
 * The built-in table, by model id (aliases and the ids without their date:
 * `claude-sonnet-4-5-20250929` is looked up as `claude-sonnet-4-5`). Every
 * row names its page; prices are USD per MTok as published there
 * (https://platform.claude.com/docs/en/about-claude/pricing). Preserved
 * thinking per the prefix-checks page's list of models (Opus 5.5, Sonnet
 * 5.5, Haiku 5.5, Fable 5.1).
 */
export const BUILTIN_MODELS: Readonly<Record<string, ModelInfo>> = {
  'claude-opus-5-5': {
    ...fiveX,
    prices: { input: 4, output: 20, cacheWrite5m: 5, cacheWrite1h: 8, cacheRead: 0.2 },
    thinking: 'adaptive-only',
    thinkingBudget: false,
    preservedThinking: true,
    defaultEffort: 'medium',
    source: page('opus-5-5'),
  },
  'claude-opus-5': {
    ...fiveX,
    prices: { input: 5, output: 25, cacheWrite5m: 6.25, cacheWrite1h: 10, cacheRead: 0.5 },
    thinking: 'adaptive',
    thinkingBudget: false,
    preservedThinking: false,
    defaultEffort: 'high',
    source: page('opus-5'),
  },
  'claude-sonnet-5-5': {
    ...fiveX,
    prices: { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 },
    thinking: 'adaptive',
    thinkingBudget: false,
    preservedThinking: true,
    defaultEffort: 'high',
    source: page('sonnet-5-5'),
  },
  'claude-sonnet-5': {
    ...fiveX,
    prices: { input: 2, output: 10, cacheWrite5m: 2.5, cacheWrite1h: 4, cacheRead: 0.2 },
    thinking: 'adaptive',
    thinkingBudget: false,
    preservedThinking: false,
    defaultEffort: 'high',
    source: page('sonnet-5'),
  },
  'claude-fable-5-1': {
    ...fiveX,
    prices: { input: 10, output: 50, cacheWrite5m: 12.5, cacheWrite1h: 20, cacheRead: 0.25 },
    thinking: 'adaptive-only',
    thinkingBudget: false,
    preservedThinking: true,
    defaultEffort: 'high',
    source: page('fable-5-1'),
  },
  'claude-haiku-5-5': {
    ...fiveX,
    // The prices of prompts up to 100K tokens; longer prompts are billed higher (the page's "from").
    prices: { input: 0.1, output: 0.5, cacheWrite5m: 0.125, cacheWrite1h: 0.2, cacheRead: 0.01 },
    thinking: 'adaptive',
    thinkingBudget: false,
    preservedThinking: true,
    defaultEffort: 'medium',
    source: page('haiku-5-5'),
  },
  'claude-opus-4-8': { ...adaptive4, thinkingBudget: false, source: page('opus-4-8') },
  'claude-opus-4-7': { ...adaptive4, thinking: 'adaptive-only', thinkingBudget: false, source: page('opus-4-7') },
  'claude-opus-4-6': { ...adaptive4, source: page('opus-4-6') },
  'claude-sonnet-4-6': { ...adaptive4, prices: pricesFrom(3, 15), source: page('sonnet-4-6') },
  'claude-opus-4-5': opus45,
  'claude-opus-4-1': opus4,
  'claude-opus-4-0': opus4,
  'claude-opus-4': opus4,
  'claude-sonnet-4-5': sonnet4,
  'claude-sonnet-4-0': sonnet4,
  'claude-sonnet-4': sonnet4,
  'claude-haiku-4-5': haiku45,
};

/**
 * The entry for `model` in `table`: by its id, else by its id without a
 * `-YYYYMMDD` date suffix.
 * @returns undefined when the table has neither
 */
export function lookupModel(table: Readonly<Record<string, ModelInfo>>, model: string): ModelInfo | undefined {
  if (Object.hasOwn(table, model)) return table[model];
  const undated = model.replace(/-\d{8}$/, '');
  return undated !== model && Object.hasOwn(table, undated) ? table[undated] : undefined;
}

/**
 * The entry a run uses: the input's `modelInfo` (resolved at `start`,
 * overrides included), else the built-in table's entry for its model
 * (older runs, runs started from elsewhere), else {@link FALLBACK_MODEL_INFO}.
 * Never throws.
 */
export function modelInfoOf(input: { model: string; modelInfo?: ModelInfo | undefined }): ModelInfo {
  return input.modelInfo ?? lookupModel(BUILTIN_MODELS, input.model) ?? FALLBACK_MODEL_INFO;
}

/**
 * The run's model capabilities: each field from the input's `modelInfo` when it has it (an
 * override may describe a new model), else from the built-in table's row for the model id,
 * else {@link FALLBACK_CAPABILITIES}. Inputs recorded before these fields existed resolve
 * through the table. Never throws.
 */
export function capabilitiesOf(input: { model: string; modelInfo?: ModelInfo | undefined }): ModelCapabilities {
  const own = input.modelInfo ?? {};
  const row = lookupModel(BUILTIN_MODELS, input.model) ?? {};
  const pick = <K extends keyof ModelCapabilities>(key: K): ModelCapabilities[K] =>
    ((own as ModelInfo)[key] ?? (row as ModelInfo)[key] ?? FALLBACK_CAPABILITIES[key]) as ModelCapabilities[K];
  const defaultEffort = pick('defaultEffort');
  return {
    maxOutputTokens: pick('maxOutputTokens'),
    thinking: pick('thinking'),
    thinkingBudget: pick('thinkingBudget'),
    preservedThinking: pick('preservedThinking'),
    compaction: pick('compaction'),
    ...(defaultEffort !== undefined ? { defaultEffort } : {}),
  };
}

/**
 * How a run keeps its conversation within the window, chosen per model:
 * - `compaction`: the API's server-side compaction (`compact_20260112`); nothing already sent is ever edited;
 * - `none`: a model with preserved thinking and no compaction: nothing may be edited, so the run
 *   ends with the API's "prompt is too long" when it outgrows the window;
 * - `clearing`: the oldest `tool_result` contents are replaced by notes on the client
 *   (src/activities/context-window.ts), for models whose thinking is not bound to its prefix.
 */
export type ContextStrategy = 'compaction' | 'clearing' | 'none';

/** The {@link ContextStrategy} of a model's capabilities. */
export function contextStrategyOf(c: ModelCapabilities): ContextStrategy {
  if (c.compaction) return 'compaction';
  return c.preservedThinking ? 'none' : 'clearing';
}

/** Smallest compaction trigger the API accepts, in input tokens: 50,000 (https://platform.claude.com/docs/en/build-with-claude/compaction). */
export const MIN_COMPACTION_TRIGGER = 50_000;
/** The API's default compaction trigger, in input tokens: 150,000 (same page). */
export const DEFAULT_COMPACTION_TRIGGER = 150_000;

/**
 * The compaction trigger of a run, in input tokens: 80% of what the window leaves after
 * `max_tokens`, between {@link MIN_COMPACTION_TRIGGER} and {@link DEFAULT_COMPACTION_TRIGGER}
 * (a 1M window compacts at the API's default, which keeps each request, and its cost, small).
 */
export function compactionTrigger(contextWindow: number, maxTokens: number): number {
  return Math.min(DEFAULT_COMPACTION_TRIGGER, Math.max(MIN_COMPACTION_TRIGGER, Math.floor(0.8 * (contextWindow - maxTokens))));
}

/** The run's context window in tokens: `contextWindow` of the input (`start --context-window`), else the model's ({@link modelInfoOf}). */
export function contextWindowOf(input: { model: string; modelInfo?: ModelInfo | undefined; contextWindow?: number | undefined }): number {
  return input.contextWindow ?? modelInfoOf(input).contextWindow;
}

/** Price of one web search of the `web_search` server tool, in USD: $10 per 1,000 searches (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool, read 2026-12-02). */
export const WEB_SEARCH_USD = 10 / 1_000;

/**
 * What `usage` cost, in USD: input, output, cache reads and cache writes at
 * their prices per MTok (the writes the usage says were made with the 1-hour
 * TTL at the 1-hour price, the rest at the 5-minute price, the API's
 * default), plus web searches at {@link WEB_SEARCH_USD} each. Compaction's
 * tokens are in the counts (src/activities/claude.ts adds them up).
 * @returns null when `prices` is null (cost unknown)
 */
export function costUsd(usage: Usage, prices: ModelPrices | null): number | null {
  if (prices === null) return null;
  const oneHour = Math.min(usage.cacheCreation1hInputTokens ?? 0, usage.cacheCreationInputTokens);
  const perToken =
    usage.inputTokens * prices.input +
    usage.outputTokens * prices.output +
    (usage.cacheCreationInputTokens - oneHour) * prices.cacheWrite5m +
    oneHour * prices.cacheWrite1h +
    usage.cacheReadInputTokens * prices.cacheRead;
  return perToken / 1_000_000 + (usage.webSearchRequests ?? 0) * WEB_SEARCH_USD;
}

/** Most tokens a context window may be said to hold (here and in `start --context-window`): 10,000,000. */
export const MAX_CONTEXT_WINDOW = 10_000_000;
/** Highest price per MTok accepted, in USD: 10,000 (a typo guard). */
const MAX_PRICE = 10_000;

const price = z.number().finite().min(0).max(MAX_PRICE);

/** zod schema of {@link ModelPrices}. */
export const modelPricesSchema = z.strictObject({
  input: price,
  output: price,
  cacheWrite5m: price,
  cacheWrite1h: price,
  cacheRead: price,
});

/** zod schema of {@link ModelInfo} (the input field `modelInfo`). */
export const modelInfoSchema = z.strictObject({
  contextWindow: z.number().int().min(1_024).max(MAX_CONTEXT_WINDOW),
  prices: modelPricesSchema.nullable(),
  cacheTtl1h: z.boolean(),
  longContextWindow: z.number().int().min(1_024).max(MAX_CONTEXT_WINDOW).optional(),
  maxOutputTokens: z.number().int().min(1).max(1_000_000).optional(),
  thinking: z.enum(['adaptive-only', 'adaptive', 'budget']).optional(),
  thinkingBudget: z.boolean().optional(),
  preservedThinking: z.boolean().optional(),
  compaction: z.boolean().optional(),
  defaultEffort: z.enum(EFFORT_LEVELS).optional(),
  source: z.string().max(500).optional(),
});

/**
 * One entry of an override: every field optional. `prices` needs `input`
 * and `output`; the cache prices default to the multipliers of
 * {@link pricesFrom}; `null` says the cost is unknown.
 */
const overrideEntrySchema = z.strictObject({
  contextWindow: modelInfoSchema.shape.contextWindow.optional(),
  prices: z
    .strictObject({
      input: price,
      output: price,
      cacheWrite5m: price.optional(),
      cacheWrite1h: price.optional(),
      cacheRead: price.optional(),
    })
    .nullable()
    .optional(),
  cacheTtl1h: z.boolean().optional(),
  longContextWindow: modelInfoSchema.shape.longContextWindow,
  maxOutputTokens: modelInfoSchema.shape.maxOutputTokens,
  thinking: modelInfoSchema.shape.thinking,
  thinkingBudget: modelInfoSchema.shape.thinkingBudget,
  preservedThinking: modelInfoSchema.shape.preservedThinking,
  compaction: modelInfoSchema.shape.compaction,
  defaultEffort: modelInfoSchema.shape.defaultEffort,
});

/** zod schema of an override: `{"<model id>": {contextWindow?, prices?, cacheTtl1h?, longContextWindow?, maxOutputTokens?, thinking?, thinkingBudget?, preservedThinking?, compaction?, defaultEffort?}}`. */
export const modelOverridesSchema = z.record(z.string().min(1), overrideEntrySchema);
export type ModelOverrides = z.infer<typeof modelOverridesSchema>;

/**
 * The table with `overrides` merged over `base`: an entry for a known model
 * replaces the fields it names (`prices` as a whole); an entry for another
 * model starts from {@link FALLBACK_MODEL_INFO}.
 */
export function mergeModels(base: Readonly<Record<string, ModelInfo>>, overrides: ModelOverrides): Record<string, ModelInfo> {
  const table: Record<string, ModelInfo> = { ...base };
  for (const [model, o] of Object.entries(overrides)) {
    const before = lookupModel(base, model) ?? FALLBACK_MODEL_INFO;
    const prices =
      o.prices === undefined
        ? before.prices
        : o.prices === null
          ? null
          : { ...pricesFrom(o.prices.input, o.prices.output), ...withoutUndefined(o.prices) };
    const { contextWindow, prices: _prices, cacheTtl1h, ...rest } = o;
    table[model] = {
      ...before,
      ...withoutUndefined(rest),
      contextWindow: contextWindow ?? before.contextWindow,
      prices,
      cacheTtl1h: cacheTtl1h ?? before.cacheTtl1h,
    };
  }
  return table;
}

function withoutUndefined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Parses and checks an override given as JSON text, and merges it over the
 * built-in table.
 * @param source where the text came from, for the error (a file path, or "AGENT_JOBS_MODELS")
 * @throws Error naming `source` and every problem (bad JSON, unknown field, a negative price, ...)
 */
export function parseModelOverrides(text: string, source: string): Record<string, ModelInfo> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new Error(`${source} is not JSON: ${err instanceof Error ? err.message : String(err)}`, { cause: err });
  }
  const parsed = modelOverridesSchema.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(top level)'}: ${i.message}`).join('; ');
    throw new Error(`${source} is not a model table ({"<model id>": {"contextWindow", "prices", "cacheTtl1h"}}): ${problems}`);
  }
  return mergeModels(BUILTIN_MODELS, parsed.data);
}
