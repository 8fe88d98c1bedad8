/**
 * The state of one agentRun, in one object: what continues-as-new, what the
 * status query and the UI show, and what the run is doing right now.
 * Message handlers and the loop's parts read it and call its methods to
 * change it; nothing else holds run state. Deterministic (workflow code).
 */
import { patched, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { REQUEST_WINDOW_MS, addUsage, isToolResult, normalizeUsage, publishedExitCode, totalTokens } from '../contract';
import type {
  AgentRunResult,
  AppliedDecision,
  ApprovalRule,
  BudgetLimits,
  BudgetView,
  CarriedState,
  ContentBlock,
  ExtendRequest,
  FinalStatus,
  Message,
  PauseState,
  QueuedMessage,
  PendingApproval,
  RunCommandOutput,
  RunStatus,
  SessionRef,
  StatusView,
  ToolResultBlock,
  ToolUseBlock,
  TranscriptView,
  Usage,
  UsedRequest,
} from '../contract';
import type { ResolvedInput } from '../contract/input';
import type { CheckpointRecord, CheckpointResult, RestoreRequest, RewindAnswer, RewindRecord, RewindRequest } from '../contract/checkpoint';
import { toSearchText } from '../shared/search-text';
import { AGENT_AWAITING, AGENT_AWAITING_SINCE, AGENT_COST_USD, AGENT_STATUS, AGENT_TOKENS, AGENT_TURNS } from '../config';
import { legacyAwaitingSummary, markdownText } from '../shared/display';
import { capabilitiesOf, contextStrategyOf, contextWindowOf, costUsd, modelInfoOf, type ModelInfo } from '../contract/models';
import { newApprovalState, type ApprovalState, type Decision } from './approval-state';
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

/**
 * Since this patch `AgentAwaiting` names a waiting tool call by its kind
 * only (`approval of bash`, `approval of an edit`), not the sha256 of its
 * text: an unsalted hash of a short command names it to whoever hashes the
 * guesses (`rm -rf /`, `npm test`), and the visibility store is plaintext.
 * `status` (through the payload codec) shows the command and its hash.
 */
export const AWAITING_KIND_ONLY_PATCH = 'agent-awaiting-kind-only';

/** Decisions kept in `state.decisions` (and so in status and across continue-as-new), newest last. */
export const MAX_DECISIONS_KEPT = 20;

/**
 * patched() id: the run's end goes through {@link RunState.setStatus} like every other status change,
 * so a run that ends while it waits for a person clears `AgentAwaitingSince` (docs/patches.md).
 */
export const END_THROUGH_SET_STATUS_PATCH = 'end-through-set-status';

/** An end decided inside a tool turn (the approval timeout under `end`): the loop ends the run once the turn's results are recorded. */
export interface PendingEnd {
  status: FinalStatus;
  error: string;
}

/**
 * One run's state (module doc). It is the only code that changes its fields:
 * from outside they read through getters (read-only arrays and objects), and
 * every change is one of the methods below, so what the status query, the UI's
 * current details and the search attributes show follows from them. Search
 * attributes are upserted where the run always upserted them ({@link setStatus},
 * {@link recordModelCall}, {@link addChildUsage}, {@link end}, {@link publish}):
 * an upsert is a workflow command, and a new one would not replay old histories.
 */
export class RunState {
  // ---- carried across continue-as-new (see CarriedState) ----
  /** The conversation (the tail the workflow holds, and what the worker has); changed through its own methods (one assistant + one user message per tool turn). */
  readonly conversation: ConversationLog;
  #turns: number;
  #usage: Usage;
  #session: SessionRef | null;
  #decisions: AppliedDecision[];
  /** Continue-as-new generations so far. */
  readonly generation: number;
  #rules: ApprovalRule[];
  #nextRuleId: number;
  #queued: QueuedMessage[];
  #limits: BudgetLimits;
  /** ISO-8601 workflow time the first run of the chain started (the `maxDuration` budget counts from it). */
  readonly startedAt: string;
  #checkpoints: CheckpointRecord[];
  #rewinds: RewindRecord[];
  #pendingRestore: RestoreRequest | null;
  /** Bound steering requests applied, issued within `REQUEST_WINDOW_MS` of the last one remembered (request-binding.ts). */
  #usedRequests: UsedRequest[];

  // ---- this workflow execution only ----
  #status: RunStatus = 'running';
  #details = '';
  #result: AgentRunResult | null = null;
  readonly #approval: ApprovalState = newApprovalState();
  #inflight: Inflight | null = null;
  #current: CurrentToolUse | null = null;
  #pause: PauseState | null = null;
  #endRequestedBy: string | null = null;
  #pendingEnd: PendingEnd | null = null;
  #lastAnswer: string | undefined = undefined;
  #awaitingSince: string | null = null;
  /** Duration in ms of each recent command, by `tool_use` id (at most {@link MAX_DURATIONS_KEPT}). */
  readonly #durations: Record<string, number> = {};
  /** Exit code of each of those commands that ran to its end in bash ({@link publishedExitCode}), by `tool_use` id. */
  readonly #exitCodes: Record<string, number> = {};
  /** The system's notes at the end of each of those commands' results, by `tool_use` id ({@link recordNotes}). */
  readonly #notes: Record<string, string[]> = {};
  /** The model's window, prices and 1-hour TTL (src/contract/models.ts `modelInfoOf`). */
  readonly model: ModelInfo;
  #rewindAsked: { req: RewindRequest; n: number } | null = null;
  #rewindsAsked = 0;
  #rewindDone: { n: number; answer?: RewindAnswer; error?: string } | null = null;
  #subagentsRunning = 0;
  /** Workflow ids of the sub-agents running now, oldest first (what the details name). */
  #subagentIds: string[] = [];
  /** Approval waits begun in this execution (each wait's number, {@link PendingApproval.wait}). */
  #approvalWaits = 0;

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
    this.#checkpoints = carried?.checkpoints ?? [];
    this.#rewinds = carried?.rewinds ?? [];
    this.#usedRequests = carried?.usedRequests ?? [];
    this.#pendingRestore = carried === undefined && input.fork ? input.fork.checkpoint : null;
    this.#turns = carried?.turns ?? 0;
    // Older workers carried only input and output tokens.
    this.#usage = normalizeUsage(carried?.usage);
    this.#session = carried?.session ?? null;
    this.#decisions = carried?.decisions ?? [];
    this.generation = carried?.generation ?? 0;
    // A sub-agent starts with its parent's rules (input `rules`); their ids stay the parent's.
    this.#rules = carried?.rules ?? input.rules ?? [];
    this.#nextRuleId = carried?.nextRuleId ?? Math.max(0, ...this.#rules.map((r) => r.id)) + 1;
    this.#queued = carried?.queuedMessages ?? [];
    this.#limits = carried?.limits ?? initialLimits(input);
    this.startedAt = carried?.startedAt ?? workflowInfo().runStartTime.toISOString();
    this.model = modelInfoOf(input);
  }

  // ---- reads (every change is a method below) ----

  /** The pending approval, the decision accepted for it, the last decision applied (the approval flow: approval.ts). */
  get approval(): Readonly<ApprovalState> {
    return this.#approval;
  }
  /** Model calls made in the whole chain. */
  get turns(): number {
    return this.#turns;
  }
  /** Tokens used in the whole chain, sub-agents' included. */
  get usage(): Readonly<Usage> {
    return this.#usage;
  }
  /** The live bash session, or null before the first command and after a loss. */
  get session(): SessionRef | null {
    return this.#session;
  }
  /** The most recent decisions applied, newest last (at most `MAX_DECISIONS_KEPT`). */
  get decisions(): readonly AppliedDecision[] {
    return this.#decisions;
  }
  /** Approval rules, oldest first. */
  get rules(): readonly ApprovalRule[] {
    return this.#rules;
  }
  /** Messages queued by `say`, not yet sent; drained at the next turn boundary. */
  get queued(): readonly QueuedMessage[] {
    return this.#queued;
  }
  /** The budgets' limits: the input's, raised by `extend`. */
  get limits(): Readonly<BudgetLimits> {
    return this.#limits;
  }
  /** The first checkpoint of each turn of the conversation as it stands; turns a rewind dropped are gone from it. */
  get checkpoints(): readonly CheckpointRecord[] {
    return this.#checkpoints;
  }
  /** Rewinds applied, oldest first. */
  get rewinds(): readonly RewindRecord[] {
    return this.#rewinds;
  }
  /** A checkpoint the next session opened restores first (a fork's workspace), or null. */
  get pendingRestore(): RestoreRequest | null {
    return this.#pendingRestore;
  }
  /** What the status query and the `AgentStatus` search attribute say. */
  get status(): RunStatus {
    return this.#status;
  }
  /** What the run does or waits for right now (the UI's current details, without the status prefix). */
  get details(): string {
    return this.#details;
  }
  /** How the run ended, once it has. */
  get result(): AgentRunResult | null {
    return this.#result;
  }
  /** The assistant message being executed and its results so far, so an early end can pair its open `tool_use`s. */
  get inflight(): { readonly assistant: Message; readonly results: readonly ToolResultBlock[] } | null {
    return this.#inflight;
  }
  /** The `tool_use` being handled, so an early end can say what happened to it. */
  get current(): Readonly<CurrentToolUse> | null {
    return this.#current;
  }
  /** The pause asked for (`pause` Update, the approval timeout under `pause`, a spent budget); null when not paused. The status is `paused` only once a safe point is reached. */
  get pause(): Readonly<PauseState> | null {
    return this.#pause;
  }
  /** Who asked to `end` a chat run, once someone did. */
  get endRequestedBy(): string | null {
    return this.#endRequestedBy;
  }
  /** Set when a tool turn decided that the run ends after it (the approval timeout under `end`). */
  get pendingEnd(): Readonly<PendingEnd> | null {
    return this.#pendingEnd;
  }
  /** Claude's last answer (text of the last `end_turn`), the result of a chat run that is ended or idles out. */
  get lastAnswer(): string | undefined {
    return this.#lastAnswer;
  }
  /** Since when the run waits for a person (ISO-8601), for the `AgentAwaitingSince` search attribute; null when it waits for nobody. */
  get awaitingSince(): string | null {
    return this.#awaitingSince;
  }
  /** A rewind asked and not applied yet (the loop applies it before the next model call: rewind.ts), with its number. */
  get rewindAsked(): Readonly<{ req: RewindRequest; n: number }> | null {
    return this.#rewindAsked;
  }
  /** The number and answer (or failure) of the last rewind applied. */
  get rewindDone(): Readonly<{ n: number; answer?: RewindAnswer; error?: string }> | null {
    return this.#rewindDone;
  }
  /** Sub-agents (child runs) running now (subagent.ts keeps it at most `input.subagents`). */
  get subagentsRunning(): number {
    return this.#subagentsRunning;
  }

  // ---- changes ----

  /** Records a model call: the chain's turn count becomes `turn`, its `usage` is added; publishes the search attributes. */
  recordModelCall(turn: number, usage: Usage): void {
    this.#turns = turn;
    this.#usage = addUsage(this.#usage, usage);
    this.publish();
  }

  /** Adds a finished sub-agent's usage to the run's; publishes the search attributes. */
  addChildUsage(usage: Usage): void {
    this.#usage = addUsage(this.#usage, usage);
    this.publish();
  }

  /**
   * A sub-agent started (`delta` 1) or ended (`delta` -1). While any runs, the details say the
   * run waits for them (by workflow id); the next step of the turn sets its own.
   */
  countSubagent(delta: 1 | -1, workflowId: string): void {
    this.#subagentsRunning += delta;
    this.#subagentIds = delta === 1 ? [...this.#subagentIds, workflowId] : this.#subagentIds.filter((id) => id !== workflowId);
    const ids = this.#subagentIds;
    if (ids.length > 0)
      this.setDetails(
        `waiting for its sub-agent${ids.length > 1 ? 's' : ''} ${ids.map((id) => markdownText(id)).join(', ')} (turn ${this.#turns})`,
      );
  }

  /** A session was opened: it is the run's session now, and a pending restore is done. */
  sessionOpened(ref: SessionRef): void {
    this.#pendingRestore = null;
    this.#session = ref;
  }

  /** The run has no session now (closed, or lost and being replaced). */
  sessionGone(): void {
    this.#session = null;
  }

  /** A tool turn starts executing `assistant`'s `tool_use`s (so an early end can pair them: {@link pairInflight}). */
  startToolTurn(assistant: Message): void {
    this.#inflight = { assistant, results: [] };
  }

  /** One `tool_use` of the turn has its result; no `tool_use` is being handled now. */
  recordResult(result: ToolResultBlock): void {
    this.#inflight?.results.push(result);
    this.#current = null;
  }

  /** The tool turn ends: `content` (its results, then queued messages) is appended as the user message. */
  endToolTurn(content: ContentBlock[]): void {
    this.conversation.push({ role: 'user', content });
    this.#inflight = null;
  }

  /** `toolUseId` is in `phase` now (what an early end tells Claude about it). */
  setCurrent(toolUseId: string, phase: ToolUsePhase): void {
    this.#current = { toolUseId, phase };
  }

  /** The run ends with `end` once the current tool turn's results are recorded. */
  endAfterTurn(end: PendingEnd): void {
    this.#pendingEnd = end;
  }

  /** Records an applied decision (the last `MAX_DECISIONS_KEPT` kept) as the last applied, for the `decide` Update's answer. */
  recordDecision(applied: AppliedDecision): void {
    this.#decisions = [...this.#decisions, applied].slice(-MAX_DECISIONS_KEPT);
    this.#approval.lastApplied = applied;
  }

  /** `pending` waits for a person's decision: status `awaiting_approval`, published. */
  askApproval(pending: PendingApproval): void {
    this.#approval.pending = pending;
    this.#approval.decision = null;
    this.setStatus('awaiting_approval');
  }

  /** The number of the next approval wait of this execution: 1, 2, ... (Update ids are unique per execution only, so the count need not carry). */
  nextApprovalWait(): number {
    return ++this.#approvalWaits;
  }

  /** A decision for the pending command was accepted (the `decide` Update or the `approve` signal); the approval wait applies it. */
  acceptDecision(decision: Decision): void {
    this.#approval.decision = decision;
  }

  /** The approval wait is over (applied, timed out, or the run ends): nothing waits; status `running`, published. */
  closeApproval(): void {
    this.#approval.pending = null;
    this.#approval.decision = null;
    this.setStatus('running');
  }

  /** Adds an approval rule with the next id. @returns the rule as added */
  addRule(rule: Omit<ApprovalRule, 'id'>): ApprovalRule {
    const added: ApprovalRule = { id: this.#nextRuleId++, ...rule };
    this.#rules = [...this.#rules, added];
    return added;
  }

  /** Removes rule `id` (an id no rule has changes nothing). @returns the rules left */
  removeRule(id: number): readonly ApprovalRule[] {
    this.#rules = this.#rules.filter((r) => r.id !== id);
    return this.#rules;
  }

  /** Asks for a pause; the loop's waits and safe points set the status `paused`. */
  askPause(pause: PauseState): void {
    this.#pause = pause;
  }

  /** Clears the pause; with `only`, only when that is the pause in force (a budget wait ending its own pause). */
  clearPause(only?: PauseState): void {
    if (only === undefined || this.#pause === only) this.#pause = null;
  }

  /** Raises the limits by `req`'s amounts (a budget the run has none of stays absent). @returns the new limits */
  extendLimits(req: Pick<ExtendRequest, 'turns' | 'costUsd' | 'tokens' | 'durationMs'>): Readonly<BudgetLimits> {
    const l = this.#limits;
    this.#limits = {
      maxTurns: l.maxTurns + (req.turns ?? 0),
      ...(l.maxCostUsd !== undefined ? { maxCostUsd: l.maxCostUsd + (req.costUsd ?? 0) } : {}),
      ...(l.maxTokensTotal !== undefined ? { maxTokensTotal: l.maxTokensTotal + (req.tokens ?? 0) } : {}),
      ...(l.maxDurationMs !== undefined ? { maxDurationMs: l.maxDurationMs + (req.durationMs ?? 0) } : {}),
    };
    return this.#limits;
  }

  /**
   * The bound steering requests applied that were issued at most `REQUEST_WINDOW_MS` ago (workflow time);
   * older ones need no remembering: a request that old is refused.
   */
  usedRequests(): UsedRequest[] {
    return this.#usedRequests.filter((r) => msSince(r.issuedAt) <= REQUEST_WINDOW_MS);
  }

  /** Remembers that the bound request `used` was applied (once), and forgets those too old to remember ({@link usedRequests}). */
  rememberRequest(used: UsedRequest): void {
    this.#usedRequests = [...this.usedRequests(), { requestId: used.requestId, issuedAt: used.issuedAt }];
  }

  /** `by` asked a chat run to end. */
  requestEnd(by: string): void {
    this.#endRequestedBy = by;
  }

  /** Queues a message of `say`. @returns how many are queued now */
  queueMessage(message: QueuedMessage): number {
    this.#queued.push(message);
    return this.#queued.length;
  }

  /** The queued messages, oldest first; the queue is empty after. */
  takeQueued(): readonly QueuedMessage[] {
    const taken = this.#queued;
    this.#queued = [];
    return taken;
  }

  /** Claude ended a turn with `text`. */
  setLastAnswer(text: string): void {
    this.#lastAnswer = text;
  }

  /**
   * The run ended with `result`: records it and publishes its final status
   * through {@link setStatus}, which clears `AgentAwaitingSince`
   * ({@link END_THROUGH_SET_STATUS_PATCH}; older histories set the status and publish).
   */
  end(result: AgentRunResult): void {
    this.#result = result;
    if (patched(END_THROUGH_SET_STATUS_PATCH)) this.setStatus(result.status);
    else {
      this.#status = result.status;
      this.publish();
    }
  }

  /** Asks to rewind per `req`. @returns its number, which {@link rewindDone} names once applied */
  askRewind(req: RewindRequest): number {
    const n = ++this.#rewindsAsked;
    this.#rewindAsked = { req, n };
    return n;
  }

  /** Takes the rewind asked (null when none): the loop applies it now. */
  takeRewindAsked(): Readonly<{ req: RewindRequest; n: number }> | null {
    const asked = this.#rewindAsked;
    this.#rewindAsked = null;
    return asked;
  }

  /** Rewind `n` could not be applied, for `error`. */
  rewindFailed(n: number, error: string): void {
    this.#rewindDone = { n, error };
  }

  /** Rewind `n` was applied as `answer`: the checkpoints after its turn are dropped and it is recorded. */
  rewound(n: number, answer: RewindAnswer): void {
    this.#checkpoints = this.#checkpoints.filter((c) => c.turn <= answer.toTurn);
    const { restore, ...record } = answer;
    this.#rewinds.push(restore ? { ...record, before: restore.before } : record);
    this.#rewindDone = { n, answer };
  }

  /** What the run's usage cost so far in USD, at the model's prices; null when they are unknown. */
  costUsd(): number | null {
    return costUsd(this.#usage, this.model.prices);
  }

  /** The budgets and what was used of them (status). */
  budgetView(): BudgetView {
    return {
      limits: this.#limits,
      used: { turns: this.#turns, costUsd: this.costUsd(), tokens: totalTokens(this.#usage), durationMs: msSince(this.startedAt) },
      onBudget: this.input.onBudget,
    };
  }

  /** The state the next execution starts from (continue-as-new happens only between turns, so nothing is pending). */
  carry(): CarriedState {
    return {
      conversation: this.conversation.carry(),
      turns: this.#turns,
      usage: this.#usage,
      session: this.#session,
      decisions: this.#decisions,
      generation: this.generation + 1,
      rules: this.#rules,
      nextRuleId: this.#nextRuleId,
      queuedMessages: this.#queued,
      limits: this.#limits,
      startedAt: this.startedAt,
      ...(this.#checkpoints.length > 0 ? { checkpoints: this.#checkpoints } : {}),
      ...(this.#rewinds.length > 0 ? { rewinds: this.#rewinds } : {}),
      // Absent when none: a chain that never took a bound request carries what it carried before.
      ...(this.#usedRequests.length > 0 ? { usedRequests: this.usedRequests() } : {}),
    };
  }

  /**
   * Keeps a checkpoint a tool call's answer carried, when it is the first of its turn (the
   * workspace as it was before the turn's tools). The turn's assistant message is the last one
   * held while its tools run.
   */
  recordCheckpoint(toolUseId: string, result: CheckpointResult | undefined): void {
    if (!result || !('id' in result) || this.#checkpoints.some((c) => c.turn === result.turn)) return;
    const { turn, id, store, workspace } = result;
    this.#checkpoints.push({ turn, id, store, workspace, toolUseId, messageIndex: this.conversation.length - 1 });
  }

  /** The messages the workflow holds (from `conversation.base` on; all of them before any continue-as-new). */
  get transcript(): Message[] {
    return this.conversation.messages;
  }

  /** Sets the status and publishes it; entering or leaving a status that waits for a person stamps `awaitingSince`. */
  setStatus(status: RunStatus): void {
    const waits = (s: RunStatus): boolean => s === 'awaiting_approval' || s === 'paused' || s === 'awaiting_message';
    if (waits(status) && (!waits(this.#status) || this.#awaitingSince === null)) this.#awaitingSince = new Date().toISOString();
    if (!waits(status)) this.#awaitingSince = null;
    this.#status = status;
    this.publish();
  }

  /**
   * Records how long a command ran and the exit code bash gave it (when it ran to its end), keeping
   * the most recent {@link MAX_DURATIONS_KEPT}. Query state only: no command, nothing in history.
   */
  recordCommand(toolUseId: string, out: RunCommandOutput): void {
    this.#durations[toolUseId] = out.durationMs;
    const code = publishedExitCode(out);
    if (code !== undefined) this.#exitCodes[toolUseId] = code;
    else delete this.#exitCodes[toolUseId];
    const ids = Object.keys(this.#durations);
    delete this.#notes[toolUseId];
    for (const id of ids.slice(0, Math.max(0, ids.length - MAX_DURATIONS_KEPT))) {
      delete this.#durations[id];
      delete this.#exitCodes[id];
      delete this.#notes[id];
    }
  }

  /**
   * Records the lines the system wrote at the end of a `tool_result` (a command's: the worker's
   * notes, then the workflow's, src/shared/notes.ts; an edit's: the worker's), in order, keeping
   * those of the most recent {@link MAX_DURATIONS_KEPT} results; the CLI shows them apart from
   * the output, the turn's budget keeps them whole ({@link notesFor}). Query state only.
   */
  recordNotes(toolUseId: string, notes: readonly string[]): void {
    delete this.#notes[toolUseId];
    this.#notes[toolUseId] = [...notes];
    const ids = Object.keys(this.#notes);
    for (const id of ids.slice(0, Math.max(0, ids.length - MAX_DURATIONS_KEPT))) delete this.#notes[id];
  }

  /** The notes recorded for `toolUseId` ({@link recordNotes}); empty when none. */
  notesFor(toolUseId: string): string[] {
    return Object.hasOwn(this.#notes, toolUseId) ? [...this.#notes[toolUseId]!] : [];
  }

  /** What the run waits for a person for, one line (the `AgentAwaiting` search attribute); empty when nobody. */
  awaiting(): string {
    const pending = this.#approval.pending;
    if (this.#status === 'paused') {
      const p = this.#pause;
      const why =
        p?.reason === 'approval_timeout'
          ? 'approval timed out'
          : p?.reason === 'budget' && p.budget !== undefined
            ? `more budget: ${describeSpent({ budget: p.budget, limit: p.limit ?? 0, used: p.used ?? 0 })}`
            : `paused by ${p?.by ?? 'a person'}`;
      return pending ? `${why}; approval of ${this.waitingCommand(pending)}` : why;
    }
    if (this.#status === 'awaiting_approval' && pending) return `approval of ${this.waitingCommand(pending)}`;
    if (this.#status === 'awaiting_message') return `the next message (chat, after turn ${this.#turns})`;
    return '';
  }

  /** How `AgentAwaiting` names a waiting command: by its kind ({@link AWAITING_KIND_ONLY_PATCH}), its hash in older runs ({@link AWAITING_WITHOUT_TEXT_PATCH}), its summary in the oldest. */
  private waitingCommand(pending: PendingApproval): string {
    if (patched(AWAITING_KIND_ONLY_PATCH)) return pending.edit ? 'an edit' : 'bash';
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
      { key: AGENT_STATUS, value: this.#status },
      { key: AGENT_TURNS, value: this.#turns },
      { key: AGENT_TOKENS, value: totalTokens(this.#usage) },
      ...(cost !== null && patched(COST_ATTRIBUTE_PATCH) ? [{ key: AGENT_COST_USD, value: cost }] : []),
      ...(this.everAwaited
        ? [
            { key: AGENT_AWAITING, value: patched(SEARCH_TEXT_PATCH) ? toSearchText(awaiting) : awaiting },
            { key: AGENT_AWAITING_SINCE, value: this.#awaitingSince === null ? null : new Date(this.#awaitingSince) },
          ]
        : []),
    ]);
  }

  /** Whether this execution ever published a wait for a person (then the awaiting attributes are kept current). */
  private everAwaited = false;

  /** Sets what the run is doing (status query `details`, and the UI's current details with status and turn). */
  setDetails(text: string): void {
    this.#details = text;
    setCurrentDetails(`**${this.#status}** · turn ${this.#turns}/${this.#limits.maxTurns} · ${text}`);
  }

  /** Answer of the `status` query. */
  statusView(): StatusView {
    return {
      workflowId: this.workflowId,
      status: this.#status,
      turns: this.#turns,
      pendingApproval: this.#approval.pending,
      usage: this.#usage,
      costUsd: this.costUsd(),
      budget: this.budgetView(),
      result: this.#result,
      details: this.#details,
      decisions: this.#decisions,
      session: this.#session,
      rules: this.#rules,
      queuedMessages: this.#queued,
      pause: this.#pause,
      chat: this.input.chat,
      model: this.input.model,
      contextWindow: contextWindowOf(this.input),
      contextStrategy: this.conversation.clearedBefore > 0 ? 'clearing' : contextStrategyOf(capabilitiesOf(this.input)),
      ...(this.input.subagentOf !== undefined ? { subagentOf: this.input.subagentOf } : {}),
      ...(this.input.subagents !== undefined ? { subagentsRunning: this.#subagentsRunning } : {}),
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
    return {
      from: start,
      total: length,
      base,
      messages,
      durationsMs: { ...this.#durations },
      exitCodes: { ...this.#exitCodes },
      notes: this.notesOf(messages),
    };
  }

  /** The recorded notes of the `tool_result`s in `messages` (a page carries only its own: a note may be long; a model call, its change's). */
  notesOf(messages: Message[]): Record<string, string[]> {
    const out: Record<string, string[]> = {};
    for (const m of messages)
      if (typeof m.content !== 'string')
        for (const b of m.content)
          if (isToolResult(b) && Object.hasOwn(this.#notes, b.tool_use_id)) out[b.tool_use_id] = [...this.#notes[b.tool_use_id]!];
    return out;
  }

  /**
   * Pairs every open `tool_use` of the message being executed when the run
   * ends early (every path pairs each `tool_use` with one `tool_result`):
   * the one in progress says what happened to it, the rest that they did not run.
   */
  pairInflight(end: 'cancelled' | 'failed'): void {
    const inflight = this.#inflight;
    if (!inflight) return;
    const current = this.#current;
    const reason = (use: ToolUseBlock): string => interruptedText(end, use.id === current?.toolUseId ? current.phase : null);
    this.conversation.push({ role: 'user', content: completeResults(inflight.assistant, inflight.results, reason) });
    this.#inflight = null;
  }
}
