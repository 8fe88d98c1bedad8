/**
 * The contract: every shape the CLI, the workflow and the activities share,
 * and the names they must agree on (signal and query definitions, failure
 * type names, status and mode lists). It imports nothing of theirs; they
 * all import it (docs/architecture.md, "Parts and arrows").
 *
 * Message and content-block types are the subset of the Anthropic Messages
 * API (https://docs.anthropic.com/en/api/messages) this project reads; the
 * workflow cannot import the SDK's types (workflow code stays free of the
 * SDK), and blocks it does not know (thinking,
 * redacted_thinking, ...) pass through unchanged as `OtherBlock`.
 *
 * Deterministic (imported by workflow code): types, constants and
 * `define…` calls only.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { CarriedConversation, ConversationPart, TranscriptDelta } from './conversation';
import type { ContextStrategy, Effort, ModelInfo } from './models';
import type { CheckpointRecord, CheckpointRequest, CheckpointResult, RestoreRequest, RewindRecord } from './checkpoint';
import type {
  ApprovalRule,
  ApprovalTimeoutAction,
  BudgetLimits,
  DecisionKind,
  OnBudget,
  PauseState,
  QueuedMessage,
  RuleToMatch,
} from './steering';

export * from './steering';
export * from './conversation';
export * from './checkpoint';

/** `{"type": "text"}` content block. */
export interface TextBlock {
  type: 'text';
  text: string;
}

/** `{"type": "tool_use"}` content block: Claude asks for a tool call. `input` is whatever JSON the model produced. */
export interface ToolUseBlock {
  type: 'tool_use';
  id: string;
  name: string;
  input: unknown;
}

/** `{"type": "tool_result"}` content block answering the `tool_use` with id `tool_use_id`. */
export interface ToolResultBlock {
  type: 'tool_result';
  tool_use_id: string;
  content: string;
  is_error?: boolean;
}

/** Any other content block (thinking, redacted_thinking, ...), kept as the API sent it. */
export interface OtherBlock {
  type: string;
  [field: string]: unknown;
}

export type ContentBlock = TextBlock | ToolUseBlock | ToolResultBlock | OtherBlock;

/** One message of the conversation, as sent to the Messages API. */
export interface Message {
  role: 'user' | 'assistant';
  content: string | ContentBlock[];
}

/**
 * Token counts, as the API reports them: `usage.input_tokens` (input not
 * read from or written to the cache), `output_tokens`,
 * `cache_creation_input_tokens` (input written to the cache) and
 * `cache_read_input_tokens` (input read from it); the API's null is 0.
 */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
  cacheCreationInputTokens: number;
  cacheReadInputTokens: number;
  /** Of `cacheCreationInputTokens`, those written with the 1-hour TTL (`usage.cache_creation.ephemeral_1h_input_tokens`), priced at the 1-hour write price. Absent: none (and in usages recorded before it existed). */
  cacheCreation1hInputTokens?: number;
  /** Web searches the server tool ran (`usage.server_tool_use.web_search_requests`), billed per search. Absent: none. */
  webSearchRequests?: number;
  /** Web fetches the server tool ran (`usage.server_tool_use.web_fetch_requests`; billed as tokens only). Absent: none. */
  webFetchRequests?: number;
  /** Server-side compactions the API made (`compaction` entries of `usage.iterations`); their tokens are in the counts above. Absent: none. */
  compactions?: number;
}

/** The optional counts of {@link Usage}, added up like the others when either side has them. */
const EXTRA_USAGE = ['cacheCreation1hInputTokens', 'webSearchRequests', 'webFetchRequests', 'compactions'] as const;

function extraUsage(a: Partial<Usage> | null | undefined, b?: Partial<Usage>): Partial<Usage> {
  const out: Partial<Usage> = {};
  for (const key of EXTRA_USAGE) {
    if (a?.[key] !== undefined || b?.[key] !== undefined) out[key] = (a?.[key] ?? 0) + (b?.[key] ?? 0);
  }
  return out;
}

/** No tokens yet. */
export const NO_USAGE: Usage = { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 };

/**
 * A usage as older workers recorded it (only `inputTokens` and
 * `outputTokens`, in carried states, histories and results) with the
 * missing counts as 0.
 */
export function normalizeUsage(u: Partial<Usage> | null | undefined): Usage {
  return {
    inputTokens: u?.inputTokens ?? 0,
    outputTokens: u?.outputTokens ?? 0,
    cacheCreationInputTokens: u?.cacheCreationInputTokens ?? 0,
    cacheReadInputTokens: u?.cacheReadInputTokens ?? 0,
    ...extraUsage(u),
  };
}

/** Two usages added up. */
export function addUsage(a: Usage, b: Usage): Usage {
  return {
    inputTokens: a.inputTokens + b.inputTokens,
    outputTokens: a.outputTokens + b.outputTokens,
    cacheCreationInputTokens: a.cacheCreationInputTokens + b.cacheCreationInputTokens,
    cacheReadInputTokens: a.cacheReadInputTokens + b.cacheReadInputTokens,
    ...extraUsage(a, b),
  };
}

/**
 * Every token of a usage: input, output, cache writes and cache reads. This
 * is what `maxTokensTotal` and the `AgentTokens` search attribute count:
 * each is a token the model processed for the run, and with prompt caching
 * most of the input is in the two cache counts, so leaving them out would
 * let a cached run pass its budget many times over (what it costs is
 * `maxCostUsd`'s to bound).
 */
export function totalTokens(u: Usage): number {
  return u.inputTokens + u.outputTokens + u.cacheCreationInputTokens + u.cacheReadInputTokens;
}

/**
 * Approval mode of a run.
 * - `auto`: no command waits for a human.
 * - `policy`: read-only allowlisted simple commands run; the rest wait.
 * - `always`: every command waits.
 */
export type ApprovalMode = 'auto' | 'policy' | 'always';
export const APPROVAL_MODES: readonly ApprovalMode[] = ['auto', 'policy', 'always'];
/** Approval mode of a run whose input names none. */
export const DEFAULT_APPROVAL_MODE: ApprovalMode = 'policy';

/** Input of the `agentRun` workflow. */
export interface AgentRunInput {
  /** What the agent should do (the first user message). Required, non-empty. */
  task: string;
  /** Model id. @default DEFAULT_MODEL (the CLI fills `AGENT_JOBS_MODEL` when set) */
  model?: string;
  /** Model calls allowed; past them the run pauses or ends with status `max_turns` (`onBudget`). @default 50 */
  maxTurns?: number;
  /** Cost budget in USD (of {@link totalTokens} at the model's prices); the run pauses or ends (`max_cost`) once it has spent this much. Needs the model's prices. @default none */
  maxCostUsd?: number;
  /** Token budget: every token of the usage (input, output, cache writes, cache reads; {@link totalTokens}); the run pauses or ends (`max_tokens_total`) once it has used this many. @default none */
  maxTokensTotal?: number;
  /** Duration budget: workflow time since the run (the first of its continue-as-new chain) started, as a duration string or ms; the run pauses or ends (`max_duration`) past it. Time spent waiting (approvals, pauses) counts. @default none */
  maxDuration?: string | number;
  /** What a spent budget does: `pause` (status `paused`, until `extend` raises it) or `end` (a final status per budget). @default 'end' (the behaviour of runs before budgets paused; the CLI sends `pause`) */
  onBudget?: OnBudget;
  /** Extended thinking budget in tokens (`thinking.budget_tokens`), at least 1,024 and below `maxTokens`; only for models that take budgets (`start` refuses it on the others, naming `effort`). @default off */
  thinking?: number;
  /** `output_config.effort` of every request (https://platform.claude.com/docs/en/build-with-claude/effort). @default none sent: the model's default effort */
  effort?: Effort;
  /** `thinking.display` of adaptive thinking: `summarized` returns a summary of the thinking, `omitted` empty thinking text (https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking). @default none sent: the model's default (`omitted` on the 5.5 models) */
  thinkingDisplay?: ThinkingDisplay;
  /** Offer the `web_search` server tool (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool). @default false */
  webSearch?: boolean;
  /** Offer the `web_fetch` server tool (https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool). @default false */
  webFetch?: boolean;
  /**
   * Client tools offered, run on the session's worker: `bash` (`bash_20250124`) and
   * `text_editor` (`text_editor_20250728`, docs/text-editor.md); the request lists them
   * in that order whatever the order here. @default both (runs started before the editor, and
   * their continue-as-new chains, keep bash alone)
   */
  tools?: ('bash' | 'text_editor')[];
  /** Context window of the run in tokens, overriding the model's ({@link contextWindowOf} in src/contract/models.ts). @default the model's */
  contextWindow?: number;
  /** The model's entry (window, prices, 1-hour TTL), resolved by `start` from the built-in table and `AGENT_JOBS_MODELS`. @default the built-in table's entry, else the fallback (src/contract/models.ts) */
  modelInfo?: ModelInfo;
  /**
   * Checkpoints of the workspace before every tool call that may write (docs/rewind.md).
   * @default enabled, cap {@link DEFAULT_CHECKPOINT_MAX_BYTES}, no excludes
   */
  checkpoints?: CheckpointSettings;
  /** A fork: the run starts from this conversation and this checkpoint as its workspace (`agent-jobs fork`). */
  fork?: ForkStart;
  /**
   * Offer the `subagent` tool (docs/subagents.md): Claude hands a task to a child `agentRun`,
   * at most this many at once (1-16). Absent: no sub-agents, and the run's tools are unchanged.
   * @default none
   */
  subagents?: number;
  /** Set by the parent on a sub-agent's input: the parent's workflow id. A sub-agent never offers the `subagent` tool itself. */
  subagentOf?: string;
  /** Approval rules the run starts with (a sub-agent gets those of its parent when it starts: docs/subagents.md). @default none */
  rules?: ApprovalRule[];
  /** `max_tokens` of each model call (the API's per-response cap). @default 4096 */
  maxTokens?: number;
  /** System prompt. @default a short prompt describing the bash tool and the workspace */
  system?: string;
  /** @default 'policy' */
  approval?: ApprovalMode;
  /** Working directory of the bash session. @default `<workspace root>/<workflowId>`, created by the worker */
  workdir?: string;
  /** Whether the bash session may reach the network (its sandbox keeps the host's network). @default false */
  network?: boolean;
  /** Per-command timeout in ms; the process group is killed past it. @default 120000 */
  commandTimeoutMs?: number;
  /** Approval wait, as a Temporal duration string (`'24 hours'`, `'30s'`) or ms. @default '24 hours' */
  approvalTimeout?: string | number;
  /**
   * Accepted for runs started before the whole context was sent, and ignored: Claude now
   * gets every message in full until the request nears the model's context window
   * (src/activities/context-window.ts). @default 200000
   */
  transcriptBudgetChars?: number;
  /** What happens when no decision comes within `approvalTimeout`: deny the command (Claude is told), end the run (status `approval_timeout`), or pause it (the command stays pending). @default 'deny' */
  approvalTimeoutAction?: ApprovalTimeoutAction;
  /** A conversation: at `end_turn` the run waits for the next message (`say`) instead of completing; `end` completes it. @default false */
  chat?: boolean;
  /** How long a `chat` run waits for the next message before it completes with its last answer, as a duration string or ms. @default '24 hours' */
  chatIdleTimeout?: string | number;
}

/** How a run ended, in the order `list` and the README show them. `cancelled` runs still return a result, with every `tool_use` paired. */
export const FINAL_STATUSES = [
  'completed',
  'max_turns',
  'max_cost',
  'max_tokens_total',
  'max_duration',
  'max_tokens',
  'refused',
  'approval_timeout',
  'failed',
  'cancelled',
] as const;
export type FinalStatus = (typeof FINAL_STATUSES)[number];

/**
 * Statuses of a run that is still open: `running`; `awaiting_approval` (a
 * command waits for a human); `paused` (stopped at a safe point until
 * `resume`); `awaiting_message` (a chat run waits for the next `say`).
 */
export const OPEN_STATUSES = ['running', 'awaiting_approval', 'paused', 'awaiting_message'] as const;
/** Open statuses in which the run waits for a person (`pending` lists these). */
export const WAITING_STATUSES = ['awaiting_approval', 'paused', 'awaiting_message'] as const;

/** Every value of the `AgentStatus` search attribute and of `status`: an open status while the run is open, a final one after. */
export const RUN_STATUSES = [...OPEN_STATUSES, ...FINAL_STATUSES] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

/** Result of the `agentRun` workflow. */
export interface AgentRunResult {
  status: FinalStatus;
  /** Final text of Claude's last message (for `completed`), when there is one. */
  text?: string;
  /** Model calls made. */
  turns: number;
  /** Tokens of the whole run (every continue-as-new generation). Results of older workers have only `inputTokens` and `outputTokens`. */
  usage: Usage;
  /** What the usage cost in USD at the model's prices (src/contract/models.ts `costUsd`); null when the prices are unknown. Absent in results of older workers. */
  costUsd?: number | null;
  /** What went wrong, for `failed` (the API's message, or the reason), `max_tokens`, `refused`, `approval_timeout`, `cancelled`. */
  error?: string;
}

/** A command that waits for a human decision. `requestedAt` is an ISO-8601 time (workflow time). */
export interface PendingApproval {
  toolUseId: string;
  /** The command exactly as it will run (raw: never print it to a terminal as it is; show `display`). */
  command: string;
  requestedAt: string;
  /** The command as people see it: verbatim, or escaped on one line when it holds control, bidi, zero-width or other hidden characters (src/contract/display.ts). */
  display: string;
  /** Why `display` is escaped, one sentence per class of character found; empty when it is the command as it is. */
  warnings: string[];
  /** SHA-256 of the command's UTF-8 bytes (64 lowercase hex digits); an `approve` signal that names another hash is ignored. */
  commandSha256: string;
  /**
   * Set when a text editor command waits (not a bash command): `command` is then the exact
   * change as a unified diff (for a `view` under approval `always`, its rule words), and
   * `display` is that text with its lines kept (other hidden characters escaped).
   */
  edit?: PendingEdit;
}

/** What a text editor command that waits for approval is: the command, the absolute path, the words rules match (`str_replace_based_edit_tool <command> <path>`). */
export interface PendingEdit {
  command: 'view' | 'create' | 'str_replace' | 'insert';
  path: string;
  ruleSubject: string;
}

/**
 * Payload of the `approve` signal: `{toolUseId, approved, reason?, by?, commandSha256?}`.
 * By hand: `temporal workflow signal --workflow-id ID --name approve --input '{"toolUseId":"toolu_1","approved":true}'`.
 */
export interface ApprovalDecision {
  /** The pending `tool_use` id this decision is for. Decisions for any other id are ignored. */
  toolUseId: string;
  approved: boolean;
  /** Why (shown to Claude on a denial). */
  reason?: string;
  /** Who decided (shown in status and to Claude). */
  by?: string;
  /**
   * SHA-256 (64 hex digits, UTF-8 bytes) of the command the decider was
   * shown; the CLI always sends it. When present and not the pending
   * command's hash, the decision is ignored and logged. Absent (older
   * clients, a signal sent by hand), the decision applies by `toolUseId` alone.
   */
  commandSha256?: string;
}

/** A decision the run applied (kept in status so the CLI can confirm it). */
export interface AppliedDecision {
  toolUseId: string;
  approved: boolean;
  /** approved, edited or denied (absent in decisions applied by older workers: read `approved`). */
  decision?: DecisionKind;
  reason?: string;
  by?: string;
  /** `signal`: the `approve` signal; `update`: the `decide` Update (the CLI); `rule`: an approval rule (`rule` names it); `timeout`: the approval wait ran out. */
  source: 'signal' | 'update' | 'rule' | 'timeout';
  /** The command Claude asked for (absent in decisions applied by older workers). */
  command?: string;
  /** The command that ran instead, when `decision` is `edited`. */
  editedCommand?: string;
  /** The rule that approved it (`source: 'rule'`), or that the decision added. */
  rule?: number;
  /** SHA-256 of the command decided on. Absent in decisions applied by older workers. */
  commandSha256?: string;
  /** Whether the signal named that hash (`commandSha256`), rather than the `tool_use` id alone. */
  hashChecked?: boolean;
  /** ISO-8601 workflow time. */
  at: string;
}

/** A live bash session: which worker's queue holds it and where it was last. */
export interface SessionRef {
  sessionId: string;
  /** The worker-specific task queue of the process that holds the bash process. */
  taskQueue: string;
  workerId: string;
  /** Working directory after the last command, restored when the session must be replaced. */
  cwd: string;
  /** User the session's bash runs as (absent in runs recorded before it was reported). */
  user?: string;
  /** Sandbox of the session's bash: `bwrap` or `none` (absent in runs recorded before it was reported). */
  sandbox?: 'bwrap' | 'none';
  /**
   * Set when the worker holding the session said it is shutting down (the
   * `sessionClosing` signal, or `workerClosing` on a command's answer): why,
   * for what Claude is told. The next command moves to a new session.
   */
  closing?: string;
}

/** The run's checkpoint settings (see {@link AgentRunInput.checkpoints}). */
export interface CheckpointSettings {
  /** @default true */
  enabled?: boolean;
  /** Largest workspace recorded, in bytes of regular files; past it a tool call runs without a checkpoint (and says so in its answer). */
  maxBytes?: number;
  /** Names (any path segment) or workspace-relative paths left out of every checkpoint; no glob characters. @default [] */
  exclude?: string[];
}

/** Where a fork starts: the run and turn it was forked from, the conversation before that turn's model call, the checkpoint. */
export interface ForkStart {
  fromWorkflowId: string;
  atTurn: number;
  /** The conversation before turn `atTurn`'s model call, byte for byte, then what the person said (the first user message is the task's). */
  messages: Message[];
  checkpoint: RestoreRequest;
}

/** Answer of the `status` query. */
export interface StatusView {
  workflowId: string;
  status: RunStatus;
  turns: number;
  pendingApproval: PendingApproval | null;
  usage: Usage;
  /** What the usage cost in USD; null when the model's prices are unknown (absent from workers before it was reported). */
  costUsd?: number | null;
  /** The run's budgets now (`extend` raises them), and what it used of them (absent from workers before budgets paused). */
  budget?: BudgetView;
  result: AgentRunResult | null;
  /** What the run is doing or waiting for right now (same text as the UI's current details). */
  details: string;
  /** The most recent decisions applied (newest last, at most 20). */
  decisions: AppliedDecision[];
  session: SessionRef | null;
  /** Approval rules of the run, oldest first (absent from runs before rules existed). */
  rules?: ApprovalRule[];
  /** User messages queued by `say`, not yet sent to Claude. */
  queuedMessages?: QueuedMessage[];
  /** Set while the status is `paused` (and while a pause waits for the next safe point: the status is then still `running`). */
  pause?: PauseState | null;
  /** Whether the run is a conversation (`start --chat`). */
  chat?: boolean;
  /** The run's model id (absent from workers before it was reported). */
  model?: string;
  /** The run's context window in tokens (its `contextWindow`, else the model's). */
  contextWindow?: number;
  /** How the run keeps within the window: `compaction` (server-side), `clearing` (old outputs replaced by notes on the client) or `none`. */
  contextStrategy?: ContextStrategy;
  /** For a sub-agent: its parent's workflow id (docs/subagents.md). */
  subagentOf?: string;
  /** Sub-agents running now, for a run started with `subagents`. */
  subagentsRunning?: number;
}

/** The budgets of a run as `status` shows them. */
export interface BudgetView {
  limits: BudgetLimits;
  /** What was used: turns, USD (null: unknown), every token ({@link totalTokens}), ms of workflow time since the chain started. */
  used: { turns: number; costUsd: number | null; tokens: number; durationMs: number };
  onBudget: OnBudget;
}

/** Answer of the `transcript` query: the conversation, from message `from` on. */
export interface TranscriptView {
  /** Index of the first message returned. */
  from: number;
  /** Total messages in the transcript (the whole conversation, across continue-as-new). */
  total: number;
  /**
   * The first message the workflow still holds: after continue-as-new the earlier ones are
   * only in the histories of the chain's earlier runs (`agent-jobs transcript` reads them
   * there). Absent: 0.
   */
  base?: number;
  messages: Message[];
  /** How long each recent command ran, in ms, by `tool_use` id (the last 200 commands of this continue-as-new generation). */
  durationsMs?: Record<string, number>;
}

/**
 * State carried across continue-as-new. The run only continues-as-new
 * between turns, after every `tool_use` got its `tool_result`, so no
 * approval is pending at that point.
 */
export interface CarriedState {
  /** The whole transcript: carried only by runs before the conversation was carried as a tail (`conversation`). */
  transcript?: Message[];
  /** The conversation's tail, counts and digests (src/workflows/conversation.ts); the rest is in the earlier runs' histories. */
  conversation?: CarriedConversation;
  turns: number;
  /** Carried by older workers with only `inputTokens` and `outputTokens`: read it through {@link normalizeUsage}. */
  usage: Usage;
  session: SessionRef | null;
  decisions: AppliedDecision[];
  /** Continue-as-new generations so far (for the UI and tests). */
  generation: number;
  /** Approval rules (absent when carried by older workers). */
  rules?: ApprovalRule[];
  /** Id the next rule gets. */
  nextRuleId?: number;
  /** Messages queued by `say`, not yet sent. */
  queuedMessages?: QueuedMessage[];
  /** The budgets as `extend` left them (absent when carried by older workers: the input's). */
  limits?: BudgetLimits;
  /** ISO-8601 workflow time the first run of the chain started, for `maxDuration` (absent when carried by older workers). */
  startedAt?: string;
  /** The run's checkpoints by turn (absent when carried by older workers). */
  checkpoints?: CheckpointRecord[];
  /** Rewinds applied (absent when carried by older workers). */
  rewinds?: RewindRecord[];
}

// ---------------------------------------------------------------------------
// Activity inputs and outputs: one typed object in, one out.

/** Input of `callClaude`: one Messages API request, its conversation sent as a change since the last call. */
export interface CallClaudeInput extends ConversationPart {
  model: string;
  /** `max_tokens` of this call. */
  maxTokens: number;
  system?: string;
  /**
   * The conversation's change since the previous call (src/contract/conversation.ts): the
   * worker applies it to its copy, or rebuilds the copy from the workflow history first.
   * Runs recorded before it existed send `messages` (the whole transcript) instead.
   */
  transcript?: TranscriptDelta;
  /** 1-based model call number in the run, for logs and the UI. */
  turn: number;
  /** How the request is fitted to the model's context window and cached (absent in older runs: sent as is, uncached). */
  context?: RequestContext;
}

/** `thinking.display` values of adaptive thinking. */
export const THINKING_DISPLAYS = ['summarized', 'omitted'] as const;
export type ThinkingDisplay = (typeof THINKING_DISPLAYS)[number];

/** Server tools a run may offer (`start --web-search`, `--web-fetch`); their definitions are in src/activities/claude.ts. */
export type ServerToolName = 'web_search' | 'web_fetch';

/** How `callClaude` shapes the request: the window, what is already cleared, the cache TTL, thinking. */
export interface RequestContext {
  /** The model's context window in tokens (the model table, or the run's `contextWindow`). */
  contextWindow: number;
  /** `tool_result` contents of the messages before this index are cleared (each replaced by a note); 0 when nothing is. */
  clearedBefore: number;
  /** Prompt cache lifetime of this request's `cache_control` breakpoints. */
  cacheTtl: '5m' | '1h';
  /** Extended thinking budget in tokens (`thinking: {type: 'enabled', budget_tokens}`), absent when off. */
  thinkingBudget?: number;
  /** `thinking: {type: 'adaptive', display}` when set (absent: no `thinking` sent, the model's default). */
  thinkingDisplay?: ThinkingDisplay;
  /** `output_config: {effort}` when set. */
  effort?: Effort;
  /**
   * Server-side compaction (`compact_20260112`, beta `compact-2026-01-12`) with this trigger in
   * input tokens; when set, nothing is cleared on the client and no tokens are counted
   * (https://platform.claude.com/docs/en/build-with-claude/compaction). Absent: the client-side
   * clearing of `clearedBefore` (models whose thinking is not bound to its prefix).
   */
  compactAtTokens?: number;
  /** Server tools offered after the client tools, in this order (fixed for the run). */
  serverTools?: ServerToolName[];
  /** Client tools offered (`requestTools` in src/contract/text-editor.ts orders them); absent: bash alone. */
  clientTools?: ('bash' | 'text_editor')[];
  /** Offer the custom `subagent` tool after the client tools (src/contract/subagent.ts); absent: not offered. */
  subagentTool?: true;
  /**
   * Tokens of the previous request and its answer (input + cache creation + cache read +
   * output), when nothing but appended messages changed since: the new part alone is then
   * counted with `/v1/messages/count_tokens`.
   */
  previousTokens?: number;
  /** Length of the conversation the previous request held (its answer is message `previousLength`). */
  previousLength?: number;
}

/** Output of `callClaude`: the assistant message as the API returned it. */
export interface CallClaudeOutput {
  id: string;
  model: string;
  content: ContentBlock[];
  /** `end_turn` | `tool_use` | `max_tokens` | `stop_sequence` | `pause_turn` | `refusal` | any newer value. */
  stopReason: string | null;
  usage: Usage;
  /** What the request held (absent from older runs). */
  context?: RequestReport;
}

/** What one `callClaude` request held, after fitting it to the context window. */
export interface RequestReport {
  /** Messages of the conversation sent (the whole conversation; cleared outputs included as notes). */
  messages: number;
  /** Tokens of the request as the API counted them (input + cache creation + cache read). */
  requestTokens: number;
  /** `tool_result` contents before this message index are cleared; higher than the input's when this call cleared more. */
  clearedBefore: number;
  /** Set when this call cleared more outputs: the note Claude was shown at the end of the last user message, to keep in the transcript. */
  notice?: string;
}

/** Input of `openSession` (shared queue; the worker that takes it holds the session). */
export interface OpenSessionInput {
  /** Workflow id of the run (names the default workspace; the shell sees it as `AGENT_JOBS_WORKFLOW_ID`). */
  workflowId: string;
  /** Working directory of the run; created when missing. Default `<workspace root>/<workflowId>`. */
  workdir?: string;
  /** Directory to start in, when replacing a lost session (falls back to `workdir` if it no longer exists). */
  restoreCwd?: string;
  /** The run asked for network access in its sandbox. @default false */
  network?: boolean;
  /** Restore this checkpoint into the workspace before bash starts (rewind, fork); the session starts in the workspace. */
  restore?: RestoreRequest;
}

export type OpenSessionOutput = SessionRef;

/** Input of `runCommand` (the session's worker queue). */
export interface RunCommandInput {
  sessionId: string;
  command: string;
  /** Kill the process group after this many ms. */
  timeoutMs: number;
  workflowId: string;
  toolUseId: string;
  /**
   * `policy`: judge the command with the approval policy (src/policy) first,
   * and run it only when the policy lets it run unasked, exactly (no shell:
   * `BashSession.runExact`); otherwise run nothing and answer with
   * `needsApproval`. `rules`: skip the read-only policy, only match `rules`.
   * Either way, a command that matches one of `rules` runs in the shell and
   * the output names the rule (`approvedByRule`). Absent: run it in the
   * shell (it was approved).
   */
  autoApprove?: 'policy' | 'rules';
  /** The run's approval rules, matched on this worker (src/policy `matchRule`). */
  rules?: RuleToMatch[];
  /**
   * Which dispatch of this `tool_use` this is: 2, 3, ... when the workflow
   * sends it again after an earlier one provably did not start (its worker
   * was slow, not gone). The worker runs each (session, tool_use, dispatch)
   * at most once, and never one that `commandOutcome` already answered for.
   * @default 1
   */
  dispatch?: number;
  /** Take a checkpoint of the workspace first when the command may write (not run exactly by the read-only policy). */
  checkpoint?: CheckpointRequest;
}

/** Input of `commandOutcome`: which dispatch of which command (see {@link RunCommandInput.dispatch}). */
export interface CommandOutcomeInput {
  sessionId: string;
  toolUseId: string;
  /** @default 1 */
  dispatch?: number;
}

/**
 * Output of `commandOutcome`: `done` with the command's output (it ran
 * here, possibly still running when asked: the answer waited for it), or
 * `not-started` (it never started here, and now never will).
 */
export type CommandOutcomeOutput = { state: 'done'; output: RunCommandOutput } | { state: 'not-started' };

/** Input of `sessionWorkerLiveness`: the worker holding a session (`SessionRef.workerId`, `SessionRef.taskQueue`). */
export interface WorkerLivenessInput {
  workerId: string;
  taskQueue: string;
}

/** Output of `sessionWorkerLiveness`: whether the worker is alive, and the evidence in words (for logs and Claude). */
export interface WorkerLivenessOutput {
  alive: boolean;
  evidence: string;
}

/** Output of `runCommand`; the fields of the session's `CommandResult` that the workflow uses. */
export interface RunCommandOutput {
  /** stdout and stderr interleaved, capped head + tail, UTF-8, no escape sequences. */
  output: string;
  exitCode: number | null;
  timedOut: boolean;
  truncated: boolean;
  /** Bytes the command printed before the cap. */
  outputBytes: number;
  /** The shell was restarted (timeout, shell exit): variables, functions and background jobs are gone. */
  sessionRestarted: boolean;
  /** Set when bash itself exited during the command (`exit 3`, `kill -9 $$`). */
  shellExit: { code: number | null; signal: string | null } | null;
  /** Working directory after the command. */
  cwd: string;
  durationMs: number;
  /** Set (and nothing ran) when `autoApprove` was asked and the policy wants a human: why. */
  needsApproval?: string;
  /** Id of the approval rule that let it run. */
  approvedByRule?: number;
  /**
   * Set when the worker began shutting down (SIGTERM / SIGINT / SIGHUP) before this
   * answer: the session is closing, so the workflow moves the run to a new
   * session on another worker.
   */
  workerClosing?: true;
  /**
   * Set when the command was still running when the worker's shutdown grace
   * (`AGENT_JOBS_SHUTDOWN_GRACE`) ran out: its process group was killed; the
   * grace in ms. `output` holds what it printed until then.
   */
  killedAtShutdownMs?: number;
  /** The checkpoint taken before the command ran (asked with `checkpoint`), or why none was. */
  checkpoint?: CheckpointResult;
}

/** Input of `restartSession` / `closeSession`. */
export interface SessionInput {
  sessionId: string;
}

/** Output of `restartSession`. */
export interface RestartSessionOutput {
  cwd: string;
}

// ---------------------------------------------------------------------------
// Failure type names (`ApplicationFailure.type`)

/** `ApplicationFailure` type thrown by session activities when this worker holds no session with that id (non-retryable). */
export const SESSION_NOT_FOUND = 'SessionNotFound';

/**
 * `ApplicationFailure` type of `openSession` on a worker that already holds
 * (or is starting) as many bash sessions as `AGENT_JOBS_MAX_SESSIONS` allows.
 * Retryable: Temporal retries the activity, and matching gives the retry to
 * any worker of the shared queue, so the session lands on one with room (or
 * on this one once a session closes).
 */
export const WORKER_FULL = 'WorkerFull';

/**
 * `ApplicationFailure` type of a session activity on a worker that is
 * shutting down (SIGTERM / SIGINT, draining its running commands).
 * `openSession` throws it retryable, so the session opens on another worker;
 * `runCommand` and `restartSession` throw it non-retryable before anything
 * ran, so the workflow moves the run to a new session and tells Claude.
 */
export const WORKER_SHUTTING_DOWN = 'WorkerShuttingDown';

/**
 * `ApplicationFailure` type of `commandOutcome` for a command that failed on
 * its worker (the error `runCommand` threw there, e.g. its session closed
 * while it ran). Non-retryable.
 */
export const COMMAND_FAILED = 'CommandFailed';

/** `ApplicationFailure` type of an `agentRun` whose input fails validation (non-retryable; the message lists every problem). */
export const INVALID_INPUT = 'InvalidInput';

/** Failure type names put on the `ApplicationFailure`s `callClaude` throws (src/activities/claude-errors.ts decides which). */
export const ClaudeFailureType = {
  /** The API refused the request for good (a status of `NON_RETRYABLE_STATUSES`, or `x-should-retry: false`). Non-retryable. */
  REQUEST_REJECTED: 'ClaudeRequestRejected',
  /** 429, 529, 5xx, 408, 409: transient on the API's side. Retryable. */
  API_UNAVAILABLE: 'ClaudeApiUnavailable',
  /** No HTTP answer (connection refused or reset, timeout). Retryable. */
  CONNECTION: 'ClaudeConnectionError',
  /**
   * The answer's stream started but broke before it was whole: the connection
   * dropped, or it ended without `message_stop` or without a `stop_reason`.
   * Every block it had streamed is dropped. Retryable. (An `event: error` in
   * the stream maps by its `error.type` as the HTTP statuses do.)
   */
  STREAM_BROKEN: 'ClaudeStreamBroken',
} as const;

// ---------------------------------------------------------------------------
// Content-block guards (pure; used by the workflow and the CLI)

export function isToolUse(block: ContentBlock): block is ToolUseBlock {
  return block.type === 'tool_use';
}

export function isToolResult(block: ContentBlock): block is ToolResultBlock {
  return block.type === 'tool_result';
}

export function isText(block: ContentBlock): block is TextBlock {
  return block.type === 'text' && typeof (block as TextBlock).text === 'string';
}

// ---------------------------------------------------------------------------
// Signals and queries of agentRun: no string names at call sites.

/**
 * `approve` signal: a human's decision on the pending command. Applies only
 * when `toolUseId` names the `tool_use` that is waiting right now and no
 * decision was applied to it yet (and, when given, `commandSha256` is the
 * pending command's hash); any other decision (early, unknown id,
 * duplicate, another command's hash) is ignored and logged.
 */
export const approveSignal = defineSignal<[ApprovalDecision]>('approve');

/** Payload of {@link sessionClosingSignal}. */
export interface SessionClosing {
  /** The session that is closing; a run whose session is another one ignores the signal. */
  sessionId: string;
  workerId: string;
  /** Why, in words for Claude (e.g. `its worker was shut down (SIGTERM)`). */
  reason: string;
}

/**
 * `sessionClosing` signal, sent by a worker that begins shutting down to
 * every run whose bash session it holds: the session will close once the
 * running command (if any) finished, so the run's next command goes to a new
 * session on another worker (the workflow says so to Claude).
 */
export const sessionClosingSignal = defineSignal<[SessionClosing]>('sessionClosing');

/** `status` query: where the run is (see {@link StatusView}). */
export const statusQuery = defineQuery<StatusView>('status');

/**
 * `transcript` query: the conversation as it will next be sent to Claude.
 * Argument: index of the first message wanted (default 0), so a follower
 * can fetch only what is new.
 */
export const transcriptQuery = defineQuery<TranscriptView, [number?]>('transcript');
