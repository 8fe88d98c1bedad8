/** `agent-jobs pending`: every open run that waits for a person, newest wait first, from search attributes. */
import Table from 'cli-table3';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { AGENT_AWAITING, AGENT_AWAITING_SINCE, AGENT_RUN_WORKFLOW, AGENT_STATUS } from '../../config';
import { fromSearchText } from '../../contract/search-text';
import { WAITING_STATUSES } from '../../contract';
import { safeText } from '../../contract/display';
import { printJson } from '../output';
import { oneLineSummary } from '../../temporal';
import { withClient } from '../context';

/** One run that waits for a person, as `pending --json` prints it. */
export interface PendingRun {
  workflowId: string;
  runId: string;
  /** `awaiting_approval`, `paused` or `awaiting_message`. */
  status: string;
  /** What it waits for: the command awaiting approval, who paused it, or the chat (the `AgentAwaiting` search attribute). */
  awaiting: string;
  /** ISO-8601 time it started waiting (`AgentAwaitingSince`), or null when the run did not publish it. */
  since: string | null;
}

/** The visibility query of {@link listPending}. */
export const PENDING_QUERY = `WorkflowType = '${AGENT_RUN_WORKFLOW}' AND ExecutionStatus = 'Running' AND AgentStatus IN (${WAITING_STATUSES.map((s) => `'${s}'`).join(', ')})`;

/**
 * Lists the open runs whose `AgentStatus` says they wait for a person,
 * newest wait first (sorted here: SQL visibility has no custom ORDER BY).
 * Visibility is eventually consistent: a run that started waiting a moment
 * ago may show up a second later.
 */
export async function listPending(client: Client): Promise<PendingRun[]> {
  const rows: PendingRun[] = [];
  for await (const w of client.workflow.list({ query: PENDING_QUERY })) {
    const attrs = w.typedSearchAttributes;
    const since = attrs.get(AGENT_AWAITING_SINCE);
    rows.push({
      workflowId: w.workflowId,
      runId: w.runId,
      status: attrs.get(AGENT_STATUS) ?? '',
      awaiting: fromSearchText(attrs.get(AGENT_AWAITING) ?? ''),
      since: since ? since.toISOString() : null,
    });
  }
  return rows.sort((a, b) => (b.since ?? '').localeCompare(a.since ?? ''));
}

export function registerPending(program: Command): void {
  program
    .command('pending')
    .description('list every open run that waits for a person (approval, pause, next chat message), newest first')
    .option('--json', 'print a JSON array of {"workflowId","runId","status","awaiting","since"}')
    .action(async (opts: { json?: boolean }) => {
      await withClient(async ({ client }) => {
        const rows = await listPending(client);
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no run waits for a person\n');
        const plain = !process.stdout.isTTY;
        const table = new Table({
          head: ['workflow id', 'status', 'since', 'waits for'],
          ...(plain ? { style: { head: [], border: [] } } : {}),
        });
        for (const r of rows) table.push([r.workflowId, r.status, r.since ?? '', safeText(oneLineSummary(r.awaiting, 100), false)]);
        process.stdout.write(`${table.toString()}\n`);
      });
    });
}
