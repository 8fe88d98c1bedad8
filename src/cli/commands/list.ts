/** `agent-jobs list`: recent runs, filterable by status. */
import Table from 'cli-table3';
import type { Command } from 'commander';
import { RUN_STATUSES, type RunStatus } from '../../contract';
import { safeText } from '../../shared/display';
import { CliError } from '../errors';
import { printJson } from '../render/text';
import { withClient } from '../context';
import { positiveInt } from '../parse';

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
      await withClient(async (jobs) => {
        const rows = await jobs.list({ limit: opts.limit, ...(opts.status ? { status: opts.status as RunStatus } : {}) });
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no runs\n');
        const plain = !process.stdout.isTTY;
        const table = new Table({
          head: ['workflow id', 'status', 'turns', 'tokens', 'cost (USD)', 'started (UTC)'],
          ...(plain ? { style: { head: [], border: [] } } : {}),
        });
        for (const r of rows)
          table.push([
            safeText(String(r.workflowId), false), // a sub-agent's id holds the API's tool_use id
            String(r.status),
            String(r.turns ?? ''),
            String(r.tokens ?? ''),
            r.costUsd === null ? '' : r.costUsd.toFixed(4),
            startedShown(String(r.startTime)),
          ]);
        process.stdout.write(`${table.toString()}\n`);
      });
    });
}

/**
 * A run's ISO-8601 start time as the table shows it, whole and in one width:
 * `2026-12-07 07:47:49` (UTC, to the second). Anything that is not an
 * ISO-8601 UTC time is shown as text, made safe.
 */
export function startedShown(iso: string): string {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2})(?:\.\d+)?Z$/.exec(iso);
  return m ? `${m[1]} ${m[2]}` : safeText(iso, false);
}
