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
 *
 * Bound signatures (`"api": "today"` scripts, see `today.ts`): the same
 * HMAC, extended to bind the block to the model that made it and to its
 * prefix, as preserved thinking does
 * (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking):
 * the signature (a `redacted_thinking` block's `data`) is base64 of
 * `0x03 ‖ len(model) ‖ model ‖ nonce(8) ‖ contentMac(16) ‖ predecessor(16) ‖ bindMac(32)`
 * (‖ the payload, for `redacted_thinking`). `contentMac` covers the block
 * kind, the model, the nonce (from the conversation, step and index: blocks
 * with the same text differ) and the text, so an edited text is an invalid signature;
 * `predecessor` is the `contentMac` of the thinking block before it in the
 * transcript (zeros for none); `bindMac` covers both and {@link prefixDigest}
 * of everything before the block except thinking blocks. A block passes the
 * prefix check when that digest is unchanged and the thinking block now
 * before it is its recorded predecessor, or there is none (a leading run of
 * thinking blocks was removed). A process-wide record of each bound
 * block's per-part digests lets the 400 name what differs.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { canonicalBlock } from './tokens';

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

/** First byte of a bound signature. */
const BOUND_VERSION = 0x03;
/** Bytes of the content MAC kept in a bound signature, and of the predecessor it records. */
const CONTENT_MAC_BYTES = 16;
/** Bytes of the per-block nonce (from the conversation, step and index), so blocks with equal text differ. */
const NONCE_BYTES = 8;
/** The recorded predecessor of a block that had none. */
const NO_PREDECESSOR = Buffer.alloc(CONTENT_MAC_BYTES);
/** The predecessor of a block that follows a block whose signature is not ours: equals no recorded value. */
const UNKNOWN_PREDECESSOR = Buffer.alloc(CONTENT_MAC_BYTES, 0xff);

/**
 * What a bound signature covers of a block's position (see {@link prefixDigest}):
 * digests of the top-level `system` and `tools`, of each earlier message and
 * of the blocks before it in its own message, all without thinking blocks;
 * and the content MAC of the thinking block just before it in the
 * transcript (`predecessor`, undefined when there is none).
 */
export interface PrefixDigest {
  system: string;
  tools: string;
  /** One digest per earlier message (role and its non-thinking content). */
  messages: string[];
  /** The non-thinking blocks before the block in its own message. */
  own: string;
  /** Digest of all of the above: what the binding MAC covers. */
  combined: string;
  predecessor: Buffer | undefined;
}

const isThinkingBlock = (block: unknown): boolean =>
  typeof block === 'object' && block !== null && ['thinking', 'redacted_thinking'].includes(String((block as { type?: unknown }).type));

/** A copy without `cache_control` markers and null-valued fields, keys sorted (the prefix comparison ignores both). */
function canonicalForBinding(value: unknown): unknown {
  const stripped = canonicalBlock(value);
  const dropNulls = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(dropNulls);
    if (typeof v !== 'object' || v === null) return v;
    const out: Record<string, unknown> = {};
    for (const [k, inner] of Object.entries(v)) if (inner !== null && inner !== undefined) out[k] = dropNulls(inner);
    return out;
  };
  return dropNulls(stripped);
}

function digest(value: unknown): string {
  return createHash('sha256')
    .update(JSON.stringify(value) ?? 'null')
    .digest('hex');
}

function contentList(content: unknown): unknown[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  return Array.isArray(content) ? content : [];
}

/** The last thinking block of `blocks`, or undefined. */
function lastThinkingBlock(blocks: unknown[]): unknown {
  for (let k = blocks.length - 1; k >= 0; k--) if (isThinkingBlock(blocks[k])) return blocks[k];
  return undefined;
}

const nonThinking = (blocks: unknown[]): unknown[] => blocks.filter((b) => !isThinkingBlock(b)).map(canonicalForBinding);

interface Envelope {
  kind: 'thinking' | 'redacted_thinking';
  sealed: string;
  model: string;
  nonce: Buffer;
  contentMac: Buffer;
  predecessor: Buffer;
  bindMac: Buffer;
  /** The payload a `redacted_thinking` envelope carries. */
  payload: Buffer;
}

/** Parses a block's bound signature (or sealed data); undefined when it is not one of this server's shape. */
function envelopeOf(block: unknown): Envelope | undefined {
  if (!isThinkingBlock(block)) return undefined;
  const b = block as Record<string, unknown>;
  const kind = b['type'] as Envelope['kind'];
  const sealed = kind === 'thinking' ? b['signature'] : b['data'];
  if (typeof sealed !== 'string') return undefined;
  const bytes = Buffer.from(sealed, 'base64');
  if (bytes.toString('base64') !== sealed || bytes.length < 2 || bytes[0] !== BOUND_VERSION) return undefined;
  const nonceAt = 2 + bytes[1]!;
  const macsAt = nonceAt + NONCE_BYTES;
  const payloadAt = macsAt + 2 * CONTENT_MAC_BYTES + MAC_BYTES;
  if (bytes.length < payloadAt || (kind === 'thinking' && bytes.length !== payloadAt)) return undefined;
  return {
    kind,
    sealed,
    model: bytes.subarray(2, nonceAt).toString('utf8'),
    nonce: bytes.subarray(nonceAt, macsAt),
    contentMac: bytes.subarray(macsAt, macsAt + CONTENT_MAC_BYTES),
    predecessor: bytes.subarray(macsAt + CONTENT_MAC_BYTES, macsAt + 2 * CONTENT_MAC_BYTES),
    bindMac: bytes.subarray(macsAt + 2 * CONTENT_MAC_BYTES, payloadAt),
    payload: bytes.subarray(payloadAt),
  };
}

/**
 * The position of the block at `messages[i].content[j]`, as a bound
 * signature covers it: the top-level `system` (a string counts as one text
 * block), `tools`, every message before `i` and the blocks before `j` in
 * message `i`, each canonical (`cache_control` markers and null-valued
 * fields removed, keys sorted) and **without thinking blocks**; plus the
 * thinking block just before it. So moving a cache breakpoint, changing
 * `effort`, or removing a leading run of thinking blocks (oldest first)
 * keeps a block valid, while an edit of anything before it, or a thinking
 * block left out or moved between others, does not
 * (https://platform.claude.com/docs/en/build-with-claude/preserved-thinking/prefix-checks,
 * https://platform.claude.com/docs/en/models/fable-5-1/whats-new-fable-5-1).
 *
 * @param messages the transcript the indices refer to (after what the API ignores, e.g. before a compaction block, is removed)
 */
export function prefixDigest(
  request: { system?: unknown; tools?: unknown },
  messages: ReadonlyArray<{ role: string; content: unknown }>,
  i: number,
  j: number,
): PrefixDigest {
  return prefixIndex(request, messages)(i, j);
}

/**
 * {@link prefixDigest} for many blocks of one transcript: the digests of
 * `system`, `tools` and each message are computed once (a request that
 * sends back a block per turn stays linear in its size). The transcript
 * must not change between calls, except that blocks of the last message may
 * be replaced by their signed versions in order (as answers are signed).
 */
export function prefixIndex(
  request: { system?: unknown; tools?: unknown },
  messages: ReadonlyArray<{ role: string; content: unknown }>,
): (i: number, j: number) => PrefixDigest {
  const system = digest(contentList(request.system).map(canonicalForBinding));
  const tools = digest((Array.isArray(request.tools) ? request.tools : []).map(canonicalForBinding));
  const perMessage: string[] = [];
  const messageDigest = (k: number): string => {
    perMessage[k] ??= digest([messages[k]!.role, nonThinking(contentList(messages[k]!.content))]);
    return perMessage[k];
  };
  /** The last thinking block of each message before `i` (undefined: none), memoized. */
  const lastThinking: Array<unknown> = [];
  const lastThinkingOf = (k: number): unknown => {
    if (!(k in lastThinking)) lastThinking[k] = lastThinkingBlock(contentList(messages[k]!.content));
    return lastThinking[k];
  };
  return (i, j) => {
    const earlier = messages.slice(0, i).map((_, k) => messageDigest(k));
    const ownBlocks = contentList(messages[i]?.content).slice(0, j);
    const own = digest([messages[i]?.role ?? null, nonThinking(ownBlocks)]);
    let previous: unknown = lastThinkingBlock(ownBlocks);
    for (let k = i - 1; previous === undefined && k >= 0; k--) previous = lastThinkingOf(k);
    const predecessor = previous === undefined ? undefined : (envelopeOf(previous)?.contentMac ?? UNKNOWN_PREDECESSOR);
    return { system, tools, messages: earlier, own, combined: digest([system, tools, earlier, own]), predecessor };
  };
}

/** Per-part digests of every bound block signed by this process, by signature (or sealed data), for naming what differs. */
const BOUND_RECORDS = new Map<string, PrefixDigest>();

function contentMac(kind: 'thinking' | 'redacted_thinking', model: string, nonce: Buffer, payload: Buffer): Buffer {
  return createHmac('sha256', SECRET)
    .update(`bound-content\u0000${kind}\u0000${model}\u0000`)
    .update(nonce)
    .update(payload)
    .digest()
    .subarray(0, CONTENT_MAC_BYTES);
}

function bindMac(content: Buffer, predecessor: Buffer, prefix: string): Buffer {
  return createHmac('sha256', SECRET).update('bound-prefix\u0000').update(content).update(predecessor).update(prefix).digest();
}

/**
 * Signs a block for the `"api": "today"` mode (see the module doc): a
 * `thinking` block gets a bound `signature`, a `redacted_thinking` block a
 * bound `data` (the script's `data` sealed inside); other blocks are
 * returned unchanged.
 *
 * @param model the model that "produced" the block (the request's)
 * @param prefix {@link prefixDigest} of the block's position in the transcript the client will send back
 * @param unique what makes the block one of a kind, e.g. `conversation:step:index` (a retried step gets the same signatures)
 */
export function signBoundBlock<B extends { type: string; [key: string]: unknown }>(
  block: B,
  model: string,
  prefix: PrefixDigest,
  unique: string,
): B {
  const kind = block.type;
  if (kind !== 'thinking' && kind !== 'redacted_thinking') return block;
  const payload = Buffer.from(String(kind === 'thinking' ? block['thinking'] : block['data']), 'utf8');
  const modelBytes = Buffer.from(model, 'utf8');
  const nonce = createHash('sha256').update(unique).digest().subarray(0, NONCE_BYTES);
  const cMac = contentMac(kind, model, nonce, payload);
  const predecessor = prefix.predecessor ?? NO_PREDECESSOR;
  const envelope = Buffer.concat([
    Buffer.from([BOUND_VERSION, modelBytes.length]),
    modelBytes,
    nonce,
    cMac,
    predecessor,
    bindMac(cMac, predecessor, prefix.combined),
    ...(kind === 'redacted_thinking' ? [payload] : []),
  ]).toString('base64');
  BOUND_RECORDS.set(envelope, prefix);
  return kind === 'thinking' ? { ...block, signature: envelope } : { ...block, data: envelope };
}

/** What {@link verifyBoundBlock} found. */
export type BoundVerdict =
  /** Not a bound signature of this process, or the text / data was changed. */
  | { valid: false }
  /**
   * Made by this process for `model`. `bound`: the prefix still matches and
   * the thinking block before it is the one it followed (or none: a leading
   * run was removed). `changed` names what differs when not bound.
   */
  | { valid: true; model: string; bound: boolean; changed: string | undefined };

/**
 * Checks a `thinking` / `redacted_thinking` block sent back in `"api": "today"` mode.
 *
 * @param prefix {@link prefixDigest} of the block's position in the request
 * @param where for naming what changed: the block's message index in the transcript and that transcript's offset in the request
 */
export function verifyBoundBlock(block: Record<string, unknown>, prefix: PrefixDigest, where: { i: number; offset: number }): BoundVerdict {
  const envelope = envelopeOf(block);
  if (!envelope) return { valid: false };
  const text = block['thinking'];
  if (envelope.kind === 'thinking' && typeof text !== 'string') return { valid: false };
  const payload = envelope.kind === 'thinking' ? Buffer.from(text as string, 'utf8') : envelope.payload;
  if (!timingSafeEqual(envelope.contentMac, contentMac(envelope.kind, envelope.model, envelope.nonce, payload))) return { valid: false };
  const prefixOk = timingSafeEqual(envelope.bindMac, bindMac(envelope.contentMac, envelope.predecessor, prefix.combined));
  const recordedNone = envelope.predecessor.equals(NO_PREDECESSOR);
  const predecessorOk = prefix.predecessor === undefined || (!recordedNone && prefix.predecessor.equals(envelope.predecessor));
  if (prefixOk && predecessorOk) return { valid: true, model: envelope.model, bound: true, changed: undefined };
  const changed = prefixOk
    ? 'a thinking block before this one was left out or moved'
    : describePrefixChange(BOUND_RECORDS.get(envelope.sealed), prefix, where.i, where.offset);
  return { valid: true, model: envelope.model, bound: false, changed };
}

/**
 * Names what differs between the prefix a block was signed for and the one
 * it came back with: `system`, `tools`, `messages.N` (N counted in the
 * request as sent; `offset` is the index there of the transcript's first
 * message), or the blocks before it in its own message; undefined when the
 * record is unknown.
 */
function describePrefixChange(recorded: PrefixDigest | undefined, now: PrefixDigest, i: number, offset: number): string | undefined {
  if (!recorded) return undefined;
  if (recorded.system !== now.system) return 'system';
  if (recorded.tools !== now.tools) return 'tools';
  const n = Math.max(recorded.messages.length, now.messages.length);
  for (let k = 0; k < n; k++) if (recorded.messages[k] !== now.messages[k]) return `messages.${k + offset}`;
  if (recorded.own !== now.own) return `messages.${i + offset} (the blocks before this one)`;
  return undefined;
}

/**
 * The `signature` of a `compaction` block the server makes (`"api": "today"`):
 * base64 of an HMAC over its `content` and `encrypted_content`, so either
 * changed fails {@link verifyCompaction}.
 */
export function signCompaction(content: string | null, encrypted: string | null): string {
  return createHmac('sha256', SECRET)
    .update('compaction\u0000')
    .update(JSON.stringify([content, encrypted]))
    .digest()
    .toString('base64');
}

/** Whether `signature` is what {@link signCompaction} gives for this content and encrypted content. */
export function verifyCompaction(content: unknown, encrypted: unknown, signature: unknown): boolean {
  if (typeof signature !== 'string') return false;
  if ((content !== null && typeof content !== 'string') || (encrypted !== null && typeof encrypted !== 'string')) return false;
  const given = Buffer.from(signature, 'base64');
  if (given.toString('base64') !== signature || given.length !== MAC_BYTES) return false;
  return timingSafeEqual(given, Buffer.from(signCompaction(content, encrypted), 'base64'));
}
