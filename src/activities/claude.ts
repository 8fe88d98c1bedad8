/**
 * The `callClaude` activity: one Messages API call through the real
 * `@anthropic-ai/sdk`, streamed, heartbeating while it waits.
 */
import Anthropic from '@anthropic-ai/sdk';
import { Context } from '@temporalio/activity';
import { CLAUDE_HEARTBEAT_INTERVAL_MS, CLAUDE_IDLE_TIMEOUT_MS } from '../config';
import type { ContentBlock } from '../contract';
import { idleFailure, toTemporalFailure } from './claude-errors';
import { tailOf, type ClaudeProgress } from './claude-progress';
import type { CallClaudeInput, CallClaudeOutput } from '../contract';

/**
 * The Anthropic-schema bash tool (`bash_20250124`): Claude sends
 * `{command: string}` or `{restart: true}`; the schema is built into the
 * model, so no `input_schema` is sent.
 */
export const BASH_TOOL = { type: 'bash_20250124', name: 'bash' } as const;

/**
 * Creates the Anthropic client a worker uses for every call. Key and base
 * URL come from `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`) and
 * `ANTHROPIC_BASE_URL`, read by the SDK. `maxRetries: 0`: Temporal's retry
 * policy is the only retry layer. `timeoutMs`: per-request limit (SDK
 * default 10 min).
 */
export function createAnthropicClient(options: { baseURL?: string; apiKey?: string; timeoutMs?: number } = {}): Anthropic {
  const { timeoutMs, ...rest } = options;
  return new Anthropic({ ...rest, maxRetries: 0, ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}) });
}

/**
 * Builds the `callClaude` activity over one Anthropic client.
 *
 * `callClaude(input)` streams one Messages API call and returns the final
 * assistant message. It heartbeats every second (so a dead worker is seen
 * within `CLAUDE_CALL_TIMEOUTS.heartbeatTimeout`) with a
 * {@link ClaudeProgress}: the turn, the characters streamed, and the last
 * `PARTIAL_TEXT_MAX_CHARS` (2,000) characters of the text so far, aborts the HTTP request
 * when the activity is cancelled or the API sends nothing for
 * `idleTimeoutMs` (default `CLAUDE_IDLE_TIMEOUT_MS`, 90 s; a retryable
 * `ClaudeConnectionError`), and throws `ApplicationFailure`s mapped by
 * {@link toTemporalFailure} (non-retryable for `NON_RETRYABLE_STATUSES` and `x-should-retry: false`).
 */
export function createClaudeActivities(anthropic: Anthropic, options: { idleTimeoutMs?: number } = {}) {
  const idleTimeoutMs = options.idleTimeoutMs ?? CLAUDE_IDLE_TIMEOUT_MS;
  return {
    async callClaude(input: CallClaudeInput): Promise<CallClaudeOutput> {
      const ctx = Context.current();
      let outputChars = 0;
      // Only Claude's streamed text, bounded (claude-progress.ts): never the request or a key.
      let partialText = '';
      // Aborts the request when the activity is cancelled, or when the API
      // sends nothing (no headers, no event, no ping) for idleTimeoutMs.
      const idleAbort = new AbortController();
      const signal = AbortSignal.any([ctx.cancellationSignal, idleAbort.signal]);
      let lastData = Date.now();
      let idle = false;
      const heartbeat = setInterval(() => {
        const progress: ClaudeProgress = { turn: input.turn, outputChars, partialText };
        ctx.heartbeat(progress);
        if (Date.now() - lastData > idleTimeoutMs) {
          idle = true;
          idleAbort.abort(new Error('idle'));
        }
      }, CLAUDE_HEARTBEAT_INTERVAL_MS);
      try {
        const stream = anthropic.messages.stream(
          {
            model: input.model,
            max_tokens: input.maxTokens,
            ...(input.system !== undefined ? { system: input.system } : {}),
            messages: input.messages as Anthropic.MessageParam[],
            tools: [BASH_TOOL],
          },
          { signal },
        );
        const touch = (): void => {
          lastData = Date.now();
        };
        stream.on('connect', touch);
        stream.on('streamEvent', touch);
        stream.on('text', (delta) => {
          outputChars += delta.length;
          partialText = tailOf(partialText + delta);
        });
        const message = await stream.finalMessage();
        return {
          id: message.id,
          model: message.model,
          content: message.content as unknown as ContentBlock[],
          stopReason: message.stop_reason,
          usage: {
            inputTokens: message.usage.input_tokens,
            outputTokens: message.usage.output_tokens,
            // null from the API (no caching on this request) is 0.
            cacheCreationInputTokens: message.usage.cache_creation_input_tokens ?? 0,
            cacheReadInputTokens: message.usage.cache_read_input_tokens ?? 0,
          },
        };
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw ctx.cancellationSignal.reason ?? err;
        if (idle) throw idleFailure(idleTimeoutMs);
        throw toTemporalFailure(err);
      } finally {
        clearInterval(heartbeat);
      }
    },
  };
}
