/**
 * The scripted Messages API server (docs/scripted-server.md): speaks
 * `POST /v1/messages` and answers from a script file, so the real
 * `@anthropic-ai/sdk` can be pointed at it with `baseURL` /
 * `ANTHROPIC_BASE_URL`. Used by the tests, the benchmarks and the demo when
 * no `ANTHROPIC_API_KEY` is set.
 *
 * @example
 * const server = await startModelServer({ script: 'test/fixtures/scripts/two-tool-uses.json', logFile: 'tmp/model.jsonl' });
 * const client = new Anthropic({ baseURL: server.url, apiKey: 'test-key', maxRetries: 0 });
 * // ... run the agent ...
 * const sent = readRequestLog('tmp/model.jsonl'); // or server.requests()
 * await server.close();
 */
export { startModelServer, type ModelServer, type ModelServerOptions, type RequestGate } from './server';
export { runModelServerCommand, type ModelServerCommandOptions } from './command';
export { readRequestLog, type LoggedRequest, type ResponseKind, type AuthKind } from './log';
export {
  loadScript,
  parseScript,
  ModelScriptError,
  type ScriptFile,
  type ScriptEntry,
  type ScriptMessageEntry,
  type ScriptErrorEntry,
  type ScriptContentBlock,
  type ScriptIssue,
  type PerModelTokens,
  type ApiMode,
} from './script';
export {
  countInputTokens,
  measure,
  tokensForBytes,
  BYTES_PER_TOKEN,
  DEFAULT_CONTEXT_WINDOW,
  DEFAULT_MIN_CACHEABLE_TOKENS,
  LOOKBACK_BLOCKS,
  MAX_CACHE_BREAKPOINTS,
  CACHE_TTL_MS,
  type CacheTtl,
  type CacheUsage,
  type Measured,
  type CanonicalBlock,
  type TokenInput,
} from './tokens';
export { errorBody, ERROR_TYPE_BY_STATUS, type AnthropicErrorBody } from './responses';
export { MODELS, EFFORT_LEVELS, findModel, canRead, type ModelSpec, type ModelPrices, type EffortLevel, type ThinkingMode } from './models';
export {
  BETA_COMPACTION,
  BETA_CONTEXT_MANAGEMENT,
  BETA_THINKING_BINDING,
  BETA_DISPLAY_UPDATES,
  DEFAULT_COMPACTION_TRIGGER,
  MIN_COMPACTION_TRIGGER,
  ANTHROPIC_TOOL_TYPES,
  CLEARED_TOOL_RESULT,
} from './today';
