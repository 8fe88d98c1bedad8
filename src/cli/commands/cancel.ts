/** `agent-jobs cancel <workflowId>`: cancels a run (its running command is killed). */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { CliError } from '../errors';
import { printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, runHandle, statusJson, stillRunning, workerPolling } from '../runs';

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description("cancel a run: a running command's process group is killed, the session closed, every tool_use answered")
    .argument('<workflowId>')
    .option('--json', 'print the final status as JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async ({ client }) => {
        const handle = runHandle(client, workflowId);
        if (!(await stillRunning(handle))) {
          // The run's own status (cancelled, completed, max_turns, ...), not Temporal's: a cancelled run's workflow completes.
          const ended = await readRun(client, workflowId);
          throw new CliError(`${workflowId} has already ended (${ended.status})`, `see \`agent-jobs status ${workflowId}\``);
        }
        await handle.cancel();
        if (!(await workerPolling(client))) {
          if (opts.json) return printJson({ workflowId, cancelRequested: true, status: 'running' });
          return printLines(`cancel requested for ${workflowId}; no worker is running, so it ends when one starts (agent-jobs worker)`);
        }
        // The run answers every open tool_use and closes its session, then ends; wait up to 30 s for that.
        await Promise.race([handle.result().catch(() => undefined), sleep(30_000, undefined, { ref: false })]);
        const view = await readRun(client, workflowId);
        if (opts.json) printJson(statusJson(view));
        else printLines(`${workflowId}: ${view.status}${view.result?.error ? ` (${view.result.error})` : ''}`);
      });
    });
}
