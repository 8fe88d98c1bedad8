/**
 * C05: one retry layer (Temporal). 529 and 429 are retried (the 429 not
 * before its retry-after), 400 and 401 end the run at once with the API's
 * message. The API's `x-should-retry` header decides for the other
 * statuses: a 500 it marks `false` ends the run at once, a 529 it marks
 * `true` is retried; a 400 is never retried, whatever the header says.
 */
import { spawnCli } from './cli-process';
import { TestBed, waitFor } from './harness';

const done = { content: [{ type: 'text' as const, text: 'finally' }], stop_reason: 'end_turn' };

describe('Claude API errors', () => {
  let bed: TestBed;
  afterEach(async () => bed?.close());

  test('529 three times, then 429 with retry-after: 3, then 200: retried by Temporal only, the wait honoured', async () => {
    bed = await TestBed.create({
      script: { responses: [{ error: { status: 529, times: 3 } }, { error: { status: 429, headers: { 'retry-after': '3' } } }, done] },
    });
    const result = await (await bed.start({ task: 'flaky api', approval: 'auto' }, 'api-529-429-retried')).result();
    expect(result).toMatchObject({ status: 'completed', text: 'finally', turns: 1 });
    const requests = bed.requests();
    expect(requests.map((r) => r.response.status)).toEqual([529, 529, 529, 429, 200]);
    // The SDK never retried on its own: each attempt is a fresh Temporal activity attempt.
    expect(requests.every((r) => r.headers['x-stainless-retry-count'] === '0')).toBe(true);
    const waitAfter429 = Date.parse(requests[4]!.time) - Date.parse(requests[3]!.time);
    expect(waitAfter429).toBeGreaterThanOrEqual(3_000);
  });

  test('watch says a failing model call is retried and why, once per attempt, while it happens (a fresh user saw minutes of silence)', async () => {
    bed = await TestBed.create({ script: { responses: [{ error: { status: 529, times: 3 } }, done] } });
    // Each model call waits at the scripted server until the test lets it through, so every retried attempt
    // stays in flight (pending, with the last attempt's failure) until watch has said it: what is asserted is
    // what watch shows of a state that holds, not what a poller happened to catch between 1, 2 and 4 s backoffs.
    const gate = bed.model.hold();
    const handle = await bed.start({ task: 'overloaded api', approval: 'auto' });
    const watch = spawnCli(bed.address, ['watch', handle.workflowId]);
    const retries = (): string[] =>
      watch
        .stdout()
        .split('\n')
        .filter((l) => l.startsWith('! the model call failed: '));
    await waitFor('the first attempt of the model call at the server', () => gate.waiting() === 1, 60_000);
    for (const attempt of [2, 3, 4]) {
      gate.release(); // a 529
      await waitFor(`attempt ${attempt} of the model call at the server`, () => gate.waiting() === 1, 60_000);
      await waitFor(`watch to say attempt ${attempt}`, () => retries().some((l) => l.endsWith(`(attempt ${attempt})`)), 60_000).catch(
        (err: unknown) => {
          throw new Error(`${String(err)}; watch printed:\n${watch.stdout()}${watch.stderr()}`);
        },
      );
    }
    gate.open(); // attempt 4 gets the answer
    expect(await watch.exited).toBe(0);
    const lines = watch.stdout().split('\n');
    // One line per retried attempt, with why.
    expect(retries()).toHaveLength(3);
    retries().forEach((l, i) =>
      expect(l).toMatch(new RegExp(`^! the model call failed: .*529.*; Temporal retries it \\(attempt ${i + 2}\\)$`)),
    );
    expect(lines).toContain('final answer: finally');
    expect(bed.requests().map((r) => r.response.status)).toEqual([529, 529, 529, 200]);
  });

  test.each([
    [400, 'invalid_request_error', 'messages: text content blocks must be non-empty'],
    [401, 'authentication_error', 'invalid x-api-key'],
  ])('%d ends the run at once with the API message, no retries', async (status, type, message) => {
    bed = await TestBed.create({ script: { responses: [{ error: { status, body: { type: 'error', error: { type, message } } } }, done] } });
    const handle = await bed.start({ task: `fail with ${status}`, approval: 'auto' }, `api-${status}-fails-run`);
    const result = await handle.result();
    expect(result).toEqual({
      status: 'failed',
      turns: 0,
      usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
      costUsd: 0,
      error: `Claude API ${status} ${type}: ${message}`,
    });
    expect(bed.requests()).toHaveLength(1);
    expect((await bed.status(handle)).status).toBe('failed');
  });

  test('500 with x-should-retry: false ends the run at once, no retries', async () => {
    bed = await TestBed.create({ script: { responses: [{ error: { status: 500, headers: { 'x-should-retry': false } } }, done] } });
    const result = await (await bed.start({ task: 'told not to retry', approval: 'auto' })).result();
    expect(result).toEqual({
      status: 'failed',
      turns: 0,
      usage: { inputTokens: 0, outputTokens: 0, cacheCreationInputTokens: 0, cacheReadInputTokens: 0 },
      costUsd: 0,
      error: 'Claude API 500 api_error: Internal server error',
    });
    expect(bed.requests().map((r) => r.response.status)).toEqual([500]);
  });

  test('400 is never retried, even with x-should-retry: true', async () => {
    bed = await TestBed.create({ script: { responses: [{ error: { status: 400, headers: { 'x-should-retry': true } } }, done] } });
    const result = await (await bed.start({ task: 'a bad request', approval: 'auto' })).result();
    expect(result).toMatchObject({ status: 'failed', turns: 0, error: 'Claude API 400 invalid_request_error: Invalid request' });
    expect(bed.requests().map((r) => r.response.status)).toEqual([400]);
  });

  test('529 with x-should-retry: true is retried', async () => {
    bed = await TestBed.create({
      script: { responses: [{ error: { status: 529, headers: { 'x-should-retry': true }, times: 2 } }, done] },
    });
    const result = await (await bed.start({ task: 'told to retry', approval: 'auto' })).result();
    expect(result).toMatchObject({ status: 'completed', text: 'finally', turns: 1 });
    expect(bed.requests().map((r) => r.response.status)).toEqual([529, 529, 200]);
  });
});
