/**
 * Pure builders for what the scripted server sends: Anthropic-shaped error
 * bodies, completed assistant messages, and the Server-Sent Events of a
 * streamed message.
 */
import type { ParsedErrorEntry, ParsedMessageEntry } from './script';
import { signBlock } from './thinking';
import type { CacheUsage } from './tokens';

/**
 * The `error.type` the Messages API uses per HTTP status
 * (https://docs.anthropic.com/en/api/errors). Other statuses map to
 * `api_error` (5xx) or `invalid_request_error` (4xx).
 */
export const ERROR_TYPE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const DEFAULT_MESSAGE_BY_STATUS: Readonly<Record<number, string>> = {
  400: 'Invalid request',
  401: 'Invalid API key',
  403: 'Your API key does not have permission to use the specified resource',
  404: 'The requested resource could not be found',
  413: 'Request exceeds the maximum allowed number of bytes',
  429: 'Number of requests has exceeded your rate limit',
  500: 'Internal server error',
  529: 'Overloaded',
};

/** The error type for a status: {@link ERROR_TYPE_BY_STATUS}, else by class. */
export function errorTypeFor(status: number): string {
  return ERROR_TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');
}

/** An Anthropic error body: `{"type":"error","error":{"type","message"},"request_id"}`. */
export interface AnthropicErrorBody {
  type: 'error';
  error: { type: string; message: string };
  request_id?: string;
}

/**
 * Builds an Anthropic-shaped error body.
 *
 * @param status the HTTP status; picks `error.type`
 * @param message `error.message`; default a generic text for the status
 * @param requestId copied to `request_id`, as the API does
 */
export function errorBody(status: number, message?: string, requestId?: string): AnthropicErrorBody {
  const body: AnthropicErrorBody = {
    type: 'error',
    error: { type: errorTypeFor(status), message: message ?? DEFAULT_MESSAGE_BY_STATUS[status] ?? `HTTP ${status}` },
  };
  if (requestId !== undefined) body.request_id = requestId;
  return body;
}

/** A completed assistant message, as the Messages API returns it. */
export interface CompletedMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: Array<{ type: string; [key: string]: unknown }>;
  stop_reason: string;
  stop_sequence: string | null;
  stop_details: unknown;
  container: unknown;
  usage: {
    input_tokens: number;
    output_tokens: number;
    cache_creation_input_tokens: number | null;
    cache_read_input_tokens: number | null;
    [key: string]: unknown;
  };
}

/**
 * Output tokens of an answer when the script gives none: about 4 characters
 * (UTF-16 code units) of its JSON per token, at least 1. A rough size
 * estimate, not a tokenizer; input tokens follow `tokens.ts` instead.
 */
export function estimateTokens(value: unknown): number {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return Math.max(1, Math.ceil(text.length / 4));
}

/**
 * Fills in what a scripted message leaves out.
 *
 * @param entry the scripted message
 * @param ids `messageId` used when the entry has no `id`; `toolUseId(index)`
 *   names a `tool_use` block without `id` (stable per step and block index,
 *   so a retried step gets the same ids)
 * @param request `model` echoed when the entry has none; `usage` the
 *   computed input-side usage (see `tokens.ts`), each field of it used when
 *   the entry's usage does not give that field
 * @returns the message; its `thinking` / `redacted_thinking` blocks signed
 *   for their index (see `thinking.ts`), `output_tokens` estimated over the
 *   signed content unless scripted
 */
export function completeMessage(
  entry: ParsedMessageEntry,
  ids: { messageId: string; toolUseId: (index: number) => string },
  request: { model: string; usage: CacheUsage },
): CompletedMessage {
  const content = entry.content.map((block, index) =>
    block.type === 'tool_use' && typeof block['id'] !== 'string' ? { ...block, id: ids.toolUseId(index) } : signBlock({ ...block }, index),
  );
  const stopReason = entry.stop_reason ?? (content.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  return {
    id: entry.id ?? ids.messageId,
    type: 'message',
    role: 'assistant',
    model: entry.model ?? request.model,
    content,
    stop_reason: stopReason,
    stop_sequence: entry.stop_sequence ?? null,
    stop_details: entry.stop_details ?? null,
    container: entry.container ?? null,
    usage: {
      input_tokens: request.usage.input_tokens,
      output_tokens: estimateTokens(content),
      cache_creation_input_tokens: request.usage.cache_creation_input_tokens,
      cache_read_input_tokens: request.usage.cache_read_input_tokens,
      cache_creation: { ...request.usage.cache_creation },
      ...entry.usage,
    },
  };
}

/** One Server-Sent Event: `event: <name>` and its JSON `data`. */
export interface SseEvent {
  event: string;
  data: Record<string, unknown>;
}

/** Characters per delta event when a text or JSON string is streamed. */
const CHUNK_CHARS = 16;

/** Splits text into chunks of {@link CHUNK_CHARS} code points (never inside a surrogate pair); at least one chunk. */
function chunks(text: string): string[] {
  const points = Array.from(text);
  const out: string[] = [];
  for (let i = 0; i < points.length; i += CHUNK_CHARS) out.push(points.slice(i, i + CHUNK_CHARS).join(''));
  return out.length > 0 ? out : [''];
}

/**
 * The event sequence the Messages API streams for `message`: `message_start`
 * (empty content, `stop_reason: null`), a `ping`, per block
 * `content_block_start` / `content_block_delta`s / `content_block_stop`,
 * then `message_delta` (stop reason, final usage) and `message_stop`.
 * Text streams as `text_delta`, tool input as `input_json_delta`, thinking as
 * `thinking_delta` + `signature_delta`; other block types arrive whole in
 * `content_block_start`. The SDK's `MessageStream.finalMessage()` rebuilds
 * `message` from these events.
 */
export function streamEvents(message: CompletedMessage): SseEvent[] {
  const events: SseEvent[] = [];
  const push = (data: Record<string, unknown> & { type: string }): void => {
    events.push({ event: data.type, data });
  };
  const { usage } = message;
  push({
    type: 'message_start',
    message: {
      ...message,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      stop_details: null,
      usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) },
    },
  });
  push({ type: 'ping' });

  message.content.forEach((block, index) => {
    const delta = (d: Record<string, unknown>): void => push({ type: 'content_block_delta', index, delta: d });
    if (block.type === 'text' && typeof block['text'] === 'string') {
      push({ type: 'content_block_start', index, content_block: { ...block, text: '' } });
      for (const text of chunks(block['text'])) delta({ type: 'text_delta', text });
    } else if (block.type === 'tool_use' || block.type === 'server_tool_use') {
      push({ type: 'content_block_start', index, content_block: { ...block, input: {} } });
      for (const partial_json of chunks(JSON.stringify(block['input'] ?? {}))) delta({ type: 'input_json_delta', partial_json });
    } else if (block.type === 'thinking' && typeof block['thinking'] === 'string') {
      push({ type: 'content_block_start', index, content_block: { ...block, thinking: '', signature: '' } });
      for (const thinking of chunks(block['thinking'])) delta({ type: 'thinking_delta', thinking });
      delta({ type: 'signature_delta', signature: block['signature'] ?? '' });
    } else {
      push({ type: 'content_block_start', index, content_block: block });
    }
    push({ type: 'content_block_stop', index });
  });

  push({
    type: 'message_delta',
    delta: {
      stop_reason: message.stop_reason,
      stop_sequence: message.stop_sequence,
      stop_details: message.stop_details,
      container: message.container,
    },
    usage: {
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      cache_creation_input_tokens: usage.cache_creation_input_tokens,
      cache_read_input_tokens: usage.cache_read_input_tokens,
    },
  });
  push({ type: 'message_stop' });
  return events;
}

/** Serializes one event in the SSE wire format. */
export function formatSse(event: SseEvent): string {
  return `event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`;
}

/**
 * The data of the `event: error` a `stream_error` fault sends: its scripted
 * `body` when it has one, else the API's overloaded body
 * (`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
 * with `request_id`).
 */
export function streamErrorBody(fault: ParsedErrorEntry, requestId: string): Record<string, unknown> {
  if (fault.body !== undefined && typeof fault.body === 'object' && fault.body !== null) return fault.body as Record<string, unknown>;
  return { ...errorBody(529, undefined, requestId) };
}

/** The HTTP status of an error body by its `error.type` ({@link ERROR_TYPE_BY_STATUS} read backwards); 529 when unknown. */
export function statusOfErrorType(body: Record<string, unknown>): number {
  const type = (body['error'] as { type?: unknown } | undefined)?.type;
  const found = Object.entries(ERROR_TYPE_BY_STATUS).find(([, t]) => t === type);
  return found ? Number(found[0]) : 529;
}
