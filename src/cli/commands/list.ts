/** `agent-jobs list`: recent runs, filterable by status. */
import Table from 'cli-table3';
import type { Command } from 'commander';
import { AGENT_COST_USD, AGENT_RUN_WORKFLOW, AGENT_STATUS, AGENT_TOKENS, AGENT_TURNS } from '../../config';
import { RUN_STATUSES, type RunStatus } from '../../contract';
import { CliError } from '../errors';
import { printJson } from '../output';
import { oneLineSummary } from '../../temporal';
import { withClient } from '../context';
import { positiveInt } from '../parse';

/** What {@link newestByStart} needs of a listed execution. */
export interface Listed {
  startTime: Date;
  /** Unset while the execution is open. */
  closeTime?: Date | undefined;
}

/**
 * The `limit` executions that started last, newest start first.
 *
 * Temporal's visibility lists open executions first (newest start first),
 * then closed ones by close time, latest first (the default order of SQL and
 * Elasticsearch visibility; custom ORDER BY needs Elasticsearch). An
 * execution closes after it starts, so once `limit` are kept, a closed one
 * that closed before the oldest kept start, and every one listed after it,
 * started earlier: reading stops there.
 * @param executions a listing in that order (any order gives the right runs, only later)
 * @param limit how many to keep, >= 1
 */
export async function newestByStart<T extends Listed>(executions: AsyncIterable<T>, limit: number): Promise<T[]> {
  const kept: T[] = [];
  for await (const e of executions) {
    const oldestKept = kept.length >= limit ? kept[kept.length - 1]! : undefined;
    if (oldestKept && e.closeTime && e.closeTime.getTime() < oldestKept.startTime.getTime()) break;
    if (oldestKept && e.startTime.getTime() <= oldestKept.startTime.getTime()) continue;
    kept.push(e);
    kept.sort((a, b) => b.startTime.getTime() - a.startTime.getTime());
    if (kept.length > limit) kept.pop();
  }
  return kept;
}

export function registerList(program: Command): void {
  program
    .command('list')
    .description('list recent runs, newest start first (open and closed alike)')
    .option('--status <status>', `only runs with this AgentStatus (${RUN_STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many runs', positiveInt, 20)
    .option('--json', 'print a JSON array of {"workflowId","runId","status","turns","tokens","costUsd","startTime","executionStatus"}')
    .action(async (opts: { status?: string; limit: number; json?: boolean }) => {
      if (opts.status && !RUN_STATUSES.includes(opts.status as RunStatus)) {
        throw new CliError(`unknown status ${JSON.stringify(opts.status)}`, `use one of ${RUN_STATUSES.join(', ')}`);
      }
      await withClient(async ({ client }) => {
        // A run that continued as new is listed once, by its newest execution.
        const query = `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'${opts.status ? ` AND AgentStatus = '${opts.status}'` : ''}`;
        const rows = (await newestByStart(client.workflow.list({ query }), opts.limit)).map((w) => {
          const attrs = w.typedSearchAttributes;
          return {
            workflowId: w.workflowId,
            runId: w.runId,
            status: attrs.get(AGENT_STATUS) ?? w.status.name.toLowerCase(),
            turns: attrs.get(AGENT_TURNS) ?? null,
            tokens: attrs.get(AGENT_TOKENS) ?? null,
            costUsd: attrs.get(AGENT_COST_USD) ?? null,
            startTime: w.startTime.toISOString(),
            executionStatus: w.status.name,
          };
        });
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no runs\n');
        const plain = !process.stdout.isTTY;
        const table = new Table({
          head: ['workflow id', 'status', 'turns', 'tokens', 'cost (USD)', 'started'],
          ...(plain ? { style: { head: [], border: [] } } : {}),
        });
        for (const r of rows)
          table.push([
            String(r.workflowId),
            String(r.status),
            String(r.turns ?? ''),
            String(r.tokens ?? ''),
            r.costUsd === null ? '' : r.costUsd.toFixed(4),
            oneLineSummary(String(r.startTime), 20),
          ]);
        process.stdout.write(`${table.toString()}\n`);
      });
    });
}
