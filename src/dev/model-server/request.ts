/**
 * Checks on a `POST /v1/messages` body that the real Messages API also makes,
 * so that a transcript the real API would reject with a 400 is rejected here
 * too instead of passing silently in tests. Messages follow the API's wording
 * closely but not byte for byte.
 */
import { createHash } from 'node:crypto';
import { checkThinkingOption, checkThinkingSignatures } from './thinking';
import { checkCacheControl } from './tokens';

/** The parts of a request body the server reads. */
export interface MessagesRequest {
  model: string;
  /** Absent in a `count_tokens` body. */
  max_tokens: number;
  messages: Array<{ role: string; content: unknown }>;
  stream?: boolean;
  system?: unknown;
  tools?: unknown;
  metadata?: { user_id?: unknown };
  thinking?: unknown;
  temperature?: unknown;
  [key: string]: unknown;
}

type Block = { type?: unknown; [key: string]: unknown };

function blocksOf(content: unknown): Block[] {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? (content.filter((b) => typeof b === 'object' && b !== null) as Block[]) : [];
}

/**
 * Validates a parsed request body: its shape, the transcript rules below,
 * the `thinking` option (`thinking.ts`), the `cache_control` markers
 * (`tokens.ts`) and the signatures of thinking blocks sent back. The rules
 * that need the script (context window, thinking in a tool-use loop) are the
 * server's.
 *
 * @param kind `messages` (default) for `POST /v1/messages`; `count_tokens`
 *   for `POST /v1/messages/count_tokens`, which takes no `max_tokens`
 * @param api `legacy` (default) checks the `thinking` option and the
 *   signatures here; `today` leaves both to `today.ts`
 * @returns `{body}` when acceptable, else `{problem}` worded like the API's 400 message
 */
export function checkMessagesRequest(
  body: unknown,
  kind: 'messages' | 'count_tokens' = 'messages',
  api: 'legacy' | 'today' = 'legacy',
): { body: MessagesRequest } | { problem: string } {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) {
    return { problem: 'The request body must be a JSON object' };
  }
  const b = body as Record<string, unknown>;
  if (typeof b['model'] !== 'string' || b['model'] === '') return { problem: 'model: Field required' };
  if (kind === 'messages' && (typeof b['max_tokens'] !== 'number' || !Number.isInteger(b['max_tokens']) || b['max_tokens'] < 1)) {
    return { problem: 'max_tokens: Field required (a positive integer)' };
  }
  const system = b['system'];
  if (system !== undefined && typeof system !== 'string') {
    const ok =
      Array.isArray(system) &&
      system.every((s) => typeof s === 'object' && s !== null && (s as Block).type === 'text' && typeof (s as Block)['text'] === 'string');
    if (!ok) return { problem: 'system: Input should be a valid string or a list of text blocks' };
  }
  const tools = b['tools'];
  if (tools !== undefined && !(Array.isArray(tools) && tools.every((t) => typeof t === 'object' && t !== null && !Array.isArray(t)))) {
    return { problem: 'tools: Input should be a valid list of tool definitions' };
  }
  const messages = b['messages'];
  if (!Array.isArray(messages)) return { problem: 'messages: Field required' };
  if (messages.length === 0) return { problem: 'messages: at least one message is required' };

  for (const [i, m] of messages.entries()) {
    if (typeof m !== 'object' || m === null) return { problem: `messages.${i}: Input should be an object` };
    const role = (m as Record<string, unknown>)['role'];
    if (role !== 'user' && role !== 'assistant') {
      return { problem: `messages.${i}.role: Input should be 'user' or 'assistant'` };
    }
    const content = (m as Record<string, unknown>)['content'];
    if (typeof content !== 'string' && !Array.isArray(content)) {
      return { problem: `messages.${i}.content: Input should be a string or a list of content blocks` };
    }
    const isLast = i === messages.length - 1;
    const empty = typeof content === 'string' ? content === '' : content.length === 0;
    if (empty && !(isLast && role === 'assistant')) {
      return { problem: `messages.${i}: all messages must have non-empty content except for the optional final assistant message` };
    }
    for (const [j, block] of blocksOf(content).entries()) {
      if (block.type === 'text' && block['text'] === '' && Array.isArray(content)) {
        if (block['cache_control'] !== undefined && block['cache_control'] !== null) {
          return { problem: `messages.${i}.content.${j}.text: cache_control cannot be set for empty text blocks` };
        }
        return { problem: `messages.${i}.content.${j}.text: text content blocks must be non-empty` };
      }
    }
  }

  const pairing = checkToolPairing(messages as Array<{ role: string; content: unknown }>);
  if (pairing) return { problem: pairing };
  // In `today` mode the thinking option and the thinking blocks sent back follow the per-model rules of today.ts.
  const problem =
    (api === 'legacy' ? checkThinkingOption(b, kind === 'messages' ? (b['max_tokens'] as number) : undefined) : undefined) ??
    checkCacheControl({ system, tools, messages }) ??
    (api === 'legacy' ? checkThinkingSignatures(messages as Array<{ role: string; content: unknown }>) : undefined);
  if (problem) return { problem };
  return { body: b as MessagesRequest };
}

/**
 * The API's tool rules: every `tool_use` is answered by a `tool_result` in
 * the very next (user) message; a `tool_result` must answer a `tool_use` of
 * the message just before; in that user message the `tool_result` blocks come
 * first, text after.
 */
function checkToolPairing(messages: Array<{ role: string; content: unknown }>): string | undefined {
  for (const [i, message] of messages.entries()) {
    const blocks = blocksOf(message.content);
    const previous = i > 0 ? blocksOf(messages[i - 1]?.content) : [];
    const offered = new Set(
      messages[i - 1]?.role === 'assistant' ? previous.filter((b) => b.type === 'tool_use').map((b) => String(b['id'])) : [],
    );
    let seenOther = false;
    for (const [j, block] of blocks.entries()) {
      if (block.type !== 'tool_result') {
        seenOther = true;
        continue;
      }
      const id = String(block['tool_use_id']);
      if (message.role !== 'user' || !offered.has(id)) {
        return (
          `messages.${i}.content.${j}: unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${id}. ` +
          'Each `tool_result` block must have a corresponding `tool_use` block in the previous message.'
        );
      }
      if (seenOther) {
        return `messages.${i}.content.${j}: \`tool_result\` blocks must come first in the content array, before any other block`;
      }
    }

    if (message.role !== 'assistant') continue;
    const uses = blocks.filter((b) => b.type === 'tool_use').map((b) => String(b['id']));
    if (uses.length === 0 || i === messages.length - 1) continue;
    const next = messages[i + 1];
    const answered = new Set(
      next?.role === 'user'
        ? blocksOf(next.content)
            .filter((b) => b.type === 'tool_result')
            .map((b) => String(b['tool_use_id']))
        : [],
    );
    const missing = uses.filter((id) => !answered.has(id));
    if (missing.length > 0) {
      return (
        `messages.${i}: \`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. ` +
        'Each `tool_use` block must have a corresponding `tool_result` block in the next message.'
      );
    }
  }
  return undefined;
}

/** The step of a request: how many assistant messages it already holds. */
export function stepOf(request: MessagesRequest): number {
  return request.messages.filter((m) => m.role === 'assistant').length;
}

/**
 * A short, stable key for the conversation a request belongs to: a hash of
 * `system`, `metadata.user_id` and the first message. Requests of one agent
 * run share it on every turn and on retries, so per-step error counters and
 * generated ids are kept per conversation, and concurrent runs with different
 * tasks do not consume each other's injected errors.
 */
export function conversationKey(request: MessagesRequest): string {
  // Breakpoints move from request to request; they are not part of what a conversation is.
  const basis = JSON.stringify([request.system ?? null, request.metadata?.user_id ?? null, request.messages[0] ?? null], dropCacheControl);
  return createHash('sha256').update(basis).digest('hex').slice(0, 12);
}

/** A `JSON.stringify` replacer that leaves out every `cache_control` field. */
function dropCacheControl(key: string, value: unknown): unknown {
  return key === 'cache_control' ? undefined : value;
}

/**
 * `value` (JSON: a request's `system`, `tools` or `messages`) without its `cache_control`
 * markers, at any depth: what the API compares when it looks for a cached prefix (breakpoints
 * move from request to request). A deep copy; `undefined` stays `undefined`.
 */
export function withoutCacheControl<T>(value: T): T {
  return value === undefined ? value : (JSON.parse(JSON.stringify(value, dropCacheControl)) as T);
}
