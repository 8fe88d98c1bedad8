/**
 * The model step: one answer from Claude for the transcript as it is, with
 * the one `max_tokens` retry, counted against the turn budget, and the
 * usage added up. Deterministic (workflow code).
 */
import { ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { createClaudeActivities } from '../activities/claude';
import { normalizeUsage, type CallClaudeOutput, type RequestContext } from '../contract';
import { capabilitiesOf, compactionTrigger, contextStrategyOf, contextWindowOf, modelInfoOf } from '../contract/models';
import { CLAUDE_ACTIVITY_OPTIONS, MAX_TOKENS_RETRY_CAP } from '../config';
import type { RunState } from './run-state';
import { TASK_PAYLOAD_TOO_LARGE, taskPayloadProblem } from './task-payloads';

const { callClaude } = proxyActivities<ReturnType<typeof createClaudeActivities>>(CLAUDE_ACTIVITY_OPTIONS);

/**
 * patched() id: the `max_tokens` retry is a model call like any other, so it
 * is made only while the turn budget has room (before it, a run with
 * `maxTurns: 1` could make 2 calls).
 */
export const MAX_TOKENS_RETRY_IN_BUDGET_PATCH = 'max-tokens-retry-within-turn-budget';

/**
 * patched() id: a model call's input carries the system's notes the run published for the
 * `tool_result`s of its change (`CallClaudeInput.notes`), so a closed run's history holds them as
 * published; before, they were rebuilt from the answers, and a move to another worker was read
 * from the result's text, which the command writes.
 */
export const NOTES_IN_HISTORY_PATCH = 'model-call-carries-notes';

/**
 * How the next request is fitted and cached: the window (the run's `contextWindow`, else the
 * model table's), the outputs already cleared, and the prompt cache TTL: 1 hour when the
 * run may wait for a person after this answer (approval `policy` or `always`, or a chat
 * run) and the model offers it, since a 5-minute entry would expire during the wait; else
 * 5 minutes, which costs less to write.
 */
function requestContext(state: RunState): RequestContext {
  const { input } = state;
  const log = state.conversation;
  const info = modelInfoOf(input);
  const waitsForPeople = input.approval !== 'auto' || input.chat;
  const contextWindow = contextWindowOf(input);
  // Compaction only while nothing was cleared on the client: a run that cleared under an older
  // worker keeps clearing, or its next request would differ from what it already sent.
  const compact = contextStrategyOf(capabilitiesOf(input)) === 'compaction' && log.clearedBefore === 0;
  const serverTools = [...(input.webSearch ? (['web_search'] as const) : []), ...(input.webFetch ? (['web_fetch'] as const) : [])];
  return {
    contextWindow,
    clearedBefore: log.clearedBefore,
    cacheTtl: waitsForPeople && info.cacheTtl1h ? '1h' : '5m',
    ...(input.thinking !== undefined ? { thinkingBudget: input.thinking } : {}),
    ...(input.thinkingDisplay !== undefined ? { thinkingDisplay: input.thinkingDisplay } : {}),
    ...(input.effort !== undefined ? { effort: input.effort } : {}),
    ...(compact ? { compactAtTokens: compactionTrigger(contextWindow, input.maxTokens) } : {}),
    ...(serverTools.length > 0 ? { serverTools } : {}),
    // Absent for bash alone, as runs before the editor sent it.
    ...(input.tools.length !== 1 || input.tools[0] !== 'bash' ? { clientTools: [...input.tools] } : {}),
    ...(input.subagents !== undefined ? { subagentTool: true as const } : {}),
    ...(log.previous ? { previousTokens: log.previous.tokens, previousLength: log.previous.length } : {}),
  };
}

/** What the model step got: the last answer, and the `max_tokens` it was asked with. */
export interface ModelAnswer {
  response: CallClaudeOutput;
  /** `max_tokens` of the call that produced `response`. */
  maxTokens: number;
  /** Set when the answer hit `max_tokens` and was not asked again because the turn budget is spent. */
  retrySkipped?: 'budget';
}

/**
 * Asks Claude for the next answer. When it stops at `max_tokens` (a
 * `tool_use` may be cut off), asks once more with `max_tokens` doubled (up
 * to `MAX_TOKENS_RETRY_CAP`), if the turn budget allows another call.
 * @throws ActivityFailure when a call fails for good (non-retryable API error, or retries spent)
 */
export async function askClaude(state: RunState): Promise<ModelAnswer> {
  let maxTokens = state.input.maxTokens;
  let response = await callOnce(state, maxTokens);
  if (response.stopReason === 'max_tokens' && maxTokens < MAX_TOKENS_RETRY_CAP) {
    if (patched(MAX_TOKENS_RETRY_IN_BUDGET_PATCH) && state.turns >= state.limits.maxTurns)
      return { response, maxTokens, retrySkipped: 'budget' };
    // Never execute a truncated tool_use: ask again, once, with room to finish.
    maxTokens = Math.min(maxTokens * 2, MAX_TOKENS_RETRY_CAP);
    response = await callOnce(state, maxTokens);
  }
  return { response, maxTokens };
}

/**
 * One `callClaude` (one turn): sends the conversation's change since the last call (its
 * history cost is what the turn added), keeps what the worker reports about the request
 * (outputs it cleared to fit the window, and the note Claude was shown), counts the call
 * and its usage, and publishes them.
 * @throws ApplicationFailure {@link TASK_PAYLOAD_TOO_LARGE} when the call's input would pass the workflow task bound (task-payloads.ts)
 */
async function callOnce(state: RunState, maxTokens: number): Promise<CallClaudeOutput> {
  const turn = state.turns + 1;
  state.setDetails(`waiting for Claude (turn ${turn})`);
  const { model, system } = state.input;
  const log = state.conversation;
  const context = requestContext(state);
  const transcript = log.takeDelta();
  const notes = state.notesOf(transcript.messages);
  const published = Object.keys(notes).length > 0 && patched(NOTES_IN_HISTORY_PATCH) ? { notes } : {};
  const input = { model, maxTokens, system, transcript, turn, context, ...published };
  const tooLarge = await taskPayloadProblem(`the model call of turn ${turn}`, [input]);
  if (tooLarge !== null) throw ApplicationFailure.create({ message: tooLarge, type: TASK_PAYLOAD_TOO_LARGE, nonRetryable: true });
  const response = await callClaude.executeWithOptions({ summary: `claude: turn ${turn}` }, [input]);
  const report = response.context;
  if (report) {
    log.clearedBefore = report.clearedBefore;
    if (report.notice !== undefined) log.appendUserBlocks([{ type: 'text', text: report.notice }]);
    log.previous = { tokens: report.requestTokens + response.usage.outputTokens, length: report.messages };
  }
  // Answers recorded by older workers have only input and output tokens.
  state.recordModelCall(turn, normalizeUsage(response.usage));
  return response;
}
