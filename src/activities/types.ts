/**
 * Input and output shapes of every activity: one typed object in, one out.
 * Imported by workflow code as types only.
 */
import type { ContentBlock, Message, SessionRef, Usage } from '../workflows/types';

/** Input of `callClaude`: one Messages API request. */
export interface CallClaudeInput {
  model: string;
  /** `max_tokens` of this call. */
  maxTokens: number;
  system?: string;
  messages: Message[];
  /** 1-based model call number in the run, for logs and the UI. */
  turn: number;
}

/** Output of `callClaude`: the assistant message as the API returned it. */
export interface CallClaudeOutput {
  id: string;
  model: string;
  content: ContentBlock[];
  /** `end_turn` | `tool_use` | `max_tokens` | `stop_sequence` | `pause_turn` | `refusal` | any newer value. */
  stopReason: string | null;
  usage: Usage;
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
   * `needsApproval`. Absent: run it in the shell (it was approved).
   */
  autoApprove?: 'policy';
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
}

/** Input of `restartSession` / `closeSession`. */
export interface SessionInput {
  sessionId: string;
}

/** Output of `restartSession`. */
export interface RestartSessionOutput {
  cwd: string;
}

/** `ApplicationFailure` type thrown by session activities when this worker holds no session with that id. */
export const SESSION_NOT_FOUND = 'SessionNotFound';
