/**
 * What a run's activities are doing right now, as `watch` shows it: the
 * pending activity read from `describe()` (Temporal's own record, no query,
 * so no worker is needed), and for a model call the partial answer from its
 * last heartbeat (`ClaudeProgress`, src/activities/claude-progress.ts).
 */
import type { Client } from '@temporalio/client';
import type { google } from '@temporalio/proto';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow';
import type { ClaudeProgress } from '../activities/claude-progress';
import { runHandle } from './runs';

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
}

/** Activity types of the session activities (src/activities/session.ts) and what `watch` calls them. */
const KIND_OF: Readonly<Record<string, ActivityKind>> = {
  callClaude: 'claude',
  runCommand: 'command',
  openSession: 'session',
  restartSession: 'session',
  closeSession: 'session',
};

/** ms since the epoch of a protobuf Timestamp (seconds may be a Long); 0 when unset. */
function msOf(ts: google.protobuf.ITimestamp | null | undefined): number {
  if (!ts) return 0;
  return Number(String(ts.seconds ?? 0)) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6);
}

/** The `partialText` of decoded heartbeat details, when they have the `ClaudeProgress` shape; else ''. */
export function partialTextOf(details: unknown): string {
  const p = details as Partial<ClaudeProgress> | null | undefined;
  return typeof p?.partialText === 'string' ? p.partialText : '';
}

/**
 * The activity a run is running or about to run, from `describe()`'s
 * pending activities (the first one `watch` knows, by {@link KIND_OF}).
 * Heartbeat details are decoded with the client's data converter (its
 * codecs included).
 * @returns null when none is pending (the run waits on an approval, a timer, or a workflow task)
 * @throws as `describe()` does (WorkflowNotFoundError for an unknown id)
 */
export async function currentActivity(client: Client, workflowId: string): Promise<ActivityProgress | null> {
  const { raw } = await runHandle(client, workflowId).describe();
  for (const a of raw.pendingActivities ?? []) {
    const type = a.activityType?.name ?? '';
    const kind = KIND_OF[type];
    if (!kind) continue;
    const startedMs = msOf(a.lastStartedTime);
    const sinceMs = startedMs || msOf(a.scheduledTime);
    let partialText = '';
    // Details survive a retry: those of an earlier attempt (heartbeat before this start) are not this attempt's text.
    if (kind === 'claude' && a.heartbeatDetails?.payloads?.length && msOf(a.lastHeartbeatTime) >= startedMs) {
      const [details] = await decodeArrayFromPayloads(client.options.loadedDataConverter, a.heartbeatDetails.payloads).catch(() => []);
      partialText = partialTextOf(details);
    }
    return { kind, type, sinceMs, partialText };
  }
  return null;
}
