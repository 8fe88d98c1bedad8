/**
 * Pure transcript helpers: pairing checks, empty-block removal, tool_result
 * assembly and the size bound. Deterministic (workflow code).
 */
import {
  isText,
  isToolResult,
  isToolUse,
  type ContentBlock,
  type Message,
  type TextBlock,
  type ToolResultBlock,
  type ToolUseBlock,
} from '../contract';

/** Text sent back for a command that printed nothing (the API rejects empty tool_result text poorly; C03). */
export const NO_OUTPUT = '(no output)';

function blocksOf(message: Message): ContentBlock[] {
  return typeof message.content === 'string' ? [{ type: 'text', text: message.content }] : message.content;
}

/**
 * Removes text blocks that are empty or whitespace only: the Messages API
 * rejects them when they are sent back ("text content blocks must contain
 * non-whitespace text"; C03). Other blocks are kept as they are, in order.
 */
export function withoutEmptyText(blocks: ContentBlock[]): ContentBlock[] {
  return blocks.filter((b) => !(isText(b) && b.text.trim() === ''));
}

/** The `tool_use` blocks of a message, in order. */
export function toolUsesOf(message: Message): ToolUseBlock[] {
  return blocksOf(message).filter(isToolUse);
}

/** Concatenated text of a message's text blocks ('' when there is none). */
export function textOf(blocks: ContentBlock[]): string {
  return blocks
    .filter(isText)
    .map((b) => b.text)
    .join('\n')
    .trim();
}

/**
 * Builds one `tool_result` block. Empty text becomes {@link NO_OUTPUT};
 * `is_error` is only present when true.
 */
export function toolResult(toolUseId: string, text: string, isError = false): ToolResultBlock {
  const block: ToolResultBlock = { type: 'tool_result', tool_use_id: toolUseId, content: text.length > 0 ? text : NO_OUTPUT };
  if (isError) block.is_error = true;
  return block;
}

/**
 * Checks the Messages API's pairing rule on a whole transcript: every
 * `tool_use` of an assistant message has exactly one `tool_result` in the
 * very next message (a user message, results first), and every
 * `tool_result` answers a `tool_use` of the message before it. A trailing
 * assistant message may hold unanswered `tool_use`s only when
 * `allowOpenTail` is set.
 * @returns null when the transcript is well formed, else the first problem found
 */
export function pairingProblem(messages: Message[], allowOpenTail = false): string | null {
  for (let i = 0; i < messages.length; i++) {
    const message = messages[i]!;
    const next = messages[i + 1];
    if (message.role === 'assistant') {
      const uses = toolUsesOf(message);
      if (uses.length === 0) continue;
      if (next === undefined) {
        if (allowOpenTail) continue;
        return `message ${i}: tool_use ${uses[0]!.id} has no tool_result`;
      }
      const nextBlocks = blocksOf(next);
      const results = nextBlocks.filter(isToolResult);
      for (const use of uses) {
        const count = results.filter((r) => r.tool_use_id === use.id).length;
        if (count !== 1) return `message ${i}: tool_use ${use.id} has ${count} tool_results`;
      }
      const firstOther = nextBlocks.findIndex((b) => !isToolResult(b));
      if (firstOther !== -1 && firstOther < results.length) {
        return `message ${i + 1}: tool_result blocks must come first`;
      }
    } else {
      const previous = i > 0 ? messages[i - 1] : undefined;
      const ids = new Set(previous && previous.role === 'assistant' ? toolUsesOf(previous).map((u) => u.id) : []);
      for (const result of blocksOf(message).filter(isToolResult)) {
        if (!ids.has(result.tool_use_id)) return `message ${i}: tool_result ${result.tool_use_id} answers no tool_use`;
      }
    }
  }
  return null;
}

/**
 * Gives every `tool_use` of the last assistant message that has no
 * `tool_result` yet an `is_error` result carrying `reason` (C02: on every
 * path, deny, timeout, cancel, worker loss, each `tool_use` is paired).
 * `results` holds the results produced so far for that message; the
 * returned array has them, then the missing ones, in `tool_use` order.
 */
export function completeResults(
  assistant: Message,
  results: ToolResultBlock[],
  reason: string | ((use: ToolUseBlock) => string),
): ToolResultBlock[] {
  const byId = new Map(results.map((r) => [r.tool_use_id, r]));
  const why = typeof reason === 'string' ? () => reason : reason;
  return toolUsesOf(assistant).map((use) => byId.get(use.id) ?? toolResult(use.id, why(use), true));
}

/** Size of a transcript in characters (UTF-16 code units) of JSON, the unit of the transcript budget. */
export function transcriptChars(messages: Message[]): number {
  return JSON.stringify(messages).length;
}

const ELIDED_PREFIX = '[output elided to keep the transcript within its budget; it had ';

/**
 * Bounds the transcript: while it is over `budgetChars` characters of JSON,
 * replaces the content of the oldest `tool_result` blocks (then the oldest
 * long text blocks) with a one-line note of what was removed. The last two
 * messages are never touched, so Claude always sees the newest results in
 * full. Returns a new array; the input is not modified.
 */
export function boundTranscript(messages: Message[], budgetChars: number): Message[] {
  let size = transcriptChars(messages);
  if (size <= budgetChars) return messages;
  const out: Message[] = messages.map((m) => ({ ...m, content: typeof m.content === 'string' ? m.content : [...m.content] }));
  const protectedFrom = Math.max(0, out.length - 2);

  const shrink = (pick: (b: ContentBlock) => boolean, minChars: number): void => {
    for (let i = 0; i < protectedFrom && size > budgetChars; i++) {
      const content = out[i]!.content;
      if (typeof content === 'string') continue;
      for (let j = 0; j < content.length && size > budgetChars; j++) {
        const block = content[j]!;
        if (!pick(block)) continue;
        const text = isToolResult(block) ? block.content : (block as TextBlock).text;
        if (text.length < minChars || text.startsWith(ELIDED_PREFIX)) continue;
        const note = `${ELIDED_PREFIX}${text.length} characters]`;
        const replaced: ContentBlock = isToolResult(block) ? { ...block, content: note } : { ...(block as TextBlock), text: note };
        content[j] = replaced;
        size -= JSON.stringify(text).length - JSON.stringify(note).length;
      }
    }
  };
  shrink(isToolResult, 200);
  shrink(isText, 2_000);
  return out;
}

/**
 * The 1-based position of `tool_use` `id` among every `tool_use` block of
 * the transcript (the run's n-th tool call, counted across continue-as-new,
 * which carries the whole transcript), or null when it is not there. For
 * activity summaries (`bash #17: git status`, C26).
 */
export function toolUseOrdinal(messages: Message[], id: string): number | null {
  let n = 0;
  for (const message of messages) {
    if (message.role !== 'assistant') continue;
    for (const use of toolUsesOf(message)) {
      n++;
      if (use.id === id) return n;
    }
  }
  return null;
}
