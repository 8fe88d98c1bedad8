/**
 * Maps `@anthropic-ai/sdk` errors to Temporal failures: the one place that
 * decides what is retried. The SDK's own retries are off (`maxRetries: 0`),
 * so Temporal's retry policy (`CLAUDE_RETRY_POLICY`) is the only retry layer.
 */
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { ClaudeFailureType } from '../contract';

/**
 * HTTP statuses that end a run at once: the request itself is wrong or not
 * allowed, and sending it again cannot help (Anthropic API errors page:
 * 400 invalid_request_error, 401 authentication_error, 403 permission_error,
 * 404 not_found_error, 413 request_too_large; 422 is the SDK's
 * unprocessable entity).
 */
export const NON_RETRYABLE_STATUSES: readonly number[] = [400, 401, 402, 403, 404, 413, 422];


/** Longest `retry-after` honoured as given, in ms; longer values are capped (a run should not sleep an hour on one header). */
export const MAX_RETRY_AFTER_MS = 5 * 60_000;

/**
 * Reads the server's requested wait from `retry-after-ms` (milliseconds) or
 * `retry-after` (seconds, or an HTTP date; RFC 9110 section 10.2.3).
 * @param now current time in ms since the epoch, for HTTP-date values
 * @returns the wait in ms (capped at {@link MAX_RETRY_AFTER_MS}), or undefined when absent or unparsable
 */
export function retryAfterMs(headers: Headers | undefined, now: number = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = headers.get('retry-after-ms');
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Math.min(Number(ms), MAX_RETRY_AFTER_MS);
  const value = headers.get('retry-after');
  if (value === null) return undefined;
  if (/^\d+(\.\d+)?$/.test(value.trim())) return Math.min(Number(value) * 1000, MAX_RETRY_AFTER_MS);
  const date = Date.parse(value);
  if (Number.isNaN(date)) return undefined;
  return Math.min(Math.max(0, date - now), MAX_RETRY_AFTER_MS);
}

/**
 * Converts an error thrown by the SDK into an `ApplicationFailure`:
 * - 400/401/402/403/404/413/422 → non-retryable `ClaudeRequestRejected`
 *   carrying the API's own message (`error.message` of the body);
 * - other HTTP errors (429, 529, 5xx, 408, 409) → retryable
 *   `ClaudeApiUnavailable`, with `nextRetryDelay` from `retry-after`;
 * - connection errors and timeouts → retryable `ClaudeConnectionError`.
 * Anything else is returned unchanged (Temporal retries it by default).
 * The message never holds request headers, so no API key can leak into history.
 */
export function toTemporalFailure(err: unknown): unknown {
  if (err instanceof Anthropic.APIConnectionError) {
    return ApplicationFailure.create({
      message: `Claude API unreachable: ${err.message}`,
      type: ClaudeFailureType.CONNECTION,
      nonRetryable: false,
      cause: err,
    });
  }
  if (err instanceof Anthropic.APIError && typeof err.status === 'number') {
    const apiMessage = err.apiMessage ?? err.message;
    const details = [{ status: err.status, type: err.type, requestId: err.requestID ?? null }];
    const message = `Claude API ${err.status}${err.type ? ` ${err.type}` : ''}: ${apiMessage}`;
    if (NON_RETRYABLE_STATUSES.includes(err.status)) {
      return ApplicationFailure.create({ message, type: ClaudeFailureType.REQUEST_REJECTED, nonRetryable: true, details });
    }
    const delay = retryAfterMs(err.headers);
    return ApplicationFailure.create({
      message,
      type: ClaudeFailureType.API_UNAVAILABLE,
      nonRetryable: false,
      details,
      ...(delay !== undefined ? { nextRetryDelay: delay } : {}),
    });
  }
  return err;
}

/**
 * The failure of a call abandoned because the API sent nothing (no headers,
 * event or ping) for `idleMs` ms: retryable, like a dropped connection.
 */
export function idleFailure(idleMs: number): ApplicationFailure {
  return ApplicationFailure.create({
    message: `Claude API sent nothing for ${idleMs / 1000} s; the request was abandoned`,
    type: ClaudeFailureType.CONNECTION,
    nonRetryable: false,
  });
}
