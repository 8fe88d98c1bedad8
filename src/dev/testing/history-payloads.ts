/**
 * Payloads of a raw history (as the server keeps it, no codec): every one, and the most bytes
 * one workflow task completion's commands carried, for the claim check's tests and
 * `bench:history` (src/dev/bench/history-size.ts).
 */
import type { Payload } from '@temporalio/common';
import { temporal } from '@temporalio/proto';

/** Every payload of a history (or part of one). */
export function payloadsOf(value: unknown): Payload[] {
  if (value === null || typeof value !== 'object' || value instanceof Uint8Array) return [];
  const o = value as Record<string, unknown>;
  const m = o['metadata'] as Record<string, unknown> | undefined;
  if (m && typeof m === 'object' && m['encoding'] instanceof Uint8Array) return [o];
  return Object.values(o).flatMap(payloadsOf);
}

/**
 * Payload bytes per workflow task completion: the events its commands made (every event whose
 * attributes name that `workflowTaskCompletedEventId`), summed; the largest.
 */
export function largestTaskPayloadBytes(history: temporal.api.history.v1.IHistory): number {
  const byTask = new Map<string, number>();
  for (const e of history.events ?? []) {
    for (const attrs of Object.values(e as Record<string, unknown>)) {
      const task = (attrs as { workflowTaskCompletedEventId?: unknown } | null)?.workflowTaskCompletedEventId;
      if (task === undefined || task === null || typeof attrs !== 'object') continue;
      const bytes = payloadsOf(attrs).reduce((n, p) => n + temporal.api.common.v1.Payload.encode(p).finish().length, 0);
      // An int64 (a Long): its JSON names it.
      const id = JSON.stringify(task);
      byTask.set(id, (byTask.get(id) ?? 0) + bytes);
    }
  }
  return Math.max(0, ...byTask.values());
}
