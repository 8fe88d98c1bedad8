/**
 * The `callClaude` activity: one Messages API call through the real
 * `@anthropic-ai/sdk`, streamed, heartbeating while it waits. Its input
 * carries the conversation's change since the last call; the worker's
 * cache, or the workflow history, has the rest (docs/architecture.md, "A
 * long conversation, end to end").
 */
import Anthropic from '@anthropic-ai/sdk';
import type { MessageStream } from '@anthropic-ai/sdk/lib/MessageStream';
import { Context } from '@temporalio/activity';
import { CLAUDE_HEARTBEAT_INTERVAL_MS, CLAUDE_IDLE_TIMEOUT_MS } from '../config';
import { ApplicationFailure } from '@temporalio/common';
import { emptyConversation, type Conversation, type ContentBlock, type Message, type RequestReport } from '../contract';
import { DEFAULT_TRANSCRIPT_CACHE_CHARS } from '../config';
import { brokenStreamFailure, idleFailure, toTemporalFailure } from './claude-errors';
import { tailOf, THINKING_TEXT_MAX_CHARS, type ClaudeProgress } from './claude-progress';
import { cacheControl, fitToWindow, withCacheBreakpoints, type CountTokens } from './context-window';
import { observingFetch, onWire } from './claude-wire';
import { conversationFromHistory } from '../history';
import { TranscriptCache } from './transcript-cache';
import type { CallClaudeInput, CallClaudeOutput, RequestContext, Usage } from '../contract';
import { BASH_TOOL, requestTools } from '../contract/text-editor';

/** Failure type when the workflow's conversation cannot be rebuilt from its history (a bug or a changed history; never retried). */
export const TRANSCRIPT_MISMATCH = 'TranscriptMismatch';

/** Where a worker's conversations come from when its cache has none: the workflow history (tests may substitute). */
export type HistoryReader = (workflowId: string, runId: string, stopAt: string) => Promise<Conversation>;

/** The tool definitions live in the contract (one builder of a request's `tools`: `requestTools`). */
export { BASH_TOOL, SERVER_TOOLS, TEXT_EDITOR_TOOL } from '../contract/text-editor';

/**
 * Creates the Anthropic client a worker uses for every call. Key and base
 * URL come from `ANTHROPIC_API_KEY` (or `ANTHROPIC_AUTH_TOKEN`) and
 * `ANTHROPIC_BASE_URL`, read by the SDK. `maxRetries: 0`: Temporal's retry
 * policy is the only retry layer. `timeoutMs`: per-request limit (SDK
 * default 10 min). Its `fetch` reports every response chunk to the call that
 * made it (claude-wire.ts), so `ping` events, which the SDK drops, keep
 * `callClaude`'s idle watchdog from aborting a stream that is only thinking.
 */
export function createAnthropicClient(options: { baseURL?: string; apiKey?: string; timeoutMs?: number } = {}): Anthropic {
  const { timeoutMs, ...rest } = options;
  return new Anthropic({
    ...rest,
    maxRetries: 0,
    fetch: observingFetch(),
    ...(timeoutMs !== undefined ? { timeout: timeoutMs } : {}),
  });
}

/**
 * Builds the `callClaude` activity over one Anthropic client.
 *
 * Options: `idleTimeoutMs` (below); `cacheChars`, the bound of this worker's
 * conversation cache in characters of JSON (default
 * `DEFAULT_TRANSCRIPT_CACHE_CHARS`, 256 M); `readHistory`, where a missing
 * conversation is rebuilt from (default: the workflow histories, through
 * the activity's client).
 *
 * `callClaude(input)` gets the whole conversation (the cached copy with the
 * input's change applied, or rebuilt first; `TranscriptMismatch`,
 * non-retryable, when even the rebuilt copy does not match the workflow's
 * digest), fits it to the context window and places the cache breakpoints
 * (src/activities/context-window.ts), streams one Messages API call and
 * returns the final assistant message with a {@link RequestReport}. It heartbeats every second (so a dead worker is seen
 * within `CLAUDE_CALL_TIMEOUTS.heartbeatTimeout`) with a
 * {@link ClaudeProgress}: the turn and attempt, what streams now (thinking, text, a tool call),
 * the characters streamed, the last `PARTIAL_TEXT_MAX_CHARS` (2,000) characters of the
 * text and the last `THINKING_TEXT_MAX_CHARS` (1,000) of the summarized thinking so far,
 * and when the thinking started. An answer counts only once `message_stop` came and
 * the message has a `stop_reason`: a stream that breaks before (the connection dropped
 * mid-body, an end without `message_stop`) is a retryable `ClaudeStreamBroken`, and an
 * `event: error` maps by its type (`overloaded_error`: retryable `ClaudeApiUnavailable`);
 * either way nothing of the partial answer is returned, so no partial `tool_use` runs
 * (C27). It aborts the HTTP request
 * when the activity is cancelled or the API sends nothing (not a byte, `ping` events
 * counted: claude-wire.ts) for `idleTimeoutMs` (default `CLAUDE_IDLE_TIMEOUT_MS`, 90 s; a retryable
 * `ClaudeConnectionError`), and throws `ApplicationFailure`s mapped by
 * {@link toTemporalFailure} (non-retryable for `NON_RETRYABLE_STATUSES` and `x-should-retry: false`).
 */
export function createClaudeActivities(
  anthropic: Anthropic,
  options: { idleTimeoutMs?: number; cacheChars?: number; readHistory?: HistoryReader } = {},
) {
  const idleTimeoutMs = options.idleTimeoutMs ?? CLAUDE_IDLE_TIMEOUT_MS;
  const cache = new TranscriptCache(options.cacheChars ?? DEFAULT_TRANSCRIPT_CACHE_CHARS);
  const readHistory = options.readHistory ?? readFromHistory;
  return {
    async callClaude(input: CallClaudeInput): Promise<CallClaudeOutput> {
      const ctx = Context.current();
      // The rebuild from history and the token counts come before the stream: heartbeat through
      // them too, or a long chain's rebuild passes the 5 s heartbeat timeout on every attempt.
      const early = setInterval(
        () =>
          ctx.heartbeat({
            turn: input.turn,
            outputChars: 0,
            partialText: '',
            attempt: ctx.info.attempt,
            phase: 'waiting',
          } satisfies ClaudeProgress),
        CLAUDE_HEARTBEAT_INTERVAL_MS,
      );
      let built: Awaited<ReturnType<typeof buildRequest>>;
      try {
        built = await buildRequest(anthropic, input, await conversationOf(input, cache, readHistory));
      } finally {
        clearInterval(early);
      }
      const { request, report } = built;
      // Only what Claude streamed, bounded (claude-progress.ts): never the request or a key.
      const progress: ClaudeProgress = {
        turn: input.turn,
        outputChars: 0,
        partialText: '',
        attempt: ctx.info.attempt,
        phase: 'waiting',
        thinkingChars: 0,
        thinkingText: '',
      };
      // Aborts the request when the activity is cancelled, or when the API
      // sends nothing (no headers, no byte of the body: a ping counts) for idleTimeoutMs.
      const idleAbort = new AbortController();
      const signal = AbortSignal.any([ctx.cancellationSignal, idleAbort.signal]);
      let lastData = Date.now();
      let idle = false;
      // A turn counts only once `message_stop` came and the message has a stop_reason (C27).
      let events = 0;
      let connected = false;
      let stopped = false;
      const got = (): { events: number; outputChars: number; thinkingChars: number } => ({
        events,
        outputChars: progress.outputChars,
        thinkingChars: progress.thinkingChars ?? 0,
      });
      const heartbeat = setInterval(() => {
        ctx.heartbeat({ ...progress });
        if (Date.now() - lastData > idleTimeoutMs) {
          idle = true;
          idleAbort.abort(new Error('idle'));
        }
      }, CLAUDE_HEARTBEAT_INTERVAL_MS);
      try {
        const touch = (): void => {
          lastData = Date.now();
        };
        // Every byte on the wire counts, pings included (a client made by createAnthropicClient reports them).
        const stream = onWire(touch, () => streamOf(anthropic, request, signal));
        stream.on('connect', () => {
          connected = true;
          touch();
        });
        stream.on('streamEvent', (event) => {
          touch();
          events += 1;
          track(progress, event);
          if (event.type === 'message_stop') stopped = true;
        });
        stream.on('text', (delta) => {
          progress.outputChars += delta.length;
          progress.partialText = tailOf(progress.partialText + delta);
        });
        // A whole answer is used at message_stop (C21): a body the API never ends must not hold it
        // until the idle watchdog. The SDK emits `message` there; the rest of the body is let go.
        let atStop = false;
        const whole = new Promise<Anthropic.Message>((resolve) =>
          stream.on('message', (m) => {
            atStop = true;
            resolve(m);
          }),
        );
        const ended = stream.finalMessage().catch((err: unknown) => {
          // Broken after it started (a dropped socket, a cut body): the SDK throws a bare error, not a connection error.
          if (connected && !(err instanceof Anthropic.APIError) && !signal.aborted)
            throw brokenStreamFailure(err instanceof Error ? err.message : String(err), got(), err);
          throw err;
        });
        const message = await Promise.race([ended, whole]);
        if (atStop) {
          // What the body still holds (nothing, or an unended socket) is not waited for.
          ended.catch(() => undefined);
          stream.abort();
        }
        // SDK 1.14's finalMessage() rejects when message_stop never came, but a stream cut after a
        // message_stop without message_delta (or a later SDK) can still yield a message without a stop_reason.
        if (!stopped) throw brokenStreamFailure('no message_stop', got());
        if (message.stop_reason === null || message.stop_reason === undefined) throw brokenStreamFailure('no stop_reason', got());
        return {
          id: message.id,
          model: message.model,
          content: message.content as unknown as ContentBlock[],
          stopReason: message.stop_reason,
          usage: usageOf(message.usage),
          ...(report ? { context: { ...report, requestTokens: requestTokens(message.usage) } } : {}),
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

/**
 * Folds one stream event into `progress`: the phase by the block that
 * starts, the thinking run's start time, and the thinking characters and
 * text (bounded by {@link THINKING_TEXT_MAX_CHARS}). Text is counted by the
 * stream's `text` event instead.
 */
export function track(progress: ClaudeProgress, event: Anthropic.MessageStreamEvent, nowMs: number = Date.now()): void {
  if (event.type === 'content_block_start') {
    const type = event.content_block.type;
    const thinking = type === 'thinking' || type === 'redacted_thinking';
    if (thinking && progress.phase !== 'thinking') {
      progress.thinkingSinceMs = nowMs;
      // A new run of thinking after text or a tool call: keep the earlier summary apart from it.
      if (progress.thinkingText) progress.thinkingText = tailOf(`${progress.thinkingText} `, THINKING_TEXT_MAX_CHARS);
    }
    progress.phase = thinking ? 'thinking' : type === 'text' ? 'text' : 'tool_use';
  } else if (event.type === 'content_block_delta' && event.delta.type === 'thinking_delta') {
    progress.thinkingChars = (progress.thinkingChars ?? 0) + event.delta.thinking.length;
    progress.thinkingText = tailOf((progress.thinkingText ?? '') + event.delta.thinking, THINKING_TEXT_MAX_CHARS);
  }
}

/** Tokens of a request as the API counted them: uncached input, plus cache writes and reads. */
function requestTokens(usage: Anthropic.Usage): number {
  return usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
}

/**
 * The whole conversation for this call: an older run's input holds it; else the worker's
 * cached copy with the input's change applied, or, on a miss, the copy rebuilt from the
 * workflow history first.
 * @throws ApplicationFailure `TranscriptMismatch` (non-retryable) when even the rebuilt copy does not match the workflow's
 */
async function conversationOf(input: CallClaudeInput, cache: TranscriptCache, readHistory: HistoryReader): Promise<Message[]> {
  const delta = input.transcript;
  if (delta === undefined) return input.messages ?? [];
  const { workflowExecution, activityId } = Context.current().info;
  if (workflowExecution === undefined)
    throw ApplicationFailure.create({
      type: TRANSCRIPT_MISMATCH,
      nonRetryable: true,
      message: 'a conversation change needs the workflow that sent it',
    });
  const { workflowId, runId } = workflowExecution;
  const cached = cache.apply(workflowId, delta);
  if (cached) return cached.messages;
  // A change from the first message needs nothing earlier: no history to read.
  const rebuilt = delta.from === 0 ? emptyConversation() : await readHistory(workflowId, runId, activityId);
  cache.set(workflowId, rebuilt);
  const applied = cache.apply(workflowId, delta);
  if (applied) return applied.messages;
  cache.drop(workflowId);
  throw ApplicationFailure.create({
    type: TRANSCRIPT_MISMATCH,
    nonRetryable: true,
    message: `the conversation rebuilt from the workflow history (${rebuilt.messages.length} messages) does not match the workflow's at message ${delta.from}`,
  });
}

/** The default {@link HistoryReader}: the activity's own client reads the run's chain of histories. */
async function readFromHistory(workflowId: string, runId: string, stopAt: string): Promise<Conversation> {
  const result = await conversationFromHistory(Context.current().client, workflowId, runId, stopAt);
  if (!result.ok)
    throw ApplicationFailure.create({
      type: TRANSCRIPT_MISMATCH,
      nonRetryable: true,
      message: `the workflow history does not chain: ${result.problem}`,
    });
  return result.conversation;
}

/** Beta header of server-side compaction (https://platform.claude.com/docs/en/build-with-claude/compaction). */
export const COMPACTION_BETA = 'compact-2026-01-12';
/** The compaction edit type (same page). */
export const COMPACTION_EDIT = 'compact_20260112';

/**
 * The `thinking` option of a request: a budget (`enabled`) when the run has one, else
 * `adaptive` with the run's display when it names one, else none (the model's default).
 */
export function thinkingOption(context: RequestContext | undefined): { thinking?: Anthropic.ThinkingConfigParam } {
  if (context?.thinkingBudget !== undefined) return { thinking: { type: 'enabled', budget_tokens: context.thinkingBudget } };
  if (context?.thinkingDisplay !== undefined) return { thinking: { type: 'adaptive', display: context.thinkingDisplay } };
  return {};
}

/**
 * The Messages API request: the conversation fitted to the context window (or, on a model
 * with compaction, sent whole with the compaction edit), the system prompt and tools with a
 * cache breakpoint, rolling breakpoints on the newest messages, thinking and effort when
 * asked. The system prompt, tools and every message already sent come out byte-identical on
 * every call of a run (the thinking blocks' prefix, and the prompt cache's). Older runs'
 * inputs (no `context`) are sent as they are.
 */
async function buildRequest(
  anthropic: Anthropic,
  input: CallClaudeInput,
  conversation: Message[],
): Promise<{ request: ClaudeRequest; report: Omit<RequestReport, 'requestTokens'> | null }> {
  const { context } = input;
  const thinking = thinkingOption(context);
  if (context === undefined) {
    const request = {
      model: input.model,
      max_tokens: input.maxTokens,
      ...(input.system !== undefined ? { system: input.system } : {}),
      messages: conversation as Anthropic.MessageParam[],
      tools: [BASH_TOOL],
    };
    return { request, report: null };
  }
  const system = input.system !== undefined && input.system !== '' ? [{ type: 'text' as const, text: input.system }] : undefined;
  const runTools = requestTools(context.clientTools, context.serverTools, context.subagentTool === true);
  const count: CountTokens = async (messages, opts) => {
    const counted = await anthropic.messages.countTokens({
      model: input.model,
      messages: messages as Anthropic.MessageParam[],
      ...(opts?.bare ? {} : { tools: runTools as Anthropic.ToolUnion[], ...(system ? { system } : {}), ...thinking }),
    });
    return counted.input_tokens;
  };
  const delta = input.transcript;
  const previousValid =
    context.previousTokens !== undefined &&
    context.previousLength !== undefined &&
    delta !== undefined &&
    delta.from >= context.previousLength;
  // With compaction the API summarizes what is old; nothing is cleared or counted here, so
  // every message goes back exactly as it was sent before.
  const fitted =
    context.compactAtTokens !== undefined
      ? { messages: conversation, clearedBefore: context.clearedBefore }
      : await fitToWindow(
          conversation,
          {
            contextWindow: context.contextWindow,
            maxTokens: input.maxTokens,
            fixedBytes: Buffer.byteLength(JSON.stringify({ system, tools: runTools }), 'utf8'),
            clearedBefore: context.clearedBefore,
            ...(previousValid ? { previous: { tokens: context.previousTokens!, length: context.previousLength! } } : {}),
          },
          count,
        ).catch((err: unknown) => {
          throw toTemporalFailure(err);
        });
  const breakpoint = cacheControl(context.cacheTtl);
  const tools = runTools as Anthropic.ToolUnion[];
  const request: ClaudeRequest = {
    model: input.model,
    max_tokens: input.maxTokens,
    ...(system ? { system: system.map((b, i) => (i === system.length - 1 ? { ...b, cache_control: breakpoint } : b)) } : {}),
    messages: withCacheBreakpoints(
      fitted.messages,
      previousValid ? context.previousLength! - 1 : undefined,
      context.cacheTtl,
    ) as Anthropic.MessageParam[],
    tools: system ? tools : tools.map((t, i) => (i === tools.length - 1 ? { ...t, cache_control: breakpoint } : t)),
    ...thinking,
    ...(context.effort !== undefined ? { output_config: { effort: context.effort } } : {}),
    ...(context.compactAtTokens !== undefined
      ? {
          betas: [COMPACTION_BETA],
          context_management: { edits: [{ type: COMPACTION_EDIT, trigger: { type: 'input_tokens', value: context.compactAtTokens } }] },
        }
      : {}),
  };
  const report = {
    messages: conversation.length,
    clearedBefore: fitted.clearedBefore,
    ...('notice' in fitted && fitted.notice !== undefined ? { notice: fitted.notice } : {}),
  };
  return { request, report };
}

/** A request as `buildRequest` makes it: the Messages API's, plus the beta parameters when it uses a beta (`betas`, `context_management`). */
type ClaudeRequest = Anthropic.MessageCreateParamsNonStreaming & {
  betas?: string[];
  context_management?: { edits: Array<Record<string, unknown>> };
};

/**
 * Streams `request`: through the beta endpoint (the `anthropic-beta` header) when it names
 * betas, else the plain one. Both streams emit the same events and final message shape.
 */
function streamOf(anthropic: Anthropic, request: ClaudeRequest, signal: AbortSignal): MessageStream {
  if (request.betas === undefined) return anthropic.messages.stream(request, { signal });
  return anthropic.beta.messages.stream(request as unknown as Anthropic.Beta.MessageCreateParamsStreaming, {
    signal,
  }) as unknown as MessageStream;
}

/**
 * The usage of an answer: the top-level counts, plus the tokens of every `compaction`
 * iteration (which the top-level fields leave out: the SDK's `BetaUsage.iterations` doc), the
 * 1-hour share of the cache writes, and the server tools' request counts. The optional counts
 * are present only when non-zero, so a usage of a plain answer is what it always was.
 */
export function usageOf(u: Anthropic.Usage): Usage {
  const raw = u as Anthropic.Usage & {
    iterations?: Array<{
      type?: string;
      input_tokens?: number;
      output_tokens?: number;
      cache_creation_input_tokens?: number;
      cache_read_input_tokens?: number;
    }> | null;
    server_tool_use?: { web_search_requests?: number; web_fetch_requests?: number } | null;
    cache_creation?: { ephemeral_1h_input_tokens?: number } | null;
  };
  const compactions = (raw.iterations ?? []).filter((it) => it.type === 'compaction');
  const sum = (key: 'input_tokens' | 'output_tokens' | 'cache_creation_input_tokens' | 'cache_read_input_tokens'): number =>
    compactions.reduce((n, it) => n + (it[key] ?? 0), 0);
  const oneHour = raw.cache_creation?.ephemeral_1h_input_tokens ?? 0;
  const searches = raw.server_tool_use?.web_search_requests ?? 0;
  const fetches = raw.server_tool_use?.web_fetch_requests ?? 0;
  return {
    inputTokens: u.input_tokens + sum('input_tokens'),
    outputTokens: u.output_tokens + sum('output_tokens'),
    // null from the API (no caching on this request) is 0.
    cacheCreationInputTokens: (u.cache_creation_input_tokens ?? 0) + sum('cache_creation_input_tokens'),
    cacheReadInputTokens: (u.cache_read_input_tokens ?? 0) + sum('cache_read_input_tokens'),
    ...(oneHour > 0 ? { cacheCreation1hInputTokens: oneHour } : {}),
    ...(searches > 0 ? { webSearchRequests: searches } : {}),
    ...(fetches > 0 ? { webFetchRequests: fetches } : {}),
    ...(compactions.length > 0 ? { compactions: compactions.length } : {}),
  };
}
