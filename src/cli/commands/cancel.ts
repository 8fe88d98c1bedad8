/** `agent-jobs cancel <workflowId>`: cancels a run (its running command is killed). */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Command } from 'commander';
import { CliError } from '../errors';
import { printJson, printLines } from '../output';
import { withClient } from '../context';
import { readRun, runHandle, statusJson, stillRunning, workerPolling } from '../runs';

/** How long `cancel` waits for the run to end after the request, in ms: 30 s. */
const CANCEL_WAIT_MS = 30_000;

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
        // The wait is aborted either way, so no call is left open on a connection about to close.
        const wait = new AbortController();
        const ended = await Promise.race([
          client
            .withAbortSignal(wait.signal, () => handle.result())
            .then(
              () => true,
              () => true,
            ),
          sleep(CANCEL_WAIT_MS, false, { ref: false }),
        ]);
        wait.abort();
        if (!ended && (await stillRunning(handle))) {
          throw new CliError(
            `cancel requested for ${workflowId}, but it has not ended within ${CANCEL_WAIT_MS / 1000} s`,
            'is a worker running? it ends when one handles the request; see `agent-jobs status ' + workflowId + '`',
          );
        }
        const view = await readRun(client, workflowId);
        if (opts.json) printJson(statusJson(view));
        else printLines(`${workflowId}: ${view.status}${view.result?.error ? ` (${view.result.error})` : ''}`);
      });
    });
}
