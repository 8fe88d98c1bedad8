/** `agent-jobs start <task...>`: starts an agent run. */
import { MAX_SUBAGENTS } from '../../contract/subagent';
import { Option, type Command } from 'commander';
import { cliCommand } from '../invocation';
import { MIN_THINKING_TOKENS, defaultSystemPrompt, modelProblem, resolveInput } from '../../contract/input';
import { DEFAULT_CLIENT_TOOLS, type ClientToolName } from '../../contract/text-editor';
import { EFFORT_LEVELS, lookupModel, type Effort } from '../../contract/models';
import {
  APPROVAL_MODES,
  APPROVAL_TIMEOUT_ACTIONS,
  CLI_DEFAULT_ON_BUDGET,
  DEFAULT_APPROVAL_MODE,
  DEFAULT_APPROVAL_TIMEOUT_ACTION,
  ON_BUDGET_ACTIONS,
  type AgentRunInput,
  type ApprovalMode,
  type ApprovalTimeoutAction,
  type OnBudget,
  type SubagentWorkspace,
  THINKING_DISPLAYS,
  type ThinkingDisplay,
} from '../../contract';
import { modelTable } from '../../settings';
import {
  DEFAULT_APPROVAL_TIMEOUT,
  DEFAULT_CHAT_IDLE_TIMEOUT,
  DEFAULT_COMMAND_TIMEOUT_MS,
  DEFAULT_MAX_TOKENS,
  DEFAULT_MAX_TURNS,
  DEFAULT_MODEL,
} from '../../config';
import { SHARED_TASK_QUEUE } from '../../config';
import { CliError } from '../errors';
import { checkWorkdir, noSandboxGitWarning } from '../workdir';
import { printJson, printLines } from '../render/text';
import { withClient } from '../context';
import { durationMs, formatDurationMs, positiveInt, positiveNumber, toolList } from '../parse';
import { exitCodeOf, watchUntilInterrupted } from '../follow';

interface StartOptions {
  model?: string;
  approval?: AgentRunInput['approval'];
  maxTurns?: number;
  maxTokens?: number;
  workdir?: string;
  network?: boolean;
  id?: string;
  system?: string;
  commandTimeout?: number;
  approvalTimeout?: number;
  approvalTimeoutAction?: ApprovalTimeoutAction;
  chat?: boolean;
  chatIdleTimeout?: number;
  maxCost?: number;
  maxTokensTotal?: number;
  maxDuration?: number;
  onBudget?: OnBudget;
  thinking?: number;
  effort?: Effort;
  thinkingDisplay?: ThinkingDisplay;
  webSearch?: boolean;
  webFetch?: boolean;
  tools?: ClientToolName[];
  contextWindow?: number;
  /** commander's `--no-checkpoints`: false when given. */
  checkpoints?: boolean;
  checkpointMaxBytes?: number;
  checkpointExclude?: string[];
  subagents?: number;
  subagentWorkspace?: SubagentWorkspace;
  follow?: boolean;
  json?: boolean;
}

/**
 * The run's `modelInfo`: the entry for `model` in the built-in table with
 * `AGENT_JOBS_MODELS` merged over it; absent for a model neither knows (the
 * workflow then uses the documented fallback: src/contract/models.ts).
 * @throws CliError when `AGENT_JOBS_MODELS` cannot be read or is not a valid table
 */
function modelInfoFor(model: string, env: NodeJS.ProcessEnv): Pick<AgentRunInput, 'modelInfo'> {
  let table;
  try {
    table = modelTable(env);
  } catch (err) {
    throw new CliError(err instanceof Error ? err.message : String(err), 'fix AGENT_JOBS_MODELS (docs/configuration.md), or unset it');
  }
  const info = lookupModel(table, model);
  return info ? { modelInfo: info } : {};
}

/**
 * Builds the workflow input from the command line (model from `--model`,
 * else `AGENT_JOBS_MODEL`, else `DEFAULT_MODEL`; its entry of the model table
 * as `modelInfo`) and validates it with the workflow's own schema and against
 * the model ({@link modelProblem}). The model and the system prompt are always
 * written out, so the run's prefix is fixed here, whatever later workers take
 * as their defaults.
 * @throws CliError naming every invalid field, what the model cannot take, or what is wrong with `AGENT_JOBS_MODELS`
 */
export function buildInput(taskWords: string[], opts: StartOptions, env: NodeJS.ProcessEnv = process.env): AgentRunInput {
  const model = opts.model ?? (env.AGENT_JOBS_MODEL || undefined) ?? DEFAULT_MODEL;
  const input: AgentRunInput = {
    task: taskWords.join(' '),
    model,
    ...(opts.approval ? { approval: opts.approval } : {}),
    ...(opts.maxTurns !== undefined ? { maxTurns: opts.maxTurns } : {}),
    ...(opts.maxTokens !== undefined ? { maxTokens: opts.maxTokens } : {}),
    ...(opts.workdir ? { workdir: opts.workdir } : {}),
    ...(opts.network ? { network: true } : {}),
    tools: opts.tools ?? [...DEFAULT_CLIENT_TOOLS],
    system: opts.system ?? defaultSystemPrompt(opts.tools ?? DEFAULT_CLIENT_TOOLS),
    ...(opts.commandTimeout !== undefined ? { commandTimeoutMs: opts.commandTimeout } : {}),
    ...(opts.approvalTimeout !== undefined ? { approvalTimeout: opts.approvalTimeout } : {}),
    ...(opts.approvalTimeoutAction !== undefined ? { approvalTimeoutAction: opts.approvalTimeoutAction } : {}),
    ...(opts.chat ? { chat: true } : {}),
    ...(opts.chatIdleTimeout !== undefined ? { chatIdleTimeout: opts.chatIdleTimeout } : {}),
    ...(opts.maxCost !== undefined ? { maxCostUsd: opts.maxCost } : {}),
    ...(opts.maxTokensTotal !== undefined ? { maxTokensTotal: opts.maxTokensTotal } : {}),
    ...(opts.maxDuration !== undefined ? { maxDuration: opts.maxDuration } : {}),
    onBudget: opts.onBudget ?? CLI_DEFAULT_ON_BUDGET,
    ...(opts.thinking !== undefined ? { thinking: opts.thinking } : {}),
    ...(opts.effort !== undefined ? { effort: opts.effort } : {}),
    ...(opts.thinkingDisplay !== undefined ? { thinkingDisplay: opts.thinkingDisplay } : {}),
    ...(opts.webSearch ? { webSearch: true } : {}),
    ...(opts.webFetch ? { webFetch: true } : {}),
    ...(opts.contextWindow !== undefined ? { contextWindow: opts.contextWindow } : {}),
    ...modelInfoFor(model, env),
    ...(opts.subagents !== undefined ? { subagents: opts.subagents } : {}),
    ...(opts.subagentWorkspace === 'worktree' ? { subagentWorkspace: opts.subagentWorkspace } : {}),
    ...(opts.checkpoints === false || opts.checkpointMaxBytes !== undefined || opts.checkpointExclude !== undefined
      ? {
          checkpoints: {
            ...(opts.checkpoints === false ? { enabled: false } : {}),
            ...(opts.checkpointMaxBytes !== undefined ? { maxBytes: opts.checkpointMaxBytes } : {}),
            ...(opts.checkpointExclude !== undefined ? { exclude: opts.checkpointExclude } : {}),
          },
        }
      : {}),
  };
  if (opts.subagentWorkspace === 'worktree' && opts.subagents === undefined)
    throw new CliError('--subagent-workspace worktree needs --subagents', 'add --subagents <n> (docs/subagents.md)');
  const checked = resolveInput(input);
  if (!checked.ok) throw new CliError(`invalid run: ${checked.message}`, 'see `agent-jobs start --help`');
  const problem = modelProblem(checked.input);
  if (problem) throw new CliError(problem, 'see `agent-jobs models` for what each model takes');
  return input;
}

/** What each approval mode means, for `--help` (a Record, so a new mode cannot go undescribed). */
const APPROVAL_MODE_HELP: Record<ApprovalMode, string> = {
  auto: 'none',
  policy: 'all but read-only simple commands',
  always: 'every one',
};

export function registerStart(program: Command): void {
  program
    .command('start')
    .description('start an agent run on the task (words are joined with spaces)')
    .argument('<task...>', 'what the agent should do')
    .option('--model <model>', `Claude model id (default: AGENT_JOBS_MODEL, else ${DEFAULT_MODEL})`)
    .addOption(
      new Option(
        '--approval <mode>',
        `which commands wait for a human: ${APPROVAL_MODES.map((m) => `${m} (${APPROVAL_MODE_HELP[m]})`).join(', ')}`,
      )
        .choices(APPROVAL_MODES)
        .default(DEFAULT_APPROVAL_MODE),
    )
    .option('--max-tokens <n>', `max_tokens of each model call (default ${DEFAULT_MAX_TOKENS})`, positiveInt)
    .option('--max-turns <n>', `model calls before the run pauses or ends, see --on-budget (default ${DEFAULT_MAX_TURNS})`, positiveInt)
    .option(
      '--max-cost <usd>',
      "cost budget in USD at the model table's prices (AGENT_JOBS_MODELS overrides them; refused for a model without prices)",
      positiveNumber,
    )
    .option(
      '--max-tokens-total <n>',
      'token budget: input, output, cache-write and cache-read tokens of the whole run together',
      positiveInt,
    )
    .option('--max-duration <duration>', 'run-time budget, e.g. 30m, 2h: workflow time since the run started, waits included', durationMs)
    .addOption(
      new Option(
        '--on-budget <action>',
        'what a spent budget does: pause the run (a durable wait, the session kept, until `agent-jobs extend` raises it) or end it (status max_turns, max_cost, max_tokens_total or max_duration)',
      )
        .choices(ON_BUDGET_ACTIONS)
        .default(CLI_DEFAULT_ON_BUDGET),
    )
    .option(
      '--thinking <tokens>',
      `extended thinking budget in tokens, at least ${MIN_THINKING_TOKENS} and below --max-tokens, for models that take budgets (see agent-jobs models; adaptive models take --effort instead) (default: off)`,
      positiveInt,
    )
    .addOption(
      new Option('--effort <level>', "output_config.effort of every request: how deeply the model thinks (default: the model's)").choices(
        EFFORT_LEVELS,
      ),
    )
    .addOption(
      new Option(
        '--thinking-display <display>',
        "adaptive thinking's display: summarized (a summary of the thinking, shown by watch) or omitted (empty thinking text) (default: the model's)",
      ).choices(THINKING_DISPLAYS),
    )
    .option(
      '--tools <list>',
      'client tools, comma-separated: bash (the bash session), text_editor (str_replace_based_edit_tool: view, create, str_replace, insert; docs/text-editor.md) (default: bash,text_editor)',
      toolList,
    )
    .option('--web-search', 'offer the web_search server tool (runs on the API side; each search is billed)')
    .option('--web-fetch', 'offer the web_fetch server tool (runs on the API side)')
    .option('--context-window <tokens>', "the run's context window in tokens (default: the model's, from the model table)", positiveInt)
    .option(
      '--workdir <dir>',
      "working directory of the bash session, on the worker's machine: created there if missing; a relative path is under the worker's workspace root, and may not leave it (default: a fresh folder per run under that root)",
    )
    .option('--network', 'let the bash session reach the network (default: the sandbox has none)')
    .option(
      '--subagents <n>',
      `offer the subagent tool: Claude hands tasks to child runs in this workspace, at most n at once (1-${MAX_SUBAGENTS}; docs/subagents.md)`,
      positiveInt,
    )
    .addOption(
      new Option(
        '--subagent-workspace <where>',
        "where sub-agents work: shared (the run's workspace) or worktree (a git worktree of it each, kept after the child ends; docs/subagents.md)",
      )
        .choices(['shared', 'worktree'])
        .default('shared'),
    )
    .option('--no-checkpoints', 'take no workspace checkpoints (then no rewind or fork: docs/rewind.md)')
    .option('--checkpoint-max-bytes <n>', 'largest workspace a checkpoint records, bytes of files (default 1 GiB)', positiveInt)
    .option(
      '--checkpoint-exclude <path>',
      'a name or workspace-relative path left out of checkpoints and untouched by a rewind (repeatable)',
      (v: string, prev: string[] = []) => [...prev, v],
    )
    .option('--system <text>', 'system prompt, fixed for the whole run (default: a short description of the tools)')
    .option(
      '--command-timeout <duration>',
      `per-command timeout, e.g. 30s, 5m (default ${formatDurationMs(DEFAULT_COMMAND_TIMEOUT_MS)})`,
      durationMs,
    )
    .option(
      '--approval-timeout <duration>',
      `how long a command waits for approval before it is denied, e.g. 30m, 2h (default ${DEFAULT_APPROVAL_TIMEOUT})`,
      durationMs,
    )
    .addOption(
      new Option(
        '--approval-timeout-action <action>',
        'when the approval wait runs out: deny the command (Claude is told), end the run (status approval_timeout), or pause it (the command stays pending)',
      )
        .choices(APPROVAL_TIMEOUT_ACTIONS)
        .default(DEFAULT_APPROVAL_TIMEOUT_ACTION),
    )
    .option('--chat', 'a conversation: at the end of each answer wait for the next `agent-jobs say`; `agent-jobs end` completes it')
    .option(
      '--chat-idle-timeout <duration>',
      `how long a --chat run waits for the next message before it completes (default ${DEFAULT_CHAT_IDLE_TIMEOUT})`,
      durationMs,
    )
    .option('--id <workflowId>', 'workflow id (default run-<time>-<random>)')
    .option('--follow', 'watch the run until it ends; exit 0 only if it completed')
    .option('--json', 'print {"workflowId","runId","uiUrl"} (uiUrl null when the server serves no web UI)')
    .action(async (task: string[], opts: StartOptions) => {
      const input = buildInput(task, opts);
      if (opts.workdir !== undefined) await checkWorkdir(opts.workdir);
      const gitWarning = opts.workdir !== undefined ? await noSandboxGitWarning(opts.workdir) : undefined;
      if (gitWarning) process.stderr.write(gitWarning);
      await withClient(async (jobs) => {
        const run = await jobs.start(input, opts.id !== undefined ? { workflowId: opts.id } : {});
        const { workflowId } = run;
        // None for a server that serves no UI (a dev server started --headless).
        const url = await jobs.servedUiUrl(workflowId, run.firstRunId);
        if (opts.json) printJson({ workflowId, runId: run.firstRunId, uiUrl: url });
        else
          printLines(
            `started ${workflowId}`,
            ...(url !== null ? [`  UI:     ${url}`] : []),
            `  follow: ${cliCommand()} watch ${workflowId}`,
          );
        // The run is durable without a worker, but nothing happens until one polls: say so, on stderr.
        if (!(await jobs.workerPolling().catch(() => true))) {
          process.stderr.write(
            `warning: no worker polls the ${SHARED_TASK_QUEUE} task queue, so ${workflowId} waits until one starts (${cliCommand()} worker)\n`,
          );
        }
        if (!opts.follow) return;
        const view = await watchUntilInterrupted(jobs, workflowId, { json: opts.json === true });
        if (view) process.exitCode = exitCodeOf(view);
      });
    });
}
