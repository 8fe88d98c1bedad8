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
