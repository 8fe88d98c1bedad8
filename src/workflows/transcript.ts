/**
 * Pure transcript helpers: pairing checks, empty-block removal, tool_result
 * assembly. Deterministic (workflow code).
 */
import { isText, isToolResult, isToolUse, type ContentBlock, type Message, type ToolResultBlock, type ToolUseBlock } from '../contract';

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
 * `allowOpenTail` is set. With `openHead` (a tail of the conversation, after
 * continue-as-new) the first message's `tool_result`s are not checked: what
 * they answer is before the tail.
 * @returns null when the transcript is well formed, else the first problem found
 */
export function pairingProblem(messages: Message[], allowOpenTail = false, openHead = false): string | null {
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
    } else if (!(openHead && i === 0)) {
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
  results: readonly ToolResultBlock[],
  reason: string | ((use: ToolUseBlock) => string),
): ToolResultBlock[] {
  const byId = new Map(results.map((r) => [r.tool_use_id, r]));
  const why = typeof reason === 'string' ? () => reason : reason;
  return toolUsesOf(assistant).map((use) => byId.get(use.id) ?? toolResult(use.id, why(use), true));
}
