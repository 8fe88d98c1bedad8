/**
 * The `agentRun` workflow: the agent loop (docs/architecture.md, "The
 * approval round trip, end to end"). The parts: the run's state (run-state.ts), the
 * model step (model.ts), one tool turn (tool-use.ts), the approval flow
 * (approval.ts), the session (session.ts).
 *
 * Deterministic code only (src/workflows/README.md): activities are
 * imported as types, time comes from Temporal (`new Date()` is workflow
 * time here), ids from the model.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  patched,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import {
  INVALID_INPUT,
  approveSignal,
  sessionClosingSignal,
  isToolUse,
  statusQuery,
  transcriptQuery,
  type AgentRunInput,
  type AgentRunResult,
  type CarriedState,
  type FinalStatus,
  type Message,
} from '../contract';
import { resolveInput, temporalDuration, type ResolvedInput } from '../contract/input';
import { modelInfoOf } from '../contract/models';
import { markdownText } from '../shared/display';
import {
  CONTINUE_AS_NEW_HISTORY_BYTES,
  CONTINUE_AS_NEW_HISTORY_EVENTS,
  LEGACY_CONTINUE_AS_NEW_HISTORY_BYTES,
  LEGACY_CONTINUE_AS_NEW_HISTORY_EVENTS,
} from '../config';
import { isSealed } from '../shared/sealed';
import { receiveDecision, setDecideHandler } from './approval';
import { checkBudgets, setBudgetHandler } from './budget';
import { failureMessage } from './failures';
import { askClaude } from './model';
import { RunState } from './run-state';
import { RunSession } from './session';
import { drainMessages, safePoint, setSteeringHandlers } from './steering';
import { runToolUses } from './tool-use';
import { applyRewind, setRewindHandler } from './rewind';
import { TASK_PAYLOAD_TOO_LARGE, taskPayloadProblem } from './task-payloads';
import { pairingProblem, textOf, withoutEmptyText } from './transcript';

/**
 * patched() id: continue-as-new carries the resolved input (every default written out)
 * instead of the input as it came, so the model, the system prompt and the tools a run
 * started with stay those of every later run of its chain, whichever worker's defaults.
 */
export const PINNED_INPUT_PATCH = 'continue-as-new-with-resolved-input';

/**
 * patched() id: the run offers the tools of its input's `tools` (default bash and the text
 * editor, `runEdit` on the session's worker for `str_replace_based_edit_tool`), with the
 * editor's default system prompt. Asked once, at the start: a run that started before it (and
 * the later runs of its chain, whose input has no `tools`) keeps bash alone, so its tools and
 * system prompt never change mid-conversation.
 */
export const TEXT_EDITOR_PATCH = 'text-editor-tool';

/** How a run ends: its final status, and the answer or what went wrong. */
interface RunEnd {
  status: FinalStatus;
  text?: string;
  error?: string;
}

/**
 * Runs one agent: asks Claude, runs the bash commands it asks for (with
 * approvals), sends the results back, until Claude ends its turn or a
 * budget, a human or an error ends the run.
 *
 * @param rawInput see {@link AgentRunInput}; invalid input fails the workflow with a non-retryable `InvalidInput` failure
 * @param carried state from the previous run of this chain (continue-as-new); absent on a fresh start
 * @returns how the run ended; cancellation also returns a result (status `cancelled`)
 */
export async function agentRun(rawInput: AgentRunInput, carried?: CarriedState): Promise<AgentRunResult> {
  const state = new RunState(validInput(rawInput, carried), workflowInfo().workflowId, carried);
  const session = new RunSession(state);
  // An encrypted run (its input came through the codec) takes decisions and session news only from holders of the keys.
  const sealed = isSealed(rawInput);
  setHandler(approveSignal, (d) => receiveDecision(state, d, sealed));
  setHandler(sessionClosingSignal, (s) => session.closing(s, sealed));
  setDecideHandler(state, sealed);
  setSteeringHandlers(state, sealed);
  setBudgetHandler(state, sealed);
  setRewindHandler(state, sealed);
  setHandler(statusQuery, () => state.statusView());
  setHandler(transcriptQuery, (from = 0) => state.transcriptView(from));
  state.publish();
  try {
    for (;;) {
      const end = await takeTurn(state, session);
      if (end) return await finish(state, session, end);
      if (historyIsLarge()) return await continueAsNewOrEnd(state, session, rawInput);
    }
  } catch (err) {
    return await finish(state, session, endOnError(state, err));
  }
}

/**
 * Continues as new once every handler has finished, carrying the run's state; when that
 * continue-as-new would pass the bound of one workflow task (task-payloads.ts, C30), the run
 * ends `failed` with the reason instead, before the server would fail or terminate it.
 */
async function continueAsNewOrEnd(state: RunState, session: RunSession, rawInput: AgentRunInput): Promise<AgentRunResult> {
  state.setDetails('continuing as new to keep the history small');
  await condition(allHandlersFinished);
  // The next run gets this run's input with its defaults written out: a worker whose
  // defaults (model, system prompt) differ cannot change the run's prefix mid-chain.
  const next = patched(PINNED_INPUT_PATCH) ? { ...state.input, modelInfo: modelInfoOf(state.input) } : rawInput;
  const carried = state.carry();
  const tooLarge = await taskPayloadProblem('continuing as new', [next, carried]);
  if (tooLarge !== null) return await finish(state, session, { status: 'failed', error: tooLarge });
  return await continueAsNew<typeof agentRun>(next, carried);
}

/** The input with its defaults (tools: see {@link TEXT_EDITOR_PATCH}). @throws ApplicationFailure `InvalidInput` (non-retryable) listing every problem */
function validInput(raw: AgentRunInput, carried: CarriedState | undefined): ResolvedInput {
  // A run of a chain that started before the editor existed (no marker, or carried on without `tools`) keeps bash alone.
  const resolved = resolveInput(raw, { legacyTools: carried !== undefined || !patched(TEXT_EDITOR_PATCH) });
  if (!resolved.ok)
    throw ApplicationFailure.create({ message: `invalid agentRun input: ${resolved.message}`, type: INVALID_INPUT, nonRetryable: true });
  return resolved.input;
}

/**
 * One turn: waits at the safe point while paused, checks the budgets (a
 * spent one pauses or ends the run: budget.ts) and the transcript, asks
 * Claude, acts on its `stop_reason`.
 * @returns how the run ends, or null to go on
 */
async function takeTurn(state: RunState, session: RunSession): Promise<RunEnd | null> {
  // A rewind asked while paused here is applied at once; the run stays paused after it.
  for (;;) {
    await safePoint(state, () => state.rewindAsked !== null);
    if (state.rewindAsked === null) break;
    await applyRewind(state, session);
  }
  const overBudget = await checkBudgets(state);
  if (overBudget) return overBudget;
  const maxTurns = state.limits.maxTurns;
  const problem = pairingProblem(state.transcript, false, state.conversation.base > 0);
  if (problem) return { status: 'failed', error: `internal error, transcript not sent: ${problem}` };

  const { response, maxTokens, retrySkipped } = await askClaude(state);
  const content = withoutEmptyText(response.content);
  const keep = (): void => {
    if (content.length > 0) state.conversation.push({ role: 'assistant', content });
  };
  switch (response.stopReason) {
    case 'tool_use': {
      if (!content.some(isToolUse)) return { status: 'failed', error: 'stop_reason tool_use came without any tool_use block' };
      const assistant: Message = { role: 'assistant', content };
      state.conversation.push(assistant);
      await runToolUses(state, session, assistant);
      return state.pendingEnd ? { ...state.pendingEnd } : null;
    }
    case 'end_turn':
    case 'stop_sequence':
      keep();
      return endOfTurn(state, textOf(content));
    case 'pause_turn':
      // The API paused a long turn: send the conversation back as it is to let it continue.
      keep();
      return null;
    case 'max_tokens':
      return {
        status: 'max_tokens',
        error:
          retrySkipped === 'budget'
            ? `the answer hit max_tokens at ${maxTokens}, and the turn budget of ${maxTurns} model calls leaves no retry; nothing truncated was executed`
            : `the answer hit max_tokens even at ${maxTokens}; nothing truncated was executed`,
      };
    case 'refusal':
      return { status: 'refused', error: 'Claude refused to continue (stop_reason refusal)' };
    default:
      return { status: 'failed', error: `unexpected stop_reason ${JSON.stringify(response.stopReason)}` };
  }
}

/**
 * Claude ended its turn with `text`: messages queued meanwhile go to it now
 * (the run goes on); a chat run waits for the next message; any other run
 * completes. `end` completes a chat run with its last answer.
 */
async function endOfTurn(state: RunState, text: string): Promise<RunEnd | null> {
  state.setLastAnswer(text);
  const ending = (): RunEnd => ({ status: 'completed', text: state.lastAnswer ?? '' });
  if (state.endRequestedBy !== null) return ending();
  if (state.queued.length > 0) {
    state.conversation.appendUserBlocks(drainMessages(state));
    return null;
  }
  if (!state.input.chat) return { status: 'completed', text };
  if (!(await awaitMessage(state))) return ending();
  // A rewind woke the wait: the next turn applies it (queued messages wait for the turn after).
  if (state.rewindAsked !== null && state.queued.length === 0) {
    state.setStatus('running');
    return null;
  }
  state.conversation.appendUserBlocks(drainMessages(state));
  state.setStatus('running');
  return null;
}

/**
 * A chat run's wait for the next message (status `awaiting_message`), up to
 * the chat idle timeout; a pause holds it with no timer (status `paused`),
 * and the idle wait starts again in full on resume.
 * @returns true when a message is queued; false when `end` was asked or the idle timeout ran out
 */
async function awaitMessage(state: RunState): Promise<boolean> {
  const { workflowId, input } = state;
  const wanted = (): boolean => state.queued.length > 0 || state.endRequestedBy !== null || state.rewindAsked !== null;
  for (;;) {
    if (state.pause !== null) {
      state.setStatus('paused');
      state.setDetails(`paused by ${state.pause.by ?? 'a person'} while waiting for the next message`);
      await condition(() => state.pause === null || state.endRequestedBy !== null || state.rewindAsked !== null);
      if (state.endRequestedBy !== null) return false;
      // A rewind is applied during the pause (the next turn's start holds the run paused after it).
      if (state.rewindAsked !== null) return true;
    }
    state.setStatus('awaiting_message');
    state.setDetails(`waiting for the next message: agent-jobs say ${workflowId} <text>; agent-jobs end ${workflowId} to finish`);
    const woke = await condition(() => wanted() || state.pause !== null, temporalDuration(input.chatIdleTimeout), {
      summary: 'chat: waiting for the next message',
    });
    if (state.endRequestedBy !== null || !woke) return false;
    if (state.queued.length > 0 || state.rewindAsked !== null) return true;
  }
}

/**
 * patched() id: a turn's history cost is what it adds (each `callClaude` sends only the
 * conversation's change), so a run continues as new at the server's limits (the
 * `CONTINUE_AS_NEW_*` values) rather than at the lower thresholds older runs used.
 */
export const LINEAR_HISTORY_PATCH = 'linear-history';

/** Whether to continue as new now (between turns): the server suggests it, or the history passed this project's thresholds. */
function historyIsLarge(): boolean {
  const info = workflowInfo();
  const [bytes, events] = patched(LINEAR_HISTORY_PATCH)
    ? [CONTINUE_AS_NEW_HISTORY_BYTES, CONTINUE_AS_NEW_HISTORY_EVENTS]
    : [LEGACY_CONTINUE_AS_NEW_HISTORY_BYTES, LEGACY_CONTINUE_AS_NEW_HISTORY_EVENTS];
  return info.continueAsNewSuggested || info.historySize > bytes || info.historyLength > events;
}

/**
 * How an error ends the run: cancellation ends it `cancelled`, a model call
 * that failed for good (non-retryable API error, or retries spent) `failed`;
 * either way every open `tool_use` is paired first; a model call whose input passed the bound of
 * one workflow task (task-payloads.ts) `failed` with the reason.
 * @throws the error itself for anything else (a bug: the workflow task fails and is retried)
 */
function endOnError(state: RunState, err: unknown): RunEnd {
  if (isCancellation(err)) {
    state.pairInflight('cancelled');
    return { status: 'cancelled', error: 'the run was cancelled' };
  }
  // A model call not made: its input would have passed the bound of one workflow task (C30).
  if (err instanceof ApplicationFailure && err.type === TASK_PAYLOAD_TOO_LARGE) return { status: 'failed', error: err.message };
  if (err instanceof ActivityFailure) {
    state.pairInflight('failed');
    return { status: 'failed', error: failureMessage(err) };
  }
  throw err;
}

/** Ends the run: records and publishes the result, closes the session (even when cancelled). */
async function finish(state: RunState, session: RunSession, end: RunEnd): Promise<AgentRunResult> {
  const result: AgentRunResult = {
    status: end.status,
    turns: state.turns,
    usage: state.usage,
    costUsd: state.costUsd(),
    ...(end.text !== undefined ? { text: end.text } : {}),
    ...(end.error !== undefined ? { error: end.error } : {}),
  };
  state.end(result);
  // An error can quote the API or a tool_use id: in a code span, as every text the product did not write.
  state.setDetails(end.error === undefined ? 'finished' : markdownText(end.error, 1000));
  await CancellationScope.nonCancellable(() => session.close());
  return result;
}
