/** `agent-jobs extend <workflowId>`: raise a run's budgets (the `extend` Update); a run paused on a spent budget goes on. */
import type { Command } from 'commander';
import type { BudgetLimits, ExtendRequest, PauseState } from '../../contract';
import { CliError } from '../errors';
import { printJson, printLines } from '../output';
import { withClient } from '../context';
import { durationMs, formatDurationMs, positiveInt, positiveNumber } from '../parse';
import { REQUEST_ID_HELP, requestId, sendOptionsOf } from '../requests';

interface ExtendOptions {
  turns?: number;
  cost?: number;
  tokens?: number;
  duration?: number;
  by?: string;
  requestId?: string;
  json?: boolean;
}

/** The limits in one line, for people: `turns 12, cost $2, tokens 50000, duration 30m`. */
export function limitsLine(l: BudgetLimits): string {
  return [
    `turns ${l.maxTurns}`,
    ...(l.maxCostUsd !== undefined ? [`cost $${l.maxCostUsd}`] : []),
    ...(l.maxTokensTotal !== undefined ? [`tokens ${l.maxTokensTotal}`] : []),
    ...(l.maxDurationMs !== undefined ? [`duration ${formatDurationMs(l.maxDurationMs)}`] : []),
  ].join(', ');
}

/** A budget pause in words: `the cost budget is spent ($1.0200 of $1)`. */
export function budgetPauseLine(p: PauseState): string {
  const used = p.used ?? 0;
  const limit = p.limit ?? 0;
  switch (p.budget) {
    case 'cost':
      return `the cost budget is spent ($${used.toFixed(4)} of $${limit})`;
    case 'tokens':
      return `the token budget is spent (${used} of ${limit} tokens)`;
    case 'duration':
      return `the duration budget is spent (${formatDurationMs(Math.round(used))} of ${formatDurationMs(limit)})`;
    default:
      return `the turn budget is spent (${used} of ${limit} model calls)`;
  }
}

/** The amounts from the options. @throws CliError when no budget is named */
export function extendRequest(opts: ExtendOptions): Omit<ExtendRequest, 'by'> {
  const req: Omit<ExtendRequest, 'by'> = {
    ...(opts.turns !== undefined ? { turns: opts.turns } : {}),
    ...(opts.cost !== undefined ? { costUsd: opts.cost } : {}),
    ...(opts.tokens !== undefined ? { tokens: opts.tokens } : {}),
    ...(opts.duration !== undefined ? { durationMs: opts.duration } : {}),
  };
  if (Object.keys(req).length === 0)
    throw new CliError('nothing to extend', 'give --turns, --cost, --tokens or --duration (see `agent-jobs extend --help`)');
  return req;
}

export function registerExtend(program: Command): void {
  program
    .command('extend')
    .description('raise the budgets of a run by the amounts given; a run paused on a spent budget goes on once it is within all of them')
    .argument('<workflowId>')
    .option('--turns <n>', 'more model calls', positiveInt)
    .option('--cost <usd>', 'more USD (the run must have a cost budget)', positiveNumber)
    .option('--tokens <n>', 'more tokens (the run must have a token budget)', positiveInt)
    .option('--duration <duration>', 'more run time, e.g. 30m, 2h (the run must have a duration budget)', durationMs)
    .option('--by <name>', 'who asks (default: your user name)')
    .option('--request-id <id>', REQUEST_ID_HELP, requestId)
    .option('--json', 'print {"status","limits","pause","by","at"}: the status once the new limits applied')
    .action(async (workflowId: string, opts: ExtendOptions) => {
      const req = extendRequest(opts);
      await withClient(async (jobs) => {
        const answer = await jobs.run(workflowId).extend(req, sendOptionsOf(opts));
        if (opts.json) return printJson(answer);
        printLines(
          `extend ${workflowId} by ${answer.by}: status ${answer.status}; limits now ${limitsLine(answer.limits)}`,
          ...(answer.pause?.reason === 'budget' ? [`  still paused: ${budgetPauseLine(answer.pause)}`] : []),
        );
      });
    });
}
