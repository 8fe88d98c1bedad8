/**
 * The scripted server's token rule and its prompt-caching emulation.
 *
 * **Canonical serialization.** A request's input (`tools`, `system`,
 * `messages`) is measured as one JSON text, the same for usage, for
 * `count_tokens`, for the context window and for the cache:
 *
 * ```
 * {"tools":[T0,T1,...],"system":[S0,...],"messages":[{"role":"user","content":[B0,B1,...]},...]}
 * ```
 *
 * i.e. `JSON.stringify({tools, system, messages})` of the request normalized
 * like this: `tools` and `system` are `[]` when absent; a string `system`
 * is one block `{"text": system, "type": "text"}` (`[]` for `""`); a string
 * message content is one such text block (`[]` for `""`); each message keeps
 * only `role` then `content`; every block (tool definition, system block,
 * content block) has its `cache_control` removed, and so do the content
 * blocks nested in a `tool_result`; object keys inside a block are sorted
 * (recursively), so key order never changes a count or a cache key.
 *
 * **Token rule.** Tokens of a text = ceil(UTF-8 bytes / 4). The request's
 * input tokens are those of the whole canonical text; the prefix ending at a
 * block is the canonical text up to and including that block's JSON (the
 * structure before it, roles of the messages included), and its tokens are
 * ceil(its bytes / 4). So prefix tokens never decrease along the blocks and
 * the last block's prefix is at most the total. Block order, for prefixes
 * and for the lookback below: tools, then system blocks, then the content
 * blocks of each message in order.
 *
 * **Prompt caching** (https://docs.claude.com/en/docs/build-with-claude/prompt-caching),
 * emulated by {@link PromptCache}: a block with `cache_control` (or whose
 * nested `tool_result` content has one) is a breakpoint. An entry is keyed
 * by the model and the canonical prefix ending at a block. For each
 * breakpoint the server looks for an existing entry at that block or the
 * blocks before it, {@link LOOKBACK_BLOCKS} positions in all (the breakpoint's
 * own block the first), longest first; the longest
 * hit over all breakpoints is read (`cache_read_input_tokens` = its prefix
 * tokens). Every breakpoint is written (`cache_creation_input_tokens` = the
 * last breakpoint's prefix tokens minus the read ones, split by TTL into
 * `cache_creation.ephemeral_5m_input_tokens` / `ephemeral_1h_input_tokens`),
 * and `input_tokens` is what follows the last breakpoint, so
 * input + creation + read = the total. A breakpoint whose prefix is under
 * the minimum cacheable length (default {@link DEFAULT_MIN_CACHEABLE_TOKENS})
 * is ignored, silently, as the API does. An entry lives for its TTL (`5m`
 * default, or `1h`) and a read starts its TTL again.
 */
import { createHash } from 'node:crypto';

/** UTF-8 bytes per token of the server's token rule. */
export const BYTES_PER_TOKEN = 4;

/** Context window of every model unless the script says otherwise (`context_window`), tokens. */
export const DEFAULT_CONTEXT_WINDOW = 200_000;

/** Minimum cacheable prefix unless the script says otherwise (`min_cacheable_tokens`), tokens. */
export const DEFAULT_MIN_CACHEABLE_TOKENS = 1024;

/**
 * Positions at which the API looks for an earlier cache entry per breakpoint, the breakpoint's own
 * block counted as the first: "The system checks at most 20 positions per breakpoint, counting the
 * breakpoint itself as the first" (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
 * "How automatic prefix checking works"; its example: a breakpoint on block 35 checks blocks 35
 * through 16, so an entry at block 15 is not found).
 */
export const LOOKBACK_BLOCKS = 20;

/** Most `cache_control` markers one request may carry (API limit). */
export const MAX_CACHE_BREAKPOINTS = 4;

/** Lifetime of a cache entry per `cache_control.ttl`, milliseconds. */
export const CACHE_TTL_MS: Readonly<Record<CacheTtl, number>> = { '5m': 5 * 60_000, '1h': 60 * 60_000 };

/** A `cache_control.ttl`: five minutes (the default) or one hour. */
export type CacheTtl = '5m' | '1h';

/** Tokens of `bytes` UTF-8 bytes: ceil(bytes / {@link BYTES_PER_TOKEN}). */
export function tokensForBytes(bytes: number): number {
  return Math.ceil(bytes / BYTES_PER_TOKEN);
}

/** The parts of a request that are measured (a Messages or a count_tokens body). */
export interface TokenInput {
  system?: unknown;
  tools?: unknown;
  messages: unknown;
}

/** One block of the canonical serialization, in prefix order. */
export interface CanonicalBlock {
  /** Where the block is in the request, as the API's messages name it: `tools.0`, `system.1`, `messages.2.content.0`. */
  path: string;
  /** The block as sent (before normalization), or the text block a string became. */
  block: unknown;
  /** UTF-8 bytes of the canonical text up to and including this block. */
  endBytes: number;
  /** Tokens of that prefix: {@link tokensForBytes} of `endBytes`. */
  prefixTokens: number;
  /** sha256 (hex) of the model and that prefix: the cache key. */
  key: string;
  /** The block's breakpoint TTL when it (or a nested `tool_result` block) has `cache_control`; the first marker wins. */
  breakpoint: CacheTtl | undefined;
}

/** A request measured by the token rule. */
export interface Measured {
  /** The whole canonical text (see the module doc). */
  text: string;
  /** UTF-8 bytes of `text`. */
  bytes: number;
  /** Input tokens: {@link tokensForBytes} of `bytes`. */
  tokens: number;
  /** The blocks in prefix order (tools, system, message contents). */
  blocks: CanonicalBlock[];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function listOf(value: unknown): unknown[] {
  if (Array.isArray(value)) return value;
  return value === undefined || value === null ? [] : [value];
}

function textBlocks(value: unknown): unknown[] {
  if (typeof value === 'string') return value === '' ? [] : [{ type: 'text', text: value }];
  return listOf(value);
}

/** A copy with object keys sorted, recursively. */
function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (!isObject(value)) return value;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(value).sort()) out[key] = sortKeys(value[key]);
  return out;
}

/** A block without its `cache_control` (nor that of the blocks nested in a `tool_result`), keys sorted. */
export function canonicalBlock(block: unknown): unknown {
  if (!isObject(block)) return block;
  const { cache_control: _dropped, ...rest } = block;
  if (rest['type'] === 'tool_result' && Array.isArray(rest['content'])) {
    rest['content'] = (rest['content'] as unknown[]).map((inner) => {
      if (!isObject(inner)) return inner;
      const { cache_control: _innerDropped, ...innerRest } = inner;
      return innerRest;
    });
  }
  return sortKeys(rest);
}

/** The `cache_control` markers of a block: its own first, then those nested in a `tool_result`, each with its path. */
export function cacheControlsOf(block: unknown, path: string): Array<{ path: string; value: unknown; block: unknown }> {
  if (!isObject(block)) return [];
  const out: Array<{ path: string; value: unknown; block: unknown }> = [];
  if (block['cache_control'] !== undefined && block['cache_control'] !== null) {
    out.push({ path, value: block['cache_control'], block });
  }
  if (block['type'] === 'tool_result' && Array.isArray(block['content'])) {
    block['content'].forEach((inner, k) => {
      if (isObject(inner) && inner['cache_control'] !== undefined && inner['cache_control'] !== null) {
        out.push({ path: `${path}.content.${k}`, value: inner['cache_control'], block: inner });
      }
    });
  }
  return out;
}

function ttlOf(value: unknown): CacheTtl {
  return isObject(value) && value['ttl'] === '1h' ? '1h' : '5m';
}

/**
 * Measures a request by the canonical serialization (see the module doc).
 *
 * @param input `tools`, `system`, `messages` as sent; odd shapes (accepted
 *   with `validateRequests: false`) are measured as they are, never thrown on
 * @param model part of every block's cache key
 * @returns the canonical text, its bytes and tokens, and each block's prefix
 */
export function measure(input: TokenInput, model = ''): Measured {
  const hash = createHash('sha256').update(`${model}\u0000`);
  const parts: string[] = [];
  let bytes = 0;
  const blocks: CanonicalBlock[] = [];
  const emit = (piece: string): void => {
    parts.push(piece);
    bytes += Buffer.byteLength(piece);
    hash.update(piece);
  };
  const emitBlock = (block: unknown, path: string): void => {
    emit(JSON.stringify(canonicalBlock(block)) ?? 'null');
    const marker = cacheControlsOf(block, path)[0];
    blocks.push({
      path,
      block,
      endBytes: bytes,
      prefixTokens: tokensForBytes(bytes),
      key: hash.copy().digest('hex'),
      breakpoint: marker ? ttlOf(marker.value) : undefined,
    });
  };
  const emitList = (list: unknown[], path: string): void => {
    list.forEach((block, i) => {
      if (i > 0) emit(',');
      emitBlock(block, `${path}.${i}`);
    });
  };

  emit('{"tools":[');
  emitList(listOf(input.tools), 'tools');
  emit('],"system":[');
  emitList(textBlocks(input.system), 'system');
  emit('],"messages":[');
  listOf(input.messages).forEach((message, i) => {
    if (i > 0) emit(',');
    const m = isObject(message) ? message : {};
    emit(`{"role":${JSON.stringify(m['role'] ?? null)},"content":[`);
    emitList(textBlocks(m['content']), `messages.${i}.content`);
    emit(']}');
  });
  emit(']}');
  return { text: parts.join(''), bytes, tokens: tokensForBytes(bytes), blocks };
}

/**
 * Input tokens of a request by the server's rule: ceil(UTF-8 bytes of the
 * canonical serialization / 4). What `usage` totals to and what
 * `POST /v1/messages/count_tokens` answers.
 */
export function countInputTokens(input: TokenInput): number {
  return measure(input).tokens;
}

/**
 * The API's `cache_control` rules, checked in prefix order: type
 * `ephemeral` and ttl `5m` / `1h`; not on an empty text block ("cache_control
 * cannot be set for empty text blocks"); not on `thinking` /
 * `redacted_thinking`; at most {@link MAX_CACHE_BREAKPOINTS} markers; no `1h`
 * marker after a `5m` one.
 *
 * @returns the 400 message, worded like the API's, or undefined when the markers are acceptable
 */
export function checkCacheControl(input: TokenInput): string | undefined {
  const markers = measure(input).blocks.flatMap((b) => cacheControlsOf(b.block, b.path));
  for (const { path, value, block } of markers) {
    if (!isObject(value) || value['type'] !== 'ephemeral') {
      return `${path}.cache_control.type: Input should be 'ephemeral'`;
    }
    if (value['ttl'] !== undefined && value['ttl'] !== '5m' && value['ttl'] !== '1h') {
      return `${path}.cache_control.ttl: Input should be '5m' or '1h'`;
    }
    const b = block as Record<string, unknown>;
    if (b['type'] === 'text' && b['text'] === '') return `${path}.text: cache_control cannot be set for empty text blocks`;
    if (b['type'] === 'thinking' || b['type'] === 'redacted_thinking') {
      return `${path}.${String(b['type'])}.cache_control: cache_control cannot be set on \`${String(b['type'])}\` blocks; thinking blocks are cached as part of the prefix, not marked directly`;
    }
  }
  if (markers.length > MAX_CACHE_BREAKPOINTS) {
    return `A maximum of ${MAX_CACHE_BREAKPOINTS} blocks with cache_control may be provided. Found ${markers.length}.`;
  }
  let seen5m = false;
  for (const { value } of markers) {
    const ttl = ttlOf(value);
    if (ttl === '5m') seen5m = true;
    else if (seen5m) {
      return (
        "A cache_control block with ttl='1h' must not come after a cache_control block with ttl='5m'. " +
        'Note that blocks are processed in the following order: `tools`, `system`, `messages`.'
      );
    }
  }
  return undefined;
}

/** The cache part of `usage`, as the API reports it. */
export interface CacheUsage {
  /** Tokens after the last (effective) breakpoint; all tokens when there is none. */
  input_tokens: number;
  /** Tokens written to the cache by this request. */
  cache_creation_input_tokens: number;
  /** Tokens read from the cache by this request. */
  cache_read_input_tokens: number;
  /** `cache_creation_input_tokens` split by the TTL of the breakpoint that wrote them. */
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

/**
 * The server's prompt cache (see the module doc for the rule). Entries live
 * in memory for the server's lifetime.
 */
export class PromptCache {
  /** Cache key → when the entry expires (ms on the server's clock) and its TTL (ms). */
  readonly #entries = new Map<string, { expiresAt: number; ttlMs: number }>();

  /** @param now the server's clock, milliseconds (tests advance it to expire entries) */
  constructor(private readonly now: () => number) {}

  /**
   * Reads and writes the cache for one answered request.
   *
   * @param measured the request, measured with its model ({@link measure})
   * @param minTokens the minimum cacheable prefix, tokens; shorter breakpoints are ignored
   * @returns the usage numbers; input + creation + read = `measured.tokens`
   */
  use(measured: Measured, minTokens: number): CacheUsage {
    const now = this.now();
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);

    const breakpoints = measured.blocks.flatMap((b, index) =>
      b.breakpoint && b.prefixTokens >= minTokens ? [{ index, ttl: b.breakpoint }] : [],
    );
    const last = breakpoints.at(-1);
    if (!last) {
      const none = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
      return { input_tokens: measured.tokens, cache_creation_input_tokens: 0, cache_read_input_tokens: 0, cache_creation: none };
    }

    let hit = -1;
    for (const { index } of breakpoints) {
      for (let j = index; j >= Math.max(0, index - (LOOKBACK_BLOCKS - 1)); j--) {
        if (this.#entries.has(measured.blocks[j]!.key)) {
          hit = Math.max(hit, j);
          break;
        }
      }
    }
    const read = hit >= 0 ? measured.blocks[hit]!.prefixTokens : 0;
    if (hit >= 0) {
      const entry = this.#entries.get(measured.blocks[hit]!.key)!;
      entry.expiresAt = now + entry.ttlMs;
    }

    const creation = { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 };
    let covered = read;
    for (const { index, ttl } of breakpoints) {
      const block = measured.blocks[index]!;
      if (block.prefixTokens > covered) {
        creation[ttl === '1h' ? 'ephemeral_1h_input_tokens' : 'ephemeral_5m_input_tokens'] += block.prefixTokens - covered;
        covered = block.prefixTokens;
      }
      const ttlMs = CACHE_TTL_MS[ttl];
      const existing = this.#entries.get(block.key);
      this.#entries.set(block.key, {
        expiresAt: Math.max(existing?.expiresAt ?? 0, now + ttlMs),
        ttlMs: Math.max(existing?.ttlMs ?? 0, ttlMs),
      });
    }
    const lastTokens = measured.blocks[last.index]!.prefixTokens;
    return {
      input_tokens: measured.tokens - lastTokens,
      cache_creation_input_tokens: Math.max(0, lastTokens - read),
      cache_read_input_tokens: read,
      cache_creation: creation,
    };
  }
}
