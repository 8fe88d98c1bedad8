/** `agent-jobs pending`: every open run that waits for a person, newest wait first, from search attributes. */
import Table from 'cli-table3';
import type { Command } from 'commander';
import { hiddenEscaped, oneLineSummary, safeText } from '../../shared/display';
import { printJson } from '../render/text';
import { withClient } from '../context';

export function registerPending(program: Command): void {
  program
    .command('pending')
    .description('list every open run that waits for a person (approval, pause, next chat message), newest first')
    .option('--json', 'print a JSON array of {"workflowId","runId","status","awaiting","since"} (and "parentId" for a sub-agent)')
    .action(async (opts: { json?: boolean }) => {
      await withClient(async (jobs) => {
        const rows = await jobs.pending();
        if (opts.json) return printJson(rows);
        if (rows.length === 0) return void process.stdout.write('no run waits for a person\n');
        const plain = !process.stdout.isTTY;
        const table = new Table({
          head: ['workflow id', 'status', 'since', 'waits for'],
          ...(plain ? { style: { head: [], border: [] } } : {}),
        });
        for (const r of rows) {
          // The workflow wrote it escaped already (a kind, or an escaped command in the oldest runs): not escaped twice.
          const what = hiddenEscaped(oneLineSummary(r.awaiting, 100), false);
          // A sub-agent's wait names its parent: the run a person knows.
          const waits = r.parentId !== undefined ? `${what} (sub-agent of ${safeText(r.parentId, false)})` : what;
          table.push([safeText(r.workflowId, false), r.status, r.since ?? '', waits]);
        }
        process.stdout.write(`${table.toString()}\n`);
      });
    });
}
