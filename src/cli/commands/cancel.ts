/** `agent-jobs cancel <workflowId>`: cancels a run (its running command is killed). */
import type { Command } from 'commander';
import { CliError } from '../errors';
import { statusJson } from '../render/run';
import { oneLine, printJson, printLines, printShown } from '../render/text';
import { withClient } from '../context';
import { asTyped } from '../invocation';

/** How long `cancel` waits for the run to end after the request, in ms: 30 s. */
const CANCEL_WAIT_MS = 30_000;

export function registerCancel(program: Command): void {
  program
    .command('cancel')
    .description("cancel a run: a running command's process group is killed, the session closed, every tool_use answered")
    .argument('<workflowId>')
    .option('--json', 'print the final status as JSON')
    .action(async (workflowId: string, opts: { json?: boolean }) => {
      await withClient(async (jobs) => {
        const run = jobs.run(workflowId);
        if (!(await run.isOpen())) {
          // The run's own status (cancelled, completed, max_turns, ...), not Temporal's: a cancelled run's workflow completes.
          const ended = await run.status();
          throw new CliError(`${workflowId} has already ended (${ended.status})`, `see \`agent-jobs status ${workflowId}\``);
        }
        await run.cancel();
        if (!(await jobs.workerPolling())) {
          if (opts.json) return printJson({ workflowId, cancelRequested: true, status: 'running' });
          return printLines(
            asTyped(`cancel requested for ${workflowId}; no worker is running, so it ends when one starts (agent-jobs worker)`),
          );
        }
        // The run answers every open tool_use and closes its session, then ends; wait up to 30 s for that.
        if (!(await run.waitForEnd(CANCEL_WAIT_MS)) && (await run.isOpen())) {
          throw new CliError(
            `cancel requested for ${workflowId}, but it has not ended within ${CANCEL_WAIT_MS / 1000} s`,
            'is a worker running? it ends when one handles the request; see `agent-jobs status ' + workflowId + '`',
          );
        }
        const view = await run.status();
        if (opts.json) printJson(statusJson(view));
        else printShown(oneLine`${workflowId}: ${view.status}` + (view.result?.error ? oneLine` (${view.result.error})` : ''));
      });
    });
}
