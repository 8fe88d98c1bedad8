/**
 * One tool turn: every `tool_use` block of an assistant message, run in
 * order in the run's session, answered by one `tool_result` each; tool
 * failures become `is_error` results, never a failed run. Deterministic
 * (workflow code).
 */
import { isToolUse, type Message, type ToolResultBlock, type ToolUseBlock } from '../contract';
import { runWithApproval } from './approval';
import type { RunState } from './run-state';
import type { RunSession } from './session';
import { drainMessages, safePoint } from './steering';
import { parseBashInput, type ToolOutcome } from './tool-results';
import { completeResults, toolResult } from './transcript';
import { MAX_TURN_RESULT_CHARS } from '../config';

/**
 * Executes the `tool_use` blocks of `assistant` (already in the transcript)
 * and appends the user message with their results, in `tool_use` order,
 * followed by the messages queued by `say` meanwhile (after every
 * `tool_result`, so no pair is split). Once the turn decided the run ends
 * (`state.pendingEnd`), the remaining `tool_use`s are answered as not run.
 * `state.inflight` holds the results so far, so a cancellation can pair the rest.
 */
export async function runToolUses(state: RunState, session: RunSession, assistant: Message): Promise<void> {
  const inflight = { assistant, results: [] as ToolResultBlock[] };
  state.inflight = inflight;
  const uses = typeof assistant.content === 'string' ? [] : assistant.content.filter(isToolUse);
  let chars = 0;
  for (const use of uses) {
    if (state.pendingEnd) break;
    const result = withinTurnBudget(await handleToolUse(state, session, use), chars);
    chars += result.content.length;
    inflight.results.push(result);
    state.current = null;
  }
  const missing = state.pendingEnd
    ? `Not run: the run ended before this tool_use (${state.pendingEnd.error}).`
    : 'No result was produced for this tool_use.';
  state.conversation.push({ role: 'user', content: [...completeResults(assistant, inflight.results, missing), ...drainMessages(state)] });
  state.inflight = null;
}

/**
 * A result cut to what is left of the turn's {@link MAX_TURN_RESULT_CHARS} (with a note
 * saying so), so that however many `tool_use`s one answer holds, its results, the next
 * `callClaude`'s change, stay far below Temporal's 2 MiB payload limit.
 */
function withinTurnBudget(result: ToolResultBlock, usedChars: number): ToolResultBlock {
  const left = Math.max(0, MAX_TURN_RESULT_CHARS - usedChars);
  if (result.content.length <= left) return result;
  const note = `[output cut: the results of this turn's commands passed ${MAX_TURN_RESULT_CHARS} characters together; ${result.content.length - left} characters of this one were dropped]`;
  return { ...result, content: `${result.content.slice(0, left)}${left > 0 ? '\n' : ''}${note}` };
}

/** One `tool_use`: the bash tool (`bash_20250124`: `{command}` or `{restart: true}`); anything else is an `is_error` result. */
async function handleToolUse(state: RunState, session: RunSession, use: ToolUseBlock): Promise<ToolResultBlock> {
  const outcome = await toolOutcome(state, session, use);
  return toolResult(use.id, outcome.text, outcome.isError);
}

async function toolOutcome(state: RunState, session: RunSession, use: ToolUseBlock): Promise<ToolOutcome> {
  if (use.name !== 'bash') return { text: `Unknown tool "${use.name}": the only tool here is "bash".`, isError: true };
  const parsed = parseBashInput(use.input);
  if (parsed.kind === 'invalid') return parsed.outcome;
  if (parsed.kind === 'restart') {
    await safePoint(state);
    state.current = { toolUseId: use.id, phase: 'restarting' };
    return session.restart();
  }
  return runWithApproval(state, session, use.id, parsed.command);
}
