/**
 * Fitting a request to the model's context window, and placing its prompt
 * cache breakpoints.
 *
 * Until a request nears the window, every message goes to Claude in full.
 * Near it (over {@link NEAR_WINDOW_SHARE} of the window less `max_tokens`),
 * the oldest `tool_result` contents are cleared, each replaced by a note that
 * names its command and what was cleared, until the request is back under
 * {@link COMPACTED_SHARE}; Claude is told in the same request (a note at the
 * end of the last user message, which the workflow keeps). Never cleared:
 * the task (message 0), the last {@link KEEP_RECENT_MESSAGES} messages (the
 * latest turns and any pending `tool_use`/`tool_result` pair), and every
 * non-`tool_result` block (text, `tool_use`, thinking blocks go back exactly
 * as received). Clearing is sticky (`clearedBefore` only grows) and done in
 * one large step, so the cached prefix stays the same for many turns.
 *
 * Tokens are counted by the API: the last response's `usage` plus
 * `/v1/messages/count_tokens` for what is new, or for the whole request when
 * no usage applies; a request whose UTF-8 size is below the threshold needs
 * no count (a token covers at least one byte).
 */
import type { ContentBlock, Message, ToolResultBlock, ToolUseBlock } from '../contract';
import { isToolResult, isToolUse } from '../contract';
import { displayCommand } from '../shared/display';

/** Clearing starts when a request's tokens pass this share of (context window − `max_tokens`). */
export const NEAR_WINDOW_SHARE = 0.9;
/** Clearing goes on until the request is under this share of (context window − `max_tokens`). */
export const COMPACTED_SHARE = 0.5;
/** The newest messages are never cleared: the latest two turns (assistant + user each). */
export const KEEP_RECENT_MESSAGES = 4;
/** Tokens of framing a request holds besides its content bytes (roles, tool schema), added to the byte bound. */
const FRAMING_TOKENS_PER_MESSAGE = 8;
/** Count rounds when clearing, at most (each one `count_tokens` call). */
const MAX_COUNT_ROUNDS = 4;

const CLEARED_PREFIX = '[output cleared to keep the conversation within the context window: ';

/** Counts the tokens of a request holding `messages` (with the run's system prompt and tools). */
export type CountTokens = (messages: Message[], options?: { bare?: boolean }) => Promise<number>;

/** What {@link fitToWindow} decided. */
export interface FittedRequest {
  /** The messages to send (cleared outputs replaced by notes; the notice appended when there is one). */
  messages: Message[];
  /** `tool_result` contents before this index are cleared. */
  clearedBefore: number;
  /** The note appended to the last user message when this request cleared more. */
  notice?: string;
  /** Tokens counted or bounded for the request (null when only the byte bound was used). */
  countedTokens: number | null;
}

/** The request's size facts that decide whether to count. */
export interface WindowFacts {
  contextWindow: number;
  maxTokens: number;
  /** UTF-8 bytes of the system prompt and tools. */
  fixedBytes: number;
  /** Outputs already cleared before this index. */
  clearedBefore: number;
  /** The last request's tokens plus its answer's, when the messages it held are unchanged; and how many it held. */
  previous?: { tokens: number; length: number };
}

/**
 * Fits `conversation` to the window (module doc).
 * @param count the API's token count (`/v1/messages/count_tokens`)
 * @throws whatever `count` throws (the caller maps API errors)
 */
export async function fitToWindow(conversation: Message[], facts: WindowFacts, count: CountTokens): Promise<FittedRequest> {
  const limit = facts.contextWindow - facts.maxTokens;
  const trigger = Math.floor(limit * NEAR_WINDOW_SHARE);
  let view = clearedView(conversation, facts.clearedBefore);
  if (byteBound(view, facts.fixedBytes) <= trigger) return { messages: view, clearedBefore: facts.clearedBefore, countedTokens: null };

  let tokens = await estimate(view, facts, count);
  if (tokens <= trigger) return { messages: view, clearedBefore: facts.clearedBefore, countedTokens: tokens };

  const target = Math.floor(limit * COMPACTED_SHARE);
  const protectFrom = Math.max(1, conversation.length - KEEP_RECENT_MESSAGES);
  let clearedBefore = Math.max(1, facts.clearedBefore);
  for (let round = 0; round < MAX_COUNT_ROUNDS && tokens > target && clearedBefore < protectFrom; round++) {
    // Tokens per byte of this request, to pick how far to clear; the count then checks it.
    const perByte = tokens / Math.max(1, jsonBytes(view));
    let saved = 0;
    while (clearedBefore < protectFrom && tokens - saved * perByte > target) {
      saved += savedBytes(conversation, clearedBefore);
      clearedBefore++;
    }
    view = clearedView(conversation, clearedBefore);
    tokens = await count(view);
  }
  if (clearedBefore === facts.clearedBefore) return { messages: view, clearedBefore, countedTokens: tokens };
  const cleared = clearedOutputs(conversation, facts.clearedBefore, clearedBefore);
  const notice =
    `[agent-jobs: this conversation neared the model's context window (${facts.contextWindow} tokens), so the outputs of ` +
    `${cleared} earlier command${cleared === 1 ? '' : 's'} (in messages ${Math.max(1, facts.clearedBefore)}–${clearedBefore - 1}) ` +
    'were cleared; each cleared result names its command. Run a command again if you need its output.]';
  return { messages: withNotice(view, notice), clearedBefore, notice, countedTokens: tokens };
}

/** The request's tokens: the last usage plus a count of what is new, or a count of the whole request. */
async function estimate(view: Message[], facts: WindowFacts, count: CountTokens): Promise<number> {
  const previous = facts.previous;
  if (previous === undefined || previous.length > view.length) return count(view);
  // The previous answer (message previous.length) was counted as output tokens.
  const fresh = view.slice(previous.length + 1);
  if (fresh.length === 0) return previous.tokens;
  const text = fresh.map((m) => textForCount(m)).join('\n');
  return previous.tokens + (await count([{ role: 'user', content: text }], { bare: true }));
}

/** A message's content as plain text (for counting what is new on its own: a lone `tool_result` is not a valid request). */
function textForCount(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content.map((b) => (isToolResult(b) ? b.content : JSON.stringify(b))).join('\n');
}

/** An upper bound of a request's tokens from its UTF-8 size (module doc). */
function byteBound(view: Message[], fixedBytes: number): number {
  return fixedBytes + jsonBytes(view) + FRAMING_TOKENS_PER_MESSAGE * (view.length + 1);
}

/** UTF-8 bytes of the messages' JSON. */
function jsonBytes(messages: Message[]): number {
  return Buffer.byteLength(JSON.stringify(messages), 'utf8');
}

/** The conversation with the `tool_result` contents of messages 1…clearedBefore−1 replaced by notes (the input is not changed). */
export function clearedView(conversation: Message[], clearedBefore: number): Message[] {
  if (clearedBefore <= 1) return conversation;
  return conversation.map((message, i) => (i < clearedBefore ? clearedMessage(conversation, i) : message));
}

/** Message `i` with its `tool_result` contents replaced by notes (the task, message 0, and messages without results are returned as they are). */
function clearedMessage(conversation: Message[], i: number): Message {
  const message = conversation[i]!;
  if (i === 0 || message.role !== 'user' || typeof message.content === 'string' || !message.content.some(isToolResult)) return message;
  const uses = toolUsesById(conversation[i - 1]);
  return { ...message, content: message.content.map((b) => (isToolResult(b) ? clearedResult(b, uses.get(b.tool_use_id)) : b)) };
}

/** A cleared `tool_result`: a note naming the command and the size of what was cleared (an `is_error` flag is kept). */
function clearedResult(block: ToolResultBlock, use: ToolUseBlock | undefined): ToolResultBlock {
  const content = typeof block.content === 'string' ? block.content : JSON.stringify(block.content);
  const input = (use?.input ?? {}) as { command?: unknown; restart?: unknown };
  const what =
    typeof input.command === 'string'
      ? `\`${displayCommand(input.command, { maxChars: 200 }).text}\``
      : input.restart === true
        ? 'the restart'
        : 'the tool call';
  return { ...block, content: `${CLEARED_PREFIX}${what} gave ${content.length} characters]` };
}

/** The `tool_use` blocks of a message by id. */
function toolUsesById(message: Message | undefined): Map<string, ToolUseBlock> {
  const blocks: ContentBlock[] = message && typeof message.content !== 'string' ? message.content : [];
  return new Map(blocks.filter(isToolUse).map((u) => [u.id, u]));
}

/** Bytes saved by clearing message `i`'s `tool_result` contents. */
function savedBytes(conversation: Message[], i: number): number {
  const before = conversation[i]!;
  const after = clearedMessage(conversation, i);
  return before === after ? 0 : Math.max(0, jsonBytes([before]) - jsonBytes([after]));
}

/** How many outputs of messages from…to−1 are newly cleared. */
function clearedOutputs(conversation: Message[], from: number, to: number): number {
  let n = 0;
  for (let i = Math.max(1, from); i < to; i++) {
    const m = conversation[i]!;
    if (m.role === 'user' && typeof m.content !== 'string') n += m.content.filter(isToolResult).length;
  }
  return n;
}

/** The view with `notice` as a text block at the end of its last message (a user message). */
function withNotice(view: Message[], notice: string): Message[] {
  const last = view[view.length - 1]!;
  const blocks: ContentBlock[] = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
  return [...view.slice(0, -1), { ...last, content: [...blocks, { type: 'text', text: notice }] }];
}

/** Prompt cache lifetime of a breakpoint. */
export type CacheTtl = '5m' | '1h';

/** `cache_control` of a breakpoint (the 5-minute TTL is the API's default and is not spelled). */
export function cacheControl(ttl: CacheTtl): { type: 'ephemeral'; ttl?: '1h' } {
  return ttl === '1h' ? { type: 'ephemeral', ttl: '1h' } : { type: 'ephemeral' };
}

/**
 * Puts rolling `cache_control` breakpoints on the last block that may carry one (not a
 * thinking block, not an empty text; a string content carries none) of the last message, and of message `previousEnd`
 * (the last message of the previous request, so its cached prefix is found even when
 * this turn added more blocks than the API looks back over). Returns new messages; the
 * input is not changed. With the system prompt's breakpoint that makes at most 3 of
 * the API's 4.
 */
export function withCacheBreakpoints(messages: Message[], previousEnd: number | undefined, ttl: CacheTtl): Message[] {
  const at = new Set([messages.length - 1]);
  if (previousEnd !== undefined && previousEnd >= 0 && previousEnd < messages.length - 1) at.add(previousEnd);
  return messages.map((message, i) => (at.has(i) ? withBreakpoint(message, ttl) : message));
}

/** A message with `cache_control` on its last eligible block, or unchanged when it has none. */
function withBreakpoint(message: Message, ttl: CacheTtl): Message {
  // A string content (the task) stays a string: the next request's breakpoint caches it.
  if (typeof message.content === 'string') return message;
  const blocks = message.content;
  for (let j = blocks.length - 1; j >= 0; j--) {
    const block = blocks[j]!;
    if (block.type === 'thinking' || block.type === 'redacted_thinking') continue;
    if (block.type === 'text' && (block as { text: string }).text.trim() === '') continue;
    const content = [...blocks];
    content[j] = { ...block, cache_control: cacheControl(ttl) };
    return { ...message, content };
  }
  return message;
}
