/**
 * What the model-server tests share: servers started and closed per test,
 * a real `@anthropic-ai/sdk` client for each, and a helper for expected
 * failures.
 */
import Anthropic from '@anthropic-ai/sdk';
import { startModelServer, type ModelServer, type ScriptFile } from '../../../src/dev/model-server';

// Not in the SDK's deprecated list (claude-sonnet-4-5 makes it print a warning on every call).
export const MODEL = 'claude-sonnet-4-6';

const servers: ModelServer[] = [];

/** Closes the servers {@link start} opened; call it from `afterEach`. */
export async function closeServers(): Promise<void> {
  await Promise.all(servers.splice(0).map((s) => s.close()));
}

/** Starts a scripted server that {@link closeServers} will close. */
export async function start(script: ScriptFile | string): Promise<ModelServer> {
  const server = await startModelServer({ script });
  servers.push(server);
  return server;
}

/** A real SDK client for `server`: no retries, a 10 s timeout (so large `max_tokens` are allowed non-streamed). */
export function clientFor(server: ModelServer): Anthropic {
  return new Anthropic({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0, timeout: 10_000 });
}

/** The error `promise` rejects with; fails the test when it resolves. */
export async function caught(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected the call to fail');
}
