/**
 * Error mapping against real SDK errors: the scripted server answers with
 * real HTTP statuses and the real @anthropic-ai/sdk turns them into its
 * error classes, which we map to Temporal failures.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import {
  MAX_RETRY_AFTER_MS,
  NON_RETRYABLE_STATUSES,
  isRetryable,
  retryAfterMs,
  toTemporalFailure,
} from '../../../src/activities/claude-errors';
import { ClaudeFailureType } from '../../../src/contract';
import { startModelServer, type ModelServer } from '../../../src/dev/model-server';

async function errorFor(server: ModelServer): Promise<unknown> {
  const client = new Anthropic({ baseURL: server.url, apiKey: 'sk-ant-secret-for-test', maxRetries: 0 });
  try {
    await client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] });
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

describe('Claude error mapping', () => {
  let server: ModelServer | undefined;
  afterEach(async () => server?.close());

  test.each([
    [400, 'invalid_request_error'],
    [401, 'authentication_error'],
    [403, 'permission_error'],
    [404, 'not_found_error'],
    [413, 'request_too_large'],
  ])('%d is non-retryable and carries the API message', async (status, type) => {
    server = await startModelServer({
      script: {
        responses: [
          { error: { status, body: { type: 'error', error: { type, message: `scripted ${status} message` } } } },
          { content: [{ type: 'text', text: 'x' }] },
        ],
      },
    });
    const failure = toTemporalFailure(await errorFor(server));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    const f = failure as ApplicationFailure;
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(ClaudeFailureType.REQUEST_REJECTED);
    expect(f.message).toBe(`Claude API ${status} ${type}: scripted ${status} message`);
    expect(f.message).not.toContain('sk-ant-secret-for-test');
  });

  test.each([429, 500, 503, 529])('%d is retryable', async (status) => {
    server = await startModelServer({ script: { responses: [{ error: { status } }, { content: [{ type: 'text', text: 'x' }] }] } });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(false);
    expect(f.type).toBe(ClaudeFailureType.API_UNAVAILABLE);
    expect(f.nextRetryDelay).toBeUndefined();
  });

  test('429 with retry-after: 3 asks Temporal to wait 3 s before the next attempt (C05)', async () => {
    server = await startModelServer({
      script: { responses: [{ error: { status: 429, headers: { 'retry-after': '3' } } }, { content: [{ type: 'text', text: 'x' }] }] },
    });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(false);
    expect(f.nextRetryDelay).toBe(3000);
  });

  test('500 with x-should-retry: false is non-retryable: the API said so', async () => {
    server = await startModelServer({
      script: {
        responses: [{ error: { status: 500, headers: { 'x-should-retry': 'false' } } }, { content: [{ type: 'text', text: 'x' }] }],
      },
    });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(ClaudeFailureType.REQUEST_REJECTED);
    expect(f.message).toBe('Claude API 500 api_error: Internal server error');
  });

  test('529 with x-should-retry: true is retryable, retry-after still honoured', async () => {
    server = await startModelServer({
      script: {
        responses: [
          { error: { status: 529, headers: { 'x-should-retry': 'true', 'retry-after': '2' } } },
          { content: [{ type: 'text', text: 'x' }] },
        ],
      },
    });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(false);
    expect(f.type).toBe(ClaudeFailureType.API_UNAVAILABLE);
    expect(f.nextRetryDelay).toBe(2000);
  });

  test('400 with x-should-retry: true is still non-retryable: the request itself is wrong', async () => {
    server = await startModelServer({
      script: {
        responses: [{ error: { status: 400, headers: { 'x-should-retry': 'true' } } }, { content: [{ type: 'text', text: 'x' }] }],
      },
    });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(true);
    expect(f.type).toBe(ClaudeFailureType.REQUEST_REJECTED);
  });

  test('isRetryable: the non-retryable statuses first, then x-should-retry (exactly "true" / "false"), then retryable', () => {
    const h = (v?: string): Headers => new Headers(v === undefined ? {} : { 'x-should-retry': v });
    expect(NON_RETRYABLE_STATUSES).toEqual([400, 401, 402, 403, 404, 413, 422]);
    for (const status of NON_RETRYABLE_STATUSES) {
      for (const header of [undefined, 'true', 'false'])
        expect([status, header, isRetryable(status, h(header))]).toEqual([status, header, false]);
    }
    for (const status of [408, 409, 429, 500, 502, 503, 529]) {
      expect([status, isRetryable(status, h())]).toEqual([status, true]);
      expect([status, isRetryable(status, h('true'))]).toEqual([status, true]);
      expect([status, isRetryable(status, h('false'))]).toEqual([status, false]);
      // Like the SDK, only the exact values count; anything else leaves the status to decide.
      expect([status, isRetryable(status, h('False'))]).toEqual([status, true]);
    }
    expect(isRetryable(503)).toBe(true);
    expect(isRetryable(401)).toBe(false);
  });

  test('a reset connection is a retryable connection failure', async () => {
    server = await startModelServer({
      script: { responses: [{ error: { kind: 'connection_reset' } }, { content: [{ type: 'text', text: 'x' }] }] },
    });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.type).toBe(ClaudeFailureType.CONNECTION);
    expect(f.nonRetryable).toBe(false);
  });

  test('retry-after parsing: seconds, ms, HTTP date, caps, garbage', () => {
    const h = (o: Record<string, string>): Headers => new Headers(o);
    expect(retryAfterMs(h({ 'retry-after': '3' }))).toBe(3000);
    expect(retryAfterMs(h({ 'retry-after-ms': '1500', 'retry-after': '3' }))).toBe(1500);
    expect(retryAfterMs(h({ 'retry-after': new Date(10_000).toUTCString() }), 4_000)).toBe(6000);
    expect(retryAfterMs(h({ 'retry-after': '86400' }))).toBe(MAX_RETRY_AFTER_MS);
    expect(retryAfterMs(h({ 'retry-after': 'soon' }))).toBeUndefined();
    expect(retryAfterMs(h({}))).toBeUndefined();
  });

  test('errors that are not from the SDK pass through unchanged', () => {
    const e = new TypeError('bug');
    expect(toTemporalFailure(e)).toBe(e);
  });
});

describe('the non-retryable statuses are stated once', () => {
  const ROOT = path.resolve(__dirname, '../../..');
  /** Files that may list them: the constant's own module. */
  const ALLOWED = ['src/activities/claude-errors.ts'];
  const walk = (dir: string): string[] =>
    readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
      const rel = path.posix.join(dir, e.name);
      if (e.isDirectory()) return walk(rel);
      return /\.(ts|md)$/.test(e.name) ? [rel] : [];
    });

  test('no doc or source file restates the list by hand (it drifts: some copies lacked 402)', () => {
    const status = `(?:${NON_RETRYABLE_STATUSES.join('|')})`;
    // Three or more of them in a row, as in "400 / 401 / 403" or "400/401/413".
    const list = new RegExp(`\\b${status}\\b(?:\\s*(?:/|,|and|or)\\s*${status}\\b){2,}`);
    const files = ['README.md', ...walk('docs'), ...walk('src')].filter((f) => !ALLOWED.includes(f));
    // The README's facts table is written from the constant (npm run docs): not a copy by hand.
    const handWritten = (text: string): string =>
      text.replace(/<!-- facts:start -->[\s\S]*?<!-- facts:end -->/, (table) => table.replace(/[^\n]/g, ''));
    const restated = files.flatMap((f) =>
      handWritten(readFileSync(path.join(ROOT, f), 'utf8'))
        .split('\n')
        .flatMap((line, i) => (list.test(line) ? [`${f}:${i + 1}: ${line.trim()}`] : [])),
    );
    expect(restated).toEqual([]);
  });
});
