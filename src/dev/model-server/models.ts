/**
 * The scripted server's own catalogue of today's Claude models, used by the
 * `"api": "today"` mode (see `today.ts`). It is deliberately independent of
 * the product's `src/contract/models.ts`: the emulator checks the product, so
 * the two must not share a table. Every row cites the doc page it was read
 * from (read 2026-12-02); `docs/claude-api.md` holds the fact sheet and marks
 * what the docs did not say (the server's choice is then noted here too).
 */

/** The thinking configurations a model accepts (https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting). */
export type ThinkingMode =
  /** Adaptive thinking always on: `disabled` and `enabled` (budgets) are a 400. */
  | 'adaptive-only'
  /** Adaptive, on by default; `disabled` accepted only at effort `high` or lower; `enabled` (budgets) is a 400. */
  | 'adaptive'
  /** Adaptive, on by default; `between_tools` replaces `disabled` (Sonnet 5.5 only); `enabled` is a 400. */
  | 'adaptive-between-tools'
  /** Adaptive, on by default, `disabled` accepted at any effort; `enabled` is a 400 (Sonnet 5). */
  | 'adaptive-disable-any'
  /** Extended thinking only: off unless `{type: "enabled", budget_tokens}`; `adaptive` is a 400. */
  | 'budget';

/** An `output_config.effort` level. */
export type EffortLevel = 'low' | 'medium' | 'high' | 'xhigh' | 'max';

/** Every effort level, lowest first (https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5). */
export const EFFORT_LEVELS: readonly EffortLevel[] = ['low', 'medium', 'high', 'xhigh', 'max'];

/** USD per million tokens. */
export interface ModelPrices {
  input: number;
  output: number;
  /** 5-minute cache write. */
  write5m: number;
  /** 1-hour cache write. */
  write1h: number;
  cacheRead: number;
}

/** One model of the catalogue. */
export interface ModelSpec {
  /** The Claude API model id. */
  id: string;
  /** Other ids the API accepts for it (e.g. an undated alias). */
  aliases: readonly string[];
  /** Context window, tokens. */
  contextWindow: number;
  /** Largest `max_tokens` accepted (synchronous Messages API), tokens. */
  maxOutput: number;
  /** Minimum cacheable prompt, tokens (shorter `cache_control` prefixes are silently not cached). */
  minCacheableTokens: number;
  prices: ModelPrices;
  thinking: ThinkingMode;
  /** Default `output_config.effort`; undefined when the model takes no effort parameter. */
  defaultEffort: EffortLevel | undefined;
  /** Levels `output_config.effort` accepts; empty when the model takes none. */
  effortLevels: readonly EffortLevel[];
  /** Whether the model runs the prefix check on thinking blocks sent back (preserved thinking). */
  preservedThinking: boolean;
  /** Whether `tool_choice` `any` / `tool` is a 400 on this model. */
  rejectsForcedToolChoice: boolean;
  /**
   * Where text the model writes before a tool call goes: `text` stays a text
   * block; `all` becomes one progress-update `thinking` block before each tool
   * call (Opus 5.5, Fable 5.1); `long` does so only for notes longer than a
   * sentence or two (Sonnet 5.5). https://platform.claude.com/docs/en/models/opus-5-5/migration-guide#text-between-tool-calls,
   * https://platform.claude.com/docs/en/models/sonnet-5-5/migration-guide
   */
  textBetweenTools: 'text' | 'all' | 'long';
  /** Whether server-side compaction (`compact_20260112`) is supported. */
  compaction: boolean;
  /** Models whose thinking blocks this one can read, besides its own. */
  readsThinkingOf: readonly string[];
  /** The doc page(s) the row was read from. */
  sources: readonly string[];
}

const ALL_EFFORT = EFFORT_LEVELS;

/**
 * The catalogue (read 2026-12-02). Prices: the model overview pages; where a
 * page gave no cache-write price the standard 1.25× / 2× of input is used
 * (noted per row).
 */
export const MODELS: readonly ModelSpec[] = [
  {
    id: 'claude-opus-5-5',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // whats-new-opus-5-5 (feature support): 512-token minimum cacheable prompt.
    minCacheableTokens: 512,
    prices: { input: 4, output: 20, write5m: 5, write1h: 8, cacheRead: 0.2 },
    thinking: 'adaptive-only',
    defaultEffort: 'medium',
    effortLevels: ALL_EFFORT,
    preservedThinking: true,
    rejectsForcedToolChoice: true,
    textBetweenTools: 'all',
    compaction: true,
    // "Claude Opus 5.5 reads thinking blocks from Claude Opus 5 and earlier Opus, Sonnet, and Haiku models,
    // but not from Claude Fable or Claude Mythos models" (whats-new-opus-5-5).
    readsThinkingOf: ['claude-opus-5', 'claude-sonnet-5', 'claude-haiku-4-5-20251001'],
    sources: [
      'https://platform.claude.com/docs/en/models/opus-5-5/overview',
      'https://platform.claude.com/docs/en/models/opus-5-5/whats-new-opus-5-5',
      'https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks',
    ],
  },
  {
    id: 'claude-opus-5',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // whats-new-opus-5: 512, down from 1,024 on Opus 4.8.
    minCacheableTokens: 512,
    prices: { input: 5, output: 25, write5m: 6.25, write1h: 10, cacheRead: 0.5 },
    thinking: 'adaptive',
    defaultEffort: 'high',
    effortLevels: ALL_EFFORT,
    preservedThinking: false,
    rejectsForcedToolChoice: false,
    textBetweenTools: 'text',
    compaction: true,
    readsThinkingOf: [],
    sources: [
      'https://platform.claude.com/docs/en/models/opus-5/overview',
      'https://platform.claude.com/docs/en/about-claude/models/whats-new-opus-5',
    ],
  },
  {
    id: 'claude-sonnet-5-5',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // 512 for the 5.5 models per third-party migration guides; not read on a platform page.
    minCacheableTokens: 512,
    prices: { input: 2, output: 10, write5m: 2.5, write1h: 4, cacheRead: 0.2 },
    thinking: 'adaptive-between-tools',
    defaultEffort: 'high',
    effortLevels: ALL_EFFORT,
    preservedThinking: true,
    rejectsForcedToolChoice: true,
    textBetweenTools: 'long',
    compaction: true,
    readsThinkingOf: [],
    sources: [
      'https://platform.claude.com/docs/en/models/sonnet-5-5/overview',
      'https://platform.claude.com/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5',
    ],
  },
  {
    id: 'claude-sonnet-5',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // Not found: the server's legacy default.
    minCacheableTokens: 1024,
    prices: { input: 2, output: 10, write5m: 2.5, write1h: 4, cacheRead: 0.2 },
    thinking: 'adaptive-disable-any',
    defaultEffort: 'high',
    effortLevels: ALL_EFFORT,
    preservedThinking: false,
    rejectsForcedToolChoice: false,
    textBetweenTools: 'text',
    compaction: true,
    readsThinkingOf: [],
    sources: ['https://platform.claude.com/docs/en/models/sonnet-5/overview'],
  },
  {
    id: 'claude-fable-5-1',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // Not found: the server's legacy default.
    minCacheableTokens: 1024,
    // Cache writes: not on the page excerpts read; 1.25× / 2× of input.
    prices: { input: 10, output: 50, write5m: 12.5, write1h: 20, cacheRead: 0.25 },
    thinking: 'adaptive-only',
    defaultEffort: 'high',
    effortLevels: ALL_EFFORT,
    preservedThinking: true,
    rejectsForcedToolChoice: true,
    textBetweenTools: 'all',
    compaction: true,
    // "Claude Fable 5.1 reads earlier models' thinking blocks" (whats-new-fable-5-1) and, on the Claude API,
    // Claude Opus 5.5's (whats-new-opus-5-5, preserved-thinking).
    readsThinkingOf: ['claude-opus-5', 'claude-sonnet-5', 'claude-haiku-4-5-20251001', 'claude-opus-5-5'],
    sources: [
      'https://platform.claude.com/docs/en/models/fable-5-1/overview',
      'https://platform.claude.com/docs/en/models/fable-5-1/whats-new-fable-5-1',
      'https://platform.claude.com/docs/en/build-with-claude/preserved-thinking',
    ],
  },
  {
    id: 'claude-haiku-5-5',
    aliases: [],
    contextWindow: 1_000_000,
    maxOutput: 128_000,
    // 512 for the 5.5 models per third-party migration guides; not read on a platform page.
    minCacheableTokens: 512,
    // The ≤100K-prompt tier; cache writes not on the page excerpts read: 1.25× / 2× of input.
    prices: { input: 0.1, output: 0.5, write5m: 0.125, write1h: 0.2, cacheRead: 0.01 },
    thinking: 'adaptive',
    defaultEffort: 'medium',
    effortLevels: ALL_EFFORT,
    preservedThinking: true,
    rejectsForcedToolChoice: false,
    textBetweenTools: 'text',
    compaction: true,
    readsThinkingOf: [],
    sources: [
      'https://platform.claude.com/docs/en/models/haiku-5-5/overview',
      'https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks',
    ],
  },
  {
    id: 'claude-haiku-4-5-20251001',
    aliases: ['claude-haiku-4-5'],
    contextWindow: 200_000,
    maxOutput: 64_000,
    // 4,096 on Haiku 4.5 (prompt-caching page, as quoted by several SDK docs).
    minCacheableTokens: 4096,
    prices: { input: 1, output: 5, write5m: 1.25, write1h: 2, cacheRead: 0.1 },
    thinking: 'budget',
    defaultEffort: undefined,
    effortLevels: [],
    preservedThinking: false,
    rejectsForcedToolChoice: false,
    textBetweenTools: 'text',
    // Not in the supported-models list of https://platform.claude.com/docs/en/build-with-claude/compaction-threshold.
    compaction: false,
    readsThinkingOf: [],
    sources: [
      'https://platform.claude.com/docs/en/models/haiku-4-5/overview',
      'https://platform.claude.com/docs/en/build-with-claude/thinking-troubleshooting',
    ],
  },
];

/**
 * The catalogue row for a model id or alias.
 *
 * @returns undefined for an id the catalogue does not know (the API's 404)
 */
export function findModel(id: string): ModelSpec | undefined {
  return MODELS.find((m) => m.id === id || m.aliases.includes(id));
}

/** Whether `reader` can read thinking blocks that `writer` produced (its own, or one of `readsThinkingOf`). */
export function canRead(reader: ModelSpec, writer: string): boolean {
  const canonical = findModel(writer)?.id ?? writer;
  return canonical === reader.id || reader.readsThinkingOf.includes(canonical);
}
