/** `agent-jobs cancel <workflowId>`: cancels a run (its running command is killed). */
import type { Command } from 'commander';
import { printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, runHandle, statusJson } from '../runs';

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description('cancel a run: a running command\'s process group is killed, the session closed, every tool_use answered')
    .argument('<workflowId>')
    .option('--json', 'print the final status as JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async ({ client }) => {
        const handle = runHandle(client, workflowId);
        await handle.cancel();
        await Promise.race([handle.result().catch(() => undefined), new Promise((r) => setTimeout(r, 30_000))]);
        const view = await readRun(client, workflowId);
        if (opts.json) printJson(statusJson(view));
        else printLines(`${workflowId}: ${view.status}${view.result?.error ? ` (${view.result.error})` : ''}`);
      });
    });
}
