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
import type { Usage } from './index';

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
}

/** Context window of a model the table does not know: 200,000 tokens (every current Claude model's standard window). */
export const FALLBACK_CONTEXT_WINDOW = 200_000;

/** The entry of a model the table does not know and the input does not describe: 200,000 tokens, cost unknown, no 1-hour TTL. */
export const FALLBACK_MODEL_INFO: ModelInfo = { contextWindow: FALLBACK_CONTEXT_WINDOW, prices: null, cacheTtl1h: false };

/** Prices with the cache prices derived from the input price by the published multipliers (1.25×, 2×, 0.1×). */
export function pricesFrom(input: number, output: number): ModelPrices {
  return { input, output, cacheWrite5m: input * 1.25, cacheWrite1h: input * 2, cacheRead: input * 0.1 };
}

const opus45: ModelInfo = { contextWindow: 200_000, prices: pricesFrom(5, 25), cacheTtl1h: true };
const opus4: ModelInfo = { contextWindow: 200_000, prices: pricesFrom(15, 75), cacheTtl1h: true };
const sonnet4: ModelInfo = { contextWindow: 200_000, prices: pricesFrom(3, 15), cacheTtl1h: true, longContextWindow: 1_000_000 };
const haiku45: ModelInfo = { contextWindow: 200_000, prices: pricesFrom(1, 5), cacheTtl1h: true };

/**
 * The built-in table, by model id (aliases and the ids without their date:
 * `claude-sonnet-4-5-20250929` is looked up as `claude-sonnet-4-5`).
 * `claude-sonnet-5-5` (the project's `DEFAULT_MODEL`) has no published
 * price here: it is priced as the Sonnet tier ($3 / $15), an assumption to
 * override with `AGENT_JOBS_MODELS` when it is wrong.
 */
export const BUILTIN_MODELS: Readonly<Record<string, ModelInfo>> = {
  'claude-sonnet-5-5': { contextWindow: 200_000, prices: pricesFrom(3, 15), cacheTtl1h: true },
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

/** The run's context window in tokens: `contextWindow` of the input (`start --context-window`), else the model's ({@link modelInfoOf}). */
export function contextWindowOf(input: { model: string; modelInfo?: ModelInfo | undefined; contextWindow?: number | undefined }): number {
  return input.contextWindow ?? modelInfoOf(input).contextWindow;
}

/**
 * What `usage` cost, in USD: input, output, cache reads and cache writes at
 * their prices per MTok. Cache-creation tokens are priced at the 5-minute
 * write price: `Usage` does not say which TTL wrote them, and the 5-minute
 * TTL is the API's default (a run that writes with the 1-hour TTL costs more
 * than this says: 2× instead of 1.25× the input price for those tokens).
 * @returns null when `prices` is null (cost unknown)
 */
export function costUsd(usage: Usage, prices: ModelPrices | null): number | null {
  if (prices === null) return null;
  const perToken =
    usage.inputTokens * prices.input +
    usage.outputTokens * prices.output +
    usage.cacheCreationInputTokens * prices.cacheWrite5m +
    usage.cacheReadInputTokens * prices.cacheRead;
  return perToken / 1_000_000;
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
});

/** zod schema of an override: `{"<model id>": {contextWindow?, prices?, cacheTtl1h?, longContextWindow?}}`. */
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
    table[model] = {
      contextWindow: o.contextWindow ?? before.contextWindow,
      prices,
      cacheTtl1h: o.cacheTtl1h ?? before.cacheTtl1h,
      ...longContext(o.longContextWindow ?? before.longContextWindow),
    };
  }
  return table;
}

function longContext(window: number | undefined): Pick<ModelInfo, 'longContextWindow'> {
  return window === undefined ? {} : { longContextWindow: window };
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
