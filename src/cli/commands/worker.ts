/** `agent-jobs worker`: runs a worker process (the same as `node dist/worker.js`). */
import type { Command } from 'commander';
import { installRuntime, startWorker, type RunningWorker } from '../../worker';
import { reportError } from '../errors';

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run a worker: the agentRun workflow, Claude calls, and this machine\'s bash sessions (Ctrl-C stops it)')
    .action(async () => {
      let worker: RunningWorker;
      try {
        installRuntime();
        worker = await startWorker();
      } catch (err) {
        // Once installed, the SDK runtime (its log forwarding) keeps the event
        // loop alive: without an exit here a worker that cannot start would
        // print its error and hang.
        reportError(err);
        process.exit(process.exitCode ?? 1);
      }
      await worker.done;
    });
}
