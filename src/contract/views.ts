/**
 * What the `status` and `transcript` queries answer.
 *
 * Deterministic (imported by workflow code): types, and the pure rule of which exit code a run publishes.
 */
import type { RunCommandOutput } from './activities';
import type { Message, Usage } from './messages';
import type { AgentRunResult, AppliedDecision, PendingApproval, RunStatus, SessionRef } from './run';
import type { ContextStrategy } from './models';
import type { ApprovalRule, BudgetLimits, OnBudget, PauseState, QueuedMessage } from './steering';

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
  /**
   * The exit code of each recent command that bash ran to its end, by `tool_use` id (the same
   * commands as `durationsMs`; {@link publishedExitCode}): what `watch` shows in a result's
   * heading, never a parse of the result's text, which the command prints and the turn's budget
   * may cut. A `tool_use` missing here has no known code (no command ran, or it did not end in
   * bash, or a run from before codes were published). Absent: none published.
   */
  exitCodes?: Record<string, number>;
  /**
   * The lines the system wrote at the end of each of those commands' `tool_result`, by `tool_use`
   * id, in order: the worker's notes (`[agent-jobs: ...]`), then the workflow's (`[exit code: N]`,
   * `[timed out ...]`, ...; src/shared/notes.ts). What `watch` shows apart from the output, never
   * a parse of the text. A `tool_use` missing here has none known (an answer from a worker of an
   * earlier version). Absent: none published.
   */
  notes?: Record<string, string[]>;
}

/**
 * The exit code a run publishes for a command's answer (the transcript query's `exitCodes`, and
 * the same read of a closed run's history): the code bash reported when the command ran to its
 * end; undefined when it did not (timed out, bash itself exited, killed at a worker's shutdown)
 * or the answer holds no integer code (an answer of another version or shape).
 */
export function publishedExitCode(r: Partial<RunCommandOutput>): number | undefined {
  if (r.timedOut === true || (r.shellExit ?? null) !== null || r.killedAtShutdownMs !== undefined) return undefined;
  return Number.isInteger(r.exitCode) ? (r.exitCode as number) : undefined;
}
