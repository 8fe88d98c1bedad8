/**
 * The workflow's side of the conversation: the messages it holds, what the
 * worker already has, and the change to send with the next `callClaude`
 * (src/contract/conversation.ts). Only this class changes the messages, so
 * the change is always known; a turn's history cost is what the turn adds.
 *
 * After continue-as-new the workflow holds only the tail it still needs
 * (from the last assistant message on); the messages before `base` are in
 * the histories of the earlier runs of the chain, where the worker and
 * `agent-jobs transcript` read them. Deterministic (workflow code).
 */
import { isToolUse, nextDigest, type CarriedConversation, type ContentBlock, type Message, type TranscriptDelta } from '../contract';
import { GENESIS_DIGEST } from '../contract/conversation';
import { toolUsesOf } from './transcript';

/** The conversation as the workflow holds it (module doc). */
export class ConversationLog {
  /** The messages from `base` on. Read freely; change only through the methods. */
  readonly messages: Message[];
  /** Index of `messages[0]` in the whole conversation. */
  readonly base: number;
  /** Messages the worker has as they are here (the length of the last request). */
  sentLength: number;
  /** `tool_result` contents before this index are cleared in requests (set from the worker's report). */
  clearedBefore: number;
  /** `tool_use` blocks before `base`. */
  readonly toolUsesBefore: number;
  /** Tokens of the last request plus its answer, and that request's length, while still valid (see RequestContext). */
  previous: { tokens: number; length: number } | null = null;
  /** `digests[k]`: digest of the first `base + k` messages, valid for every k < digests.length. */
  private readonly digests: string[];
  /** Lowest index changed in place since the last request (Infinity when none). */
  private dirtyFrom = Infinity;

  /**
   * @param task the first user message of a fresh run
   * @param carried a continued run's state; or a legacy carried transcript (whole, never sent as a delta)
   */
  constructor(task: string, carried?: CarriedConversation | { legacyTranscript: Message[] } | { forkMessages: Message[] }) {
    if (carried !== undefined && 'forkMessages' in carried) {
      // A fork starts with the conversation it was forked at, all of it new to this run's workers.
      this.messages = carried.forkMessages.map((m) => ({ ...m }));
      this.base = 0;
      this.digests = [GENESIS_DIGEST];
      this.sentLength = 0;
      this.clearedBefore = 0;
      this.toolUsesBefore = 0;
    } else if (carried === undefined) {
      this.messages = [{ role: 'user', content: task }];
      this.base = 0;
      this.digests = [GENESIS_DIGEST];
      this.sentLength = 0;
      this.clearedBefore = 0;
      this.toolUsesBefore = 0;
    } else if ('legacyTranscript' in carried) {
      this.messages = carried.legacyTranscript;
      this.base = 0;
      this.digests = [GENESIS_DIGEST];
      this.sentLength = 0;
      this.clearedBefore = 0;
      this.toolUsesBefore = 0;
    } else {
      this.messages = carried.messages;
      this.base = carried.base;
      this.digests = [carried.digestAtBase];
      this.sentLength = carried.sentLength;
      this.clearedBefore = carried.clearedBefore;
      this.toolUsesBefore = carried.toolUsesBefore;
    }
  }

  /** Messages in the whole conversation. */
  get length(): number {
    return this.base + this.messages.length;
  }

  /** The last message, if the workflow holds one. */
  last(): Message | undefined {
    return this.messages[this.messages.length - 1];
  }

  /** Appends a message. */
  push(message: Message): void {
    this.messages.push(message);
  }

  /** Adds user content blocks: to the last message when it is the user's (two user messages in a row are invalid), else as a new one. */
  appendUserBlocks(blocks: ContentBlock[]): void {
    const last = this.last();
    if (last?.role !== 'user') return this.push({ role: 'user', content: blocks });
    const before: ContentBlock[] = typeof last.content === 'string' ? [{ type: 'text', text: last.content }] : last.content;
    this.changed(this.length - 1);
    last.content = [...before, ...blocks];
  }

  /**
   * Drops every message from `index` (whole conversation) on: a rewind. The messages before it
   * stay byte for byte (the prompt cache still hits); the next request sends the change from there.
   * @throws Error when `index` is before `base` (those messages are not held here) or past the end
   */
  rewindTo(index: number): void {
    if (index < this.base || index > this.length) throw new Error(`cannot rewind to message ${index} (held: ${this.base}..${this.length})`);
    this.extendDigests();
    this.messages.length = index - this.base;
    this.digests.length = index - this.base + 1;
    this.sentLength = Math.min(this.sentLength, index);
    this.dirtyFrom = Math.min(this.dirtyFrom, index);
    this.clearedBefore = Math.min(this.clearedBefore, index);
    // The token count of the last request no longer describes a prefix of this conversation.
    this.previous = null;
  }

  /** Records that message `index` (whole conversation) changed in place. */
  private changed(index: number): void {
    this.dirtyFrom = Math.min(this.dirtyFrom, index);
    // digests[k] covers messages before base + k: digest of base + k ≤ index stays valid.
    this.digests.length = Math.min(this.digests.length, index - this.base + 1);
  }

  /**
   * The change to send with the next request (and, from now on, the worker
   * is taken to have the whole conversation): the messages from the first
   * one the worker lacks or that changed.
   */
  takeDelta(): TranscriptDelta {
    const from = Math.min(this.sentLength, this.dirtyFrom, this.length);
    this.extendDigests();
    const delta: TranscriptDelta = { from, digestBefore: this.digestAt(from), messages: this.messages.slice(from - this.base) };
    this.sentLength = this.length;
    this.dirtyFrom = Infinity;
    return delta;
  }

  /** Digest of the first `n` messages, for base ≤ n ≤ length (after extendDigests). */
  private digestAt(n: number): string {
    return this.digests[n - this.base]!;
  }

  /** Computes the missing digests up to the whole conversation. */
  private extendDigests(): void {
    for (let k = this.digests.length; k <= this.messages.length; k++)
      this.digests.push(nextDigest(this.digests[k - 1]!, this.messages[k - 1]!));
  }

  /** The run-wide 1-based position of `tool_use` `id`, or null when the workflow does not hold it. */
  toolUseOrdinal(id: string): number | null {
    let n = this.toolUsesBefore;
    for (const message of this.messages) {
      if (message.role !== 'assistant') continue;
      for (const use of toolUsesOf(message)) {
        n++;
        if (use.id === id) return n;
      }
    }
    return null;
  }

  /** What continues-as-new: the tail from the last assistant message or the first unsent/changed message, whichever is earlier. */
  carry(): CarriedConversation {
    this.extendDigests();
    let start = Math.min(this.sentLength, this.dirtyFrom, this.length) - this.base;
    for (let i = this.messages.length - 1; i >= 0; i--) {
      if (this.messages[i]!.role === 'assistant') {
        start = Math.min(start, i);
        break;
      }
    }
    start = Math.max(0, start);
    const toolUsesBefore =
      this.toolUsesBefore +
      this.messages
        .slice(0, start)
        .filter((m) => m.role === 'assistant')
        .reduce((n, m) => n + (typeof m.content === 'string' ? 0 : m.content.filter(isToolUse).length), 0);
    return {
      base: this.base + start,
      digestAtBase: this.digests[start]!,
      messages: this.messages.slice(start),
      sentLength: Math.min(this.sentLength, this.dirtyFrom === Infinity ? this.sentLength : this.dirtyFrom),
      clearedBefore: this.clearedBefore,
      toolUsesBefore,
    };
  }
}
