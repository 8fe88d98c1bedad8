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
 * 400 invalid_request_error, 401 authentication_error, 402 billing_error,
 * 403 permission_error, 404 not_found_error, 413 request_too_large; 422 is
 * the SDK's UnprocessableEntityError). The one list: docs and comments
 * point here instead of restating it. Applied by {@link isRetryable}.
 */
export const NON_RETRYABLE_STATUSES: readonly number[] = [400, 401, 402, 403, 404, 413, 422];

/** Response header by which the API says whether a failed request may be sent again: `true` or `false`. */
export const SHOULD_RETRY_HEADER = 'x-should-retry';

/**
 * Whether a call the API answered with HTTP `status` (an error) may be
 * tried again: the one rule, used by {@link toTemporalFailure}.
 *
 * 1. A status in {@link NON_RETRYABLE_STATUSES}: never. The request itself
 *    is wrong; a header cannot make it right. (Here alone we are stricter
 *    than the SDK, which lets the header override every status.)
 * 2. Else `x-should-retry: true` or `false` decides. This is the official
 *    SDK's rule: `shouldRetry` in `@anthropic-ai/sdk` (src/client.ts,
 *    1.14.0) reads the header before any status ("If the server explicitly
 *    says whether or not to retry, obey"), comparing with exactly `'true'`
 *    and `'false'`; any other value is ignored.
 * 3. Else retryable: 429, 529, other 5xx, 408, 409, and any status not
 *    listed above.
 * @param headers the error response's headers (none: the status decides)
 */
export function isRetryable(status: number, headers?: Headers | null): boolean {
  if (NON_RETRYABLE_STATUSES.includes(status)) return false;
  const said = headers?.get(SHOULD_RETRY_HEADER);
  if (said === 'true') return true;
  if (said === 'false') return false;
  return true;
}

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
 * - HTTP errors {@link isRetryable} refuses (a status in
 *   {@link NON_RETRYABLE_STATUSES}, or `x-should-retry: false`) →
 *   non-retryable `ClaudeRequestRejected` carrying the API's own message
 *   (`error.message` of the body);
 * - other HTTP errors → retryable `ClaudeApiUnavailable`, with
 *   `nextRetryDelay` from `retry-after`;
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
  // A status-less APIError that is not a connection error is an `event: error` inside a stream.
  if (err instanceof Anthropic.APIError && err.status === undefined) return streamErrorFailure(err);
  if (err instanceof Anthropic.APIError && typeof err.status === 'number') {
    const apiMessage = err.apiMessage ?? err.message;
    const details = [{ status: err.status, type: err.type, requestId: err.requestID ?? null }];
    const message = `Claude API ${err.status}${err.type ? ` ${err.type}` : ''}: ${apiMessage}`;
    // `instanceof` on the generic APIError leaves its headers `any`; the SDK 1.x sets a fetch Headers (or none).
    const headers = err.headers as Headers | undefined;
    if (!isRetryable(err.status, headers)) {
      return ApplicationFailure.create({ message, type: ClaudeFailureType.REQUEST_REJECTED, nonRetryable: true, details });
    }
    const delay = retryAfterMs(headers);
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
 * The HTTP status each `error.type` of the Messages API stands for
 * (https://platform.claude.com/docs/en/api/errors): an `event: error` inside
 * a stream has no status of its own, so its type picks the rule of
 * {@link isRetryable}. Types not listed count as 500 (retryable).
 */
export const STATUS_BY_ERROR_TYPE: Readonly<Record<string, number>> = {
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/**
 * The failure for an `event: error` the API sent inside a stream (the SDK
 * throws an `APIError` without a status, `type` from the event's body):
 * mapped as the HTTP error of the same type would be, so `overloaded_error`
 * is a retryable `ClaudeApiUnavailable`; an unreadable event (no type)
 * counts as `api_error`, retryable. The blocks streamed before it are
 * dropped with the attempt. Details: `{status: null, type, streamed: true}`.
 */
function streamErrorFailure(err: { type: unknown; apiMessage?: string | null; message: string }): ApplicationFailure {
  const type = typeof err.type === 'string' && err.type !== '' ? err.type : 'unknown';
  const status = STATUS_BY_ERROR_TYPE[type] ?? 500;
  const apiMessage = err.apiMessage ?? err.message;
  const message = `Claude API error event mid-stream (${type}): ${apiMessage}`;
  const details = [{ status: null, type, streamed: true }];
  const retryable = isRetryable(status);
  return ApplicationFailure.create({
    message,
    type: retryable ? ClaudeFailureType.API_UNAVAILABLE : ClaudeFailureType.REQUEST_REJECTED,
    nonRetryable: !retryable,
    details,
  });
}

/**
 * The failure of an answer whose stream broke after it had started: the
 * connection dropped mid-body (`cause`), or the stream ended without
 * `message_stop` or without a `stop_reason`. Retryable `ClaudeStreamBroken`;
 * the message says how far it got (`events` received, characters of text
 * and thinking streamed) so the loss is visible in the history.
 */
export function brokenStreamFailure(
  why: string,
  got: { events: number; outputChars: number; thinkingChars: number },
  cause?: unknown,
): ApplicationFailure {
  return ApplicationFailure.create({
    message: `Claude's answer stream broke (${why}) after ${got.events} events; the partial answer (${got.outputChars} characters of text, ${got.thinkingChars} of thinking) is dropped`,
    type: ClaudeFailureType.STREAM_BROKEN,
    nonRetryable: false,
    ...(cause instanceof Error ? { cause } : {}),
  });
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
