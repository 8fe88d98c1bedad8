/**
 * Extended thinking in the scripted server: the `thinking` request option's
 * rules, the signatures of the thinking blocks the server answers with, and
 * their check when a client sends them back.
 *
 * Signatures: the server signs each `thinking` block it sends with an
 * HMAC-SHA256 (key: a random secret of this server process) over the
 * block's `thinking` text and its index in the answer's `content`;
 * `signature` is that MAC in base64, whatever the script gave. A
 * `redacted_thinking` block's `data` becomes base64 of MAC ‖ the script's
 * `data` (UTF-8), the MAC taken over that payload and the index. A block sent
 * back with other text, at another index, with a signature of another block
 * or without one fails the check, as with the real API, whose signatures
 * are opaque and bound to the content. Signatures are valid across the
 * servers of one process and die with it.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/** The secret the MACs are keyed with: random, per process. */
const SECRET = randomBytes(32);

/** MAC length, bytes (SHA-256). */
const MAC_BYTES = 32;

function mac(kind: 'thinking' | 'redacted_thinking', index: number, payload: Buffer): Buffer {
  return createHmac('sha256', SECRET).update(`${kind}\u0000${index}\u0000`).update(payload).digest();
}

/**
 * The signature of a `thinking` block.
 *
 * @param thinking the block's `thinking` text
 * @param index the block's index in the assistant message's `content`
 * @returns base64 text (44 characters)
 */
export function signThinking(thinking: string, index: number): string {
  return mac('thinking', index, Buffer.from(thinking, 'utf8')).toString('base64');
}

/**
 * The `data` of a `redacted_thinking` block: base64 of MAC ‖ `payload`.
 *
 * @param payload the script's `data`, kept inside (UTF-8)
 * @param index the block's index in the assistant message's `content`
 */
export function sealRedactedThinking(payload: string, index: number): string {
  const bytes = Buffer.from(payload, 'utf8');
  return Buffer.concat([mac('redacted_thinking', index, bytes), bytes]).toString('base64');
}

/** Whether `signature` is what {@link signThinking} gives for this text and index. */
export function verifyThinking(thinking: string, index: number, signature: string): boolean {
  const given = Buffer.from(signature, 'base64');
  if (given.toString('base64') !== signature || given.length !== MAC_BYTES) return false;
  return timingSafeEqual(given, mac('thinking', index, Buffer.from(thinking, 'utf8')));
}

/** Whether `data` was made by {@link sealRedactedThinking} for this index (any change to it fails). */
export function verifyRedactedThinking(data: string, index: number): boolean {
  const bytes = Buffer.from(data, 'base64');
  if (bytes.toString('base64') !== data || bytes.length < MAC_BYTES) return false;
  return timingSafeEqual(bytes.subarray(0, MAC_BYTES), mac('redacted_thinking', index, bytes.subarray(MAC_BYTES)));
}

/**
 * Signs the thinking blocks of an answer (see the module doc): `thinking`
 * gets `signature`, `redacted_thinking` gets sealed `data`; other blocks are
 * returned as they are.
 */
export function signBlock<B extends { type: string; [key: string]: unknown }>(block: B, index: number): B {
  if (block.type === 'thinking' && typeof block['thinking'] === 'string') {
    return { ...block, signature: signThinking(block['thinking'], index) };
  }
  if (block.type === 'redacted_thinking' && typeof block['data'] === 'string') {
    return { ...block, data: sealRedactedThinking(block['data'], index) };
  }
  return block;
}

/** Whether a request's `thinking` option turns thinking on (`enabled` or `adaptive`). */
export function thinkingOn(thinking: unknown): boolean {
  const type = (thinking as { type?: unknown } | null | undefined)?.type;
  return type === 'enabled' || type === 'adaptive';
}

/** The thinking types the API accepts in `thinking.type`. */
const THINKING_TYPES = ['adaptive', 'between_tools', 'disabled', 'enabled'];

/** Smallest `thinking.budget_tokens` the API accepts, tokens. */
export const MIN_THINKING_BUDGET = 1024;

/**
 * The API's rules on the `thinking` option and what it excludes:
 * `{type: 'enabled', budget_tokens}` needs an integer budget of at least
 * {@link MIN_THINKING_BUDGET} and (when `maxTokens` is given, i.e. not for
 * count_tokens) below `max_tokens`; with thinking on, `temperature` may only
 * be 1. `disabled`, `adaptive` and `between_tools` are accepted.
 *
 * @returns the 400 message, worded like the API's, or undefined
 */
export function checkThinkingOption(
  body: { thinking?: unknown; temperature?: unknown },
  maxTokens: number | undefined,
): string | undefined {
  const thinking = body.thinking;
  if (thinking === undefined || thinking === null) return undefined;
  if (typeof thinking !== 'object' || Array.isArray(thinking)) return 'thinking: Input should be an object';
  const t = thinking as Record<string, unknown>;
  if (typeof t['type'] !== 'string' || !THINKING_TYPES.includes(t['type'])) {
    return (
      `thinking: Input tag '${String(t['type'])}' found using 'type' does not match any of the expected tags: ` +
      THINKING_TYPES.map((x) => `'${x}'`).join(', ')
    );
  }
  if (t['type'] === 'enabled') {
    const budget = t['budget_tokens'];
    if (budget === undefined) return 'thinking.enabled.budget_tokens: Field required';
    if (typeof budget !== 'number' || !Number.isInteger(budget)) return 'thinking.enabled.budget_tokens: Input should be a valid integer';
    if (budget < MIN_THINKING_BUDGET) {
      return `thinking.enabled.budget_tokens: Input should be greater than or equal to ${MIN_THINKING_BUDGET}`;
    }
    if (maxTokens !== undefined && budget >= maxTokens) {
      return (
        '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at ' +
        'https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size'
      );
    }
  }
  if (thinkingOn(thinking) && body.temperature !== undefined && body.temperature !== 1) {
    return (
      '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at ' +
      'https://docs.claude.com/en/docs/build-with-claude/extended-thinking#feature-compatibility'
    );
  }
  return undefined;
}

type Block = Record<string, unknown>;

/**
 * Checks the thinking blocks of the assistant messages sent back: each
 * `thinking` must carry the signature the server made for its exact text and
 * index, each `redacted_thinking` the server's `data` for its index.
 *
 * @returns the 400 message (e.g. "messages.1.content.0: Invalid `signature` in `thinking` block"), or undefined
 */
export function checkThinkingSignatures(messages: ReadonlyArray<{ role: string; content: unknown }>): string | undefined {
  for (const [i, message] of messages.entries()) {
    if (message.role !== 'assistant' || !Array.isArray(message.content)) continue;
    for (const [j, raw] of (message.content as unknown[]).entries()) {
      if (typeof raw !== 'object' || raw === null) continue;
      const block = raw as Block;
      if (block['type'] === 'thinking') {
        if (typeof block['thinking'] !== 'string') return `messages.${i}.content.${j}.thinking.thinking: Field required`;
        if (typeof block['signature'] !== 'string') return `messages.${i}.content.${j}.thinking.signature: Field required`;
        if (!verifyThinking(block['thinking'], j, block['signature'])) {
          return `messages.${i}.content.${j}: Invalid \`signature\` in \`thinking\` block`;
        }
      } else if (block['type'] === 'redacted_thinking') {
        if (typeof block['data'] !== 'string') return `messages.${i}.content.${j}.redacted_thinking.data: Field required`;
        if (!verifyRedactedThinking(block['data'], j)) {
          return `messages.${i}.content.${j}: Invalid \`data\` in \`redacted_thinking\` block`;
        }
      }
    }
  }
  return undefined;
}

/**
 * The API's rule for a tool-use loop with thinking on: when the last message
 * is a user message holding `tool_result` blocks, the assistant message
 * before it must start with a `thinking` or `redacted_thinking` block.
 *
 * The scripted server applies it only when `answeredWithThinking` says that
 * assistant message was answered by a script entry that starts with a
 * thinking block (the server decides by the step rule), so scripts that
 * never think are not affected.
 *
 * @param answeredWithThinking whether the final assistant message (its step = the assistant messages before it) was scripted with a leading thinking block
 * @returns the 400 message, worded like the API's, or undefined
 */
export function checkThinkingToolLoop(
  request: { thinking?: unknown; messages: ReadonlyArray<{ role: string; content: unknown }> },
  answeredWithThinking: (step: number) => boolean,
): string | undefined {
  if (!thinkingOn(request.thinking)) return undefined;
  const { messages } = request;
  const last = messages.at(-1);
  if (last?.role !== 'user' || !Array.isArray(last.content)) return undefined;
  if (!(last.content as unknown[]).some((b) => (b as Block | null)?.['type'] === 'tool_result')) return undefined;
  const index = messages.length - 2;
  const assistant = messages[index];
  if (assistant?.role !== 'assistant') return undefined;
  const step = messages.slice(0, index).filter((m) => m.role === 'assistant').length;
  if (!answeredWithThinking(step)) return undefined;
  const first = (Array.isArray(assistant.content) ? (assistant.content as unknown[])[0] : { type: 'text' }) as Block | undefined;
  const type = typeof first?.['type'] === 'string' ? first['type'] : 'nothing';
  if (type === 'thinking' || type === 'redacted_thinking') return undefined;
  return (
    `messages.${index}.content.0.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${type}\`. ` +
    'When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of ' +
    '`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this ' +
    'requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking'
  );
}
