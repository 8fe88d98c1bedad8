/**
 * A run's input, its statuses and result, and the approval shapes a person
 * decides (the pending command or edit, the decision, the applied record).
 *
 * Deterministic (imported by workflow code): types and constants only.
 */
import type { Message, Usage } from './messages';
import type { CarriedConversation } from './conversation';
import type { Effort, ModelInfo } from './models';
import type { CheckpointRecord, RestoreRequest, RewindRecord } from './checkpoint';
import type { WorktreeGit } from './subagent';
import type { ApprovalRule, ApprovalTimeoutAction, BudgetLimits, DecisionKind, OnBudget, QueuedMessage, UsedRequest } from './steering';

/** `thinking.display` values of adaptive thinking. */
export const THINKING_DISPLAYS = ['summarized', 'omitted'] as const;
export type ThinkingDisplay = (typeof THINKING_DISPLAYS)[number];

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
  /**
   * Where the sub-agents work (docs/subagents.md): `shared`, the parent's workspace; `worktree`,
   * each in its own git worktree of the parent's workspace (`git worktree add --detach`, at the
   * parent's HEAD), under `<workspace root>/.subagent-worktrees/`, kept after the child ends.
   * Only with `subagents`. @default 'shared'
   */
  subagentWorkspace?: SubagentWorkspace;
  /** Set by the parent on a sub-agent's input: the parent's workflow id. A sub-agent never offers the `subagent` tool itself. */
  subagentOf?: string;
  /**
   * Set by the parent on a sub-agent in a git worktree (docs/subagents.md, "Workspaces"): the
   * repository's common dir and the worktree's gitdir, which the child's sandbox binds so git
   * works there; checked on the worker that opens the session. Never from model text.
   */
  worktreeGit?: WorktreeGit;
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

/** How a run ended, in the order `list` and docs/configuration.md show them. `cancelled` runs still return a result, with every `tool_use` paired. */
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
  /** The command as people see it: verbatim, or escaped on one line when it holds control, bidi, zero-width or other hidden characters (src/shared/display.ts). */
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
  /**
   * The number of this wait within the workflow run (1, 2, ...; absent in runs of older workers).
   * Two waits never share it, even for the same `tool_use` id (Claude asking again after a
   * rewind): a decision names it, so it can only answer this wait, and the client's Update id
   * carries it, so Temporal never hands back an earlier wait's answer.
   */
  wait?: number;
  /**
   * The workflow run this wait belongs to (Temporal's run id; absent in runs of older workers).
   * In an encrypted run a decision must name it, with `wait`: a decision copied from another
   * run's history does not apply here.
   */
  runId?: string;
}

/** What a text editor command that waits for approval is: the command, the absolute path, the words rules match (`str_replace_based_edit_tool <command> <path>`). */
export interface PendingEdit {
  command: 'view' | 'create' | 'str_replace' | 'insert';
  path: string;
  ruleSubject: string;
}

/**
 * Payload of the `approve` signal: `{toolUseId, approved, reason?, by?, commandSha256?, runId?, wait?}`.
 * By hand: `temporal workflow signal --workflow-id ID --name approve --input '{"toolUseId":"toolu_1","approved":true}'`.
 * In an encrypted run the signal applies only when it came through the codec (the keys, or the
 * codec server) and names `commandSha256`, `runId` and `wait` of the pending approval.
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
   * clients, a signal sent by hand), the decision applies by `toolUseId` alone, in a run that is
   * not encrypted; an encrypted run ignores it.
   */
  commandSha256?: string;
  /** The pending approval's `runId`: required in an encrypted run. */
  runId?: string;
  /** The pending approval's `wait`: required in an encrypted run when the wait is numbered. */
  wait?: number;
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
  /** The wait it answered ({@link PendingApproval.wait}); absent for a rule's decision and in decisions of older workers. */
  wait?: number;
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
  /** Request ids of the bound steering requests applied within `REQUEST_WINDOW_MS` (steering.ts; absent when none). */
  usedRequests?: UsedRequest[];
}

/** Where a run's sub-agents work: the parent's workspace (`shared`) or a git worktree of it each (`worktree`). */
export type SubagentWorkspace = 'shared' | 'worktree';
