/**
 * `npm run docs`: writes the table of defaults, limits and status
 * values, between `<!-- facts:start -->` and `<!-- facts:end -->`, from the
 * code that defines them (src/config.ts, the contract's lists and input
 * schema, the settings, the error mapping), so the docs cannot drift
 * from them (docs/configuration.md, "Defaults and limits"). `--check` writes nothing and exits 1 when that page is out of
 * date (test/unit/readme-facts.test.ts does the same check in the suite).
 */
import { COMPACTED_SHARE, KEEP_RECENT_MESSAGES, NEAR_WINDOW_SHARE } from '../../activities/context-window';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { NON_RETRYABLE_STATUSES, SHOULD_RETRY_HEADER } from '../../activities/claude-errors';
import { SHOWN_OUTPUT_LINES } from '../../cli/render/text';
import { formatDurationMs } from '../../cli/parse';
import {
  CLAUDE_CALL_TIMEOUTS,
  CLAUDE_IDLE_TIMEOUT_MS,
  DEFAULT_SHUTDOWN_GRACE_MS,
  SHUTDOWN_FORCE_TIME_MS,
  MAX_SHUTDOWN_GRACE_MS,
  CLAUDE_RETRY_POLICY,
  CONTINUE_AS_NEW_HISTORY_BYTES,
  CONTINUE_AS_NEW_HISTORY_EVENTS,
  DEFAULT_APPROVAL_TIMEOUT,
  DEFAULT_CHAT_IDLE_TIMEOUT,
  DEFAULT_CLAUDE_TIMEOUT_MS,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_TOKENS,
  DEFAULT_MAX_TURNS,
  DEFAULT_MODEL,
  MAX_DEFAULT_MAX_SESSIONS,
  MAX_TOKENS_RETRY_CAP,
  MIN_DEFAULT_MAX_SESSIONS,
  OPEN_SESSION_FAILED_ATTEMPTS,
  OPEN_SESSION_RETRY_POLICY,
  OPEN_SESSION_TIMEOUTS,
  SESSION_HEARTBEAT_TIMEOUT,
  SESSION_MEMORY_ALLOWANCE_BYTES,
  SESSION_RETRY_POLICY,
  SESSION_SCHEDULE_TO_START_TIMEOUT,
  STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT,
  WORKFLOW_TASK_TIMEOUT,
  WORKFLOW_TASK_SLOTS,
} from '../../config';
import {
  APPROVAL_MODES,
  APPROVAL_TIMEOUT_ACTIONS,
  DEFAULT_APPROVAL_MODE,
  DEFAULT_APPROVAL_TIMEOUT_ACTION,
  FINAL_STATUSES,
  MAX_BY_CHARS,
  MAX_MESSAGE_CHARS,
  MAX_QUEUED_MESSAGES,
  MAX_RULES,
  OPEN_STATUSES,
} from '../../contract';
import { SUMMARY_MAX_CHARS } from '../../shared/display';
import { MAX_COST_USD, MAX_TOKENS_TOTAL, MIN_THINKING_TOKENS, agentRunInputSchema } from '../../contract/input';
import { FALLBACK_MODEL_INFO, MAX_CONTEXT_WINDOW } from '../../contract/models';
import { CLI_DEFAULT_ON_BUDGET, DEFAULT_ON_BUDGET, MAX_EXTEND, ON_BUDGET_ACTIONS } from '../../contract/steering';
import { DEV_SERVER_DYNAMIC_CONFIG, DEV_SERVER_PORT } from '../devserver';
import { DEFAULT_LOG_LEVEL, LOG_LEVELS, PROJECT_ROOT } from '../../settings';
import { DEFAULT_LIMITS } from '../../session/limits';

export const FACTS_START = '<!-- facts:start -->';
export const FACTS_END = '<!-- facts:end -->';

/** One row of the table. */
export interface Fact {
  /** The setting: flags, input fields, variables. */
  what: string;
  default: string;
  /** Allowed values or limits. */
  allowed: string;
  /** The constants it comes from, and their file. */
  source: string;
}

const code = (s: string | number): string => `\`${s}\``;
const codes = (xs: readonly (string | number)[]): string => xs.map(code).join(', ');
const n = (x: number): string => x.toLocaleString('en-US');
const ms = (x: number): string => `${n(x)} ms`;
/** A retry policy's `maximumAttempts` in words (unset or 0: Temporal's unlimited). */
const attempts = (max: number | undefined): string =>
  max === 1 ? '1 attempt (no retries)' : max ? `at most ${n(max)} attempts` : 'unlimited attempts';

/** The min and max of an input field of the agentRun schema (a number with both bounds). */
function bounds(field: 'maxTurns' | 'maxTokens' | 'commandTimeoutMs'): { min: number; max: number } {
  const inner = agentRunInputSchema.shape[field].unwrap();
  if (inner.minValue === null || inner.maxValue === null) throw new Error(`the input schema gives ${field} no bounds`);
  return { min: inner.minValue, max: inner.maxValue };
}

/** A share as a percentage, e.g. `90 %`. */
const pct = (share: number): string => `${Math.round(share * 100)} %`;

/** Every row, built from the code. */
export function facts(): Fact[] {
  const turns = bounds('maxTurns');
  const tokens = bounds('maxTokens');
  const commandTimeout = bounds('commandTimeoutMs');
  const retry = CLAUDE_RETRY_POLICY;
  return [
    {
      what: '`start --model`, input `model`, `AGENT_JOBS_MODEL`',
      default: code(DEFAULT_MODEL),
      allowed: 'a Claude model id',
      source: '`DEFAULT_MODEL` (src/config.ts)',
    },
    {
      what: '`start --approval`, input `approval`',
      default: code(DEFAULT_APPROVAL_MODE),
      allowed: codes(APPROVAL_MODES),
      source: '`DEFAULT_APPROVAL_MODE`, `APPROVAL_MODES` (src/contract/run.ts)',
    },
    {
      what: '`start --max-turns`, input `maxTurns`: model calls per run',
      default: n(DEFAULT_MAX_TURNS),
      allowed: `${n(turns.min)}–${n(turns.max)}`,
      source: '`DEFAULT_MAX_TURNS` (src/config.ts); the input schema (src/contract/input.ts)',
    },
    {
      what: '`start --max-tokens`, input `maxTokens`: `max_tokens` of each call',
      default: n(DEFAULT_MAX_TOKENS),
      allowed: `${n(tokens.min)}–${n(tokens.max)}; an answer cut off at \`max_tokens\` is asked again once with the limit doubled, up to ${n(MAX_TOKENS_RETRY_CAP)}`,
      source: '`DEFAULT_MAX_TOKENS`, `MAX_TOKENS_RETRY_CAP` (src/config.ts); the input schema',
    },
    {
      what: '`start --command-timeout`, input `commandTimeoutMs`',
      default: `${code(formatDurationMs(DEFAULT_COMMAND_TIMEOUT_MS))} (${ms(DEFAULT_COMMAND_TIMEOUT_MS)})`,
      allowed: `${ms(commandTimeout.min)} to ${code(formatDurationMs(commandTimeout.max))}`,
      source: '`DEFAULT_COMMAND_TIMEOUT_MS` (src/config.ts); the input schema',
    },
    {
      what: '`start --approval-timeout`, input `approvalTimeout`: the wait ends as a denial',
      default: code(DEFAULT_APPROVAL_TIMEOUT),
      allowed: 'a duration (`30m`, `"24 hours"`) or ms',
      source: '`DEFAULT_APPROVAL_TIMEOUT` (src/config.ts)',
    },
    {
      what: '`start --approval-timeout-action`, input `approvalTimeoutAction`: what the approval timeout does',
      default: code(DEFAULT_APPROVAL_TIMEOUT_ACTION),
      allowed: `${codes(APPROVAL_TIMEOUT_ACTIONS)} (deny the command; end the run, status \`approval_timeout\`; pause it, the command stays pending)`,
      source: '`DEFAULT_APPROVAL_TIMEOUT_ACTION`, `APPROVAL_TIMEOUT_ACTIONS` (src/contract/steering.ts)',
    },
    {
      what: '`start --chat-idle-timeout`, input `chatIdleTimeout`: a `--chat` run waiting this long for a message completes',
      default: code(DEFAULT_CHAT_IDLE_TIMEOUT),
      allowed: 'a duration or ms',
      source: '`DEFAULT_CHAT_IDLE_TIMEOUT` (src/config.ts)',
    },
    {
      what: 'steering limits: `say` text, messages queued, rules per run, `--by`',
      default: '—',
      allowed: `${n(MAX_MESSAGE_CHARS)} characters; ${n(MAX_QUEUED_MESSAGES)}; ${n(MAX_RULES)}; ${n(MAX_BY_CHARS)} characters (past them the Update is rejected)`,
      source: '`MAX_MESSAGE_CHARS`, `MAX_QUEUED_MESSAGES`, `MAX_RULES`, `MAX_BY_CHARS` (src/contract/steering.ts)',
    },
    {
      what: '`start --max-cost`, `--max-tokens-total`, `--max-duration`; input `maxCostUsd`, `maxTokensTotal`, `maxDuration`: budgets besides the turns',
      default: 'none',
      allowed: `up to ${n(MAX_COST_USD)} USD (needs the model's prices); up to ${n(MAX_TOKENS_TOTAL)} tokens (input, output, cache writes and reads together); a duration or ms (workflow time since the run started)`,
      source: '`MAX_COST_USD`, `MAX_TOKENS_TOTAL` (src/contract/input.ts)',
    },
    {
      what: '`start --on-budget`, input `onBudget`: what a spent budget does',
      default: `${code(CLI_DEFAULT_ON_BUDGET)} from \`start\`; ${code(DEFAULT_ON_BUDGET)} when the input names none`,
      allowed: `${codes(ON_BUDGET_ACTIONS)} (pause until \`extend\`; end the run, status \`max_turns\`, \`max_cost\`, \`max_tokens_total\` or \`max_duration\`)`,
      source: '`CLI_DEFAULT_ON_BUDGET`, `DEFAULT_ON_BUDGET`, `ON_BUDGET_ACTIONS` (src/contract/steering.ts)',
    },
    {
      what: '`extend --turns`, `--cost`, `--tokens`, `--duration`: most added at once',
      default: '—',
      allowed: `${n(MAX_EXTEND.turns)} turns; ${n(MAX_EXTEND.costUsd)} USD; ${n(MAX_EXTEND.tokens)} tokens; ${formatDurationMs(MAX_EXTEND.durationMs)}`,
      source: '`MAX_EXTEND` (src/contract/steering.ts)',
    },
    {
      what: '`start --thinking`, input `thinking`: extended thinking budget tokens',
      default: 'off',
      allowed: `at least ${n(MIN_THINKING_TOKENS)}, below \`maxTokens\``,
      source: '`MIN_THINKING_TOKENS` (src/contract/input.ts)',
    },
    {
      what: "`start --context-window`, input `contextWindow`; a model's window and prices (`AGENT_JOBS_MODELS` overrides them)",
      default: `the model table's; a model it lacks: ${n(FALLBACK_MODEL_INFO.contextWindow)} tokens, cost unknown`,
      allowed: `1,024–${n(MAX_CONTEXT_WINDOW)} tokens`,
      source: '`BUILTIN_MODELS`, `FALLBACK_MODEL_INFO` (src/contract/models.ts)',
    },
    {
      what: 'clearing old outputs near the context window',
      default: `starts past ${pct(NEAR_WINDOW_SHARE)} of (window − \`max_tokens\`), clears down to ${pct(COMPACTED_SHARE)}; the last ${n(KEEP_RECENT_MESSAGES)} messages and the task are never cleared`,
      allowed: '—',
      source: '`NEAR_WINDOW_SHARE`, `COMPACTED_SHARE`, `KEEP_RECENT_MESSAGES` (src/activities/context-window.ts)',
    },
    {
      what: 'run status (`status`, the `AgentStatus` search attribute)',
      default: '—',
      allowed: `open: ${codes(OPEN_STATUSES)}; final (the result's): ${codes(FINAL_STATUSES)}`,
      source: '`OPEN_STATUSES`, `FINAL_STATUSES` (src/contract/run.ts)',
    },
    {
      what: 'continue-as-new',
      default: `past ${n(CONTINUE_AS_NEW_HISTORY_BYTES / 1024 / 1024)} MiB or ${n(CONTINUE_AS_NEW_HISTORY_EVENTS)} events of history, or when Temporal suggests it`,
      allowed: '—',
      source: '`CONTINUE_AS_NEW_HISTORY_BYTES`, `CONTINUE_AS_NEW_HISTORY_EVENTS` (src/config.ts)',
    },
    {
      what: 'session activities (`runCommand`, `restartSession`, `closeSession`)',
      default: `schedule-to-start ${SESSION_SCHEDULE_TO_START_TIMEOUT}, heartbeat ${SESSION_HEARTBEAT_TIMEOUT}, ${attempts(SESSION_RETRY_POLICY.maximumAttempts)}`,
      allowed: '—',
      source: '`SESSION_SCHEDULE_TO_START_TIMEOUT`, `SESSION_HEARTBEAT_TIMEOUT`, `SESSION_RETRY_POLICY` (src/config.ts)',
    },
    {
      what: '`AGENT_JOBS_MAX_SESSIONS`: bash sessions one worker holds at most',
      default: `sized to the machine: the least of memory / ${n(SESSION_MEMORY_ALLOWANCE_BYTES / 1024 / 1024)} MiB and its task (pid) limit / ${n(DEFAULT_LIMITS.maxProcesses)} (a session's process limit), at least ${n(MIN_DEFAULT_MAX_SESSIONS)}, at most ${n(MAX_DEFAULT_MAX_SESSIONS)}`,
      allowed: 'a positive integer; anything else stops the worker at start',
      source:
        '`SESSION_MEMORY_ALLOWANCE_BYTES`, `MIN_DEFAULT_MAX_SESSIONS`, `MAX_DEFAULT_MAX_SESSIONS` (src/config.ts); `defaultMaxSessions` (src/settings.ts)',
    },
    {
      what: '`AGENT_JOBS_SHUTDOWN_GRACE`: how long a worker told to stop (SIGTERM / SIGINT / SIGHUP) lets its running commands finish',
      default: `${ms(DEFAULT_SHUTDOWN_GRACE_MS)} (the default command timeout + its slack); the process is gone ${ms(SHUTDOWN_FORCE_TIME_MS)} after the grace at the latest`,
      allowed: `a whole number with a unit: \`ms\`, \`s\`, \`m\`, \`h\` (\`150s\`, \`5m\`), at most ${ms(MAX_SHUTDOWN_GRACE_MS)} (the longest Node timer less the force time); anything else stops the worker at start`,
      source:
        '`DEFAULT_SHUTDOWN_GRACE_MS`, `SHUTDOWN_FORCE_TIME_MS`, `MAX_SHUTDOWN_GRACE_MS` (src/config.ts); `shutdownGraceMs` (src/settings.ts)',
    },
    {
      what: 'opening a session (`openSession`)',
      default: `start-to-close ${OPEN_SESSION_TIMEOUTS.startToCloseTimeout}, heartbeat ${OPEN_SESSION_TIMEOUTS.heartbeatTimeout}; a full worker (\`WorkerFull\`): ${attempts(OPEN_SESSION_RETRY_POLICY.maximumAttempts)}, ${String(OPEN_SESSION_RETRY_POLICY.initialInterval)} apart at first, ×${n(OPEN_SESSION_RETRY_POLICY.backoffCoefficient ?? 2)} each time, at most ${String(OPEN_SESSION_RETRY_POLICY.maximumInterval)}; any other failure: ${attempts(OPEN_SESSION_FAILED_ATTEMPTS)}`,
      allowed: '—',
      source: '`OPEN_SESSION_TIMEOUTS`, `OPEN_SESSION_RETRY_POLICY`, `OPEN_SESSION_FAILED_ATTEMPTS` (src/config.ts)',
    },
    {
      what: 'workflow tasks',
      default: `timeout ${WORKFLOW_TASK_TIMEOUT}; a dead worker's sticky queue is left after ${STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT}; ${WORKFLOW_TASK_SLOTS} at once per worker`,
      allowed: '—',
      source: '`WORKFLOW_TASK_TIMEOUT`, `STICKY_QUEUE_SCHEDULE_TO_START_TIMEOUT`, `WORKFLOW_TASK_SLOTS` (src/config.ts)',
    },
    {
      what: 'model calls (`callClaude`)',
      default: `start-to-close ${CLAUDE_CALL_TIMEOUTS.startToCloseTimeout}, heartbeat ${CLAUDE_CALL_TIMEOUTS.heartbeatTimeout}; ${attempts(retry.maximumAttempts)}, ${String(retry.initialInterval)} apart at first, ×${n(retry.backoffCoefficient ?? 1)} each time, at most ${String(retry.maximumInterval)}`,
      allowed: '—',
      source: '`CLAUDE_CALL_TIMEOUTS`, `CLAUDE_RETRY_POLICY` (src/config.ts)',
    },
    {
      what: 'model call errors never retried',
      default: '—',
      allowed: `HTTP ${NON_RETRYABLE_STATUSES.join(', ')}; any other error the API marks \`${SHOULD_RETRY_HEADER}: false\``,
      source: '`NON_RETRYABLE_STATUSES`, `isRetryable` (src/activities/claude-errors.ts)',
    },
    {
      what: '`AGENT_JOBS_CLAUDE_IDLE_TIMEOUT_MS`: a call that receives nothing this long is abandoned and retried',
      default: ms(CLAUDE_IDLE_TIMEOUT_MS),
      allowed: 'a positive integer',
      source: '`CLAUDE_IDLE_TIMEOUT_MS` (src/config.ts)',
    },
    {
      what: '`AGENT_JOBS_CLAUDE_TIMEOUT_MS`: a call that lasts longer is abandoned and retried',
      default: ms(DEFAULT_CLAUDE_TIMEOUT_MS),
      allowed: 'a positive integer',
      source: '`DEFAULT_CLAUDE_TIMEOUT_MS` (src/config.ts)',
    },
    {
      what: "`AGENT_JOBS_LOG_LEVEL`: the worker's log level",
      default: code(DEFAULT_LOG_LEVEL),
      allowed: `${codes(LOG_LEVELS)}, any case; anything else stops the worker at start`,
      source: '`DEFAULT_LOG_LEVEL`, `LOG_LEVELS` (src/settings.ts)',
    },
    {
      what: 'activity summaries in the Temporal UI',
      default: '—',
      allowed: `at most ${n(SUMMARY_MAX_CHARS)} characters (code points), escaped`,
      source: '`SUMMARY_MAX_CHARS` (src/shared/display.ts)',
    },
    {
      what: 'command output lines `watch` and `transcript` show',
      default: n(SHOWN_OUTPUT_LINES),
      allowed: '`transcript --full`: all',
      source: '`SHOWN_OUTPUT_LINES` (src/cli/render/text.ts)',
    },
    {
      what: '`server --port`, when `TEMPORAL_ADDRESS` names no local port',
      default: `${DEV_SERVER_PORT} (web UI: port + 1000)`,
      allowed: '1–65535',
      source: '`DEV_SERVER_PORT` (src/dev/devserver.ts)',
    },
    {
      what: "dynamic config of every dev server the project starts (`server`, the demo, tests, benchmarks; Temporal's own default: 20 transfer-queue reads per second per shard); see [Performance](performance.md)",
      default: Object.entries(DEV_SERVER_DYNAMIC_CONFIG)
        .map(([k, v]) => `\`${k}=${v}\``)
        .join(', '),
      allowed: '—',
      source: '`DEV_SERVER_DYNAMIC_CONFIG` (src/dev/devserver.ts)',
    },
  ];
}

/** The Markdown table of {@link facts}, with a line saying where it comes from. */
export function factsTable(rows: Fact[] = facts()): string {
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  return [
    '<!-- Written by `npm run docs` (src/dev/scripts/readme-facts.ts) from the code: edit the code, not this table. -->',
    '',
    '| setting | default | allowed | defined in |',
    '| --- | --- | --- | --- |',
    ...rows.map((r) => `| ${cell(r.what)} | ${cell(r.default)} | ${cell(r.allowed)} | ${cell(r.source)} |`),
  ].join('\n');
}

/**
 * The page with the table between the markers replaced by `table`.
 * @throws Error when the markers are missing or out of order
 */
export function withFacts(readme: string, table: string = factsTable()): string {
  const start = readme.indexOf(FACTS_START);
  const end = readme.indexOf(FACTS_END);
  if (start < 0 || end < start) throw new Error(`docs/configuration.md has no ${FACTS_START} … ${FACTS_END} section`);
  return `${readme.slice(0, start + FACTS_START.length)}\n${table}\n${readme.slice(end)}`;
}

/** The page that holds the facts table. */
export const FACTS_PATH = path.join(PROJECT_ROOT, 'docs', 'configuration.md');

if (require.main === module) {
  const before = readFileSync(FACTS_PATH, 'utf8');
  const after = withFacts(before);
  if (process.argv.includes('--check')) {
    if (after !== before) {
      process.stderr.write('docs/configuration.md is out of date with the code: run `npm run docs`\n');
      process.exit(1);
    }
  } else if (after !== before) {
    writeFileSync(FACTS_PATH, after);
    process.stdout.write('docs/configuration.md: defaults and limits rewritten from the code\n');
  } else {
    process.stdout.write('docs/configuration.md: defaults and limits already up to date\n');
  }
}
