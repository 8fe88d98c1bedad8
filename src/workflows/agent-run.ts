/**
 * The `agentRun` workflow: the agent loop (docs/architecture.md, "One
 * tool_use, end to end").
 *
 * Deterministic code only: activities are imported as types, time comes
 * from Temporal (`new Date()` is workflow time here), ids from the model.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  TimeoutFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  isCancellation,
  log,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
  type ActivityOptions,
} from '@temporalio/workflow';
import { TimeoutType } from '@temporalio/common';
import type { createClaudeActivities } from '../activities/claude';
import type { SessionActivities } from '../activities/session';
import { SESSION_NOT_FOUND, type CallClaudeOutput, type RunCommandOutput } from '../activities/types';
import {
  AGENT_STATUS,
  AGENT_TOKENS,
  AGENT_TURNS,
  CLAUDE_CALL_TIMEOUTS,
  CLAUDE_RETRY_POLICY,
  COMMAND_TIMEOUT_SLACK_MS,
  CONTINUE_AS_NEW_HISTORY_BYTES,
  CONTINUE_AS_NEW_HISTORY_EVENTS,
  MAX_TOKENS_RETRY_CAP,
  OPEN_SESSION_RETRY_POLICY,
  OPEN_SESSION_TIMEOUTS,
  SESSION_CONTROL_START_TO_CLOSE,
  SESSION_HEARTBEAT_TIMEOUT,
  SESSION_RETRY_POLICY,
  SESSION_SCHEDULE_TO_START_TIMEOUT,
} from '../config';
import { decideApproval as legacyDecideApproval } from './approval-policy';
import { commandDetails, commandSummary, pendingApproval, safeText } from './display';
import { resolveInput, type ResolvedInput } from './input';
import { approveSignal, statusQuery, transcriptQuery } from './messages';
import {
  commandOutcome,
  deniedOutcome,
  describeDuration,
  interruptedText,
  parseBashInput,
  restartedOutcome,
  sessionLostOutcome,
  type SessionLoss,
  type ToolOutcome,
  type ToolUsePhase,
} from './tool-results';
import { boundTranscript, completeResults, pairingProblem, textOf, toolResult, withoutEmptyText, isToolUse, toolUseOrdinal } from './transcript';
import type {
  AgentRunInput,
  AgentRunResult,
  AppliedDecision,
  ApprovalDecision,
  CarriedState,
  FinalStatus,
  Message,
  PendingApproval,
  RunStatus,
  SessionRef,
  ToolResultBlock,
  ToolUseBlock,
} from './types';

type ClaudeActivities = ReturnType<typeof createClaudeActivities>;

const { callClaude } = proxyActivities<ClaudeActivities>({
  ...CLAUDE_CALL_TIMEOUTS,
  retry: CLAUDE_RETRY_POLICY,
});

const { openSession } = proxyActivities<Pick<SessionActivities, 'openSession'>>({
  ...OPEN_SESSION_TIMEOUTS,
  retry: OPEN_SESSION_RETRY_POLICY,
});

/** Options of activities on a session's own queue (at-most-once, short schedule-to-start). */
function sessionOptions(taskQueue: string, startToCloseMs: number): ActivityOptions {
  return {
    taskQueue,
    scheduleToStartTimeout: SESSION_SCHEDULE_TO_START_TIMEOUT,
    heartbeatTimeout: SESSION_HEARTBEAT_TIMEOUT,
    startToCloseTimeout: startToCloseMs,
    retry: SESSION_RETRY_POLICY,
    // The workflow waits until a cancelled command's process group is
    // really gone before it moves on (C12).
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  };
}

const MAX_DECISIONS_KEPT = 20;

/**
 * patched() id: under approval `policy`, the session's worker judges each
 * command (src/policy, on the parsed command and the workspace's real paths)
 * and runs allowed ones exactly, in one runCommand; before it, the workflow
 * judged the raw text itself (approval-policy.ts, kept for replay).
 */
const POLICY_AT_SESSION_PATCH = 'policy-judged-at-session';

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
  const resolved = resolveInput(rawInput);
  if (!resolved.ok) throw ApplicationFailure.create({ message: `invalid agentRun input: ${resolved.message}`, type: 'InvalidInput', nonRetryable: true });
  const input: ResolvedInput = resolved.input;
  const workflowId = workflowInfo().workflowId;

  const state: CarriedState = carried ?? {
    transcript: [{ role: 'user', content: input.task }],
    turns: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
    session: null,
    decisions: [],
    generation: 0,
  };
  let status: RunStatus = 'running';
  let details = '';
  let result: AgentRunResult | null = null;
  let pending: PendingApproval | null = null;
  let decision: ApprovalDecision | null = null;
  // Results produced so far for the assistant message being executed, so a
  // cancellation can pair the rest.
  let inflight: { assistant: Message; results: ToolResultBlock[] } | null = null;
  // The tool_use being handled, and whether it waits for approval or runs.
  let current: { toolUseId: string; phase: ToolUsePhase } | null = null;
  /** Pairs the open tool_uses of the message being executed when the run ends early (C02). */
  const pairInflight = (end: 'cancelled' | 'failed'): void => {
    if (!inflight) return;
    const reason = (use: ToolUseBlock): string => interruptedText(end, use.id === current?.toolUseId ? current.phase : null);
    state.transcript.push({ role: 'user', content: completeResults(inflight.assistant, inflight.results, reason) });
    inflight = null;
  };

  // ---- visibility ---------------------------------------------------------
  const publish = (): void => {
    upsertSearchAttributes([
      { key: AGENT_STATUS, value: status },
      { key: AGENT_TURNS, value: state.turns },
      { key: AGENT_TOKENS, value: state.usage.inputTokens + state.usage.outputTokens },
    ]);
  };
  const setDetails = (text: string): void => {
    details = text;
    setCurrentDetails(`**${status}** · turn ${state.turns}/${input.maxTurns} · ${text}`);
  };

  // ---- messages -----------------------------------------------------------
  setHandler(approveSignal, (d: ApprovalDecision) => {
    if (
      typeof d !== 'object' ||
      d === null ||
      typeof d.toolUseId !== 'string' ||
      typeof d.approved !== 'boolean' ||
      (d.reason !== undefined && typeof d.reason !== 'string') ||
      (d.by !== undefined && typeof d.by !== 'string') ||
      (d.commandSha256 !== undefined && typeof d.commandSha256 !== 'string')
    ) {
      log.warn('approval signal ignored: malformed payload', { payload: d as unknown });
      return;
    }
    if (pending === null || pending.toolUseId !== d.toolUseId) {
      log.warn('approval signal ignored: no command is waiting with that tool_use id', { toolUseId: d.toolUseId, pending: pending?.toolUseId ?? null });
      return;
    }
    if (decision !== null) {
      log.warn('approval signal ignored: this command was already decided', { toolUseId: d.toolUseId });
      return;
    }
    // A decision is bound to the command bytes its sender was shown (issue 8); one without a hash applies by id alone.
    if (d.commandSha256 !== undefined && d.commandSha256.toLowerCase() !== pending.commandSha256) {
      log.warn('approval signal ignored: its commandSha256 is not the hash of the pending command', { toolUseId: d.toolUseId, commandSha256: d.commandSha256, pending: pending.commandSha256 });
      return;
    }
    decision = d;
  });
  setHandler(statusQuery, () => ({
    workflowId,
    status,
    turns: state.turns,
    pendingApproval: pending,
    usage: state.usage,
    result,
    details,
    decisions: state.decisions,
    session: state.session,
  }));
  setHandler(transcriptQuery, (from = 0) => {
    const start = Math.max(0, Math.min(Math.floor(from), state.transcript.length));
    return { from: start, total: state.transcript.length, messages: state.transcript.slice(start) };
  });

  // ---- session ------------------------------------------------------------
  const lastCwd = (): string | undefined => state.session?.cwd;

  async function startSession(restoreCwd?: string): Promise<SessionRef> {
    setDetails('starting a bash session');
    const ref = await openSession.executeWithOptions(
      { ...OPEN_SESSION_TIMEOUTS, retry: OPEN_SESSION_RETRY_POLICY, summary: 'session: open' },
      [
        {
          workflowId,
          ...(input.workdir !== undefined ? { workdir: input.workdir } : {}),
          ...(restoreCwd !== undefined ? { restoreCwd } : {}),
          ...(input.network ? { network: true } : {}),
        },
      ],
    );
    state.session = ref;
    return ref;
  }

  /** Opens a replacement session after a loss; returns its cwd, or null with the error when none could be opened. */
  async function replaceSession(restoreCwd: string | undefined): Promise<{ cwd: string | null; error?: string }> {
    state.session = null;
    try {
      return { cwd: (await startSession(restoreCwd)).cwd };
    } catch (err) {
      if (isCancellation(err)) throw err;
      return { cwd: null, error: failureMessage(err) };
    }
  }

  async function closeSession(): Promise<void> {
    const session = state.session;
    if (!session) return;
    state.session = null;
    try {
      await proxyActivities<SessionActivities>(sessionOptions(session.taskQueue, 30_000)).closeSession.executeWithOptions(
        { ...sessionOptions(session.taskQueue, 30_000), summary: 'session: close' },
        [{ sessionId: session.sessionId }],
      );
    } catch (err) {
      log.warn('could not close the bash session (its worker may be gone)', { error: failureMessage(err) });
    }
  }

  // ---- one tool_use -------------------------------------------------------
  /**
   * Runs one command on the session's worker. With `autoApprove`, the worker
   * first judges it under the `policy` rules (src/policy, on what bash would
   * run, with the workspace's real paths) and runs it exactly (no shell) only
   * when they allow; else nothing runs and the answer is `{needsApproval}`.
   */
  async function runCommand(toolUseId: string, command: string, autoApprove = false): Promise<ToolOutcome | { needsApproval: string }> {
    let session = state.session;
    if (!session) {
      try {
        session = await startSession(lastCwd());
      } catch (err) {
        if (isCancellation(err)) throw err;
        return { text: `Command not run: no bash session could be started (${failureMessage(err)}).`, isError: true };
      }
    }
    setDetails(`running ${commandDetails(command)}`);
    // The policy check runs an allowed command too; one that needs a human runs later as plain `bash #n`.
    const summary = commandSummary(command, toolUseOrdinal(state.transcript, toolUseId), autoApprove);
    const options = { ...sessionOptions(session.taskQueue, input.commandTimeoutMs + COMMAND_TIMEOUT_SLACK_MS), summary };
    try {
      const out: RunCommandOutput = await proxyActivities<SessionActivities>(options).runCommand.executeWithOptions(options, [
        { sessionId: session.sessionId, command, timeoutMs: input.commandTimeoutMs, workflowId, toolUseId, ...(autoApprove ? { autoApprove: 'policy' as const } : {}) },
      ]);
      if (out.needsApproval !== undefined) return { needsApproval: out.needsApproval };
      session.cwd = out.cwd;
      return commandOutcome(out, input.commandTimeoutMs);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const loss = sessionLoss(err);
      if (!loss) return { text: `The command could not be run: ${failureMessage(err)}.`, isError: true };
      log.warn('bash session lost', { toolUseId, detail: loss.detail });
      const fresh = await replaceSession(session.cwd);
      return sessionLostOutcome(loss, fresh.cwd, fresh.error);
    }
  }

  async function restartSession(): Promise<ToolOutcome> {
    const session = state.session;
    if (!session) {
      const fresh = await replaceSession(lastCwd());
      return fresh.cwd !== null ? restartedOutcome(fresh.cwd) : { text: `No bash session could be started (${fresh.error}).`, isError: true };
    }
    setDetails('restarting the bash session');
    const options = { ...sessionOptions(session.taskQueue, 30_000), startToCloseTimeout: SESSION_CONTROL_START_TO_CLOSE, summary: 'bash: restart' };
    try {
      const out = await proxyActivities<SessionActivities>(options).restartSession.executeWithOptions(options, [{ sessionId: session.sessionId }]);
      session.cwd = out.cwd;
      return restartedOutcome(out.cwd);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const fresh = await replaceSession(session.cwd);
      return fresh.cwd !== null ? restartedOutcome(fresh.cwd) : { text: `No bash session could be started (${fresh.error}).`, isError: true };
    }
  }

  async function waitForApproval(toolUseId: string, command: string, why: string): Promise<AppliedDecision> {
    const waiting = pendingApproval({ toolUseId, command, requestedAt: new Date().toISOString() });
    pending = waiting;
    decision = null;
    status = 'awaiting_approval';
    publish();
    setDetails(`waiting for approval of ${commandDetails(command)} (tool_use ${toolUseId}; ${safeText(why, false)})`);
    try {
      const decided = await condition(() => decision !== null, input.approvalTimeout);
      const d = decision as ApprovalDecision | null;
      const { commandSha256 } = waiting;
      const applied: AppliedDecision =
        decided && d
          ? { toolUseId, approved: d.approved, source: 'signal', at: new Date().toISOString(), ...(d.reason ? { reason: d.reason } : {}), ...(d.by ? { by: d.by } : {}), commandSha256, hashChecked: d.commandSha256 !== undefined }
          : { toolUseId, approved: false, source: 'timeout', at: new Date().toISOString(), reason: `no decision within ${describeDuration(input.approvalTimeout)}`, commandSha256 };
      state.decisions = [...state.decisions, applied].slice(-MAX_DECISIONS_KEPT);
      log.info('approval decision applied', { ...applied });
      return applied;
    } finally {
      pending = null;
      decision = null;
      status = 'running';
      publish();
    }
  }

  async function handleToolUse(use: ToolUseBlock): Promise<ToolResultBlock> {
    const done = (o: ToolOutcome): ToolResultBlock => toolResult(use.id, o.text, o.isError);
    if (use.name !== 'bash') return done({ text: `Unknown tool "${use.name}": the only tool here is "bash".`, isError: true });
    const parsed = parseBashInput(use.input);
    if (parsed.kind === 'invalid') return done(parsed.outcome);
    if (parsed.kind === 'restart') return done(await restartSession());
    let why: string;
    if (input.approval === 'policy' && patched(POLICY_AT_SESSION_PATCH)) {
      // The session's worker judges and, when the policy allows, runs it exactly.
      current = { toolUseId: use.id, phase: 'running' };
      const auto = await runCommand(use.id, parsed.command, true);
      if (!('needsApproval' in auto)) return done(auto);
      why = auto.needsApproval;
    } else {
      // Runs started before the policy moved to the session worker: the old in-workflow rules (replay).
      const policy = legacyDecideApproval(parsed.command, input.approval);
      if (policy.action === 'run') return done(await runApproved(use.id, parsed.command));
      why = policy.reason;
    }
    current = { toolUseId: use.id, phase: 'approval' };
    const d = await waitForApproval(use.id, parsed.command, why);
    if (!d.approved) return done(deniedOutcome(d, input.approvalTimeout));
    return done(await runApproved(use.id, parsed.command));
  }

  /** Runs a command a human approved (or that needs no approval) in the shell. */
  async function runApproved(toolUseId: string, command: string): Promise<ToolOutcome> {
    current = { toolUseId, phase: 'running' };
    const out = await runCommand(toolUseId, command);
    return 'needsApproval' in out ? { text: 'internal error: approval asked for an approved command', isError: true } : out;
  }

  // ---- model calls --------------------------------------------------------
  async function ask(maxTokens: number): Promise<CallClaudeOutput> {
    const turn = state.turns + 1;
    setDetails(`waiting for Claude (turn ${turn})`);
    const response = await callClaude.executeWithOptions(
      { ...CLAUDE_CALL_TIMEOUTS, retry: CLAUDE_RETRY_POLICY, summary: `claude: turn ${turn}` },
      [{ model: input.model, maxTokens, system: input.system, messages: state.transcript, turn }],
    );
    state.turns = turn;
    state.usage = {
      inputTokens: state.usage.inputTokens + response.usage.inputTokens,
      outputTokens: state.usage.outputTokens + response.usage.outputTokens,
    };
    publish();
    return response;
  }

  async function finish(end: { status: FinalStatus; text?: string; error?: string }): Promise<AgentRunResult> {
    result = {
      status: end.status,
      turns: state.turns,
      usage: state.usage,
      ...(end.text !== undefined ? { text: end.text } : {}),
      ...(end.error !== undefined ? { error: end.error } : {}),
    };
    status = end.status;
    publish();
    setDetails(end.error ?? 'finished');
    await CancellationScope.nonCancellable(closeSession);
    return result;
  }

  // ---- the loop -----------------------------------------------------------
  publish();
  try {
    for (;;) {
      if (state.turns >= input.maxTurns) {
        return await finish({ status: 'max_turns', error: `the turn budget of ${input.maxTurns} model calls is spent` });
      }
      const problem = pairingProblem(state.transcript);
      if (problem) return await finish({ status: 'failed', error: `internal error, transcript not sent: ${problem}` });
      state.transcript = boundTranscript(state.transcript, input.transcriptBudgetChars);

      let maxTokens = input.maxTokens;
      let response = await ask(maxTokens);
      if (response.stopReason === 'max_tokens' && maxTokens < MAX_TOKENS_RETRY_CAP) {
        // Never execute a truncated tool_use: ask again, once, with room to finish.
        maxTokens = Math.min(maxTokens * 2, MAX_TOKENS_RETRY_CAP);
        response = await ask(maxTokens);
      }
      const content = withoutEmptyText(response.content);

      switch (response.stopReason) {
        case 'tool_use': {
          if (!content.some(isToolUse)) {
            return await finish({ status: 'failed', error: 'stop_reason tool_use came without any tool_use block' });
          }
          const assistant: Message = { role: 'assistant', content };
          state.transcript.push(assistant);
          inflight = { assistant, results: [] };
          for (const use of content.filter(isToolUse)) {
            inflight.results.push(await handleToolUse(use));
            current = null;
          }
          state.transcript.push({ role: 'user', content: completeResults(assistant, inflight.results, 'No result was produced for this tool_use.') });
          inflight = null;
          break;
        }
        case 'end_turn':
        case 'stop_sequence':
          if (content.length > 0) state.transcript.push({ role: 'assistant', content });
          return await finish({ status: 'completed', text: textOf(content) });
        case 'pause_turn':
          // The API paused a long turn: send the conversation back as it is to let it continue.
          if (content.length > 0) state.transcript.push({ role: 'assistant', content });
          break;
        case 'max_tokens':
          return await finish({ status: 'max_tokens', error: `the answer hit max_tokens even at ${maxTokens}; nothing truncated was executed` });
        case 'refusal':
          return await finish({ status: 'refused', error: 'Claude refused to continue (stop_reason refusal)' });
        default:
          return await finish({ status: 'failed', error: `unexpected stop_reason ${JSON.stringify(response.stopReason)}` });
      }

      const info = workflowInfo();
      if (info.continueAsNewSuggested || info.historySize > CONTINUE_AS_NEW_HISTORY_BYTES || info.historyLength > CONTINUE_AS_NEW_HISTORY_EVENTS) {
        setDetails('continuing as new to keep the history small');
        await condition(allHandlersFinished);
        return await continueAsNew<typeof agentRun>(rawInput, { ...state, generation: state.generation + 1 });
      }
    }
  } catch (err) {
    if (isCancellation(err)) {
      pairInflight('cancelled');
      return await finish({ status: 'cancelled', error: 'the run was cancelled' });
    }
    if (err instanceof ActivityFailure) {
      // A model call that failed for good (non-retryable API error, or retries spent).
      pairInflight('failed');
      return await finish({ status: 'failed', error: failureMessage(err) });
    }
    throw err;
  }
}

/** The deepest useful message of a failure chain (the API's own message for model calls). */
function failureMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof ActivityFailure && current.cause) current = current.cause;
  if (current instanceof TimeoutFailure) return `${(current.timeoutType ?? 'activity').toLowerCase()} timeout`;
  return current instanceof Error ? current.message : String(current);
}

/** Classifies a session activity failure as a lost session (worker gone or session unknown), or null for anything else. */
function sessionLoss(err: unknown): SessionLoss | null {
  if (!(err instanceof ActivityFailure)) return null;
  const cause = err.cause;
  if (cause instanceof TimeoutFailure) {
    if (cause.timeoutType === TimeoutType.SCHEDULE_TO_START) {
      return { kind: 'not-started', detail: 'no worker picked up the command (the worker holding the session is gone)' };
    }
    return { kind: 'interrupted', detail: `the worker holding it stopped responding (${(cause.timeoutType ?? 'activity').toLowerCase()} timeout)` };
  }
  if (cause instanceof ApplicationFailure && cause.type === SESSION_NOT_FOUND) {
    return { kind: 'interrupted', detail: 'the worker no longer holds it' };
  }
  return null;
}
