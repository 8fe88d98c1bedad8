/**
 * What the commands that send an Update share: `--by` and `--request-id`.
 * The request id is what makes a resent command apply once: the client
 * derives the Update id from it and from the request's content
 * (src/client.ts `updateIdOf`), and Temporal applies an Update id once per
 * workflow run.
 */
import { InvalidArgumentError } from 'commander';
import type { SendOptions } from '../client';

/** Help text of `--request-id`. */
export const REQUEST_ID_HELP =
  'id of this request: the same command sent again with the same id is applied once (default: a fresh id, printed when no answer comes in time)';

/** A request id: 1 to 64 letters, digits, `.`, `_` or `-` (it becomes part of the Update id). */
export function requestId(value: string): string {
  if (!/^[A-Za-z0-9._-]{1,64}$/.test(value)) throw new InvalidArgumentError('expected 1 to 64 letters, digits, ".", "_" or "-"');
  return value;
}

/** The client's send options from a command's: who sends it and the request id, each when given. */
export function sendOptionsOf(opts: { by?: string; requestId?: string }): SendOptions {
  return { ...(opts.by !== undefined ? { by: opts.by } : {}), ...(opts.requestId !== undefined ? { requestId: opts.requestId } : {}) };
}
