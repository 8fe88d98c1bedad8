/**
 * The scripted Messages API server: `POST /v1/messages` answered from a
 * script, for the real `@anthropic-ai/sdk` pointed at it by `baseURL` /
 * `ANTHROPIC_BASE_URL`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { RequestLog, safeHeaders, type AuthKind, type LoggedRequest } from './log';
import { checkMessagesRequest, conversationKey, stepOf, type MessagesRequest } from './request';
import {
  completeMessage,
  errorBody,
  formatSse,
  streamErrorBody,
  statusOfErrorType,
  streamEvents,
  type CompletedMessage,
} from './responses';
import {
  choose,
  compileScript,
  forModel,
  messageOf,
  planSteps,
  readScript,
  type ParsedErrorEntry,
  type ParsedMessageEntry,
  type ParsedScript,
  type ScriptFile,
  type ScriptMessageEntry,
  type ScriptStep,
} from './script';
import { checkThinkingToolLoop } from './thinking';
import { buildTodayMessage, countTokensBody, prepareToday, scriptMismatch, type TodayPlan } from './today';
import { DEFAULT_CONTEXT_WINDOW, DEFAULT_MIN_CACHEABLE_TOKENS, PromptCache, measure } from './tokens';

/** Options of {@link startModelServer}. */
export interface ModelServerOptions {
  /** The script, or the path of its JSON file (read once, at start). */
  script: ScriptFile | string;
  /** TCP port. @default 0 (a free port, see {@link ModelServer.port}) */
  port?: number;
  /** Interface to listen on. @default '127.0.0.1' */
  host?: string;
  /** JSON-lines file every request is appended to (created with its folder; never truncated). @default none */
  logFile?: string;
  /**
   * When set, only this key is accepted (in `x-api-key` or
   * `Authorization: Bearer`); other keys get 401. @default any non-empty key
   */
  apiKey?: string;
  /**
   * Reject with 400, as the real API does, requests that break the API's
   * rules: in the transcript (empty text blocks, a `tool_use` without its
   * `tool_result` in the next message, a `tool_result` without its
   * `tool_use`, text before `tool_result` blocks), in `cache_control`
   * markers, in the `thinking` option and thinking blocks sent back, and the
   * context window. @default true
   */
  validateRequests?: boolean;
}

/** A running scripted server. */
export interface ModelServer {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:41234`; use it as `baseURL` / `ANTHROPIC_BASE_URL`. */
  url: string;
  /** The port actually bound. */
  port: number;
  /** Copies of the logged requests so far, oldest first (see {@link LoggedRequest}). */
  requests(): LoggedRequest[];
  /**
   * Moves the server's clock forward by `ms` milliseconds (it starts at the
   * wall clock and runs with it). Only the prompt cache reads this clock, so
   * a test can expire a `5m` or `1h` entry without waiting.
   *
   * @throws RangeError when `ms` is negative or not finite
   */
  advanceClock(ms: number): void;
  /**
   * Holds every Messages request (`POST /v1/messages`) that arrives from now
   * on, after its checks and before its scripted answer, until the returned
   * gate lets it through: a test keeps a model call in flight (the attempt
   * Temporal shows as pending) for as long as it needs to see it, instead of
   * betting on how long a scripted answer takes. `count_tokens` and `/health`
   * are not held. A second `hold` while a gate is shut returns that gate.
   * `close()` drops the held requests unanswered.
   */
  hold(): RequestGate;
  /**
   * Answers every Messages request from now on with `entry` instead of its
   * scripted step (no scripted error is served either): a bench that has
   * seen what it came for ends the runs it started at their next model call,
   * however many steps their script had left (`src/dev/bench/chaos.ts`).
   *
   * @throws {ModelScriptError} when `entry` is not a valid message entry; TypeError when it is an error entry
   */
  answerAllWith(entry: ScriptMessageEntry): void;
  /** Stops listening and drops open connections, hanging requests included. Idempotent. */
  close(): Promise<void>;
}

/** The gate of {@link ModelServer.hold}. */
export interface RequestGate {
  /** How many Messages requests wait at the gate now (one whose client went away no longer counts). */
  waiting(): number;
  /** Lets the request that has waited longest through to its scripted answer. @returns false when none waits */
  release(): boolean;
  /** Lets every waiting request through and holds no more (a later `hold()` shuts a new gate). Idempotent. */
  open(): void;
}

/** Largest request body accepted, bytes; the real API's limit for Messages requests is 32 MB. */
const MAX_BODY_BYTES = 32 * 1024 * 1024;

/**
 * Starts a scripted Messages API server.
 *
 * Routes: `POST /v1/messages` (needs `x-api-key` or `Authorization: Bearer`;
 * `stream: true` is answered with Server-Sent Events),
 * `POST /v1/messages/count_tokens` (same credentials; body `{model, system?,
 * tools?, messages, thinking?}` checked like a Messages body, without
 * `max_tokens` and the context window; answers `{"input_tokens": N}` by the
 * rule of `tokens.ts`, the total `usage` of the same request adds up to;
 * no step, no cache), `GET /health` → `{"ok":true}`, anything else → 404
 * with an Anthropic error body. Every answer carries a `request-id` header.
 *
 * Usage, the prompt cache, the context window and thinking signatures are
 * described in `tokens.ts` and `thinking.ts`. A Messages request whose
 * input tokens exceed the model's context window, or (legacy scripts only)
 * whose input + `max_tokens` does, gets a 400 worded like the API's.
 * `"api": "today"` scripts go through `today.ts` (per-model rules) first.
 *
 * A request's step is the number of assistant messages it holds; see
 * `script.ts` for how entries map to steps and how errors are counted
 * (per conversation and step, so a retried step gets the same answer,
 * generated ids included). A step past the end of the script gets a 500
 * `api_error` whose message names the step.
 *
 * @throws {ModelScriptError} when the script is invalid (message names the file and the problem's path)
 * @throws Error when the port cannot be bound (e.g. `EADDRINUSE`)
 */
export async function startModelServer(options: ModelServerOptions): Promise<ModelServer> {
  const script = typeof options.script === 'string' ? readScript(options.script) : compileScript(options.script);
  const planOf = (entries: ParsedScript['entries']): { steps: ScriptStep[]; lastAnswered: number } => {
    const steps = planSteps({ entries });
    return { steps, lastAnswered: steps.filter((s) => s.message).length - 1 };
  };
  const main = planOf(script.entries);
  const others = script.conversations.map((c) => ({ task: c.task, ...planOf(c.entries) }));
  /** The steps that answer `request`: those of the first `conversations` entry its task holds, else the main ones. */
  const planFor = (request: MessagesRequest): { steps: ScriptStep[]; lastAnswered: number } => {
    if (others.length === 0) return main;
    const first = request.messages[0]?.content;
    const task =
      typeof first === 'string'
        ? first
        : Array.isArray(first)
          ? first.map((b) => (typeof b === 'object' && b !== null && 'text' in b ? String((b as { text: unknown }).text) : '')).join('\n')
          : '';
    return others.find((c) => task.includes(c.task)) ?? main;
  };
  const log = new RequestLog(options.logFile);
  const validate = options.validateRequests ?? true;
  const hits = new Map<string, number>();
  let clockOffsetMs = 0;
  const cache = new PromptCache(() => Date.now() + clockOffsetMs);
  /** Whether the message entry answering `step` of `steps` starts with a thinking block (the tool-loop rule of `thinking.ts`). */
  const thinkingAt = (steps: ScriptStep[], step: number): boolean => {
    const type = steps[step]?.message?.content[0]?.type;
    return type === 'thinking' || type === 'redacted_thinking';
  };
  const sleepers = new Set<() => void>();
  /** The shut gate of {@link ModelServer.hold}: the held requests' wake-ups, oldest first; undefined when open. */
  let gate: Array<() => void> | undefined;
  /** The entry of {@link ModelServer.answerAllWith}, once given. */
  let finale: ParsedMessageEntry | undefined;
  let served = 0;
  let closing: Promise<void> | undefined;

  /** Waits `ms`; resolves false early when the server closes or the client goes away. */
  const sleep = (ms: number, res: ServerResponse): Promise<boolean> =>
    new Promise((resolve) => {
      const done = (ok: boolean): void => {
        clearTimeout(timer);
        sleepers.delete(wake);
        res.off('close', gone);
        resolve(ok);
      };
      const wake = (): void => done(false);
      const gone = (): void => done(false);
      const timer = setTimeout(() => done(true), ms);
      sleepers.add(wake);
      res.on('close', gone);
    });

  /** Waits at a shut gate (none: at once); false when the server closes or the client goes away first. */
  const passGate = (res: ServerResponse): Promise<boolean> =>
    new Promise((resolve) => {
      const queue = gate;
      if (!queue) {
        resolve(true);
        return;
      }
      const done = (ok: boolean): void => {
        const at = queue.indexOf(pass);
        if (at >= 0) queue.splice(at, 1);
        sleepers.delete(drop);
        res.off('close', drop);
        resolve(ok);
      };
      const pass = (): void => done(true);
      const drop = (): void => done(false);
      queue.push(pass);
      sleepers.add(drop);
      res.on('close', drop);
    });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    served += 1;
    const requestId = `req_scripted_${String(served).padStart(6, '0')}`;
    const path = new URL(req.url ?? '/', 'http://scripted').pathname;
    const method = req.method ?? 'GET';
    const { text, tooLarge } = await readBody(req);
    let body: unknown = null;
    let bodyIsJson = false;
    let jsonProblem = '';
    if (text !== '') {
      try {
        body = JSON.parse(text);
        bodyIsJson = true;
      } catch (err) {
        body = text.length > 4096 ? `${text.slice(0, 4096)}...` : text;
        jsonProblem = messageOf(err);
      }
    }
    const { auth, key } = credentials(req);
    const entry: LoggedRequest = {
      time: '',
      step: null,
      attempt: null,
      conversation: null,
      method,
      path,
      stream: bodyIsJson && (body as { stream?: unknown } | null)?.stream === true,
      auth,
      headers: safeHeaders(req.headers),
      body: tooLarge ? null : body,
      response: { status: null, kind: 'not_found' },
    };
    const record = (response: LoggedRequest['response']): void => {
      log.add({ ...entry, time: new Date().toISOString(), response });
    };
    const fail = (status: number, kind: LoggedRequest['response']['kind'], message: string): void => {
      record({ status, kind, requestId });
      sendJson(res, status, errorBody(status, message, requestId), { 'request-id': requestId });
    };

    if (path === '/health' && method === 'GET') {
      record({ status: 200, kind: 'health', requestId });
      sendJson(res, 200, { ok: true }, { 'request-id': requestId });
      return;
    }
    const countTokens = path === '/v1/messages/count_tokens';
    if ((path !== '/v1/messages' && !countTokens) || method !== 'POST') {
      fail(
        404,
        'not_found',
        `Not found: ${method} ${path} (the scripted model server serves POST /v1/messages, POST /v1/messages/count_tokens and GET /health)`,
      );
      return;
    }
    if (auth === 'none') {
      fail(401, 'unauthorized', 'Missing credentials: send an x-api-key header or an Authorization: Bearer header');
      return;
    }
    if (options.apiKey !== undefined && key !== options.apiKey) {
      fail(401, 'unauthorized', 'invalid x-api-key');
      return;
    }
    if (tooLarge) {
      fail(413, 'too_large', `Request exceeds the maximum allowed number of bytes (${MAX_BODY_BYTES})`);
      return;
    }
    if (!bodyIsJson) {
      fail(400, 'invalid_request', text === '' ? 'The request body is empty' : `The request body is not valid JSON: ${jsonProblem}`);
      return;
    }
    const checked = checkMessagesRequest(body, countTokens ? 'count_tokens' : 'messages', script.api);
    let request: MessagesRequest;
    if ('problem' in checked) {
      if (validate || !isLenientlyReadable(body)) {
        fail(400, 'invalid_request', checked.problem);
        return;
      }
      request = body as MessagesRequest;
    } else {
      request = checked.body;
    }
    // `"api": "today"`: today's per-model rules (today.ts), always enforced.
    let plan: TodayPlan | undefined;
    if (script.api === 'today') {
      const prepared = prepareToday(request, req.headers, countTokens ? 'count_tokens' : 'messages');
      if ('status' in prepared) {
        fail(prepared.status, prepared.status === 404 ? 'not_found' : 'invalid_request', prepared.message);
        return;
      }
      plan = prepared;
    }
    const { steps, lastAnswered } = planFor(request);
    const loopProblem = validate && !plan ? checkThinkingToolLoop(request, (step) => thinkingAt(steps, step)) : undefined;
    if (loopProblem) {
      fail(400, 'invalid_request', loopProblem);
      return;
    }
    const measured = plan ? plan.measured : measure(request, request.model);
    if (countTokens) {
      record({ status: 200, kind: 'count_tokens', requestId });
      sendJson(res, 200, plan ? countTokensBody(plan) : { input_tokens: measured.tokens }, { 'request-id': requestId });
      return;
    }
    const window = forModel(script.contextWindow, request.model, plan ? plan.spec.contextWindow : DEFAULT_CONTEXT_WINDOW);
    if ((validate || plan) && measured.tokens > window) {
      fail(400, 'invalid_request', `prompt is too long: ${measured.tokens} tokens > ${window} maximum`);
      return;
    }
    // Today's models (Claude 4.5 and later) do not reject input + max_tokens over the window: they stop with
    // stop_reason "model_context_window_exceeded" when the output reaches it (a scripted entry can say so).
    if (validate && !plan && measured.tokens + request.max_tokens > window) {
      fail(
        400,
        'invalid_request',
        `input length and \`max_tokens\` exceed context limit: ${measured.tokens} + ${request.max_tokens} > ${window}, ` +
          'decrease input length or `max_tokens` and try again',
      );
      return;
    }

    if (!(await passGate(res))) return;

    // After a compaction the block carries the step and conversation, so a client may prune what came before it.
    const step = plan?.step ?? stepOf(request);
    const conversation = plan?.conversation ?? conversationKey(request);
    const attempt = (hits.get(`${conversation}:${step}`) ?? 0) + 1;
    hits.set(`${conversation}:${step}`, attempt);
    entry.step = step;
    entry.attempt = attempt;
    entry.conversation = conversation;

    const planned: ScriptStep | undefined = steps[step];
    const choice = finale ? { message: finale } : planned ? choose(planned, attempt) : undefined;
    if (!choice) {
      const answered = lastAnswered < 0 ? 'no steps' : `steps 0-${lastAnswered}`;
      const why = planned ? ' (its error entries are used up and no message entry follows them)' : '';
      fail(
        500,
        'past_end',
        `Scripted model server: the script ${script.source} has no entry for step ${step}${why}; ` +
          `the request holds ${step} assistant message(s) and the script answers ${answered}`,
      );
      return;
    }

    const answerOf = (scripted: ParsedMessageEntry): CompletedMessage =>
      completeMessage(
        scripted,
        {
          messageId: `msg_scripted_${conversation}_${step}`,
          toolUseId: (index) => `toolu_scripted_${conversation}_${step}_${index}`,
        },
        {
          model: request.model,
          usage: cache.use(measured, forModel(script.minCacheableTokens, request.model, DEFAULT_MIN_CACHEABLE_TOKENS)),
        },
      );
    if ('error' in choice) {
      await serveError(choice.error, { index: choice.errorIndex, times: choice.of });
      return;
    }

    const mismatch = plan ? scriptMismatch(choice.message, request) : undefined;
    if (mismatch) {
      fail(
        500,
        'script_mismatch',
        `Scripted model server: the script ${script.source} cannot answer step ${step}: ${mismatch} (api: today)`,
      );
      return;
    }
    const minCacheableTokens = forModel(
      script.minCacheableTokens,
      request.model,
      plan ? plan.spec.minCacheableTokens : DEFAULT_MIN_CACHEABLE_TOKENS,
    );
    const ids = {
      messageId: `msg_scripted_${conversation}_${step}`,
      toolUseId: (index: number) => `toolu_scripted_${conversation}_${step}_${index}`,
    };
    const noUsage = {
      input_tokens: 0,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    };
    const completed = completeMessage(choice.message, ids, {
      model: request.model,
      usage: plan ? noUsage : cache.use(measured, minCacheableTokens),
    });
    const message = plan
      ? buildTodayMessage(plan, choice.message, completed, { step, conversation, request, cache, minCacheableTokens })
      : completed;
    const delayMs = choice.message.delay_ms;
    record({ status: 200, kind: 'message', requestId, ...(delayMs ? { delayMs } : {}) });
    if (delayMs && !(await sleep(delayMs, res))) return;
    if (entry.stream) await streamAnswer(message, choice.message.delta_delay_ms ?? 0, undefined, thinkOf(choice.message));
    else sendJson(res, 200, message, { 'request-id': requestId });

    /**
     * Streams `message` as Server-Sent Events, pausing `deltaDelayMs` after
     * each `content_block_delta`. With `fault`, only the first `after_events`
     * events are sent (at most all but `message_stop`), then the connection is
     * closed mid-body (`stream_cut`) or `event: error` is sent and the body
     * ended (`stream_error`).
     */
    async function streamAnswer(
      message: CompletedMessage,
      deltaDelayMs: number,
      fault?: ParsedErrorEntry,
      think: { ms: number; pingEveryMs: number } = { ms: 0, pingEveryMs: 0 },
    ): Promise<void> {
      res.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-cache',
        'request-id': requestId,
      });
      const all = streamEvents(message);
      const events = fault ? all.slice(0, Math.min(fault.after_events ?? 0, all.length - 1)) : all;
      for (const [i, event] of events.entries()) {
        res.write(formatSse(event));
        // The thinking pause comes after message_start and its ping (events 0 and 1).
        if (i === 1 && think.ms > 0 && !(await thinkFor(think))) return;
        if (deltaDelayMs > 0 && event.event === 'content_block_delta' && !(await sleep(deltaDelayMs, res))) return;
      }
      if (fault?.kind === 'stream_stall') return; // silent from here on; the client's idle timeout (or close()) ends it
      if (fault?.kind === 'stream_cut') {
        // Flushed, then closed without the chunked body's last chunk: the client sees the connection drop mid-answer.
        await new Promise<void>((resolve) => res.write('', () => resolve()));
        req.socket.destroy();
        return;
      }
      if (fault?.kind === 'stream_error') res.write(formatSse({ event: 'error', data: streamErrorBody(fault, requestId) }));
      res.end();
    }

    /** Waits `think.ms`, sending `event: ping` every `think.pingEveryMs` (none when 0); false when the client went away. */
    async function thinkFor(think: { ms: number; pingEveryMs: number }): Promise<boolean> {
      const until = Date.now() + think.ms;
      for (let left = think.ms; left > 0; left = until - Date.now()) {
        if (!(await sleep(think.pingEveryMs > 0 ? Math.min(think.pingEveryMs, left) : left, res))) return false;
        if (think.pingEveryMs > 0 && Date.now() < until) res.write(formatSse({ event: 'ping', data: { type: 'ping' } }));
      }
      return true;
    }

    async function serveError(error: ParsedErrorEntry, which: { index: number; times: number }): Promise<void> {
      if (error.kind === 'stream_cut' || error.kind === 'stream_error' || error.kind === 'stream_stall') {
        const scripted = planned?.message;
        if (!scripted) {
          fail(
            500,
            'past_end',
            `Scripted model server: step ${step} of ${script.source} has a ${error.kind} but no message entry to stream`,
          );
          return;
        }
        record({ status: 200, kind: error.kind, requestId, error: which });
        const message = answerOf(scripted);
        if (entry.stream) {
          await streamAnswer(message, scripted.delta_delay_ms ?? 0, error);
        } else if (error.kind === 'stream_stall') {
          res.writeHead(200, { 'content-type': 'application/json', 'request-id': requestId });
          res.flushHeaders();
        } else if (error.kind === 'stream_cut') {
          const text = JSON.stringify(message);
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'request-id': requestId });
          await new Promise<void>((resolve) => res.write(text.slice(0, Math.floor(text.length / 2)), () => resolve()));
          req.socket.destroy();
        } else {
          const body = streamErrorBody(error, requestId);
          sendJson(res, statusOfErrorType(body), body, { 'request-id': requestId });
        }
        return;
      }
      if (error.kind === 'connection_reset') {
        record({ status: null, kind: 'connection_reset', error: which });
        req.socket.resetAndDestroy();
        return;
      }
      if (error.kind === 'hang') {
        // Never answer; close() or the client's timeout ends the connection.
        record({ status: null, kind: 'hang', error: which });
        return;
      }
      const status = error.status ?? 500;
      const delay = error.delay_ms;
      record({ status, kind: 'error', requestId, error: which, ...(delay ? { delayMs: delay } : {}) });
      if (delay && !(await sleep(delay, res))) return;
      const headers: Record<string, string> = { 'request-id': requestId };
      for (const [name, value] of Object.entries(error.headers ?? {})) headers[name.toLowerCase()] = String(value);
      if (error.body === undefined) sendJson(res, status, errorBody(status, undefined, requestId), headers);
      else if (typeof error.body === 'string') send(res, status, error.body, { 'content-type': 'text/plain; charset=utf-8', ...headers });
      else sendJson(res, status, error.body, headers);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (res.headersSent || res.destroyed) return;
      const message = messageOf(err);
      sendJson(res, 500, errorBody(500, `Scripted model server internal error: ${message}`), {});
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const url = `http://${urlHost(address.address)}:${address.port}`;

  return {
    url,
    port: address.port,
    requests: () => log.all(),
    advanceClock: (ms) => {
      if (!Number.isFinite(ms) || ms < 0)
        throw new RangeError(`advanceClock needs a finite, non-negative number of milliseconds, got ${ms}`);
      clockOffsetMs += ms;
    },
    hold: () => {
      const queue = (gate ??= []);
      return {
        waiting: () => queue.length,
        release: () => {
          const pass = queue[0];
          pass?.();
          return pass !== undefined;
        },
        open: () => {
          if (gate === queue) gate = undefined;
          for (const pass of [...queue]) pass();
        },
      };
    },
    answerAllWith: (entry) => {
      const [only] = compileScript({ responses: [entry] }, '<answerAllWith>').entries;
      if (!only || !('message' in only)) throw new TypeError('answerAllWith needs a message entry'); // an error entry compiles too
      finale = only.message;
    },
    close: () => {
      closing ??= new Promise<void>((resolve) => {
        for (const wake of [...sleepers]) wake();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closing;
    },
  };
}

/** The credential header kind and its value (never logged). */
function credentials(req: IncomingMessage): { auth: AuthKind; key: string | undefined } {
  const apiKey = req.headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim() !== '') return { auth: 'x-api-key', key: apiKey.trim() };
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '')?.[1];
  if (bearer) return { auth: 'bearer', key: bearer };
  return { auth: 'none', key: undefined };
}

/** With `validateRequests: false`, a body still needs a model, max_tokens and a messages array to be answered. */
function isLenientlyReadable(body: unknown): boolean {
  const b = body as Partial<MessagesRequest> | null;
  return typeof b?.model === 'string' && Array.isArray(b.messages) && b.messages.every((m) => typeof m === 'object' && m !== null);
}

/** Reads the whole body as UTF-8; past {@link MAX_BODY_BYTES} it keeps draining but drops the bytes. */
async function readBody(req: IncomingMessage): Promise<{ text: string; tooLarge: boolean }> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size <= MAX_BODY_BYTES) parts.push(buf);
  }
  return { text: size > MAX_BODY_BYTES ? '' : Buffer.concat(parts).toString('utf8'), tooLarge: size > MAX_BODY_BYTES };
}

function send(res: ServerResponse, status: number, text: string, headers: Record<string, string>): void {
  if (res.destroyed) return;
  res.writeHead(status, { 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string>): void {
  send(res, status, JSON.stringify(body), { 'content-type': 'application/json', ...headers });
}

/** A host for URLs: the wildcard addresses become loopback, IPv6 gets brackets. */
function urlHost(address: string): string {
  if (address === '0.0.0.0') return '127.0.0.1';
  if (address === '::') return '[::1]';
  return address.includes(':') ? `[${address}]` : address;
}

/** The thinking pause of a streamed answer (`think_ms`, `ping_every_ms`; script.ts). */
function thinkOf(entry: { think_ms?: number | undefined; ping_every_ms?: number | undefined }): { ms: number; pingEveryMs: number } {
  return { ms: entry.think_ms ?? 0, pingEveryMs: entry.ping_every_ms ?? 0 };
}
