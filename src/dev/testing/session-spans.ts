/**
 * When each bash session of a run was held, read from the run's workflow
 * history (the server's clock, not the worker's own count), for tests and
 * benchmarks that check how many sessions a worker held at once.
 */
import type { WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { WORKER_FULL, type OpenSessionOutput } from '../../contract';

type History = Awaited<ReturnType<WorkflowHandle['fetchHistory']>>;

/** One session of a run, as its history shows it. Times are ms since the epoch (server clock). */
export interface SessionSpan {
  workflowId: string;
  sessionId: string;
  /** The worker that held it (from `openSession`'s result). */
  workerId: string;
  /** When `openSession` completed: the session existed by then. */
  openedAt: number;
  /** When `closeSession` was scheduled (the session still existed then), or `Infinity` when the history never closes it. */
  closedAt: number;
  /** Attempt of `openSession` that opened it (1: at once; more: retried, e.g. after `WorkerFull`). */
  openAttempt: number;
  /** Failure type of the attempt before the one that opened it (`WorkerFull` when it waited for room), if it was retried. */
  lastFailureType?: string;
}

const E = temporal.api.enums.v1.EventType;

function eventMs(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number {
  return Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
}

/**
 * The sessions opened in one history, in order (a run of a continue-as-new
 * chain: pass each history; a session carried across ends open in the
 * first and is closed in a later one, so join on `sessionId` if needed).
 */
export function sessionSpans(workflowId: string, history: History): SessionSpan[] {
  const scheduled = new Map<string, string>();
  const started = new Map<string, { attempt: number; lastFailureType?: string }>();
  const spans: SessionSpan[] = [];
  for (const e of history.events ?? []) {
    const id = String(e.eventId);
    if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      scheduled.set(id, e.activityTaskScheduledEventAttributes?.activityType?.name ?? '');
      if (scheduled.get(id) === 'closeSession') {
        const open = spans.find((s) => s.closedAt === Infinity);
        if (open) open.closedAt = eventMs(e.eventTime);
      }
    } else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_STARTED) {
      const a = e.activityTaskStartedEventAttributes;
      const type = a?.lastFailure?.applicationFailureInfo?.type ?? undefined;
      started.set(String(a?.scheduledEventId), { attempt: a?.attempt ?? 1, ...(type ? { lastFailureType: type } : {}) });
    } else if (e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) {
      const a = e.activityTaskCompletedEventAttributes;
      const sched = String(a?.scheduledEventId);
      if (scheduled.get(sched) !== 'openSession') continue;
      const payload = a?.result?.payloads?.[0]?.data;
      if (!payload) continue;
      const out = JSON.parse(Buffer.from(payload).toString('utf8')) as OpenSessionOutput;
      // A replacement after a loss: the run no longer holds the old one.
      for (const s of spans) if (s.closedAt === Infinity) s.closedAt = eventMs(e.eventTime);
      spans.push({
        workflowId,
        sessionId: out.sessionId,
        workerId: out.workerId,
        openedAt: eventMs(e.eventTime),
        closedAt: Infinity,
        openAttempt: started.get(sched)?.attempt ?? 1,
        ...(started.get(sched)?.lastFailureType ? { lastFailureType: started.get(sched)!.lastFailureType } : {}),
      });
    }
  }
  return spans;
}

/** Most sessions held at once on one worker (or on any, without `workerId`), over the spans of many runs. */
export function peakSessions(spans: SessionSpan[], workerId?: string): number {
  const points: Array<[number, number]> = [];
  for (const s of spans) {
    if (workerId !== undefined && s.workerId !== workerId) continue;
    points.push([s.openedAt, 1], [s.closedAt, -1]);
  }
  // At equal times a close comes first: the span is half-open.
  points.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let peak = 0;
  for (const [, d] of points) peak = Math.max(peak, (now += d));
  return peak;
}

/** Whether a span opened only after `openSession` was refused for a full worker at least once. */
export function waitedForRoom(span: SessionSpan): boolean {
  return span.openAttempt > 1 && span.lastFailureType === WORKER_FULL;
}
