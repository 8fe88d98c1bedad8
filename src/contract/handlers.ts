/**
 * The signals and queries of `agentRun`, defined once so no call site names
 * them by string (the Updates are in ./steering and ./checkpoint).
 *
 * Deterministic (imported by workflow code): `define…` calls only.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { ApprovalDecision } from './run';
import type { StatusView, TranscriptView } from './views';

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
  /** The worker holding that session; a signal naming another worker is ignored. */
  workerId: string;
  /**
   * Why (`its worker was shut down (SIGTERM)`: src/shared/notes.ts `workerShutDownReason`). Claude is told the
   * product's own wording for it (`closingReasonNote`), never this text.
   */
  reason: string;
}

/**
 * `sessionClosing` signal, sent by a worker that begins shutting down to
 * every run whose bash session it holds: the session will close once the
 * running command (if any) finished, so the run's next command goes to a new
 * session on another worker (the workflow says so to Claude). An encrypted
 * run ignores one that did not come through its codec.
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
