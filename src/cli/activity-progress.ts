/**
 * What a run's activities are doing right now, as `watch` shows it: the
 * pending activity read from `describe()` (Temporal's own record, no query,
 * so no worker is needed), and for a model call the partial answer from its
 * last heartbeat (`ClaudeProgress`, src/activities/claude-progress.ts).
 */
import type { RunHandle } from '../client';
import type { ClaudeProgress, StreamPhase } from '../activities/claude-progress';

/** What a run waits on: a model call, a command (or another session activity), or nothing that `watch` names. */
export type ActivityKind = 'claude' | 'command' | 'session';

/** One pending activity, as `watch` shows it. */
export interface ActivityProgress {
  kind: ActivityKind;
  /** The activity type (`callClaude`, `runCommand`, `openSession`, …). */
  type: string;
  /** When the current attempt started (or, not started yet, was scheduled), in ms since the epoch (the server's clock). */
  sinceMs: number;
  /**
   * The partial answer of a model call: the `partialText` of the current
   * attempt's last heartbeat that reached the server (at most 2,000
   * characters, the end of the text so far). Empty before the first text,
   * for other kinds, and when the last heartbeat came from an earlier attempt.
   */
  partialText: string;
  /** Characters of text and of thinking the current attempt of a model call streamed so far (its heartbeat's counts); absent for other kinds. */
  streamed?: { outputChars: number; thinkingChars: number };
  /** The current attempt (1-based; Temporal's pending activity `attempt`, which counts up when a retry is scheduled). @default 1 */
  attempt?: number;
  /** What the model call streams now, from the current attempt's heartbeat; absent for other kinds and for details of older workers. */
  phase?: StreamPhase;
  /**
   * Claude is thinking (phase `thinking`): since when (ms since the epoch,
   * the worker's clock), how many characters of thinking streamed (0 when
   * the thinking is omitted) and the end of the summarized thinking text
   * (at most 1,000 characters; empty when omitted).
   */
  thinking?: { sinceMs: number; chars: number; text: string };
  /**
   * The answer an earlier attempt had streamed and lost (its stream broke or
   * the call failed): which attempt, how much of it, and the failure's
   * message when the server has it. Only while the details are that
   * attempt's (the next attempt's first heartbeat replaces them).
   */
  lost?: LostAnswer;
  /** The message of the current attempt's last failure (Temporal's pending activity `lastFailure`), '' when none. */
  lastFailure?: string;
}

/** A partial answer dropped with a failed attempt of `callClaude`. */
export interface LostAnswer {
  /** The attempt that streamed it (1-based). */
  attempt: number;
  /** Characters of text it had streamed. */
  outputChars: number;
  /** Characters of thinking it had streamed. */
  thinkingChars: number;
  /** The attempt's failure message, when the pending activity carries it; '' otherwise. */
  reason: string;
}

/** Activity types of the session activities (src/activities/session.ts) and what `watch` calls them. */
const KIND_OF: Readonly<Record<string, ActivityKind>> = {
  callClaude: 'claude',
  runCommand: 'command',
  openSession: 'session',
  restartSession: 'session',
  closeSession: 'session',
};

/** The `partialText` of decoded heartbeat details, when they have the `ClaudeProgress` shape; else ''. */
export function partialTextOf(details: unknown): string {
  const p = details as Partial<ClaudeProgress> | null | undefined;
  return typeof p?.partialText === 'string' ? p.partialText : '';
}

const PHASES: readonly StreamPhase[] = ['waiting', 'thinking', 'text', 'tool_use'];

/** A finite non-negative number from untrusted details, else undefined. */
function count(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined;
}

/** What `watch` needs of a pending `callClaude`, besides its heartbeat details. */
export interface PendingCall {
  /** The pending activity's attempt (1-based). */
  attempt: number;
  /** When the current (or last) attempt started, ms since the epoch; 0 when unknown. */
  startedMs: number;
  /** When the last heartbeat reached the server, ms since the epoch; 0 when unknown. */
  heartbeatMs: number;
  /** The last failure's message ('' when none). */
  lastFailure: string;
}

/**
 * The model-call fields of {@link ActivityProgress} from decoded heartbeat
 * `details` (a `ClaudeProgress`, of this or an older worker; anything else
 * reads as no progress). Details of an earlier attempt give no partial text
 * and no thinking but, when that attempt had streamed something, `lost`.
 * Details without `attempt` (older workers) are the current attempt's when
 * they came after its start.
 */
export function claudeProgressOf(
  details: unknown,
  call: PendingCall,
): Pick<ActivityProgress, 'partialText' | 'phase' | 'thinking' | 'lost' | 'streamed'> {
  const p = (typeof details === 'object' && details !== null ? details : {}) as Partial<Record<keyof ClaudeProgress, unknown>>;
  const attempt = count(p.attempt);
  const current = attempt !== undefined ? attempt === call.attempt : call.heartbeatMs >= call.startedMs;
  if (!current) {
    const outputChars = count(p.outputChars) ?? 0;
    const thinkingChars = count(p.thinkingChars) ?? 0;
    if (attempt === undefined || attempt > call.attempt || outputChars + thinkingChars === 0) return { partialText: '' };
    return { partialText: '', lost: { attempt, outputChars, thinkingChars, reason: call.lastFailure } };
  }
  const phase = PHASES.find((x) => x === p.phase);
  const sinceMs = count(p.thinkingSinceMs);
  const thinking =
    phase === 'thinking' && sinceMs !== undefined
      ? { sinceMs, chars: count(p.thinkingChars) ?? 0, text: typeof p.thinkingText === 'string' ? p.thinkingText : '' }
      : undefined;
  const streamed = { outputChars: count(p.outputChars) ?? 0, thinkingChars: count(p.thinkingChars) ?? 0 };
  return { partialText: partialTextOf(details), streamed, ...(phase ? { phase } : {}), ...(thinking ? { thinking } : {}) };
}

/**
 * The activity a run is running or about to run, from its pending
 * activities (`describe()`: no worker needed; the first one `watch` knows,
 * by {@link KIND_OF}). A model call's heartbeat details are read by
 * {@link claudeProgressOf}.
 * @returns null when none is pending (the run waits on an approval, a timer, or a workflow task)
 * @throws as `describe()` does (WorkflowNotFoundError for an unknown id)
 */
export async function currentActivity(run: RunHandle): Promise<ActivityProgress | null> {
  for (const a of await run.pendingActivities()) {
    const kind = KIND_OF[a.type];
    if (!kind) continue;
    const sinceMs = a.startedMs || a.scheduledMs;
    const known = { kind, type: a.type, sinceMs, attempt: a.attempt, lastFailure: a.lastFailure };
    if (kind !== 'claude' || a.details === undefined) return { ...known, partialText: '' };
    const call = { attempt: a.attempt, startedMs: a.startedMs, heartbeatMs: a.heartbeatMs, lastFailure: a.lastFailure };
    return { ...known, ...claudeProgressOf(a.details, call) };
  }
  return null;
}
