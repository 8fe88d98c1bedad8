/**
 * What `callClaude` publishes while it streams: the shape of its heartbeat
 * details, and how the partial answer in them is bounded. `agent-jobs watch`
 * reads these details (the last heartbeat of the pending activity, from
 * `describe()`) to show Claude's answer as it is written.
 */

/**
 * Most characters of partial text one heartbeat carries: 2,000 UTF-16 code
 * units (a surrogate pair is never cut), the end of the text streamed so
 * far. Enough for the live line of `watch`, and small next to Temporal's
 * heartbeat details limit, since the last details are also recorded in
 * history when the call times out or fails.
 */
export const PARTIAL_TEXT_MAX_CHARS = 2_000;

/**
 * Most characters of thinking text one heartbeat carries: 1,000 UTF-16 code
 * units, the end of the summarized thinking streamed so far (the live line
 * shows one line of it). With {@link PARTIAL_TEXT_MAX_CHARS} this bounds the
 * text of a heartbeat at 3,000 characters, whatever the answer's length.
 */
export const THINKING_TEXT_MAX_CHARS = 1_000;

/**
 * What the answer streams at the moment: `waiting` before its first block,
 * `thinking` inside a `thinking` or `redacted_thinking` block, `text` inside
 * a text block, `tool_use` inside a `tool_use` (or another) block.
 */
export type StreamPhase = 'waiting' | 'thinking' | 'text' | 'tool_use';

/**
 * Heartbeat details of `callClaude` (one payload, every
 * `CLAUDE_HEARTBEAT_INTERVAL_MS`; the worker forwards at most one per 80 %
 * of the heartbeat timeout to the server, so readers see it every few
 * seconds). It holds only what Claude streamed in this call: never the
 * request, the system prompt or any key.
 */
export interface ClaudeProgress {
  /** The run's turn this call answers (1-based, as in `CallClaudeInput.turn`). */
  turn: number;
  /** Characters of text Claude streamed so far in this call (UTF-16 code units, every text block). */
  outputChars: number;
  /**
   * The last {@link PARTIAL_TEXT_MAX_CHARS} characters of the text streamed
   * so far in this call, text blocks joined as streamed (no separator);
   * empty before the first text delta and while Claude writes a `tool_use`.
   */
  partialText: string;
  /** The attempt of `callClaude` these details come from (1-based, Temporal's `info.attempt`); absent in details of older workers. */
  attempt?: number;
  /** What streams now (see {@link StreamPhase}); absent in details of older workers (read them by `partialText` alone). */
  phase?: StreamPhase;
  /**
   * When the current run of thinking blocks started, ms since the epoch (the
   * worker's clock); absent before the answer's first thinking block. A text
   * or tool_use block in between ends the run: the next thinking block starts a new one.
   */
  thinkingSinceMs?: number;
  /** Characters of thinking Claude streamed so far in this call (every `thinking_delta`); 0 when the thinking is omitted (`display: "omitted"`). */
  thinkingChars?: number;
  /**
   * The last {@link THINKING_TEXT_MAX_CHARS} characters of the summarized
   * thinking streamed so far in this call (blocks joined with a space); empty
   * when the thinking is omitted (the default `display`), which is when the
   * live view shows only how long Claude has been thinking.
   */
  thinkingText?: string;
}

/**
 * The last `max` UTF-16 code units of `text`, one fewer when the cut would
 * leave the low half of a surrogate pair at the start.
 * @param max characters to keep; default {@link PARTIAL_TEXT_MAX_CHARS}
 */
export function tailOf(text: string, max = PARTIAL_TEXT_MAX_CHARS): string {
  if (text.length <= max) return text;
  const tail = text.slice(text.length - max);
  const first = tail.charCodeAt(0);
  return first >= 0xdc00 && first <= 0xdfff ? tail.slice(1) : tail;
}
