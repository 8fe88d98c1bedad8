/**
 * Shapes shared by the workflow, the activities and the CLI.
 *
 * Message and content-block types are the subset of the Anthropic Messages
 * API (https://docs.anthropic.com/en/api/messages) this project reads; the
 * workflow cannot import the SDK's types (workflow code stays free of the
 * SDK), and blocks it does not know (thinking,
 * redacted_thinking, ...) pass through unchanged as `OtherBlock`.
 */

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

/** Token counts, as the API reports them (`usage.input_tokens`, `usage.output_tokens`). */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/**
 * Approval mode of a run.
 * - `auto`: no command waits for a human.
 * - `policy`: read-only allowlisted simple commands run; the rest wait.
 * - `always`: every command waits.
 */
export type ApprovalMode = 'auto' | 'policy' | 'always';
export const APPROVAL_MODES: readonly ApprovalMode[] = ['auto', 'policy', 'always'];

/** Input of the `agentRun` workflow. */
export interface AgentRunInput {
  /** What the agent should do (the first user message). Required, non-empty. */
  task: string;
  /** Model id. @default DEFAULT_MODEL (the CLI fills `AGENT_JOBS_MODEL` when set) */
  model?: string;
  /** Model calls allowed before the run ends with status `max_turns`. @default 50 */
  maxTurns?: number;
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
  /** Transcript budget in characters of JSON; older tool outputs are elided past it. @default 200000 */
  transcriptBudgetChars?: number;
}

/** How a run ended. `cancelled` runs still return a result, with every `tool_use` paired. */
export type FinalStatus = 'completed' | 'max_turns' | 'max_tokens' | 'refused' | 'failed' | 'cancelled';

/** `running` and `awaiting_approval` while the run is open; a `FinalStatus` after. */
export type RunStatus = 'running' | 'awaiting_approval' | FinalStatus;

/** Result of the `agentRun` workflow. */
export interface AgentRunResult {
  status: FinalStatus;
  /** Final text of Claude's last message (for `completed`), when there is one. */
  text?: string;
  /** Model calls made. */
  turns: number;
  usage: Usage;
  /** What went wrong, for `failed` (the API's message, or the reason), `max_tokens`, `refused`, `cancelled`. */
  error?: string;
}

/** A command that waits for a human decision. `requestedAt` is an ISO-8601 time (workflow time). */
export interface PendingApproval {
  toolUseId: string;
  /** The command exactly as it will run (raw: never print it to a terminal as it is; show `display`). */
  command: string;
  requestedAt: string;
  /** The command as people see it: verbatim, or escaped on one line when it holds control, bidi, zero-width or other hidden characters (src/workflows/display.ts). */
  display: string;
  /** Why `display` is escaped, one sentence per class of character found; empty when it is the command as it is. */
  warnings: string[];
  /** SHA-256 of the command's UTF-8 bytes (64 lowercase hex digits); an `approve` signal that names another hash is ignored. */
  commandSha256: string;
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
  reason?: string;
  by?: string;
  /** `timeout` when the approval wait ran out. */
  source: 'signal' | 'timeout';
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
}

/** Answer of the `status` query. */
export interface StatusView {
  workflowId: string;
  status: RunStatus;
  turns: number;
  pendingApproval: PendingApproval | null;
  usage: Usage;
  result: AgentRunResult | null;
  /** What the run is doing or waiting for right now (same text as the UI's current details). */
  details: string;
  /** The most recent decisions applied (newest last, at most 20). */
  decisions: AppliedDecision[];
  session: SessionRef | null;
}

/** Answer of the `transcript` query: the conversation, from message `from` on. */
export interface TranscriptView {
  /** Index of the first message returned. */
  from: number;
  /** Total messages in the transcript. */
  total: number;
  messages: Message[];
}

/**
 * State carried across continue-as-new. The run only continues-as-new
 * between turns, after every `tool_use` got its `tool_result`, so no
 * approval is pending at that point.
 */
export interface CarriedState {
  transcript: Message[];
  turns: number;
  usage: Usage;
  session: SessionRef | null;
  decisions: AppliedDecision[];
  /** Continue-as-new generations so far (for the UI and tests). */
  generation: number;
}
