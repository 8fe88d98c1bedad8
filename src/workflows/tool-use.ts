/**
 * One tool turn: every `tool_use` block of an assistant message, run in
 * order in the run's session, answered by one `tool_result` each; tool
 * failures become `is_error` results, never a failed run. Deterministic
 * (workflow code).
 */
import { CancellationScope, patched } from '@temporalio/workflow';
import { isToolUse, type Message, type ToolResultBlock, type ToolUseBlock } from '../contract';
import { runEditWithApproval, runWithApproval } from './approval';
import { TEXT_EDITOR_NAME, parseEditInput, requestTools } from '../contract/text-editor';
import type { RunState } from './run-state';
import type { RunSession } from './session';
import { drainMessages, safePoint } from './steering';
import { parseBashInput, type ToolOutcome } from './tool-results';
import { completeResults, toolResult } from './transcript';
import { MAX_TURN_NOTES_OVERDRAFT_BYTES, MAX_TURN_RESULT_CHARS } from '../config';
import { SUBAGENTS_PATCH, isSubagentUse, startSubagents, type Settled } from './subagent';
import { splitNotes } from '../shared/notes';

/**
 * patched() id: a result cut by the turn's budget keeps the system's notes at its end whole
 * (after the cut note); before, they were cut away with the output, so neither Claude nor a
 * person read them (the memory limit's kill, the git audit's quarantine).
 */
export const CUT_KEEPS_NOTES_PATCH = 'turn-budget-cut-keeps-notes';

/**
 * Executes the `tool_use` blocks of `assistant` (already in the transcript)
 * and appends the user message with their results, in `tool_use` order,
 * followed by the messages queued by `say` meanwhile (after every
 * `tool_result`, so no pair is split). Once the turn decided the run ends
 * (`state.pendingEnd`), the remaining `tool_use`s are answered as not run.
 * `state.inflight` holds the results so far, so a cancellation can pair the rest.
 */
export async function runToolUses(state: RunState, session: RunSession, assistant: Message): Promise<void> {
  state.startToolTurn(assistant);
  const uses = typeof assistant.content === 'string' ? [] : assistant.content.filter(isToolUse);
  const used = { bytes: 0 };
  // Sub-agent calls all start now and run while the other tool_uses are handled in order.
  const subagents = uses.some((u) => isSubagentUse(state, u)) && patched(SUBAGENTS_PATCH) ? new CancellationScope() : null;
  const started = subagents
    ? await subagents.run(() => Promise.resolve(startSubagents(state, session, uses)))
    : new Map<string, Promise<Settled>>();
  for (const use of uses) {
    if (state.pendingEnd) break;
    const child = started.get(use.id);
    const result = child ? subagentResult(use, await child) : await handleToolUse(state, session, use);
    const notes = state.notesFor(use.id);
    const cut = withinTurnBudget(result, used, notes.length > 0 && patched(CUT_KEEPS_NOTES_PATCH) ? notes : []);
    used.bytes += jsonBytes(cut.content);
    state.recordResult(cut);
  }
  if (state.pendingEnd && subagents) {
    // The run ends after this turn: its sub-agents still running end too.
    subagents.cancel();
    await Promise.all([...started.values()]);
  }
  const missing = state.pendingEnd
    ? `Not run: the run ended before this tool_use (${state.pendingEnd.error}).`
    : 'No result was produced for this tool_use.';
  state.endToolTurn([...completeResults(assistant, state.inflight?.results ?? [], missing), ...drainMessages(state)]);
}

/**
 * A result cut to what is left of the turn's {@link MAX_TURN_RESULT_CHARS} (bytes of JSON,
 * UTF-8; with a note saying so), so that however many `tool_use`s one answer holds, its
 * results, the next `callClaude`'s change, stay far below Temporal's 2 MiB payload limit.
 * The cut falls between code points: a lone surrogate makes the Messages API refuse the
 * request (400, "no low surrogate in string") on every later turn.
 * @param used bytes the turn's earlier results hold (may pass the budget by their notes)
 * @param notes the system's notes at the end of the result's text (the run published them:
 *   `RunState.notesFor`): when the text ends with them, only the output before them is cut and
 *   they stay whole after the cut note, counted in the budget first; the turn's results may pass
 *   the budget by at most {@link MAX_TURN_NOTES_OVERDRAFT_BYTES} for them, and past that the
 *   notes are cut with the output (they stay whole in what the run publishes for people)
 *   @default none (the whole text is cut, as before `turn-budget-cut-keeps-notes`)
 */
export function withinTurnBudget(result: ToolResultBlock, used: { bytes: number }, notes: readonly string[] = []): ToolResultBlock {
  const content = result.content;
  if (jsonBytes(content) <= MAX_TURN_RESULT_CHARS - used.bytes) return result;
  const left = Math.max(0, MAX_TURN_RESULT_CHARS - used.bytes);
  const cutNote = (dropped: number): string =>
    `[output cut: the results of this turn's commands passed ${MAX_TURN_RESULT_CHARS} bytes together; ${dropped} characters of this one were dropped]`;
  const split = splitNotes(content, notes);
  if (split !== undefined) {
    const tail = split.notes.join('\n');
    // The cut note with the most digits it can hold, and a line break on each side.
    const fixed = jsonBytes(`${cutNote(split.output.length)}\n${tail}`) + 1;
    if (fixed <= MAX_TURN_RESULT_CHARS + MAX_TURN_NOTES_OVERDRAFT_BYTES - used.bytes) {
      const kept = prefixWithin(split.output, Math.max(0, left - fixed));
      // Nothing of the output dropped (the text is its notes alone): the result stays as it is.
      if (kept.length === split.output.length) return result;
      return { ...result, content: [kept, cutNote(split.output.length - kept.length), tail].filter((s) => s !== '').join('\n') };
    }
  }
  const kept = prefixWithin(content, left);
  return { ...result, content: `${kept}${kept.length > 0 ? '\n' : ''}${cutNote(content.length - kept.length)}` };
}

/** UTF-8 bytes of a code point inside a JSON string (escapes counted as written; a lone surrogate is escaped as `\uXXXX`). */
function jsonCodePointBytes(cp: number): number {
  if (cp === 0x22 || cp === 0x5c || cp === 0x08 || cp === 0x09 || cp === 0x0a || cp === 0x0c || cp === 0x0d) return 2;
  if (cp < 0x20) return 6;
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp >= 0xd800 && cp <= 0xdfff) return 6;
  return cp < 0x10000 ? 3 : 4;
}

/** UTF-8 bytes of `s` as a JSON string's content (what it adds to a payload). */
export function jsonBytes(s: string): number {
  let n = 0;
  for (const ch of s) n += jsonCodePointBytes(ch.codePointAt(0)!);
  return n;
}

/** The longest prefix of `s`, in whole code points, of at most `max` {@link jsonBytes}. */
function prefixWithin(s: string, max: number): string {
  let n = 0;
  let end = 0;
  for (const ch of s) {
    n += jsonCodePointBytes(ch.codePointAt(0)!);
    if (n > max) break;
    end += ch.length;
  }
  return s.slice(0, end);
}

/** A sub-agent call's result; a cancellation of the run it saw is thrown here, where the loop awaits it. */
function subagentResult(use: ToolUseBlock, settled: Settled): ToolResultBlock {
  if ('thrown' in settled) throw settled.thrown;
  return toolResult(use.id, settled.outcome.text, settled.outcome.isError);
}

/** One `tool_use`: the bash tool (`bash_20250124`: `{command}` or `{restart: true}`), the text editor when the run offers it; anything else is an `is_error` result. */
async function handleToolUse(state: RunState, session: RunSession, use: ToolUseBlock): Promise<ToolResultBlock> {
  const outcome = await toolOutcome(state, session, use);
  return toolResult(use.id, outcome.text, outcome.isError);
}

async function toolOutcome(state: RunState, session: RunSession, use: ToolUseBlock): Promise<ToolOutcome> {
  const tools = state.input.tools;
  if (use.name === TEXT_EDITOR_NAME && tools.includes('text_editor')) {
    const parsed = parseEditInput(use.input);
    if (!parsed.ok) return { text: parsed.text, isError: true };
    return runEditWithApproval(state, session, use.id, parsed.edit);
  }
  if (use.name !== 'bash' || !tools.includes('bash')) {
    const offered = requestTools(tools).map((t) => `"${t.name}"`);
    const only = offered.length === 1 ? `the only tool here is ${offered[0]}` : `the tools here are ${offered.join(' and ')}`;
    return { text: `Unknown tool "${use.name}": ${only}.`, isError: true };
  }
  const parsed = parseBashInput(use.input);
  if (parsed.kind === 'invalid') return parsed.outcome;
  if (parsed.kind === 'restart') {
    await safePoint(state);
    state.setCurrent(use.id, 'restarting');
    return session.restart();
  }
  return runWithApproval(state, session, use.id, parsed.command);
}
