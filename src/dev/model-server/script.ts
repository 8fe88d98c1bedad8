/**
 * The script file of the scripted Messages API server: its schema, loading,
 * and the step plan derived from it.
 *
 * File shape (JSON): `{"responses": [ENTRY, ...], "api"?: "legacy" | "today", "context_window"?: W, "min_cacheable_tokens"?: M}`
 * where ENTRY is either
 *
 * - a message entry: an assistant message as the Messages API returns it,
 *   with only `content` required:
 *   `{"content": [...], "stop_reason"?: "tool_use", "usage"?: {...}, "delay_ms"?: 2000, "delta_delay_ms"?: 200, "think_ms"?: 120000, "ping_every_ms"?: 5000}`
 * - an error entry: `{"error": {"status": 529, "headers"?: {...}, "body"?: {...}, "times"?: 3}}`,
 *   or a fault: `{"error": {"kind": "connection_reset" | "hang", "times"?: 1}}`,
 *   or a broken stream: `{"error": {"kind": "stream_cut" | "stream_error" | "stream_stall", "after_events": N, "body"?: {...}, "times"?: 1}}`.
 *
 * Steps: message entries are numbered 0, 1, 2... in file order, ignoring error
 * entries; message entry n answers a request holding n assistant messages.
 * Error entries placed immediately before message entry n belong to step n:
 * each is served `times` times, in order, before step n is answered. Error
 * entries after the last message entry form one more step that has no answer
 * (after its errors, requests for it get the past-the-end 500).
 *
 * `api` (default `"legacy"`): which API the server speaks. `legacy` is the
 * API as it was before the 5.x models, every rule below unchanged. `today`
 * speaks today's API per model from the server's own catalogue
 * (`models.ts`): unknown models are a 404; `max_tokens`, the context window,
 * `thinking`, `output_config.effort`, `tool_choice`, tools and beta headers
 * are checked per model; answers of thinking models open with a `thinking`
 * block (empty at the default `display: "omitted"`, the entry's leading
 * thinking text at `"summarized"`), and on the models that do so a `text`
 * block before a tool call comes back as a `thinking` block; signatures
 * bind the model and the prefix; a `compaction` block is added when a
 * `compact_20260112` edit's trigger is reached; context editing runs
 * server-side. Every rule and its source page: `docs/scripted-server.md`
 * and `today.ts`.
 *
 * Options (both optional, tokens by the server's rule, see `tokens.ts`):
 *
 * - `context_window`: the models' context window, a number for every model
 *   or a map `{"claude-sonnet-4-6": 100000, ...}` (models not named keep the
 *   default); default 200,000 (`today`: the model's own window from
 *   `models.ts`, 1M for the 5.x models). A request whose input exceeds it, or whose
 *   input + `max_tokens` does, gets the API's 400.
 * - `min_cacheable_tokens`: the minimum cacheable prefix, the same two
 *   shapes; default 1024. Shorter `cache_control` prefixes are not cached.
 *
 * A message entry's `thinking` / `redacted_thinking` blocks are signed by the
 * server (`thinking.ts`): a scripted `signature` is replaced, a scripted
 * `data` is sealed inside the sent one.
 *
 * Requests are counted per conversation and step (the server keys a
 * conversation by a hash of `system`, `metadata.user_id` and the first
 * message), so a retry after the errors are used up gets the message again,
 * and concurrent runs with different tasks each see the full error sequence.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';

/** Tool use ids the Messages API accepts back in `tool_result.tool_use_id`. */
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;

const nonNegativeInt = z.int().min(0);

/** Schemas of the content block types whose shape the server relies on; other types pass through unchecked. */
const KNOWN_BLOCKS: Record<string, z.ZodType> = {
  text: z.looseObject({ type: z.literal('text'), text: z.string() }),
  tool_use: z.looseObject({
    type: z.literal('tool_use'),
    id: z.string().regex(TOOL_USE_ID, 'tool_use ids may only hold letters, digits, "_" and "-"').optional(),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  server_tool_use: z.looseObject({
    type: z.literal('server_tool_use'),
    id: z.string().min(1),
    name: z.string().min(1),
    input: z.record(z.string(), z.unknown()),
  }),
  thinking: z.looseObject({ type: z.literal('thinking'), thinking: z.string(), signature: z.string().optional() }),
  redacted_thinking: z.looseObject({ type: z.literal('redacted_thinking'), data: z.string() }),
};

const ContentBlockSchema = z.looseObject({ type: z.string().min(1) }).superRefine((block, ctx) => {
  const schema = KNOWN_BLOCKS[block.type];
  if (!schema) return;
  const result = schema.safeParse(block);
  if (result.success) return;
  for (const issue of result.error.issues) {
    ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path });
  }
});

const UsageSchema = z.looseObject({
  input_tokens: nonNegativeInt.optional(),
  output_tokens: nonNegativeInt.optional(),
  cache_creation_input_tokens: nonNegativeInt.nullable().optional(),
  cache_read_input_tokens: nonNegativeInt.nullable().optional(),
});

/** Schema of a message entry (see {@link ScriptMessageEntry}). */
export const ScriptMessageEntrySchema = z.strictObject({
  content: z.array(ContentBlockSchema),
  stop_reason: z.string().min(1).optional(),
  stop_sequence: z.string().nullable().optional(),
  stop_details: z.unknown().optional(),
  container: z.unknown().optional(),
  id: z.string().min(1).optional(),
  model: z.string().min(1).optional(),
  usage: UsageSchema.optional(),
  delay_ms: nonNegativeInt.optional(),
  delta_delay_ms: nonNegativeInt.optional(),
  think_ms: nonNegativeInt.optional(),
  ping_every_ms: nonNegativeInt.optional(),
});

/** Schema of an error entry (see {@link ScriptErrorEntry}). */
export const ScriptErrorEntrySchema = z.strictObject({
  error: z
    .strictObject({
      kind: z.enum(['http', 'connection_reset', 'hang', 'stream_cut', 'stream_error', 'stream_stall']).default('http'),
      status: z.int().min(400).max(599).optional(),
      headers: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])).optional(),
      body: z.unknown().optional(),
      times: z.int().min(1).default(1),
      delay_ms: nonNegativeInt.optional(),
      after_events: nonNegativeInt.optional(),
    })
    .superRefine((error, ctx) => {
      if (error.kind === 'http' && error.status === undefined) {
        ctx.addIssue({ code: 'custom', message: 'an http error needs a "status" (e.g. 529)', path: ['status'] });
      }
      const streamed = error.kind === 'stream_cut' || error.kind === 'stream_error' || error.kind === 'stream_stall';
      if (streamed && error.after_events === undefined) {
        ctx.addIssue({
          code: 'custom',
          message: `kind "${error.kind}" needs "after_events" (SSE events sent first)`,
          path: ['after_events'],
        });
      }
      if (error.kind !== 'http') {
        const meaningless: Array<'status' | 'headers' | 'delay_ms' | 'body'> = ['status', 'headers', 'delay_ms'];
        if (error.kind !== 'stream_error') meaningless.push('body');
        for (const key of meaningless) {
          if (error[key] !== undefined) {
            ctx.addIssue({ code: 'custom', message: `"${key}" has no meaning for kind "${error.kind}"`, path: [key] });
          }
        }
      }
      if (!streamed && error.after_events !== undefined) {
        ctx.addIssue({ code: 'custom', message: `"after_events" has no meaning for kind "${error.kind}"`, path: ['after_events'] });
      }
    }),
});

/**
 * A content block of a scripted assistant message, as the Messages API
 * returns it (`text`, `tool_use`, `thinking`, ...). `tool_use.id` may be
 * omitted: the server fills in one that is stable per conversation, step and
 * block index.
 */
export type ScriptContentBlock = z.input<typeof ContentBlockSchema>;

/**
 * An assistant message the server answers a step with. Only `content` is
 * required; the server fills in `id`, `type`, `role`, `model` (the request's),
 * `stop_sequence: null`, `stop_details: null`, `container: null`, and `usage`:
 * `input_tokens`, `cache_creation_input_tokens`, `cache_read_input_tokens`
 * and `cache_creation` computed from the request (`tokens.ts`: UTF-8 bytes /
 * 4 of its canonical serialization, split by the prompt-cache emulation),
 * `output_tokens` estimated from the answer (about 4 characters of its
 * content's JSON per token, at least 1); each usage field the entry gives
 * wins over the computed one. `thinking` and `redacted_thinking` blocks are
 * signed by the server (see the module doc). `stop_reason`
 * defaults to `tool_use` when a `tool_use` block is present, else `end_turn`;
 * any string is accepted so that unknown stop reasons can be tested.
 * `delay_ms` (milliseconds, default 0) delays the answer. `delta_delay_ms`
 * (milliseconds, default 0) is the pause after each `content_block_delta`
 * of a streamed answer (16 characters of text or tool input each), so a
 * client sees partial text for a while; a non-streamed answer ignores it.
 * `think_ms` (milliseconds, default 0) is a pause of a streamed answer after
 * `message_start` and its `ping`, before the first content block: a model
 * thinking at length (at the default `display: "omitted"` nothing else shows it).
 * During it the server sends `event: ping` every `ping_every_ms` milliseconds
 * (default 0: none, a stream silent for `think_ms`), as the API does while
 * it works on a long answer (https://platform.claude.com/docs/en/build-with-claude/streaming,
 * "Ping events": "Event streams may also include any number of ping events";
 * the interval of the real API is not documented). A non-streamed answer ignores both.
 */
export type ScriptMessageEntry = z.input<typeof ScriptMessageEntrySchema>;

/**
 * An injected failure. `kind` (default `http`): `http` answers with `status`
 * (400-599), `headers` (sent as given, numbers and booleans as their text,
 * e.g. `{"retry-after": 3}`, or `{"x-should-retry": false}` as the real
 * API sends it on errors) and `body`
 * (default: an Anthropic-shaped error body for the status; a string body is
 * sent as text/plain); `connection_reset` destroys the connection without an
 * answer; `hang` never answers (for client timeouts). The two stream
 * faults start the step's own answer (its message entry, `delta_delay_ms`
 * included) and break it after `after_events` Server-Sent Events
 * (`message_start` and `ping` count; capped at one fewer than the answer's
 * events, so `message_stop` is never sent): `stream_cut` then closes the
 * connection without ending the chunked body (a socket lost mid-answer),
 * `stream_error` sends `event: error` with `body` (default the API's
 * `overloaded_error` body) and ends the response, as the API does when it
 * is overloaded mid-stream (https://platform.claude.com/docs/en/build-with-claude/streaming,
 * "Error events"). A non-streamed request gets, for `stream_cut`, the
 * status line and half of the JSON body before the close, and for
 * `stream_error` the body as an HTTP error (status from its `error.type`,
 * 529 when unknown). A stream fault in a step without a message entry gets
 * the past-the-end 500. `stream_stall` sends the first `after_events` events
 * of the answer and then nothing, never ending the body (a connection gone
 * silent mid-answer: only the client's idle timeout ends it); a non-streamed
 * request gets the status line and then nothing. `times` (default 1): how many requests of the step
 * get this failure. `delay_ms` (http only) delays the answer.
 */
export type ScriptErrorEntry = z.input<typeof ScriptErrorEntrySchema>;

/** One entry of `responses`. */
export type ScriptEntry = ScriptMessageEntry | ScriptErrorEntry;

/** The API a script's server speaks (see {@link ScriptFile.api}). */
export type ApiMode = 'today' | 'legacy';

/** A per-model token setting: one number for every model, or a map from model name to number (others keep the default). */
export type PerModelTokens = number | Record<string, number>;

const PerModelTokensSchema = z.union([nonNegativeInt, z.record(z.string().min(1), nonNegativeInt)]);

/** The script file: `{"responses": [ENTRY, ...]}` and the options of the module doc. */
export interface ScriptFile {
  responses: ScriptEntry[];
  /**
   * Which API the server speaks: `legacy` (the default, the API as it was
   * before the 5.x models) or `today` (the per-model rules of `today.ts`).
   * @default 'legacy'
   */
  api?: ApiMode;
  /** Context window, tokens, per model. @default 200000 for every model */
  context_window?: PerModelTokens;
  /** Minimum cacheable prefix, tokens, per model. @default 1024 for every model */
  min_cacheable_tokens?: PerModelTokens;
  /**
   * Answers for other conversations of the same server (a sub-agent's, docs/subagents.md): a
   * request whose first user message holds `task` is answered from these `responses` (the first
   * match in file order), by the same step rule; any other request from `responses`.
   * @default none
   */
  conversations?: Array<{ task: string; responses: ScriptEntry[] }>;
}

/**
 * The value of a per-model setting for `model`.
 *
 * @param setting the script's number or map; undefined → `fallback`
 * @param fallback the default, for models the map does not name
 */
export function forModel(setting: PerModelTokens | undefined, model: string, fallback: number): number {
  if (setting === undefined) return fallback;
  if (typeof setting === 'number') return setting;
  return setting[model] ?? fallback;
}

/** A validated error entry, defaults applied. */
export type ParsedErrorEntry = z.output<typeof ScriptErrorEntrySchema>['error'];
/** A validated message entry. */
export type ParsedMessageEntry = z.output<typeof ScriptMessageEntrySchema>;

/** A validated script: entries with defaults applied, in file order. */
export interface ParsedScript {
  /** Where the script came from: the file path, or `"<inline script>"`. */
  source: string;
  entries: Array<{ message: ParsedMessageEntry } | { error: ParsedErrorEntry }>;
  /** Entries of the conversations whose task (first user message) holds `task`, in file order (`conversations`); empty when none. */
  conversations: Array<{ task: string; entries: ParsedScript['entries'] }>;
  /** The script's `context_window`, as given. */
  contextWindow: PerModelTokens | undefined;
  /** The script's `min_cacheable_tokens`, as given. */
  minCacheableTokens: PerModelTokens | undefined;
  /** The script's `api`, default `legacy`. */
  api: ApiMode;
}

/**
 * One step of the plan: the errors served first (each `times` times, in
 * order), then the message that answers the step. `message` is undefined for
 * a trailing run of error entries after the last message entry.
 */
export interface ScriptStep {
  step: number;
  errors: ParsedErrorEntry[];
  message: ParsedMessageEntry | undefined;
}

/** One problem found in a script: where (`responses[2].error.status`) and what. */
export interface ScriptIssue {
  path: string;
  message: string;
}

/**
 * Thrown when a script cannot be read, is not JSON, or does not match the
 * schema. `message` names the source and each problem with its path, e.g.
 * `Invalid model-server script test/fixtures/scripts/x.json: responses[1].error.status: ...`.
 */
export class ModelScriptError extends Error {
  override readonly name = 'ModelScriptError';

  constructor(
    /** The file path, or `"<inline script>"`. */
    readonly source: string,
    /** The schema problems; empty when the file could not be read or parsed. */
    readonly issues: ScriptIssue[],
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Formats a zod path as `responses[2].content[0].text`. */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}

function issuesOf(error: z.ZodError, prefix: ReadonlyArray<PropertyKey>): ScriptIssue[] {
  return error.issues.map((issue) => ({ path: formatPath([...prefix, ...issue.path]), message: issue.message }));
}

/**
 * Validates a script held in memory.
 *
 * @param value the parsed JSON (`{"responses": [...]}`)
 * @param source names the script in error messages; default `"<inline script>"`
 * @returns the script with defaults applied (`kind`, `times`)
 * @throws {ModelScriptError} listing every problem with its path
 */
export function parseScript(value: unknown, source = '<inline script>'): ScriptFile {
  return toScriptFile(compileScript(value, source));
}

/** Validates a script and keeps where it came from; see {@link parseScript}. */
export function compileScript(value: unknown, source = '<inline script>'): ParsedScript {
  const top = z
    .strictObject({
      responses: z.array(z.unknown()),
      context_window: PerModelTokensSchema.optional(),
      min_cacheable_tokens: PerModelTokensSchema.optional(),
      api: z.enum(['today', 'legacy']).optional(),
      conversations: z.array(z.strictObject({ task: z.string().min(1), responses: z.array(z.unknown()) })).optional(),
    })
    .safeParse(value);
  if (!top.success) throw invalid(source, issuesOf(top.error, []));

  const issues: ScriptIssue[] = [];
  const parseEntries = (list: unknown[], at: Array<string | number>): ParsedScript['entries'] => {
    const entries: ParsedScript['entries'] = [];
    list.forEach((raw, index) => {
      const isError = typeof raw === 'object' && raw !== null && 'error' in raw;
      if (isError) {
        const parsed = ScriptErrorEntrySchema.safeParse(raw);
        if (parsed.success) entries.push({ error: parsed.data.error });
        else issues.push(...issuesOf(parsed.error, [...at, index]));
      } else {
        const parsed = ScriptMessageEntrySchema.safeParse(raw);
        if (parsed.success) entries.push({ message: parsed.data });
        else issues.push(...issuesOf(parsed.error, [...at, index]));
      }
    });
    return entries;
  };
  const entries = parseEntries(top.data.responses, ['responses']);
  const conversations = (top.data.conversations ?? []).map((c, k) => ({
    task: c.task,
    entries: parseEntries(c.responses, ['conversations', k, 'responses']),
  }));
  if (issues.length > 0) throw invalid(source, issues);
  return {
    source,
    entries,
    conversations,
    contextWindow: top.data.context_window,
    minCacheableTokens: top.data.min_cacheable_tokens,
    api: top.data.api ?? 'legacy',
  };
}

function toScriptFile(script: ParsedScript): ScriptFile {
  return {
    responses: script.entries.map((entry) => ('error' in entry ? { error: entry.error } : entry.message)),
    ...(script.contextWindow !== undefined ? { context_window: script.contextWindow } : {}),
    ...(script.minCacheableTokens !== undefined ? { min_cacheable_tokens: script.minCacheableTokens } : {}),
    ...(script.api !== 'legacy' ? { api: script.api } : {}),
    ...(script.conversations.length > 0
      ? {
          conversations: script.conversations.map((c) => ({
            task: c.task,
            responses: c.entries.map((entry) => ('error' in entry ? { error: entry.error } : entry.message)),
          })),
        }
      : {}),
  };
}

function invalid(source: string, issues: ScriptIssue[]): ModelScriptError {
  const detail = issues.map((i) => `${i.path}: ${i.message}`).join('; ');
  return new ModelScriptError(source, issues, `Invalid model-server script ${source}: ${detail}`);
}

/**
 * Reads and validates a script file.
 *
 * @param path the JSON file (`{"responses": [...]}`), relative to the current directory or absolute
 * @returns the script with defaults applied (`kind`, `times`)
 * @throws {ModelScriptError} when the file cannot be read, is not JSON, or
 *   does not match the schema; the message names the file and the path of
 *   each problem (`responses[1].content[0].input: ...`)
 */
export function loadScript(path: string): ScriptFile {
  return toScriptFile(readScript(path));
}

/** {@link loadScript}, keeping the file path for later messages. */
export function readScript(path: string): ParsedScript {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (cause) {
    const reason = messageOf(cause);
    throw new ModelScriptError(path, [], `Cannot read model-server script ${path}: ${reason}`, { cause });
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    const reason = messageOf(cause);
    throw new ModelScriptError(path, [], `Model-server script ${path} is not valid JSON: ${reason}`, { cause });
  }
  return compileScript(json, path);
}

/** The message of a thrown value (fs errors can come from another realm, so no `instanceof Error`). */
export function messageOf(cause: unknown): string {
  const message = (cause as { message?: unknown } | null)?.message;
  return typeof message === 'string' ? message : String(cause);
}

/** Groups the entries into steps (see the module comment for the rule). */
export function planSteps(script: Pick<ParsedScript, 'entries'>): ScriptStep[] {
  const steps: ScriptStep[] = [];
  let pending: ParsedErrorEntry[] = [];
  for (const entry of script.entries) {
    if ('error' in entry) {
      pending.push(entry.error);
    } else {
      steps.push({ step: steps.length, errors: pending, message: entry.message });
      pending = [];
    }
  }
  if (pending.length > 0) steps.push({ step: steps.length, errors: pending, message: undefined });
  return steps;
}

/**
 * What the `attempt`-th request (1-based) for a step gets: one of the step's
 * errors while their `times` last, then its message; `undefined` when the
 * step has no message and its errors are used up.
 */
export function choose(
  step: ScriptStep,
  attempt: number,
): { error: ParsedErrorEntry; errorIndex: number; of: number } | { message: ParsedMessageEntry } | undefined {
  let remaining = attempt;
  for (const [errorIndex, error] of step.errors.entries()) {
    if (remaining <= error.times) return { error, errorIndex, of: error.times };
    remaining -= error.times;
  }
  return step.message ? { message: step.message } : undefined;
}
