/**
 * The Messages API shapes this project reads: content blocks, messages,
 * usage and its arithmetic, and the block guards. A subset of the Anthropic
 * Messages API (https://docs.anthropic.com/en/api/messages); the workflow
 * cannot import the SDK's types, and blocks it does not know (thinking,
 * redacted_thinking, ...) pass through unchanged as `OtherBlock`.
 *
 * Deterministic (imported by workflow code).
 */

/** `{"type": "text"}` content block. */
export interface TextBlock {
  type: 'text';
  text: string;
}

/** `{"type": "tool_use"}` content block: Claude asks for a tool call. `input` is whatever JSON the model produced. */
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** `{"type": "tool_result"}` content block answering the `tool_use` with id `tool_use_id`. */
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** Any other content block (thinking, redacted_thinking, ...), kept as the API sent it. */
export interface OtherBlock {
  type: string;
  [field: string]: unknown;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | OtherBlock;

/** One message of the conversation, as sent to the Messages API. */
export interface Message {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

/**
 * Token counts, as the API reports them: `usage.input_tokens` (input not
 * read from or written to the cache), `output_tokens`,
 * `cache_creation_input_tokens` (input written to the cache) and
 * `cache_read_input_tokens` (input read from it); the API's null is 0.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  /** Of `cacheCreationInputTokens`, those written with the 1-hour TTL (`usage.cache_creation.ephemeral_1h_input_tokens`), priced at the 1-hour write price. Absent: none (and in usages recorded before it existed). */
  cacheCreation1hInputTokens?: number;
  /** Web searches the server tool ran (`usage.server_tool_use.web_search_requests`), billed per search. Absent: none. */
  webSearchRequests?: number;
  /** Web fetches the server tool ran (`usage.server_tool_use.web_fetch_requests`; billed as tokens only). Absent: none. */
  webFetchRequests?: number;
  /** Server-side compactions the API made (`compaction` entries of `usage.iterations`); their tokens are in the counts above. Absent: none. */
  compactions?: number;
}

/** The optional counts of {@link Usage}, added up like the others when either side has them. */
const EXTRA_USAGE = ['cacheCreation1hInputTokens', 'webSearchRequests', 'webFetchRequests', 'compactions'] as const;

function extraUsage(a: Partial<Usage> | null | undefined, b?: Partial<Usage>): Partial<Usage> {
  const out: Partial<Usage> = {};
  for (const key of EXTRA_USAGE) {
    if (a?.[key] !== undefined || b?.[key] !== undefined) out[key] = (a?.[key] ?? 0) + (b?.[key] ?? 0);
  }
  return out;
}

/** No tokens yet. */
export const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };

/**
 * A usage as older workers recorded it (only `inputTokens` and
 * `outputTokens`, in carried states, histories and results) with the
 * missing counts as 0.
 */
export function normalizeUsage(u: Partial<Usage> | null | undefined): Usage {
  return {
    inputTokens: u?.inputTokens ?? 0,
    outputTokens: u?.outputTokens ?? 0,
    cacheCreationInputTokens: u?.cacheCreationInputTokens ?? 0,
    cacheReadInputTokens: u?.cacheReadInputTokens ?? 0,
    ...extraUsage(u),
  };
}

/** Two usages added up. */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    ...extraUsage(a, b),
  };
}

/**
 * Every token of a usage: input, output, cache writes and cache reads. This
 * is what `maxTokensTotal` and the `AgentTokens` search attribute count:
 * each is a token the model processed for the run, and with prompt caching
 * most of the input is in the two cache counts, so leaving them out would
 * let a cached run pass its budget many times over (what it costs is
 * `maxCostUsd`'s to bound).
 */
export function totalTokens(u: Usage): number {
  return u.inputTokens + u.outputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
}

// ---------------------------------------------------------------------------
// Content-block guards (pure; used by the workflow and the CLI)

export function isToolUse(block: ContentBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}

export function isToolResult(block: ContentBlock): block is ToolResultBlock {
  return block.type === 'tool_result';
}

export function isText(block: ContentBlock): block is TextBlock {
  return block.type === 'text' && typeof (block as TextBlock).text === 'string';
}
