/**
 * The request log of the scripted server: one JSON object per request
 * received, kept in memory and, when configured, appended to a JSON-lines file.
 */
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { IncomingHttpHeaders } from 'node:http';

/**
 * What the server did with a request:
 * - `message`: answered with the step's scripted message (JSON or SSE)
 * - `count_tokens`: `POST /v1/messages/count_tokens` answered with `{input_tokens}`
 * - `error`: a scripted HTTP error
 * - `connection_reset` / `hang`: a scripted fault (no HTTP answer)
 * - `stream_cut` / `stream_error` / `stream_stall`: a scripted broken stream (200, part of the answer, then a close, `event: error`, or silence)
 * - `past_end`: 500, the script has no entry for the step
 * - `unauthorized`: 401, no `x-api-key` / `Authorization: Bearer` (or the wrong key)
 * - `invalid_request`: 400, a body the real API would reject too
 * - `too_large`: 413, body over the size limit
 * - `not_found`: 404, unknown route
 * - `health`: `GET /health`
 */
export type ResponseKind =
  | 'message'
  | 'count_tokens'
  | 'error'
  | 'connection_reset'
  | 'hang'
  | 'stream_cut'
  | 'stream_error'
  | 'stream_stall'
  | 'past_end'
  | 'script_mismatch'
  | 'unauthorized'
  | 'invalid_request'
  | 'too_large'
  | 'not_found'
  | 'health';

/** Which credential header a request carried; never its value. */
export type AuthKind = 'x-api-key' | 'bearer' | 'none';

/** One logged request (one line of the log file). */
export interface LoggedRequest {
  /** When the request was answered (or the fault chosen), ISO 8601. */
  time: string;
  /** The step: assistant messages in the request; `null` when the body was not a readable Messages request, and for count_tokens. */
  step: number | null;
  /** 1-based count of requests for this step in this conversation, this one included; `null` when `step` is. */
  attempt: number | null;
  /** Conversation key (hash of system, metadata.user_id and the first message); `null` when `step` is. */
  conversation: string | null;
  method: string;
  /** URL path without the query string, e.g. `/v1/messages`. */
  path: string;
  /** Whether the body asked for `stream: true`. */
  stream: boolean;
  /** Which credential header was present. The key itself is never logged. */
  auth: AuthKind;
  /** A safe subset of request headers: `anthropic-*`, `x-stainless-*`, `user-agent`, `content-type`. */
  headers: Record<string, string>;
  /** The parsed JSON body; the raw text when it was not JSON; `null` when empty. */
  body: unknown;
  response: {
    /** HTTP status sent; `null` for `connection_reset` and `hang`. */
    status: number | null;
    kind: ResponseKind;
    /** The `request-id` header sent, when there was an HTTP answer. */
    requestId?: string;
    /** For scripted errors: which error entry of the step (0-based) and its `times`. */
    error?: { index: number; times: number };
    /** Delay before answering, milliseconds, when scripted. */
    delayMs?: number;
  };
}

const LOGGED_HEADER = /^(anthropic-|x-stainless-)|^(user-agent|content-type)$/;

/** Headers safe to log: names on an allowlist, so no credential can slip through. */
export function safeHeaders(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !LOGGED_HEADER.test(name)) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}

/** Keeps log entries in memory and appends each to the log file, if any. */
export class RequestLog {
  readonly #entries: LoggedRequest[] = [];

  /** @param file JSON-lines file, created (with its folder) if missing; appended to, never truncated. */
  constructor(readonly file: string | undefined) {
    if (file) {
      mkdirSync(dirname(file), { recursive: true });
      appendFileSync(file, '');
    }
  }

  add(entry: LoggedRequest): void {
    this.#entries.push(entry);
    // Synchronous so that the line is on disk before the answer leaves: a
    // test that kills a client mid-request still finds the request logged.
    if (this.file) appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }

  all(): LoggedRequest[] {
    return structuredClone(this.#entries);
  }
}

/**
 * Reads a request log file written by the server.
 *
 * @param path the JSON-lines file given as `logFile`
 * @returns the entries in the order the requests were answered
 * @throws Error when the file cannot be read or a line is not JSON (the
 *   message names the file and the line number)
 */
export function readRequestLog(path: string): LoggedRequest[] {
  const text = readFileSync(path, 'utf8');
  const entries: LoggedRequest[] = [];
  text.split('\n').forEach((line, index) => {
    if (line.trim() === '') return;
    try {
      entries.push(JSON.parse(line) as LoggedRequest);
    } catch (cause) {
      throw new Error(`Model-server request log ${path}, line ${index + 1}, is not JSON`, { cause });
    }
  });
  return entries;
}
