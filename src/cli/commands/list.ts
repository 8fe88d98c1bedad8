/** `agent-jobs list`: recent runs, filterable by status. */
import Table from 'cli-table3';
import type { Command } from 'commander';
import { AGENT_RUN_WORKFLOW, AGENT_STATUS, AGENT_TOKENS, AGENT_TURNS } from '../../config';
import type { RunStatus } from '../../workflows/types';
import { clip, printJson } from '../output';
import { withClient } from '../context';
import { positiveInt } from '../parse';

const STATUSES: RunStatus[] = ['running', 'awaiting_approval', 'completed', 'max_turns', 'max_tokens', 'refused', 'failed', 'cancelled'];

export function registerList(program: Command): void {
  program
    .command('list')
    .description('list recent runs (newest first)')
    .option('--status <status>', `only runs with this AgentStatus (${STATUSES.join(', ')})`)
    .option('--limit <n>', 'at most this many runs', positiveInt, 20)
    .option('--json', 'print a JSON array')
    .action(async (opts: { status?: string; limit: number; json?: boolean }) => {
      if (opts.status && !STATUSES.includes(opts.status as RunStatus)) {
        throw new Error(`unknown status ${opts.status}; use one of ${STATUSES.join(', ')}`);
      }
      await withClient(async ({ client }) => {
        // A run that continued as new is listed once, by its newest execution.
        const query = `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND ExecutionStatus != 'ContinuedAsNew'${opts.status ? ` AND AgentStatus = '${opts.status}'` : ''}`;
        const rows: Record<string, unknown>[] = [];
        for await (const w of client.workflow.list({ query })) {
          const attrs = w.typedSearchAttributes;
          rows.push({
            workflowId: w.workflowId,
            runId: w.runId,
            status: attrs.get(AGENT_STATUS) ?? w.status.name.toLowerCase(),
            turns: attrs.get(AGENT_TURNS) ?? null,
            tokens: attrs.get(AGENT_TOKENS) ?? null,
            startTime: w.startTime.toISOString(),
            executionStatus: w.status.name,
          });
          if (rows.length >= opts.limit) break;
        }
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no runs\n');
        const plain = !process.stdout.isTTY;
        const table = new Table({ head: ['workflow id', 'status', 'turns', 'tokens', 'started'], ...(plain ? { style: { head: [], border: [] } } : {}) });
        for (const r of rows) table.push([String(r.workflowId), String(r.status), String(r.turns ?? ''), String(r.tokens ?? ''), clip(String(r.startTime), 20)]);
        process.stdout.write(`${table.toString()}\n`);
      });
    });
}
