/** Reading Temporal failures in workflow code. Deterministic (workflow code). */
import { ActivityFailure, TimeoutFailure } from '@temporalio/workflow';

/**
 * The deepest useful message of a failure chain: the API's own message for
 * a model call, `"<type> timeout"` for an activity timeout, else the
 * error's message.
 */
export function failureMessage(err: unknown): string {
  let current: unknown = err;
  while (current instanceof ActivityFailure && current.cause) current = current.cause;
  if (current instanceof TimeoutFailure) return `${(current.timeoutType ?? 'activity').toLowerCase()} timeout`;
  return current instanceof Error ? current.message : String(current);
}
