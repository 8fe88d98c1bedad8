/**
 * Error mapping against real SDK errors: the scripted server answers with
 * real HTTP statuses and the real @anthropic-ai/sdk turns them into its
 * error classes, which we map to Temporal failures.
 */
import Anthropic from '@anthropic-ai/sdk';
import { ApplicationFailure } from '@temporalio/common';
import { MAX_RETRY_AFTER_MS, retryAfterMs, toTemporalFailure } from '../../../src/activities/claude-errors';
import { ClaudeFailureType } from '../../../src/contract';
import { startModelServer, type ModelServer } from '../../../src/model-server';

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
    server = await startModelServer({ script: { responses: [{ error: { status, body: { type: 'error', error: { type, message: `scripted ${status} message` } } } }, { content: [{ type: 'text', text: 'x' }] }] } });
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
    server = await startModelServer({ script: { responses: [{ error: { status: 429, headers: { 'retry-after': '3' } } }, { content: [{ type: 'text', text: 'x' }] }] } });
    const f = toTemporalFailure(await errorFor(server)) as ApplicationFailure;
    expect(f.nonRetryable).toBe(false);
    expect(f.nextRetryDelay).toBe(3000);
  });

  test('a reset connection is a retryable connection failure', async () => {
    server = await startModelServer({ script: { responses: [{ error: { kind: 'connection_reset' } }, { content: [{ type: 'text', text: 'x' }] }] } });
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
