/** `agent-jobs extend <workflowId>`: raise a run's budgets (the `extend` Update); a run paused on a spent budget goes on. */
import type { Command } from 'commander';
import type { ExtendRequest } from '../../contract';
import { CliError } from '../errors';
import { oneLine, printJson, printShown } from '../render/text';
import { withClient } from '../context';
import { durationMs, positiveInt, positiveNumber } from '../parse';
import { budgetPauseLine, limitsLine } from '../render/run';
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
        printShown(
          oneLine`extend ${workflowId} by ${answer.by}: status ${answer.status}; limits now ${limitsLine(answer.limits)}`,
          ...(answer.pause?.reason === 'budget' ? [oneLine`  still paused: ${budgetPauseLine(answer.pause)}`] : []),
        );
      });
    });
}
