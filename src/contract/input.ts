/**
 * The agentRun input: its schema (validated both by the CLI before start
 * and by the workflow itself, for runs started from elsewhere) and its
 * defaults. Deterministic (workflow code).
 */
import type { Duration } from '@temporalio/common';
import { z } from 'zod';
import {
  DEFAULT_APPROVAL_TIMEOUT,
  DEFAULT_CHAT_IDLE_TIMEOUT,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_TOKENS,
  DEFAULT_MAX_TURNS,
  DEFAULT_MODEL,
  DEFAULT_TRANSCRIPT_BUDGET_CHARS,
} from '../config';
import { DEFAULT_CHECKPOINT_MAX_BYTES } from './checkpoint';
import {
  APPROVAL_MODES,
  DEFAULT_APPROVAL_MODE,
  THINKING_DISPLAYS,
  type AgentRunInput,
  type ApprovalMode,
  type CheckpointSettings,
} from './run';
import { EFFORT_LEVELS, MAX_CONTEXT_WINDOW, capabilitiesOf, modelInfoOf, modelInfoSchema } from './models';
import { MAX_SUBAGENTS } from './subagent';
import { CLIENT_TOOLS, DEFAULT_CLIENT_TOOLS, type ClientToolName } from './text-editor';
import { APPROVAL_TIMEOUT_ACTIONS, DEFAULT_APPROVAL_TIMEOUT_ACTION, DEFAULT_ON_BUDGET, MAX_RULES, ON_BUDGET_ACTIONS } from './steering';

/** Temporal duration strings as `ms` understands them (`'24 hours'`, `'90s'`, `'1.5h'`), or ms. */
const DURATION = /^\d+(\.\d+)?\s*(ms|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)?$/i;

/** A Temporal duration: a positive number of ms, or a string {@link DURATION} accepts. */
const duration = z.union([z.number().int().positive(), z.string().regex(DURATION, 'must be a duration such as "24 hours", "30s" or ms')]);

/** ms in one unit of {@link DURATION}, by the unit's first letters. */
const UNIT_MS: Array<[RegExp, number]> = [
  [/^(ms|milliseconds?)$/i, 1],
  [/^(s|secs?|seconds?)$/i, 1_000],
  [/^(m|mins?|minutes?)$/i, 60_000],
  [/^(h|hrs?|hours?)$/i, 3_600_000],
  [/^(d|days?)$/i, 86_400_000],
  [/^(w|weeks?)$/i, 604_800_000],
];

/**
 * A duration of the input (ms, or a string {@link DURATION} accepts) in ms,
 * rounded; a bare number in a string is ms, as Temporal reads it.
 * @throws Error for a string that is not a duration (the schema rejects those first)
 */
export function durationToMs(d: string | number): number {
  if (typeof d === 'number') return d;
  const m = /^(\d+(?:\.\d+)?)\s*([a-z]*)$/i.exec(d.trim());
  const unit = m ? (m[2] === '' ? 1 : UNIT_MS.find(([re]) => re.test(m[2]!))?.[1]) : undefined;
  if (!m || unit === undefined) throw new Error(`not a duration: ${JSON.stringify(d)}`);
  return Math.round(Number(m[1]) * unit);
}

/**
 * A duration of the input that the schema accepted, typed as Temporal's `Duration` for `condition` and `sleep`
 * (the same value: no conversion). Temporal types a duration string with the `ms` package's template type, which
 * a string checked at run time cannot show the compiler; {@link DURATION} accepts the forms `ms` parses.
 */
export function temporalDuration(d: string | number): Duration {
  return d as Duration;
}

/** Smallest extended thinking budget the API accepts, in tokens: 1,024. */
export const MIN_THINKING_TOKENS = 1_024;
/** Largest `maxCostUsd`, in USD: 1,000,000 (a typo guard). */
export const MAX_COST_USD = 1_000_000;
/** Largest `maxTokensTotal`: 10^12 tokens (a typo guard). */
export const MAX_TOKENS_TOTAL = 1_000_000_000_000;

/** zod schema of {@link AgentRunInput}; unknown keys are rejected so a typo is not silently ignored. */
export const agentRunInputSchema = z
  .object({
    task: z.string().trim().min(1, 'task must not be empty'),
    model: z.string().min(1).optional(),
    maxTurns: z.number().int().min(1).max(10_000).optional(),
    maxTokens: z.number().int().min(1).max(128_000).optional(),
    system: z.string().optional(),
    approval: z.enum(APPROVAL_MODES as [ApprovalMode, ...ApprovalMode[]]).optional(),
    workdir: z.string().min(1).optional(),
    network: z.boolean().optional(),
    commandTimeoutMs: z
      .number()
      .int()
      .min(100)
      .max(24 * 3_600_000)
      .optional(),
    approvalTimeout: duration.optional(),
    approvalTimeoutAction: z.enum(APPROVAL_TIMEOUT_ACTIONS).optional(),
    chat: z.boolean().optional(),
    chatIdleTimeout: duration.optional(),
    transcriptBudgetChars: z.number().int().min(10_000).max(1_000_000).optional(),
    maxCostUsd: z.number().finite().positive().max(MAX_COST_USD).optional(),
    maxTokensTotal: z.number().int().min(1).max(MAX_TOKENS_TOTAL).optional(),
    maxDuration: duration.optional(),
    onBudget: z.enum(ON_BUDGET_ACTIONS).optional(),
    thinking: z.number().int().min(MIN_THINKING_TOKENS, `the thinking budget must be at least ${MIN_THINKING_TOKENS} tokens`).optional(),
    effort: z.enum(EFFORT_LEVELS).optional(),
    thinkingDisplay: z.enum(THINKING_DISPLAYS).optional(),
    webSearch: z.boolean().optional(),
    webFetch: z.boolean().optional(),
    tools: z
      .array(z.enum(CLIENT_TOOLS))
      .min(1, 'tools must name at least one of bash, text_editor')
      .refine((t) => new Set(t).size === t.length, 'tools must not name a tool twice')
      .optional(),
    contextWindow: z.number().int().min(1_024).max(MAX_CONTEXT_WINDOW).optional(),
    modelInfo: modelInfoSchema.optional(),
    checkpoints: z
      .object({
        enabled: z.boolean().optional(),
        maxBytes: z.number().int().min(0).optional(),
        exclude: z
          .array(
            z
              .string()
              .min(1)
              .regex(/^[^*?[\\\]:]+$/, 'an exclude is a name or a workspace-relative path, without glob characters or colons')
              .refine((e) => !e.startsWith('/') && !e.split('/').includes('..'), 'an exclude is relative to the workspace, without ..'),
          )
          .max(100)
          .optional(),
      })
      .strict()
      .optional(),
    fork: z
      .object({
        fromWorkflowId: z.string().min(1),
        atTurn: z.number().int().min(1),
        messages: z.array(z.any()).min(1),
        checkpoint: z.object({ store: z.string().min(1), id: z.string().regex(/^[0-9a-f]{40}$/), exclude: z.array(z.string()) }).strict(),
      })
      .strict()
      .optional(),
    subagents: z.number().int().min(1).max(MAX_SUBAGENTS).optional(),
    subagentWorkspace: z.enum(['shared', 'worktree']).optional(),
    subagentOf: z.string().min(1).optional(),
    worktreeGit: z
      .object({ commonDir: z.string().min(1), gitDir: z.string().min(1) })
      .strict()
      .optional(),
    rules: z
      .array(
        z
          .object({
            id: z.number().int().min(1),
            kind: z.enum(['exact', 'prefix']),
            text: z.string().min(1),
            by: z.string(),
            at: z.string(),
            toolUseId: z.string(),
          })
          .strict(),
      )
      .max(MAX_RULES)
      .optional(),
  })
  .strict()
  .superRefine((i, ctx) => {
    const maxTokens = i.maxTokens ?? DEFAULT_MAX_TOKENS;
    if (i.thinking !== undefined && i.thinking >= maxTokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['thinking'],
        message: `the thinking budget (${i.thinking} tokens) must be below maxTokens (${maxTokens}): max_tokens counts the thinking too; raise maxTokens or lower thinking`,
      });
    }
    const model = i.model ?? DEFAULT_MODEL;
    if (i.maxCostUsd !== undefined && modelInfoOf({ model, ...(i.modelInfo ? { modelInfo: i.modelInfo } : {}) }).prices === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['maxCostUsd'],
        message: `the prices of ${model} are unknown, so a cost budget cannot be kept; give them in AGENT_JOBS_MODELS (or the input's modelInfo)`,
      });
    }
  });

/** Input fields that stay optional once resolved (absent: none, off, or the model's). */
type OptionalFields =
  | 'workdir'
  | 'maxCostUsd'
  | 'maxTokensTotal'
  | 'maxDuration'
  | 'thinking'
  | 'effort'
  | 'thinkingDisplay'
  | 'webSearch'
  | 'webFetch'
  | 'contextWindow'
  | 'modelInfo'
  | 'fork'
  | 'subagents'
  | 'subagentWorkspace'
  | 'subagentOf'
  | 'worktreeGit'
  | 'rules';

/** The input with every default applied. */
export type ResolvedInput = Required<Omit<AgentRunInput, OptionalFields | 'checkpoints'>> &
  Pick<AgentRunInput, OptionalFields> & { checkpoints: Required<CheckpointSettings> };

/** Default system prompt of a run with bash alone: how the bash tool behaves here. MAINTENANCE: byte-identical to what runs started before the editor were sent. */
export const DEFAULT_SYSTEM_PROMPT = [
  'You are an agent that completes tasks by running commands in a persistent bash session (the bash tool).',
  "The session starts in the run's own workspace directory; the working directory, variables and files persist between commands.",
  "Commands read no input (stdin is /dev/null) and are killed after a timeout; some commands need a human's approval and may be denied.",
  'When the task is done, reply with a short summary of what you did.',
].join(' ');

/** Default system prompt of a run that offers the text editor (with or without bash). */
export const DEFAULT_EDITOR_SYSTEM_PROMPT = [
  'You are an agent that completes tasks in its own workspace directory with the tools you are given.',
  'The bash tool (when offered) runs commands in a persistent bash session that starts in the workspace; the working directory, variables and files persist between commands.',
  'Commands read no input (stdin is /dev/null) and are killed after a timeout.',
  'The text editor tool (str_replace_based_edit_tool) views, creates and edits files inside the workspace only; relative paths start from the working directory of the bash session.',
  "Some commands and every file change may need a human's approval and may be denied.",
  'When the task is done, reply with a short summary of what you did.',
].join(' ');

/** The default system prompt for a run's tools. */
export function defaultSystemPrompt(tools: readonly ClientToolName[]): string {
  return tools.includes('text_editor') ? DEFAULT_EDITOR_SYSTEM_PROMPT : DEFAULT_SYSTEM_PROMPT;
}

/** One line of what is wrong with an input, e.g. `maxTurns: Too small: expected number to be >=1`. */
export function describeInputIssues(error: z.ZodError): string {
  return error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : 'input'}: ${i.message}`).join('; ');
}

/**
 * Validates an agentRun input and applies the defaults. `legacyTools`: an input without
 * `tools` gets bash alone (a run that started before the editor existed, or the next run of
 * its continue-as-new chain: its tools and system prompt must not change mid-conversation).
 * @returns `{ok: true, input}` or `{ok: false, message}` with every problem on one line
 */
export function resolveInput(
  raw: unknown,
  options: { legacyTools?: boolean } = {},
): { ok: true; input: ResolvedInput } | { ok: false; message: string } {
  const parsed = agentRunInputSchema.safeParse(raw);
  if (!parsed.success) return { ok: false, message: describeInputIssues(parsed.error) };
  const i = parsed.data;
  const tools = i.tools ?? (options.legacyTools ? ['bash' as const] : [...DEFAULT_CLIENT_TOOLS]);
  return {
    ok: true,
    input: {
      task: i.task,
      model: i.model ?? DEFAULT_MODEL,
      maxTurns: i.maxTurns ?? DEFAULT_MAX_TURNS,
      maxTokens: i.maxTokens ?? DEFAULT_MAX_TOKENS,
      system: i.system ?? defaultSystemPrompt(tools),
      approval: i.approval ?? DEFAULT_APPROVAL_MODE,
      workdir: i.workdir,
      network: i.network ?? false,
      commandTimeoutMs: i.commandTimeoutMs ?? DEFAULT_COMMAND_TIMEOUT_MS,
      approvalTimeout: i.approvalTimeout ?? DEFAULT_APPROVAL_TIMEOUT,
      approvalTimeoutAction: i.approvalTimeoutAction ?? DEFAULT_APPROVAL_TIMEOUT_ACTION,
      chat: i.chat ?? false,
      chatIdleTimeout: i.chatIdleTimeout ?? DEFAULT_CHAT_IDLE_TIMEOUT,
      transcriptBudgetChars: i.transcriptBudgetChars ?? DEFAULT_TRANSCRIPT_BUDGET_CHARS,
      onBudget: i.onBudget ?? DEFAULT_ON_BUDGET,
      tools,
      ...(i.maxCostUsd !== undefined ? { maxCostUsd: i.maxCostUsd } : {}),
      ...(i.maxTokensTotal !== undefined ? { maxTokensTotal: i.maxTokensTotal } : {}),
      ...(i.maxDuration !== undefined ? { maxDuration: i.maxDuration } : {}),
      ...(i.thinking !== undefined ? { thinking: i.thinking } : {}),
      ...(i.effort !== undefined ? { effort: i.effort } : {}),
      ...(i.thinkingDisplay !== undefined ? { thinkingDisplay: i.thinkingDisplay } : {}),
      ...(i.webSearch !== undefined ? { webSearch: i.webSearch } : {}),
      ...(i.webFetch !== undefined ? { webFetch: i.webFetch } : {}),
      ...(i.contextWindow !== undefined ? { contextWindow: i.contextWindow } : {}),
      ...(i.modelInfo !== undefined ? { modelInfo: i.modelInfo } : {}),
      checkpoints: {
        enabled: i.checkpoints?.enabled ?? true,
        maxBytes: i.checkpoints?.maxBytes ?? DEFAULT_CHECKPOINT_MAX_BYTES,
        exclude: i.checkpoints?.exclude ?? [],
      },
      ...(i.fork !== undefined ? { fork: i.fork } : {}),
      // A sub-agent starts no sub-agents of its own (docs/subagents.md).
      ...(i.subagents !== undefined && i.subagentOf === undefined ? { subagents: i.subagents } : {}),
      // Absent when `shared` (the default), so a run without the flag resolves as before.
      ...(i.subagentWorkspace === 'worktree' && i.subagents !== undefined && i.subagentOf === undefined
        ? { subagentWorkspace: i.subagentWorkspace }
        : {}),
      ...(i.subagentOf !== undefined ? { subagentOf: i.subagentOf } : {}),
      // Only a sub-agent's: its parent set it (docs/subagents.md, "Workspaces").
      ...(i.worktreeGit !== undefined && i.subagentOf !== undefined ? { worktreeGit: i.worktreeGit } : {}),
      ...(i.rules !== undefined ? { rules: i.rules } : {}),
    },
  };
}

/**
 * What the run's model cannot take, checked by `start` (and the client module) before a run
 * starts, never by the workflow (a run recorded before a model's row changed must still
 * replay): a thinking budget on a model that takes none (adaptive-only models answer it with
 * a 400: https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking), a
 * `thinkingDisplay` on a budget-only model, `maxTokens` above the model's max output.
 * @returns one line naming the option to use instead, or null when the input fits the model
 */
export function modelProblem(input: ResolvedInput): string | null {
  const caps = capabilitiesOf(input);
  if (input.thinking !== undefined && !caps.thinkingBudget) {
    return `${input.model} thinks adaptively (${caps.thinking}) and takes no thinking budget: use --effort low|medium|high|xhigh|max instead of --thinking`;
  }
  if (input.thinkingDisplay !== undefined && caps.thinking === 'budget') {
    return `${input.model} has no adaptive thinking, so --thinking-display does not apply: use --thinking N for a budget`;
  }
  if (input.maxTokens > caps.maxOutputTokens) {
    return `--max-tokens ${input.maxTokens} is above ${input.model}'s max output (${caps.maxOutputTokens} tokens)`;
  }
  return null;
}
