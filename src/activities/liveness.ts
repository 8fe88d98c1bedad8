/**
 * Is the worker that holds a session still there? `sessionWorkerLiveness`
 * runs on the shared queue (any worker) when a command on a session's queue
 * timed out (schedule-to-start or heartbeat), and asks the server about the
 * session's worker: its SDK worker heartbeats (`ListWorkers`, one a second
 * from the SDK's own threads) and the polls of its session queue
 * (`DescribeTaskQueue` pollers). A worker that shows a new one while it is
 * watched is alive (slow, not gone); one silent for `WORKER_SILENCE_MS` is
 * gone; one on this machine whose process has exited is gone at once
 * (presence.ts). Time is compared on this process's clock only for the silence;
 * "alive" needs a sign that arrived while watching, so a clock that differs
 * from the worker's cannot make a dead worker look alive.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Context, log } from '@temporalio/activity';
import { temporal } from '@temporalio/proto';
import { WORKER_LIVENESS_MIN_WATCH_MS, WORKER_LIVENESS_POLL_MS, WORKER_SILENCE_MS } from '../config';
import type { WorkerLivenessInput, WorkerLivenessOutput } from '../contract';
import { exitedOnThisMachine } from './presence';

/** One reading of the server's view of a worker. */
export interface LivenessSample {
  /** When it was read, ms on this process's clock. */
  atMs: number;
  /** Latest SDK worker heartbeat of the session queue's worker, ms since the epoch; null when the server lists none (or cannot). */
  heartbeatMs: number | null;
  /** Whether that worker said it shut down (its last heartbeat says `SHUTDOWN`). */
  shutDown: boolean;
  /** Latest poll start of the session queue by any poller, ms since the epoch; null when none is listed. */
  pollMs: number | null;
}

/** What {@link judgeLiveness} needs besides the samples. */
export interface LivenessLimits {
  /** Silence after which the worker is gone, ms. */
  silenceMs: number;
  /** Shortest watch before "gone", ms. */
  minWatchMs: number;
  /** Longest watch: undecided by then is "gone" (a clock behind the worker's can hold "silent" below silenceMs). */
  maxWatchMs: number;
}

function seconds(ms: number): string {
  return `${Math.max(0, ms / 1000).toFixed(1)} s`;
}

/**
 * Decides from the samples so far (oldest first, at least one): alive when
 * the worker heartbeat or a poll advanced between the first sample and the
 * last, gone when it said it shut down, or when watched for `minWatchMs`
 * with its last sign of life `silenceMs` old (or none at all), or at
 * `maxWatchMs`; null: watch on.
 */
export function judgeLiveness(samples: readonly LivenessSample[], limits: LivenessLimits): WorkerLivenessOutput | null {
  const first = samples[0]!;
  const last = samples[samples.length - 1]!;
  if (last.shutDown) return { alive: false, evidence: 'its worker reported that it shut down' };
  if (last.heartbeatMs !== null && first.heartbeatMs !== null && last.heartbeatMs > first.heartbeatMs)
    return { alive: true, evidence: 'its worker still sends its heartbeat' };
  if (last.heartbeatMs !== null && first.heartbeatMs === null) return { alive: true, evidence: 'its worker started sending its heartbeat' };
  if (last.pollMs !== null && (first.pollMs === null || last.pollMs > first.pollMs))
    return { alive: true, evidence: 'its worker polled the session queue again' };
  const watched = last.atMs - first.atMs;
  const signs = [last.heartbeatMs, last.pollMs].filter((t): t is number => t !== null);
  const lastSign = signs.length > 0 ? Math.max(...signs) : null;
  const silence = lastSign === null ? null : last.atMs - lastSign;
  const silent = silence === null || silence >= limits.silenceMs;
  if ((watched >= limits.minWatchMs && silent) || watched >= limits.maxWatchMs) {
    const what =
      silence === null ? 'the server lists no heartbeat and no poll of it' : `its last sign of life came ${seconds(silence)} ago`;
    return { alive: false, evidence: `no sign of life from its worker while watched for ${seconds(watched)} (${what})` };
  }
  return null;
}

function timestampMs(t: { seconds?: unknown; nanos?: number | null } | null | undefined): number | null {
  if (!t || t.seconds === undefined || t.seconds === null) return null;
  return Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

/** Single quotes doubled: a value inside a `ListWorkers` query string. */
function quoted(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** Builds `sessionWorkerLiveness` over the worker's client (the activity context's, so it needs no connection of its own). */
export function createLivenessActivities() {
  return {
    /**
     * Watches the worker of `input.taskQueue` (every {@link WORKER_LIVENESS_POLL_MS},
     * heartbeating) until it shows a sign of life or has been silent for
     * {@link WORKER_SILENCE_MS}: at most about that long plus the minimum watch.
     * A server without `ListWorkers` is judged by the session queue's polls alone.
     */
    sessionWorkerLiveness: async (input: WorkerLivenessInput): Promise<WorkerLivenessOutput> => {
      const ctx = Context.current();
      const service = ctx.client.workflowService;
      const namespace = ctx.info.namespace;
      let listWorkersFailed: string | null = null;
      const read = async (): Promise<LivenessSample> => {
        let heartbeatMs: number | null = null;
        let shutDown = false;
        if (listWorkersFailed === null) {
          try {
            const r = await service.listWorkers({ namespace, pageSize: 10, query: `TaskQueue = ${quoted(input.taskQueue)}` });
            for (const w of r.workersInfo ?? []) {
              const hb = w.workerHeartbeat;
              const at = timestampMs(hb?.heartbeatTime);
              if (at === null || (heartbeatMs !== null && at <= heartbeatMs)) continue;
              heartbeatMs = at;
              shutDown = hb?.status === temporal.api.enums.v1.WorkerStatus.WORKER_STATUS_SHUTDOWN;
            }
          } catch (err) {
            listWorkersFailed = (err as Error).message;
            log.warn('ListWorkers failed: judging the worker by its polls only', { error: listWorkersFailed });
          }
        }
        const tq = await service.describeTaskQueue({
          namespace,
          taskQueue: { name: input.taskQueue, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
          taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY,
        });
        let pollMs: number | null = null;
        for (const p of tq.pollers ?? []) {
          const at = timestampMs(p.lastAccessTime);
          if (at !== null && (pollMs === null || at > pollMs)) pollMs = at;
        }
        return { atMs: Date.now(), heartbeatMs, shutDown, pollMs };
      };
      const limits: LivenessLimits = {
        silenceMs: WORKER_SILENCE_MS,
        minWatchMs: WORKER_LIVENESS_MIN_WATCH_MS,
        maxWatchMs: WORKER_SILENCE_MS + WORKER_LIVENESS_MIN_WATCH_MS,
      };
      const samples: LivenessSample[] = [];
      for (;;) {
        // A worker on this machine whose process exited is gone now: no silence to wait out (presence.ts).
        const exited = exitedOnThisMachine(input.workerId);
        if (exited) {
          log.info('session worker liveness', { workerId: input.workerId, alive: false, evidence: exited });
          return { alive: false, evidence: exited };
        }
        samples.push(await read());
        ctx.heartbeat();
        const verdict = judgeLiveness(samples, limits);
        if (verdict) {
          log.info('session worker liveness', { workerId: input.workerId, ...verdict });
          return verdict;
        }
        await sleep(WORKER_LIVENESS_POLL_MS, undefined, { signal: ctx.cancellationSignal });
      }
    },
  };
}

export type LivenessActivities = ReturnType<typeof createLivenessActivities>;
