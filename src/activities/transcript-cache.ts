/**
 * The worker's per-run copy of each conversation, so a `callClaude` input
 * carries only the change since the last call. A cache: the workflow
 * history is the durable copy (src/conversation-history.ts), and
 * every use is checked against the workflow's digest, so a stale, evicted or
 * foreign entry costs one rebuild and never a wrong request.
 */
import { applyDelta, type Conversation, type TranscriptDelta } from '../contract';

interface Entry {
  conversation: Conversation;
  /** Characters of JSON of each message (the unit of the cache's bound). */
  sizes: number[];
  chars: number;
}

/** Conversations by workflow id, least recently used first; bounded by their total size. */
export class TranscriptCache {
  private readonly entries = new Map<string, Entry>();
  private totalChars = 0;

  /** @param maxChars bound on the total characters of JSON kept; the least recently used runs are dropped past it */
  constructor(readonly maxChars: number) {}

  /**
   * Applies `delta` to the run's cached conversation.
   * @returns the conversation after it, or null when the cache has none that the delta applies to (then nothing is changed)
   */
  apply(workflowId: string, delta: TranscriptDelta): Conversation | null {
    const entry = this.entries.get(workflowId);
    if (!entry || applyDelta(entry.conversation, delta) !== null) return null;
    this.touch(workflowId, entry, delta.from);
    return entry.conversation;
  }

  /** Stores (or replaces) the run's conversation. */
  set(workflowId: string, conversation: Conversation): void {
    this.drop(workflowId);
    const entry: Entry = { conversation, sizes: [], chars: 0 };
    this.entries.set(workflowId, entry);
    this.touch(workflowId, entry);
  }

  /** Forgets a run (its conversation is rebuilt from history when next needed). */
  drop(workflowId: string): void {
    const entry = this.entries.get(workflowId);
    if (!entry) return;
    this.entries.delete(workflowId);
    this.totalChars -= entry.chars;
  }

  /** Runs and characters held, for logs and benchmarks. */
  stats(): { runs: number; chars: number } {
    return { runs: this.entries.size, chars: this.totalChars };
  }

  /** Marks an entry most recently used, re-measures it, and evicts past the bound (never the entry itself). */
  private touch(workflowId: string, entry: Entry, changedFrom?: number): void {
    this.entries.delete(workflowId);
    this.entries.set(workflowId, entry);
    const { messages } = entry.conversation;
    if (entry.sizes.length > messages.length) entry.sizes.length = messages.length;
    // A delta replaces the messages from its start on: re-measure from the first one it may have changed.
    const from = Math.min(entry.sizes.length, changedFrom ?? entry.sizes.length);
    entry.sizes.length = from;
    for (let i = from; i < messages.length; i++) entry.sizes.push(JSON.stringify(messages[i]).length);
    const chars = entry.sizes.reduce((n, size) => n + size, 0);
    this.totalChars += chars - entry.chars;
    entry.chars = chars;
    for (const [id, other] of this.entries) {
      if (this.totalChars <= this.maxChars || id === workflowId) break;
      this.entries.delete(id);
      this.totalChars -= other.chars;
    }
  }
}
