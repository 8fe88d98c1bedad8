/**
 * `agent-jobs watch <workflowId>`: follows a run live until it ends
 * (src/cli/follow.ts): a live line and an inline approval prompt on a
 * terminal unless `--no-prompt`, plain lines without one, one JSON object
 * per event with `--json`.
 */
import type { Command } from 'commander';
import { withClient } from '../context';
import { exitCodeOf, watchUntilInterrupted } from '../follow';

export function registerWatch(program: Command): void {
  program
    .command('watch')
    .description('follow a run live (messages, commands, outputs, approvals) until it ends')
    .argument('<workflowId>')
    .option('--json', 'print one JSON object per event')
    .option('--no-prompt', 'on a terminal, do not ask for pending approvals inline (print how to approve or deny instead)')
    .action(async (workflowId: string, opts: { json?: boolean; prompt?: boolean }) => {
      const view = await withClient((jobs) =>
        watchUntilInterrupted(jobs, workflowId, { json: opts.json === true, prompt: opts.prompt !== false }),
      );
      if (view) process.exitCode = exitCodeOf(view);
    });
}
