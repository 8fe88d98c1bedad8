/**
 * The state of one agentRun, in one object: what continues-as-new, what the
 * status query and the UI show, and what the run is doing right now.
 * Message handlers and the loop's parts read and change it; nothing else
 * holds run state. Deterministic (workflow code).
 */
import { patched, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { normalizeUsage, totalTokens } from '../contract';
import type {
  AgentRunResult,
  AppliedDecision,
  ApprovalRule,
  BudgetLimits,
  BudgetView,
  CarriedState,
  FinalStatus,
  Message,
  PauseState,
  QueuedMessage,
  PendingApproval,
  RunStatus,
  SessionRef,
  StatusView,
  ToolResultBlock,
  ToolUseBlock,
  TranscriptView,
  Usage,
} from '../contract';
import type { ResolvedInput } from '../contract/input';
import type { CheckpointRecord, CheckpointResult, RestoreRequest, RewindRecord, RewindRequest } from '../contract/checkpoint';
import { toSearchText } from '../shared/search-text';
import { AGENT_AWAITING, AGENT_AWAITING_SINCE, AGENT_COST_USD, AGENT_STATUS, AGENT_TOKENS, AGENT_TURNS } from '../config';
import { legacyAwaitingSummary } from '../shared/display';
import { capabilitiesOf, contextStrategyOf, contextWindowOf, costUsd, modelInfoOf, type ModelInfo } from '../contract/models';
import { newApprovalState, type ApprovalState } from './approval-state';
import { ConversationLog } from './conversation';
import { describeSpent, initialLimits, msSince } from './limits';
import { interruptedText, type ToolUsePhase } from './tool-results';
import { completeResults } from './transcript';

/** The assistant message whose `tool_use` blocks are being executed, and the results produced so far. */
export interface Inflight {
  assistant: Message;
  results: ToolResultBlock[];
}

/** Which `tool_use` is being handled, and how far it got. */
export interface CurrentToolUse {
  toolUseId: string;
  phase: ToolUsePhase;
}

/** A `transcript` query answer holds at most this many characters of JSON (one message more when the first alone is larger), far below the 2 MiB payload limit. */
export const MAX_TRANSCRIPT_PAGE_CHARS = 512_000;

/** Commands whose duration the transcript query reports (the most recent of this execution). */
export const MAX_DURATIONS_KEPT = 200;

/**
 * patched() id: the search attributes include `AgentCostUsd` (the run's
 * cost so far). Runs started before it upsert the attributes they always
 * did, so their histories replay unchanged.
 */
export const COST_ATTRIBUTE_PATCH = 'publish-agent-cost-usd';

/**
 * patched() id: `AgentAwaiting` is published encoded as one quoted
 * tsvector lexeme ({@link toSearchText}), which PostgreSQL visibility
 * accepts; older histories published the plain text.
 */
export const SEARCH_TEXT_PATCH = 'agent-awaiting-as-tsvector-lexeme';

/**
 * Since this patch `AgentAwaiting` names a waiting command by its sha256
 * only, never its text: search attributes live in the visibility store,
 * which no payload codec covers; `status` shows the command.
 * Older histories published the command's summary.
 */
export const AWAITING_WITHOUT_TEXT_PATCH = 'agent-awaiting-without-command-text';

/** An end decided inside a tool turn (the approval timeout under `end`): the loop ends the run once the turn's results are recorded. */
export interface PendingEnd {
  status: FinalStatus;
  error: string;
}

/** One run's state (module doc). Fields are public so the loop's parts stay small; each says who writes it. */
export class RunState {
  // ---- carried across continue-as-new (see CarriedState) ----
  /** The conversation (the tail the workflow holds, and what the worker has). Written by the loop (one assistant + one user message per tool turn). */
  readonly conversation: ConversationLog;
  /** Model calls made in the whole chain. Written by the model step. */
  turns: number;
  /** Tokens used in the whole chain. Written by the model step. */
  usage: Usage;
  /** The live bash session, or null before the first command and after a loss. Written by the session part. */
  session: SessionRef | null;
  /** The most recent decisions applied, newest last (at most `MAX_DECISIONS_KEPT`). Written by the approval part. */
  decisions: AppliedDecision[];
  /** Continue-as-new generations so far. */
  readonly generation: number;
  /** Approval rules, oldest first. Written by the `decide` and `removeRule` Updates. */
  rules: ApprovalRule[];
  /** Id of the next rule. */
  nextRuleId: number;
  /** Messages queued by `say`, not yet sent; drained at the next turn boundary (steering.ts). */
  queued: QueuedMessage[];
  /** The budgets' limits: the input's, raised by `extend` (budget.ts). */
  limits: BudgetLimits;
  /** ISO-8601 workflow time the first run of the chain started (the `maxDuration` budget counts from it). */
  readonly startedAt: string;
  /** The first checkpoint of each turn of the conversation as it stands (rewind.ts); turns a rewind dropped are gone from it. */
  checkpoints: CheckpointRecord[];
  /** Rewinds applied, oldest first. */
  rewinds: RewindRecord[];
  /** A checkpoint the next session opened restores first (a fork's workspace), or null. */
  pendingRestore: RestoreRequest | null;

  // ---- this workflow execution only ----
  /** What the status query and the `AgentStatus` search attribute say. */
  status: RunStatus = 'running';
  /** What the run does or waits for right now (the UI's current details, without the status prefix). */
  details = '';
  /** How the run ended, once it has. */
  result: AgentRunResult | null = null;
  /** The pending approval and the decision received for it (src/workflows/approval.ts). */
  readonly approval: ApprovalState = newApprovalState();
  /** The assistant message being executed, so an early end can pair its open `tool_use`s. */
  inflight: Inflight | null = null;
  /** The `tool_use` being handled, so an early end can say what happened to it. */
  current: CurrentToolUse | null = null;
  /** The pause asked for (`pause` Update, or the approval timeout under `pause`); null when not paused. The status is `paused` only once a safe point is reached. */
  pause: PauseState | null = null;
  /** Who asked to `end` a chat run, once someone did. */
  endRequestedBy: string | null = null;
  /** Set when a tool turn decided that the run ends after it (the approval timeout under `end`). */
  pendingEnd: PendingEnd | null = null;
  /** Claude's last answer (text of the last `end_turn`), the result of a chat run that is ended or idles out. */
  lastAnswer: string | undefined = undefined;
  /** Since when the run waits for a person (ISO-8601), for the `AgentAwaitingSince` search attribute; null when it waits for nobody. */
  awaitingSince: string | null = null;
  /** Duration in ms of each recent command, by `tool_use` id (at most {@link MAX_DURATIONS_KEPT}). */
  durations: Record<string, number> = {};
  /** The model's window, prices and 1-hour TTL (src/contract/models.ts `modelInfoOf`). */
  readonly model: ModelInfo;
  /** A rewind asked and not applied yet (the loop applies it before the next model call: rewind.ts), with its number. */
  rewindAsked: { req: RewindRequest; n: number } | null = null;
  /** Rewinds asked in this execution (numbers them), and the number and answer (or failure) of the last one applied. */
  rewindsAsked = 0;
  rewindDone: { n: number; answer?: RewindRecord; error?: string } | null = null;

  /**
   * @param input the validated input, every default applied
   * @param workflowId this run's workflow id (workflowInfo())
   * @param carried the previous execution's state (continue-as-new); absent on a fresh start
   */
  constructor(
    readonly input: ResolvedInput,
    readonly workflowId: string,
    carried?: CarriedState,
  ) {
    this.conversation = new ConversationLog(
      input.task,
      carried?.conversation ??
        (carried?.transcript !== undefined
          ? { legacyTranscript: carried.transcript }
          : input.fork && carried === undefined
            ? { forkMessages: input.fork.messages }
            : undefined),
    );
    this.checkpoints = carried?.checkpoints ?? [];
    this.rewinds = carried?.rewinds ?? [];
    this.pendingRestore = carried === undefined && input.fork ? input.fork.checkpoint : null;
    this.turns = carried?.turns ?? 0;
    // Older workers carried only input and output tokens.
    this.usage = normalizeUsage(carried?.usage);
    this.session = carried?.session ?? null;
    this.decisions = carried?.decisions ?? [];
    this.generation = carried?.generation ?? 0;
    this.rules = carried?.rules ?? [];
    this.nextRuleId = carried?.nextRuleId ?? 1;
    this.queued = carried?.queuedMessages ?? [];
    this.limits = carried?.limits ?? initialLimits(input);
    this.startedAt = carried?.startedAt ?? workflowInfo().runStartTime.toISOString();
    this.model = modelInfoOf(input);
  }

  /** What the run's usage cost so far in USD, at the model's prices; null when they are unknown. */
  costUsd(): number | null {
    return costUsd(this.usage, this.model.prices);
  }

  /** The budgets and what was used of them (status). */
  budgetView(): BudgetView {
    return {
      limits: this.limits,
      used: { turns: this.turns, costUsd: this.costUsd(), tokens: totalTokens(this.usage), durationMs: msSince(this.startedAt) },
      onBudget: this.input.onBudget,
    };
  }

  /** The state the next execution starts from (continue-as-new happens only between turns, so nothing is pending). */
  carry(): CarriedState {
    return {
      conversation: this.conversation.carry(),
      turns: this.turns,
      usage: this.usage,
      session: this.session,
      decisions: this.decisions,
      generation: this.generation + 1,
      rules: this.rules,
      nextRuleId: this.nextRuleId,
      queuedMessages: this.queued,
      limits: this.limits,
      startedAt: this.startedAt,
      ...(this.checkpoints.length > 0 ? { checkpoints: this.checkpoints } : {}),
      ...(this.rewinds.length > 0 ? { rewinds: this.rewinds } : {}),
    };
  }

  /**
   * Keeps a checkpoint a tool call's answer carried, when it is the first of its turn (the
   * workspace as it was before the turn's tools). The turn's assistant message is the last one
   * held while its tools run.
   */
  recordCheckpoint(toolUseId: string, result: CheckpointResult | undefined): void {
    if (!result || !('id' in result) || this.checkpoints.some((c) => c.turn === result.turn)) return;
    const { turn, id, store, workspace } = result;
    this.checkpoints.push({ turn, id, store, workspace, toolUseId, messageIndex: this.conversation.length - 1 });
  }

  /** The messages the workflow holds (from `conversation.base` on; all of them before any continue-as-new). */
  get transcript(): Message[] {
    return this.conversation.messages;
  }

  /** Sets the status and publishes it; entering or leaving a status that waits for a person stamps `awaitingSince`. */
  setStatus(status: RunStatus): void {
    const waits = (s: RunStatus): boolean => s === 'awaiting_approval' || s === 'paused' || s === 'awaiting_message';
    if (waits(status) && (!waits(this.status) || this.awaitingSince === null)) this.awaitingSince = new Date().toISOString();
    if (!waits(status)) this.awaitingSince = null;
    this.status = status;
    this.publish();
  }

  /** Records how long a command ran, keeping the most recent {@link MAX_DURATIONS_KEPT}. */
  recordDuration(toolUseId: string, ms: number): void {
    this.durations[toolUseId] = ms;
    const ids = Object.keys(this.durations);
    for (const id of ids.slice(0, Math.max(0, ids.length - MAX_DURATIONS_KEPT))) delete this.durations[id];
  }

  /** What the run waits for a person for, one line (the `AgentAwaiting` search attribute); empty when nobody. */
  awaiting(): string {
    const pending = this.approval.pending;
    if (this.status === 'paused') {
      const p = this.pause;
      const why =
        p?.reason === 'approval_timeout'
          ? 'approval timed out'
          : p?.reason === 'budget' && p.budget !== undefined
            ? `more budget: ${describeSpent({ budget: p.budget, limit: p.limit ?? 0, used: p.used ?? 0 })}`
            : `paused by ${p?.by ?? 'a person'}`;
      return pending ? `${why}; approval of ${this.waitingCommand(pending)}` : why;
    }
    if (this.status === 'awaiting_approval' && pending) return `approval of ${this.waitingCommand(pending)}`;
    if (this.status === 'awaiting_message') return `the next message (chat, after turn ${this.turns})`;
    return '';
  }

  /** How `AgentAwaiting` names a waiting command: by its hash (see {@link AWAITING_WITHOUT_TEXT_PATCH}), or its summary in older runs. */
  private waitingCommand(pending: PendingApproval): string {
    if (patched(AWAITING_WITHOUT_TEXT_PATCH))
      return `${pending.edit ? 'an edit' : 'a command'}, sha256 ${pending.commandSha256.slice(0, 12)}`;
    return legacyAwaitingSummary(pending.command, pending.edit);
  }

  /**
   * Upserts the search attributes: one workflow command each time. Status,
   * turns and tokens always; `AgentCostUsd` when the cost is known (runs
   * that recorded {@link COST_ATTRIBUTE_PATCH}); `AgentAwaiting` /
   * `AgentAwaitingSince` once the run has waited for a person (runs that
   * never did, and older histories, upsert only the first ones).
   */
  publish(): void {
    const awaiting = this.awaiting();
    if (awaiting !== '') this.everAwaited = true;
    const cost = this.costUsd();
    upsertSearchAttributes([
      { key: AGENT_STATUS, value: this.status },
      { key: AGENT_TURNS, value: this.turns },
      { key: AGENT_TOKENS, value: totalTokens(this.usage) },
      ...(cost !== null && patched(COST_ATTRIBUTE_PATCH) ? [{ key: AGENT_COST_USD, value: cost }] : []),
      ...(this.everAwaited
        ? [
            { key: AGENT_AWAITING, value: patched(SEARCH_TEXT_PATCH) ? toSearchText(awaiting) : awaiting },
            { key: AGENT_AWAITING_SINCE, value: this.awaitingSince === null ? null : new Date(this.awaitingSince) },
          ]
        : []),
    ]);
  }

  /** Whether this execution ever published a wait for a person (then the awaiting attributes are kept current). */
  private everAwaited = false;

  /** Sets what the run is doing (status query `details`, and the UI's current details with status and turn). */
  setDetails(text: string): void {
    this.details = text;
    setCurrentDetails(`**${this.status}** · turn ${this.turns}/${this.limits.maxTurns} · ${text}`);
  }

  /** Answer of the `status` query. */
  statusView(): StatusView {
    return {
      workflowId: this.workflowId,
      status: this.status,
      turns: this.turns,
      pendingApproval: this.approval.pending,
      usage: this.usage,
      costUsd: this.costUsd(),
      budget: this.budgetView(),
      result: this.result,
      details: this.details,
      decisions: this.decisions,
      session: this.session,
      rules: this.rules,
      queuedMessages: this.queued,
      pause: this.pause,
      chat: this.input.chat,
      model: this.input.model,
      contextWindow: contextWindowOf(this.input),
      contextStrategy: this.conversation.clearedBefore > 0 ? 'clearing' : contextStrategyOf(capabilitiesOf(this.input)),
    };
  }

  /**
   * Answer of the `transcript` query from message `from` (whole-conversation index) on,
   * clamped to what the workflow holds, and cut after {@link MAX_TRANSCRIPT_PAGE_CHARS}
   * characters of JSON (at least one message): ask again from `from + messages.length`
   * until `total`.
   */
  transcriptView(from = 0): TranscriptView {
    const { base, length } = this.conversation;
    const start = Math.max(base, Math.min(Math.floor(from), length));
    const messages: Message[] = [];
    let chars = 0;
    for (const message of this.transcript.slice(start - base)) {
      chars += JSON.stringify(message).length;
      if (messages.length > 0 && chars > MAX_TRANSCRIPT_PAGE_CHARS) break;
      messages.push(message);
    }
    return { from: start, total: length, base, messages, durationsMs: { ...this.durations } };
  }

  /**
   * Pairs every open `tool_use` of the message being executed when the run
   * ends early (every path pairs each `tool_use` with one `tool_result`):
   * the one in progress says what happened to it, the rest that they did not run.
   */
  pairInflight(end: 'cancelled' | 'failed'): void {
    const inflight = this.inflight;
    if (!inflight) return;
    const current = this.current;
    const reason = (use: ToolUseBlock): string => interruptedText(end, use.id === current?.toolUseId ? current.phase : null);
    this.conversation.push({ role: 'user', content: completeResults(inflight.assistant, inflight.results, reason) });
    this.inflight = null;
  }
}
