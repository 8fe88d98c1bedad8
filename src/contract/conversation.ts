/**
 * The conversation as a chain of messages that the workflow and the
 * workers agree on without sending it whole: each `callClaude` carries only
 * a {@link TranscriptDelta} (what changed since the previous call), and the
 * worker keeps the rest. A digest chain lets both sides check they hold the
 * same messages: `digest(0) = GENESIS_DIGEST`, `digest(i + 1) =
 * sha256(digest(i) + JSON.stringify(message i))`.
 *
 * The workflow history holds every delta (as `callClaude` inputs, in order),
 * so the conversation can always be rebuilt from it: {@link foldCallInputs}.
 * Deterministic (workflow code imports it).
 */
import type { Message } from './messages';
import { sha256 } from '../shared/sha256';

/** Digest of the empty conversation. */
export const GENESIS_DIGEST = sha256('agent-jobs conversation v1');

/** Digest of the conversation `previous` extended by `message`. */
export function nextDigest(previous: string, message: Message): string {
  return sha256(previous + JSON.stringify(message));
}

/**
 * What changed in the conversation since the worker last had it: the
 * messages from index `from` on are replaced by `messages` (a new message
 * appended, or the last one extended). The conversation after it has
 * `from + messages.length` messages.
 */
export interface TranscriptDelta {
  /** Index (0-based, over the whole conversation, across continue-as-new) of the first message of `messages`. */
  from: number;
  /** Digest of the first `from` messages, as the workflow holds them (see module doc). */
  digestBefore: string;
  messages: Message[];
}

/** A conversation with the digest at every length: `digests[i]` is the digest of `messages[0..i)`. */
export interface Conversation {
  messages: Message[];
  /** `messages.length + 1` entries; `digests[0]` is {@link GENESIS_DIGEST}. */
  digests: string[];
}

/** The empty conversation. */
export function emptyConversation(): Conversation {
  return { messages: [], digests: [GENESIS_DIGEST] };
}

/**
 * Applies `delta` to `conversation` in place.
 * @returns null when applied; else why it cannot be (the conversation is shorter than `from`, or its digest there differs), and nothing is changed
 */
export function applyDelta(conversation: Conversation, delta: TranscriptDelta): string | null {
  if (delta.from > conversation.messages.length)
    return `the conversation has ${conversation.messages.length} messages, the change starts at message ${delta.from}`;
  if (conversation.digests[delta.from] !== delta.digestBefore) return `the first ${delta.from} messages differ`;
  conversation.messages.length = delta.from;
  conversation.digests.length = delta.from + 1;
  for (const message of delta.messages) append(conversation, message);
  return null;
}

/** Appends one message and its digest. */
function append(conversation: Conversation, message: Message): void {
  conversation.messages.push(message);
  conversation.digests.push(nextDigest(conversation.digests[conversation.digests.length - 1]!, message));
}

/**
 * The conversation part of a `callClaude` input, either shape: `transcript`
 * (a delta; current) or `messages` (the whole transcript; runs recorded
 * before deltas existed).
 */
export interface ConversationPart {
  transcript?: TranscriptDelta;
  messages?: Message[];
}

/**
 * Rebuilds the conversation from `callClaude` inputs in the order they were
 * scheduled (oldest first, across continue-as-new): a `messages` input
 * replaces everything, a `transcript` delta is applied.
 * @returns the conversation, or why the inputs do not chain (a delta that does not apply)
 */
export function foldCallInputs(
  inputs: Iterable<ConversationPart>,
): { ok: true; conversation: Conversation } | { ok: false; problem: string } {
  let conversation = emptyConversation();
  let n = 0;
  for (const input of inputs) {
    n++;
    if (input.transcript !== undefined) {
      const problem = applyDelta(conversation, input.transcript);
      if (problem !== null) return { ok: false, problem: `model call ${n}: ${problem}` };
    } else if (input.messages !== undefined) {
      conversation = emptyConversation();
      for (const message of input.messages) append(conversation, message);
    }
  }
  return { ok: true, conversation };
}

/** What of the conversation continues-as-new (small: the tail, counts and digests; never the whole conversation). */
export interface CarriedConversation {
  /** Index of `messages[0]` in the whole conversation. */
  base: number;
  /** Digest of the messages before `base`. */
  digestAtBase: string;
  /** The tail: from the last assistant message, or the first message the worker lacks, whichever is earlier. */
  messages: Message[];
  /** Messages the worker already has (sent by the last `callClaude`). */
  sentLength: number;
  /** `tool_result` contents before this index are cleared in requests. */
  clearedBefore: number;
  /** `tool_use` blocks before `base` (for the run-wide n-th tool call). */
  toolUsesBefore: number;
}
