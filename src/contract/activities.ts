/**
 * The activities' shapes: one typed object in, one out, for `callClaude` and
 * the session activities, and the failure type names they throw
 * (`ApplicationFailure.type`).
 *
 * Deterministic (imported by workflow code): types and constants only.
 */
import type { ContentBlock, Usage } from './messages';
import type { SessionRef, ThinkingDisplay } from './run';
import type { ConversationPart, TranscriptDelta } from './conversation';
import type { Effort } from './models';
import type { CheckpointRequest, CheckpointResult, RestoreReport, RestoreRequest } from './checkpoint';
import type { RuleToMatch } from './steering';
import type { WorktreeGit } from './subagent';

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
  /**
   * The system's notes at the end of the `tool_result`s of `transcript`'s messages, by `tool_use`
   * id, as the run published them (the transcript query's `notes`): not sent to the model (they
   * are lines of those results' text already), kept so that a closed run's history holds them
   * (src/history.ts). Absent when there are none, and in runs before `model-call-carries-notes`.
   */
  notes?: Record<string, string[]>;
}

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
  /**
   * A sub-agent in a git worktree: the git directories its sandbox binds (the run's input
   * `worktreeGit`), checked on the worker first (src/session/worktree.ts `checkWorktreeGit`);
   * the session opens without them when the check fails.
   */
  worktreeGit?: WorktreeGit;
}

/** Answer of `openSession`: the session, and what its restore did when the input asked for one. */
export type OpenSessionOutput = SessionRef & { restored?: RestoreReport };

/** Input of `createWorktree` (the parent's session queue: the worker that holds the parent's workspace). */
export interface CreateWorktreeInput {
  /** The parent's workflow id (names its default workspace). */
  workflowId: string;
  /** The parent's `workdir`, when it has one (resolved as `openSession` resolves it). */
  workdir?: string;
  /** The child's workflow id: names the worktree's folder, so a retry finds the one it made. */
  childWorkflowId: string;
}

/**
 * Answer of `createWorktree`: the worktree's absolute path (the child's workdir) and, when the
 * child may have them, the git directories its sandbox binds; or one line saying why there is none.
 */
export type CreateWorktreeOutput = { path: string; git?: WorktreeGit } | { error: string };

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

/** Output of `payloadOffload` (a local activity): whether the worker's codec moves big payloads out of history. */
export interface PayloadOffload {
  /** Encoded bytes over which a payload goes to the claim check's blob store; null when the worker has no claim check. */
  thresholdBytes: number | null;
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
  /**
   * The session's notes at the end of `output` (`[agent-jobs: ...]` lines, also in `output`), in
   * order; absent from a worker of an earlier version. The CLI shows them apart from the output.
   */
  notes?: string[];
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

/**
 * Output of `closeSession`: what the git audit moved or named when the session closed (src/session/git-audit.ts), the
 * same one line the worker logs, absent when it found nothing or the worker no longer held the session. Recorded in the
 * run's history (the workflow does not read it), where `status`, `watch` and `transcript` of the closed run read it
 * (src/history.ts).
 */
export interface CloseSessionOutput {
  gitAtClose?: string;
  /**
   * The same findings for a person, line by line: each part a line, each finding a line of its own under it indented by
   * two spaces (src/session/git-finding.ts `NoteLayout`); a line may hold a path's line break. Absent from older workers.
   */
  gitAtCloseLines?: string[];
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

/**
 * `ApplicationFailure` type of `openSession` when the run's working directory cannot be one:
 * it exists and is not a directory, or it cannot be created (a file on the way, a kernel file
 * system such as /proc, no permission). Non-retryable: another attempt would meet the same
 * path; the run ends `failed` saying why (docs/cli.md, `start --workdir`).
 */
export const WORKDIR_UNUSABLE = 'WorkdirUnusable';

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
